"""Sequential loops proved by induction on the invariant they state.

A `tile.for` may say what its carried values are after `k` iterations (`invariant`: one form per
carried value, in terms of the kernel's inputs, auxiliary tensors of them (`defs`), the program
ids, `k` and the carried values themselves; `docs/tile.md`). The tiler writes it when it creates
the loop, as prefix reductions of the source: for an online softmax over column blocks of `BN`,

    m_k  (no claim: any value; its start and its update are what the loop does)
    l_k = add over r in [0, min(k*BN, N)) of exp(x[row, r] - m_k)
    acc_k = add over r in [0, min(k*BN, N)) of exp(x[row, r] - m_k) * v[r, d]

The loop is then read as its invariant at `k = extent`, once three facts hold for every size,
tile size, program, tile element and input the kernel's assumptions admit:

- the start establishes it: the invariant at `k = 0` (its carried values read as the starts)
  equals each start;
- an iteration preserves it: for every `k` in `[0, extent)`, what the body yields, with the
  carried values it reads taken to be the invariant at `k`, equals the invariant at `k + 1`
  with the carried values it reads taken to be what the body yields;
- (the exit) the loop's result is the invariant at `extent`: what the proof of the kernel
  against its source then compares.

The first two are the obligations built here (`obligations`), as pairs of terms over quantified
program ids, iteration and tile element; `prove.py` proves each (z3 unsat) or gives up on the
loop. A carried value without a claim is an uninterpreted atom of its iteration, program and
element (`inline.Inliner`): whatever is proved holds for any value it may take, so a running
max needs no claim where the result does not depend on which value it is (the online softmax's
`exp(x - m)` sums are divided by each other, and `m` cancels).

The obligations hold at every tile element, padded rows of a remainder tile included: an
invariant reads the kernel's inputs as the loop's loads do (`select(i*BM + t0 < M, x[...], 0)`
where the load pads with 0), so padded rows keep their own, padded, invariant.
"""

from __future__ import annotations

from dataclasses import dataclass

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import ForOp, KernelOp, YieldOp
from axon.verifier import terms as T
from axon.verifier.budget import Unsupported
from axon.verifier.indices import Ranges
from axon.verifier.inline import Inliner, ProgramEnv, Value
from axon.verifier.replay import Replayed

#: the quantified variables of an obligation: output-index names (nonnegative, `terms.nonneg`)
#: that no function output uses (those are `$o<digit>...`)
_PROGRAM = T.OUTPUT_INDEX + "p_"
_ITERATION = T.OUTPUT_INDEX + "k"
_ELEMENT = T.OUTPUT_INDEX + "t"


class NotInductive(Unsupported):
    """An obligation of a loop's invariant was not proved: the loop is not read. `sizes` are
    the sizes (and tile sizes) of z3's model where it found the obligation false, for a replay
    of the two functions there; None when z3 gave up. `witness`: the replay that already showed
    the two functions differ there, if one did."""

    def __init__(self, reason: str, sizes: dict[str, int] | None = None,
                 witness: Replayed | None = None) -> None:
        super().__init__(reason)
        self.sizes = sizes
        self.witness = witness


@dataclass(frozen=True)
class Obligation:
    """`loop_value == invariant` for every `index` variable in [0, extent)."""

    what: str
    iv: str
    index: tuple[str, ...]
    extents: tuple[IntExpr, ...]
    loop_value: Value
    invariant: Value


def stated_loops(kernel: KernelOp) -> list[ForOp]:
    """The loops of a kernel's body that state an invariant, in program order."""
    return [op for op in kernel.body.block.ops
            if isinstance(op, ForOp) and op.invariant is not None]


def obligations(kernel: KernelOp, loop: ForOp, inductive: frozenset[ForOp]) -> list[Obligation]:
    """The start and step obligations of each carried value `loop` states an invariant of
    (see the module docstring); `inductive` are the loops before it already proved, whose
    results its obligations may read."""
    if loop.parent_op() is not kernel:
        raise Unsupported("a tile.for with an invariant inside another loop is not read yet")
    end = loop.body.block.last_op
    assert isinstance(end, YieldOp)
    inliner = Inliner(inductive, frozenset({loop}))
    _, stated = inliner.stated(loop)
    programs = kernel.program_names()
    env = tuple((p, IntExpr.sym(_PROGRAM + p)) for p in programs)
    ranges: dict[str, tuple[IntExpr, IntExpr]] = {
        _PROGRAM + p: (IntExpr.const(0), g) for p, g in zip(programs, kernel.grid_exprs(),
                                                            strict=True)}
    extent = loop.extent_expr().substitute(dict(env))
    iv, k = loop.iv.data, IntExpr.sym(_ITERATION)

    def at(iteration: IntExpr) -> ProgramEnv:
        return tuple(sorted((*env, (iv, iteration))))

    found = []
    for c, form in enumerate(stated):
        if form is None:
            continue
        t = loop.inits[c].type
        assert isinstance(t, TensorType)
        # names of this value's own: the memo of terms ignores ranges, and the tiles of two
        # carried values may differ in extent
        names = tuple(f"{_ELEMENT}{c}_{d}" for d in range(t.rank))
        # a dim of one has the one element 0 (a batched tile's leading dims): the terms read it
        # there, so the two sides of an obligation meet without z3 having to find it
        index = tuple(IntExpr.const(0) if e == IntExpr.const(1) else IntExpr.sym(n)
                      for n, e in zip(names, t.shape, strict=True))
        here: Ranges = {**ranges, **{n: (IntExpr.const(0), e)
                                     for n, e in zip(names, t.shape, strict=True)}}
        start = inliner.value(loop.inits[c], index, here, tuple(sorted(env)))
        claim = inliner.plan_value(inliner.invariant_plan(loop, c, index, here, at(
            IntExpr.const(0))))
        found.append(Obligation(f"the start establishes invariant #{c}", iv,
                                (*(_PROGRAM + p for p in programs), *names),
                                (*kernel.grid_exprs(), *t.shape), start, claim))
        inside: Ranges = {**here, _ITERATION: (IntExpr.const(0), extent)}
        yielded = inliner.value(end.values[c], index, inside, at(k))
        after = inliner.plan_value(inliner.invariant_plan(
            loop, c, index, inside, at(k + 1),
            carried=lambda j: (end.values[j], at(k))))
        found.append(Obligation(f"an iteration preserves invariant #{c}", iv,
                                (*(_PROGRAM + p for p in programs), _ITERATION, *names),
                                (*kernel.grid_exprs(), extent, *t.shape), yielded, after))
    return found
