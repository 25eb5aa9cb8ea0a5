"""A tiled kernel's load cut to the one lane its uses pick (the `tile` level's form of
`targets/xe_triton/lane_cut.py`).

    k  = tile.load in1 [b0, 0, BK*k, 0] [1, HKV, BK, D]  ->  at [b0, b1 floordiv G, ..] [1, 1, ..]
    s  = generic out[d0 < 1, d1 < HKV, d2 < BK] = add of k[0, d1, d2, r0]^2  ->  d1 < 1
    kn = generic out[.., d1 < HKV, ..] = k[0, d1, ..] * rsqrt(s[0, d1, ..])  ->  d1 < 1
    .. = generic out[..] = kn[0, b1 floordiv G, d3, d2] * g[d2]              ->  kn[0, 0, ..]

qknorm_gqa's variants normalize every kv head's k tile and then read the one at
`b1 floordiv G` (the program's query head's kv head): each program loads and normalizes HKV
heads to use one, and its tiles keep a batch dim, which NKI's layout (`targets/nki/squeeze.py`)
cannot hold. A load's dim `a` (read whole, from offset 0) is cut when every value computed from
the load along `a` (generic forms and elementwise ops that keep `a` as a parallel dim of their
own) is read, in the end, only at one lane `X` of `a` that names no loop dim of the reading
form (program ids, sizes, loop indices): the load then reads lane `X` alone (past the
tensor's end it pads as the whole load did at lane `X`), each of those values has 1 in that
dim, and the reads at `X` read lane 0. Every value the kernel stores is unchanged.

Not trusted by its users: the NKI lowering proves the kernel it lowers (cut, then squeezed)
equal to the tiled kernel as it was (`targets/nki/lower.py`).
"""

from __future__ import annotations

from dataclasses import replace

from xdsl.ir import Operation, SSAValue

from axon.dialects.ax import (
    AddOp,
    DivOp,
    ExpOp,
    GenericOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    RsqrtOp,
    SqrtOp,
    SubOp,
    TensorType,
)
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Read, ScalarExpr, map_reads, reads
from axon.dialects.tile import KernelOp, LoadOp

_ONE, _ZERO = IntExpr.const(1), IntExpr.const(0)

#: elementwise ops whose result keeps every dim of an operand of its own rank
_ELEMENTWISE: tuple[type[Operation], ...] = (AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, NegOp,
                                             ExpOp, SqrtOp, RsqrtOp)


def _type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def cut_picked_lanes(kernel: KernelOp) -> int:
    """Cut every load of `kernel` (changed in place) whose uses pick one lane of a dim (module
    docstring); the number of loads cut. Works on the loads of the kernel's body and of its
    loops, one at a time, without recursion."""
    count = 0
    for op in list(kernel.walk()):
        if not isinstance(op, LoadOp):
            continue
        for axis in range(_type(op.result).rank):
            plan = _plan(op, axis)
            if plan is not None:
                _rewrite(op, axis, *plan)
                count += 1
                break
    return count


def _plan(load: LoadOp, axis: int
          ) -> tuple[dict[SSAValue, int], list[Operation], IntExpr] | None:
    """The values computed along `axis` of `load` (each with its axis there), the ops that
    read one of them at the picked lane, and that lane; None when the dim is not cut."""
    t, source = _type(load.result), _type(load.source)
    offsets = [IntExpr.lift(o.data) for o in load.offsets.data]
    if t.shape[axis] == _ONE or offsets[axis] != _ZERO or t.shape[axis] != source.shape[axis]:
        return None
    chain: dict[SSAValue, int] = {load.result: axis}
    pickers: list[Operation] = []
    lane: IntExpr | None = None
    work: list[SSAValue] = [load.result]
    while work:
        value = work.pop()
        at = chain[value]
        for use in value.uses:
            user = use.operation
            if isinstance(user, GenericOp):
                found = _generic_use(user, chain, lane)
                if found is None:
                    return None
                kept, picked = found
                if picked is not None:
                    lane = picked
                    if user not in pickers:
                        pickers.append(user)
                if kept is not None and user.results[0] not in chain:
                    chain[user.results[0]] = kept
                    work.append(user.results[0])
            elif type(user) in _ELEMENTWISE and len(user.results) == 1:
                if _type(user.results[0]).rank != _type(value).rank:
                    return None
                if user.results[0] not in chain:
                    chain[user.results[0]] = at
                    work.append(user.results[0])
            else:
                return None
    # each op keeping the cut dim reads along it only values of the chain (checked once the
    # chain is whole: an operand may join it after its reader was met)
    if lane is None or any(_varies_elsewhere(v.owner, chain) for v in chain
                           if isinstance(v.owner, Operation) and v.owner is not load):
        return None
    return chain, pickers, lane


