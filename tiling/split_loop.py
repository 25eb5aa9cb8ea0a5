"""An online loop split across programs: partial results, then a kernel that combines them
(flash-decoding).

A decode step of attention has one query row per head and thousands of keys: one program per
head walks every key, and a 132-SM GPU runs a handful of programs. A `Tiling(split=True)`
kernel (`tiling.kernels`) gives each program a stretch of `NB` blocks of `BK` keys instead
(program id `s`, `ceildiv(L, BK*NB)` stretches), its online loop carrying the running max `m`
and the sums `l = sum exp(x - m)` and `acc = sum exp(x - m) * v` of its stretch. Here that
kernel is cut after its loop:

- the **partials** kernel stores each carried value of each stretch: a tile `[.., BM, X]` of
  the loop goes to `[.., rows, stretches, X]` at `[.., i*BM, s, 0]` (X is 1 for the max and
  the row sums, the result's last dim for `acc`); its loop states its invariant over
  `[BK*NB*s, min(BK*NB*s + BK*k, L))`;
- the **combine** kernel loads every stretch of a row block whole, takes `M` the max of the
  stretches' maxes, weighs each stretch by `w = exp(m_s - M)`, sums `sum_s w * l_s` and
  `sum_s w * acc_s`, and runs the ops that followed the loop (`acc / l`) on those sums.

Whether that is the function is the verifier's to say, for the two kernels as one function
(the combine's loads read the partials' stores): each stretch's `exp(x - m_s)` times
`exp(m_s - M)` is `exp(x - M)` whatever `m_s` is, and the stretches' sums telescope to the sum
over the whole row (`verifier.sums._blocked_prefixes`). A max nobody claims stays any value,
so `M` need not be the row's max for the proof; it is for the numerics.

The partials' types have a dim per stretch, `ceildiv(L, BK*NB)`, a function of the tile
parameters: the partials kernel's result types may name its params (`tile.kernel` allows it),
and the combine kernel reads those dims as sizes of its inputs. For emission each kernel
becomes a function of its own (`stages`), the combine's stretch count a size `NS` its host
reads from the partials' shape (and a dim that is a product of sizes, the heads `G*HKV`,
a size of its own too: the combine never needs its factors).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.ax import GenericOp, ReshapeOp, TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import ForOp, KernelOp, LoadOp, StoreOp, YieldOp, parse_assumption

#: the combine kernel's name for the stretch count when it is a function of its own
STRETCHES = "NS"


class NotSplit(ValueError):
    """The kernel's loop cannot be split across programs; the message says why."""


@dataclass(frozen=True)
class Stages:
    """A split kernel's two launches as functions of their own (for emission)."""

    partials: FuncOp
    """The function's parameters to the partial results (types with the stretch dim
    `ceildiv(red, BK*NB)`, computed by the host from its sizes and params)."""
    combine: FuncOp
    """The partial results (the stretch dim a size `NS`) to the function's results."""
    combine_sizes: dict[str, IntExpr]
    """The combine's sizes that the function does not have, each as an expression of the
    function's sizes and the partials' params (`NS`: `ceildiv(L, BK*NB)`)."""

    def combine_env(self, env: Mapping[str, int]) -> dict[str, int]:
        """The combine's sizes at the function's sizes and the partials' params `env`."""
        return {**env, **{k: e.evaluate(env) for k, e in self.combine_sizes.items()}}


def split_kernels(func: FuncOp, stretch: str) -> FuncOp:
    """`func` (one kernel whose online loop walks one stretch of its reduced dim per program,
    with `stretch` the program id of the stretch, its last) as a partials kernel and a combine
    kernel (see the module docstring)."""
    kernel, loop, after = _parts(func)
    partial_types = _partial_types(kernel, loop, after)
    out = FuncOp(func.sym_name.data, (list(func.function_type.inputs.data),
                                      list(func.function_type.outputs.data)))
    first = _partials_kernel(kernel, loop, after, list(out.body.block.args), partial_types,
                             stretch)
    store = next(op for op in after if isinstance(op, StoreOp))
    ids = kernel.program_names()[:-1]
    used = _names(partial_types)
    frame = _Frame(ids, kernel.grid_exprs()[:-1],
                   [p for p in kernel.param_names() if p not in used],
                   [a for a in kernel.assumptions() if not _names_in(a) & used],
                   [str(o) for o in store.offset_exprs()[:-1]], _space(kernel),
                   kernel.output_types())
    carried = [v.type for v in loop.results if isinstance(v.type, TensorType)]
    second = _combine_kernel(frame, carried, after, list(loop.results), list(first.results),
                             kernel.grid_exprs()[-1])
    out.body.block.add_ops([first, second, ReturnOp(*second.results)])
    return out


