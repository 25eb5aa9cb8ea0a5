"""A tiled kernel specialized to sizes its tiles divide: the remainder masks dropped, proved.

A loop over `ceildiv(S, B)` blocks of `B` (a reduction's key blocks, attention's `k`) reads its
last block past `S` when `B` does not divide `S`; the tiler guards every reduction over the
block with a mask, `select(idx(B*k + r) < idx(S), x, pad)` (`pad` the reduction's identity, or
the block's first column for a max). On a NeuronCore a mask is an `affine_select` on GpSimd per
block, and attention's two passes pay three of them per block (gqa at S = L = 512: 130 of its
320 us of GpSimd time). Where the selection's sizes are multiples of the block (`S mod B == 0`
and `B <= S`), each such mask holds in every lane of every block: `specialized(kernel,
program, sizes, params)` rewrites, in a copy, every select whose condition compares the index
of a dim with a size `S` of such a pair (`idx(e) < idx(S)`) to its first branch, adds the pairs'
facts to the kernel's assumptions (`S mod B == 0`, `B <= S`: the emitted kernel asserts them
when traced), and proves the copy equal to the program with the prover of the tiling search,
under those assumptions. Anything but Proved leaves the kernel as it was (None). The verifier
reads the facts (`verifier.indices.assuming`): under `S mod B == 0` the lanes of every block
lie below `S`, so the loads read no pad and the whole blocks partition `[0, S)`.

Which selects to drop is proposed by their shape; whether dropping them is right is the proof's
alone: a mask that can fail in some lane (a block that straddles `S` though `B` divides it, a
mask on another size) makes the copy differ from the program, and the proof says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import GenericOp
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Index, ScalarExpr
from axon.dialects.form.syntax import parse_form
from axon.dialects.tile import ForOp, KernelOp
from axon.verifier import Proved, prove_equivalent
from axon.verifier.budget import SEARCH_BUDGET, ProofBudget
from axon.verifier.cache import process_cache

__all__ = ["Specialized", "specialized"]


@dataclass(frozen=True)
class Specialized:
    """The kernel with its masks dropped, the facts it assumes, how many selects went, and
    the proof's id."""

    func: FuncOp
    facts: tuple[str, ...]
    dropped: int
    proof_id: str


def _pairs(kernel: KernelOp, sizes: Mapping[str, int], params: Mapping[str, int]
           ) -> list[tuple[str, str]]:
    """The (S, B) of the kernel's loops and grid over `ceildiv(S, B)` blocks where the
    concrete `B` divides `S` and is at most `S`."""
    extents = {*kernel.grid_exprs(), *(op.extent_expr() for op in kernel.walk()
                                         if isinstance(op, ForOp))}
    return [(size, block) for size, n in sizes.items() for block, b in params.items()
            if b <= n and n % b == 0
            and IntExpr.sym(size).ceildiv(IntExpr.sym(block)) in extents]


def _dropped(expr: ScalarExpr, masked: set[str]) -> tuple[ScalarExpr, int]:
    """`expr` with each `select(idx(e) < idx(S), a, b)` of an S in `masked` as `a`; the count.
    Iterative over the expression's nodes (a deep body does not recurse)."""
    count = 0
    # post-order without recursion: children rebuilt before their parent
    stack: list[tuple[ScalarExpr, bool]] = [(expr, False)]
    done: dict[int, ScalarExpr] = {}
    while stack:
        node, expanded = stack.pop()
        kids = node.children()
        if not expanded and kids:
            stack.append((node, True))
            stack.extend((kid, False) for kid in kids)
            continue
        new = node.with_children(tuple(done[id(k)] for k in kids)) if kids else node
        if isinstance(new, Call) and new.fn == "select" and _masks(new.args[0], masked):
            new = new.args[1]
            count += 1
        done[id(node)] = new
    return done[id(expr)], count


def _masks(cond: ScalarExpr, masked: set[str]) -> bool:
    """Is `cond` `idx(e) < idx(S)` for an S in `masked`?"""
    if not (isinstance(cond, Call) and cond.fn == "lt" and len(cond.args) == 2):
        return False
    _, bound = cond.args
    return isinstance(bound, Index) and bound.expr.as_symbol in masked


def specialized(kernel_func: FuncOp, program: FuncOp, sizes: Mapping[str, int],
                params: Mapping[str, int], budget: ProofBudget = SEARCH_BUDGET
                ) -> Specialized | None:
    """The tiled `kernel_func` (equal to `program`) without the masks its tiles need only where
    they do not divide the sizes, proved (module docstring); None where nothing drops or the
    proof does not say Proved."""
    copy = kernel_func.clone()
    kernel = next(op for op in copy.walk() if isinstance(op, KernelOp))
    pairs = _pairs(kernel, sizes, params)
    if not pairs:
        return None
    masked = {size for size, _ in pairs}
    dropped = 0
    for op in kernel.walk():
        if not isinstance(op, GenericOp):
            continue
        form = parse_form(op.form.data, len(op.operands))
        body, count = _dropped(form.body, masked)
        if not count:
            continue
        dropped += count
        new = GenericForm(form.parallel, body, form.num_operands, form.reduction, form.reduced,
                          form.finalize)
        op.properties["form"] = StringAttr(str(new))
    if not dropped:
        return None
    facts = tuple(fact for size, block in pairs
                  for fact in (f"{size} mod {block} == 0", f"{block} <= {size}"))
    kernel.assume_also(list(facts))
    copy.verify()
    verdict = prove_equivalent(copy, program, budget=budget, cache=process_cache())
    if not isinstance(verdict, Proved):
        return None
    return Specialized(copy, facts, dropped, verdict.proof_id)