def _along(t: TensorType, rank: int, at: int) -> IntExpr:
    """The size of `t` along dim `at` of a result of rank `rank` it broadcasts to (numpy's
    trailing alignment; 1 where `t` has no such dim)."""
    k = at - (rank - t.rank)
    return t.shape[k] if k >= 0 else _ONE


def _generic_use(user: GenericOp, chain: dict[SSAValue, int], lane: IntExpr | None
                 ) -> tuple[int | None, IntExpr | None] | None:
    """How `user` reads the chain: the parallel dim of its own that runs along the cut (or
    None) and the lane it picks (or None); None when it reads the chain any other way."""
    form = user.generic_form()
    dims = {d.name: k for k, d in enumerate(form.parallel)}
    loops = set(form.loop_names)
    kept: set[int] = set()
    picked: IntExpr | None = None
    for r in reads(form.body) + (reads(form.finalize) if form.finalize is not None else []):
        src = user.operands[r.operand]
        if src not in chain:
            continue
        index = r.index[chain[src]]
        symbol = index.as_symbol
        if symbol in dims and form.parallel[dims[symbol]].upper == _type(src).shape[chain[src]]:
            kept.add(dims[symbol])
        elif not index.symbols() & loops and lane in (None, index) and picked in (None, index):
            picked = index
        else:
            return None
    if len(kept) > 1:
        return None
    return (kept.pop() if kept else None), picked


def _varies_elsewhere(user: Operation, chain: dict[SSAValue, int]) -> bool:
    """`user`, which keeps the cut dim, reads an operand outside the chain that varies
    along it (its values at the other lanes would be lost)."""
    out = user.results[0]
    if isinstance(user, GenericOp):
        form = user.generic_form()
        name = form.parallel[chain[out]].name
        return any(user.operands[r.operand] not in chain
                   and any(name in i.symbols() for i in r.index) for r in reads(form.body))
    rank = _type(out).rank
    return any(v not in chain and _along(_type(v), rank, chain[out]) != _ONE
               for v in user.operands)


def _rewrite(load: LoadOp, axis: int, chain: dict[SSAValue, int],
             pickers: list[Operation], lane: IntExpr) -> None:
    kernel = load.parent_op()
    while kernel is not None and not isinstance(kernel, KernelOp):
        kernel = kernel.parent_op()
    assert kernel is not None
    owners = {v.owner for v in chain} | set(pickers)
    for op in list(kernel.walk()):  # program order: each op's operands are rewritten first
        if op not in owners:
            continue
        if isinstance(op, LoadOp):
            offsets = [IntExpr.lift(o.data) for o in op.offsets.data]
            shape = [IntExpr.lift(s.data) for s in op.shape.data]
            new: Operation = LoadOp.make(list(op.operands), **{
                **op.attrs(),
                "offsets": [lane if k == axis else o for k, o in enumerate(offsets)],
                "shape": [_ONE if k == axis else s for k, s in enumerate(shape)]})
        elif isinstance(op, GenericOp):
            new = _cut_generic(op, chain, lane)
        else:
            new = type(op).make(list(op.operands), **op.attrs())  # type: ignore[attr-defined]
        if op.results[0] in chain:
            chain[new.results[0]] = chain.pop(op.results[0])
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(new, op)
        op.results[0].replace_all_uses_with(new.results[0])
        block.erase_op(op)


def _cut_generic(op: GenericOp, chain: dict[SSAValue, int], lane: IntExpr) -> Operation:
    """`op` over the cut operands: its dim along the cut (if it keeps one) 1, its reads at the
    picked lane at 0."""
    form = op.generic_form()

    def at_zero(r: Read) -> ScalarExpr:
        src = op.operands[r.operand]
        if src not in chain or r.index[chain[src]] != lane:
            return r
        k = chain[src]
        return Read(r.operand, tuple(_ZERO if j == k else i for j, i in enumerate(r.index)))

    cut = chain.get(op.results[0])
    parallel = tuple(replace(d, upper=_ONE) if k == cut else d
                     for k, d in enumerate(form.parallel))
    finalize = None if form.finalize is None else map_reads(form.finalize, at_zero)
    new = replace(form, parallel=parallel, body=map_reads(form.body, at_zero),
                  finalize=finalize)
    return GenericOp.make(list(op.operands), form=str(new), dtype=op.attrs()["dtype"])