def stages(func: FuncOp) -> Stages:
    """The two kernels of a split function (`split_kernels`), each as a function of its own:
    the partials' function returns what the combine reads, whose stretch dim is a size of
    its own (`STRETCHES`)."""
    kernels = [op for op in func.body.block.ops if isinstance(op, KernelOp)]
    if len(kernels) != 2 or tuple(kernels[1].inputs) != tuple(kernels[0].results):
        raise NotSplit(f"@{func.sym_name.data} is not a partials kernel and its combine")
    first, second = kernels
    name = func.sym_name.data
    params = list(func.function_type.inputs.data)
    results = list(func.function_type.outputs.data)
    partials = FuncOp(f"{name}_partials", (params, first.output_types()))
    copy = first.clone()
    for n, arg in enumerate(partials.body.block.args):
        copy.operands[n] = arg
    partials.body.block.add_ops([copy, ReturnOp(*copy.results)])
    taken = _names([t for t in [*params, *results] if isinstance(t, TensorType)])
    # the combine's host reads every size from a dim alone: the stretch count, and each dim
    # that is a product of sizes (the heads G*HKV), become sizes of their own
    own: dict[str, IntExpr] = {}
    defined: dict[str, IntExpr] = {}
    rank = first.output_types()[0].rank  # the max's partials: [.., rows, stretches]
    count = first.output_types()[0].shape[-1]
    for t in [*first.output_types(), *results]:
        assert isinstance(t, TensorType)
        for d in t.shape:
            if d.as_symbol is None and not d.is_const and str(d) not in own:
                base = STRETCHES if d == count else re.sub(r"\W+", "_", str(d)).strip("_")
                new = _fresh(base, taken | set(defined))
                own[str(d)], defined[new] = IntExpr.sym(new), d
    ns = own[str(count)]

    def renamed(t: TensorType) -> TensorType:
        return TensorType([own.get(str(d), d) for d in t.shape], t.dtype)

    types = [renamed(t) for t in first.output_types()]
    results = [renamed(t) for t in results]  # type: ignore[arg-type]
    combine = FuncOp(f"{name}_combine", (types, results))
    ops = list(second.body.block.ops)[:-1]
    loads = [op for op in ops[:len(types)] if isinstance(op, LoadOp)]
    if len(loads) != len(types):
        raise NotSplit(f"@{name}: the combine kernel is not one `split_kernels` built")
    carried = []
    for load in loads:
        t = load.results[0].type
        assert isinstance(t, TensorType)
        carried.append(TensorType([*t.shape[:rank - 1], *(t.shape[rank:] or [1])], t.dtype))
    reads, after = _layout(carried)
    frame = _Frame(second.program_names(), [own.get(str(g), g) for g in second.grid_exprs()],
                   second.param_names(), second.assumptions(),
                   [s.data for s in loads[0].offsets.data][:rank - 1], loads[0].space.data,
                   results)  # type: ignore[arg-type]
    made = _combine_kernel(frame, carried, ops[after:], [ops[n].results[0] for n in reads],
                           list(combine.body.block.args), ns)
    combine.body.block.add_ops([made, ReturnOp(*made.results)])
    return Stages(partials, combine, defined)


# ---- the kernel before the cut ----------------------------------------------------------------

