"""Loop-invariant instructions moved out of their loops, and repeated instructions shared, in
a lowered NKI kernel; the rewrite kept only when proved.

The lowering gives each tile op its instructions where the op is. Attention's kernels read
the query tile they load before their key loops inside every iteration: each iteration
transposes it on TensorE and copies the transpose from PSUM to SBUF (two instructions on the
loop's dependence chain), and the max pass, the sum pass and the first block each make their
own copy. `hoist_kernel` rewrites a copy of the function:

- **hoisting**: out of each `tile.for`, innermost first, every instruction (`nki.*`), load or
  constant tile of the loop's body whose operands are all defined before the loop and whose
  properties and type name neither the loop's index nor anything else (a load's offsets, an
  `affine_select`'s `size_offset`), none written in place by the emitter (a loop's carried
  value or the tile a matmul accumulates onto, `emit.written_in_place`) and none reading such
  a tile or yielded. Each goes right before its loop, in the body's order, so a loop nest
  gives an instruction up level by level;
- **sharing**: in each block, an instruction, load or constant tile with the name, operands,
  properties and type of an earlier one in the same block (neither written in place, reading
  no tile written in place) is replaced by the earlier one.

The copy is proved equal to the function before (`prove_equivalent`, the prover of the
lowering and of `fuse.py`'s rewrites); Refuted, Unknown or a copy that does not verify keeps
the function as it was, and the verdict is reported as a fusion attempt is. Whether a
hoisted tile fits beside the others is the simulator's check (SBUF and PSUM capacity),
as for every emitted kernel.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import ForOp, FullOp, LoadOp, YieldOp
from axon.targets.nki.emit import written_in_place
from axon.verifier import Proved, Refuted, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET, ProofBudget
from axon.verifier.cache import process_cache

#: the ops that may move or be shared: instructions, loads of inputs, constant tiles
_MOVABLE = (nki.NkiOp, LoadOp, FullOp)


@dataclass(frozen=True)
class Hoisted:
    """`hoist_kernel`'s result: the function to go on with (the rewrite where proved, else
    the function given), what the rewrite moved, and its verdict: `proved` (`detail` the
    proof id), `unchanged` (nothing to move), `refuted` (the counterexample), `unknown` (the
    reason) or `invalid` (the copy does not verify: the rule it breaks)."""

    func: FuncOp
    hoisted: int
    shared: int
    verdict: str
    detail: str
    seconds: float


def hoist_kernel(func: FuncOp, budget: ProofBudget | None = None) -> Hoisted:
    """`func` (a lowered function) with its loop-invariant instructions hoisted and repeated
    ones shared (module docstring) when the verifier proves the rewrite, else `func`."""
    began = time.perf_counter()
    candidate = func.clone()
    hoisted = sum(_hoist_out_of(loop) for loop in reversed(
        [op for op in candidate.walk() if isinstance(op, ForOp)]))
    shared = sum(_share_in(block) for block in _blocks(candidate))

    def result(kept: FuncOp, verdict: str, detail: str = "") -> Hoisted:
        return Hoisted(kept, hoisted, shared, verdict, detail, time.perf_counter() - began)

    if not hoisted and not shared:
        return result(func, "unchanged")
    try:
        candidate.verify()
    except (ShapeError, VerifyException) as err:
        return result(func, "invalid", str(err).splitlines()[0])
    verdict = prove_equivalent(candidate, func, budget=DEFAULT_BUDGET if budget is None else budget,
                               cache=process_cache())
    if isinstance(verdict, Proved):
        return result(candidate, "proved", verdict.proof_id)
    detail = (str(verdict.counterexample) if isinstance(verdict, Refuted)
              else str(getattr(verdict, "reason", verdict.verdict)))
    return result(func, verdict.verdict, detail)


def _hoist_out_of(loop: ForOp) -> int:
    """Move the invariant ops of `loop`'s body before it (module docstring); how many. One
    pass in the body's order: an op's operands come before it, so an op reading one hoisted
    before it is seen with that operand already outside."""
    body = loop.body.block
    inside: set[SSAValue] = set(body.args)
    for op in loop.walk():
        if op is not loop:
            inside.update(op.results)
    iv = loop.iv.data
    moved = 0
    for op in list(body.ops):
        if not isinstance(op, _MOVABLE) or op.regions or iv in _names(op) \
                or any(v in inside for v in op.operands) or not _free(op):
            continue
        op.detach()
        loop.parent_block().insert_op_before(op, loop)  # type: ignore[union-attr]
        inside.difference_update(op.results)
        moved += 1
    return moved


def _share_in(block: Block) -> int:
    """Replace each movable op of `block` that repeats an earlier one (same name, operands,
    properties and result types) by the earlier one's results; how many."""
    seen: dict[Hashable, Operation] = {}
    shared = 0
    for op in list(block.ops):
        if not isinstance(op, _MOVABLE) or op.regions or not _free(op):
            continue
        key = _key(op)
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        for mine, theirs in zip(op.results, first.results, strict=True):
            mine.replace_all_uses_with(theirs)
        op.detach()
        op.erase()
        shared += 1
    return shared


def _key(op: Operation) -> Hashable:
    """What makes two ops of a block the same computation: name, operands, properties,
    attributes and result types."""
    return (op.name, tuple(op.operands), tuple(sorted(op.properties.items())),
            tuple(sorted(op.attributes.items())), tuple(r.type for r in op.results))


def _free(op: Operation) -> bool:
    """Neither `op`'s results nor its operands are tiles the emitter writes in place
    (`emit.written_in_place`: a loop's carried value, a matmul's accumulator), and no result
    is yielded: moving or sharing `op` cannot change which buffer an in-place write lands in."""
    if any(written_in_place(v) for v in (*op.results, *op.operands)):
        return False
    return not any(isinstance(use.operation, YieldOp) for r in op.results for use in r.uses)


def _names(op: Operation) -> set[str]:
    """The symbols `op`'s properties and result types name: a load's offsets, an
    instruction's dims-valued properties (`size_offset`, an access's `start`), its shapes."""
    out: set[str] = set()
    for result in op.results:
        if isinstance(result.type, TensorType):
            for dim in result.type.shape:
                out |= dim.symbols()
    texts: Iterable[object] = ()
    if isinstance(op, LoadOp):
        texts = [o.data for o in op.offsets.data]
    elif isinstance(op, nki.NkiOp):
        attrs = op.attrs()
        texts = [x for name, kind in type(op).ATTRS.items() if kind == "dims"
                 for x in (attrs.get(name) or ())]
    for text in texts:
        out |= IntExpr.lift(str(text)).symbols()
    return out


def _blocks(func: FuncOp) -> list[Block]:
    """Every block of `func`, outermost first (one walk)."""
    return [block for op in func.walk() for region in op.regions for block in region.blocks]