def _parts(func: FuncOp) -> tuple[KernelOp, ForOp, list[Operation]]:
    """The kernel, its online loop and the ops after the loop (stores included, the yield
    not)."""
    found = [op for op in func.body.block.ops if isinstance(op, KernelOp)]
    if len(found) != 1:
        raise NotSplit(f"@{func.sym_name.data}: a split needs one kernel, it has {len(found)}")
    kernel = found[0]
    ops = list(kernel.body.block.ops)
    loops = [op for op in ops if isinstance(op, ForOp)]
    if len(loops) != 1 or loops[0].invariant_texts() is None:
        raise NotSplit(f"@{func.sym_name.data}: a split needs one loop that states its "
                       "invariant (an online loop)")
    loop = loops[0]
    after = ops[ops.index(loop) + 1:-1]
    inside = set(loop.results) | {r for op in after for r in op.results}
    for op in after:
        if any(v not in inside for v in op.operands):
            raise NotSplit(f"@{func.sym_name.data}: '{op.name}' after the loop reads a value "
                           "from before it; the combine kernel reads the loop's results only")
    return kernel, loop, after


def _claims(loop: ForOp) -> list[str]:
    texts = loop.invariant_texts()
    assert texts is not None
    return texts


def _partial_types(kernel: KernelOp, loop: ForOp, after: list[Operation]
                   ) -> list[TensorType]:
    """Each carried value's partial results: the stored result's dims but the last, the
    stretches, then the carried tile's last dim where it is not 1 (the result's last dim
    whole: `acc`)."""
    stores = [op for op in after if isinstance(op, StoreOp)]
    if not stores:
        raise NotSplit("the kernel stores nothing after its loop")
    result = kernel.output_types()[stores[0].result.value.data]
    tile = stores[0].value.type
    assert isinstance(tile, TensorType)
    claims = _claims(loop)
    if [c for c in claims if not c] != [""] or claims[0]:
        raise NotSplit("a split loop carries its running max first and sums after it")
    grid = kernel.grid_exprs()
    count = grid[-1]
    sizes = kernel.sizes()
    found = []
    for value in loop.results:
        t = value.type
        assert isinstance(t, TensorType)
        last = t.shape[-1]
        if t.shape[:-1] != tile.shape[:-1] or last.symbols() - sizes:
            raise NotSplit(f"a carried tile {t} is not a block of the result's rows with its "
                           "last dim whole")
        found.append(TensorType([*result.shape[:-1], count, *_wide(last)], t.dtype))
    if found[0].rank != result.rank:
        raise NotSplit("a split loop's running max has one value per row")
    return found


def _wide(last: IntExpr) -> list[IntExpr]:
    """A carried tile's last dim as its partials keep it after the stretch dim: none where it
    is 1 (a row's max or sum: the stretch takes its place), itself otherwise (`acc`'s D)."""
    return [] if last == IntExpr.const(1) else [last]


# ---- the two kernels --------------------------------------------------------------------------

def _partials_kernel(kernel: KernelOp, loop: ForOp, after: list[Operation],
                     inputs: list[SSAValue], types: list[TensorType], stretch: str
                     ) -> KernelOp:
    """The kernel up to its loop, storing each carried value of its stretch."""
    copy = kernel.clone()
    ops = list(copy.body.block.ops)
    index = list(kernel.body.block.ops).index(loop)
    copied_loop = ops[index]
    store = next(op for op in after if isinstance(op, StoreOp))
    offsets = [str(o) for o in store.offset_exprs()[:-1]]
    for op in reversed(ops[index + 1:-1]):
        copy.body.block.erase_op(op)
    end = copy.body.block.last_op
    assert end is not None
    for n, value in enumerate(copied_loop.results):
        t = value.type
        assert isinstance(t, TensorType)
        if t.shape[-1] == IntExpr.const(1):  # the tile's last dim of 1 is the stretch's
            stored, at = value, [*offsets, stretch]
        else:
            shaped = ReshapeOp.make([value], shape=[*t.shape[:-1], IntExpr.const(1),
                                                    t.shape[-1]])
            copy.body.block.insert_op_before(shaped, end)
            stored, at = shaped.results[0], [*offsets, stretch, "0"]
        copy.body.block.insert_op_before(StoreOp(stored, n, at), end)
    body = copy.body.block
    copy.body.detach_block(body)
    made = KernelOp(inputs, types, kernel.program_names(), kernel.grid_exprs(),
                    kernel.param_names(), Region(body), assume=kernel.assumptions())
    copy.erase()
    return made


@dataclass(frozen=True)
class _Frame:
    """The combine kernel's grid, params and where its row block starts."""

    ids: list[str]
    grid: list[IntExpr]
    params: list[str]
    assume: list[str]
    rows: list[str]
    """The offsets of a program's row block in every dim but the last (the result's)."""
    space: str
    outputs: list[TensorType]


def _combine_kernel(frame: _Frame, carried: list[TensorType], after: list[Operation],
                    reads: list[SSAValue], partials: list[SSAValue], count: IntExpr
                    ) -> KernelOp:
    """Per row block, every stretch's partials whole: the max of their maxes `M`, each
    stretch weighed by `exp(m_s - M)`, the weighted sums, and the ops after the loop on them
    (`after`, reading `reads` (the max, then each sum) as `M` and the combined sums)."""
    body = Block(arg_types=[v.type for v in partials])
    tiles: list[SSAValue] = []
    for arg, t in zip(body.args, carried, strict=True):
        load = LoadOp.make([arg], offsets=[*frame.rows, "0", *(["0"] * len(_wide(t.shape[-1])))],
                           shape=[*t.shape[:-1], count, *_wide(t.shape[-1])], pad=0.0,
                           space=frame.space)
        body.add_op(load)
        tiles.append(load.results[0])
    m = carried[0]
    lead = [f"d{n}" for n in range(m.rank - 1)]
    stretch, last = f"d{m.rank - 1}", f"d{m.rank}"
    dims = ", ".join(f"{d} < {e}" for d, e in zip(lead, m.shape[:-1], strict=True))
    at = ", ".join(lead)
    top = GenericOp.make([tiles[0]], form=f"out[{dims}, {stretch} < 1] = max over r0 in "
                         f"[0, {count}) of in0[{at}, r0]", dtype=m.dtype)
    weight = GenericOp.make([tiles[0], top.results[0]], form=(
        f"out[{dims}, {stretch} < {count}] = exp((in0[{at}, {stretch}] - in1[{at}, 0]))"),
        dtype=m.dtype)
    body.add_ops([top, weight])
    combined: dict[SSAValue, SSAValue] = {reads[0]: top.results[0]}
    for value, t, tile in zip(reads[1:], carried[1:], tiles[1:], strict=True):
        if _wide(t.shape[-1]):  # [.., rows, 1, X], the stretches in the unit dim's place
            total = GenericOp.make([weight.results[0], tile], form=(
                f"out[{dims}, {stretch} < 1, {last} < {t.shape[-1]}] = add over r0 in "
                f"[0, {count}) of in0[{at}, r0] * in1[{at}, r0, {last}]"), dtype=t.dtype)
            view = ReshapeOp.make([total.results[0]], shape=list(t.shape))
            body.add_ops([total, view])
        else:
            view = GenericOp.make([weight.results[0], tile], form=(
                f"out[{dims}, {stretch} < 1] = add over r0 in [0, {count}) of "
                f"in0[{at}, r0] * in1[{at}, r0]"), dtype=t.dtype)
            body.add_op(view)
        combined[value] = view.results[0]
    for op in after:
        copy = op.clone()
        for n, v in enumerate(op.operands):
            copy.operands[n] = combined[v]
        body.add_op(copy)
        combined.update(zip(op.results, copy.results, strict=True))
    body.add_op(YieldOp())
    return KernelOp(partials, frame.outputs, frame.ids, frame.grid,
                    frame.params, Region(body), assume=frame.assume)


def _layout(carried: list[TensorType]) -> tuple[list[int], int]:
    """Where `_combine_kernel` puts its values among the kernel's ops: the positions of the
    max and of each combined sum, and where the ops that followed the loop start (a load per
    partial, the max, the weights, then per sum its form and, for a wide one, its reshape)."""
    n = len(carried)
    reads, at = [n], n + 2
    for t in carried[1:]:
        at += 1 + len(_wide(t.shape[-1]))
        reads.append(at - 1)
    return reads, at


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _names(types: list[TensorType]) -> set[str]:
    return {s for t in types for d in t.shape for s in d.symbols()}


def _names_in(assumption: str) -> set[str]:
    lhs, _, rhs = parse_assumption(assumption)
    return set(lhs.symbols() | rhs.symbols())


def _space(kernel: KernelOp) -> str:
    load = next((op for op in kernel.walk() if isinstance(op, LoadOp)), None)
    return load.space.data if load is not None else "registers"
