"""A load cut to the one lane its uses pick, in an `xt` kernel.

    k  = load in1[b0, 0:HKV, ..]            ->  k  = load in1[b0, b1 floordiv G, ..]  (one head)
    k2 = map k[d0, d1, ..] * k[d0, d1, ..]  ->  k2 over d1 < 1
    r  = reduce add of k2 over the last dim ->  r with 1 in that dim
    .. = map .. r[0, b1 floordiv G, d3] ..  ->  .. r[0, 0, d3] ..

qknorm_gqa normalizes every kv head's k tile and then reads the one at `b1 floordiv G` (the
program's head): each program loads and squares HKV times the k it uses, and the fused
kernel's k tiles pass the H200's shared memory. A load's dim `a` is cut when every value
computed from the load along `a` (maps that keep `a` as a dim of their own, reductions over
other dims) is read, in the end, only at one lane `X` of `a` that depends on no dim of the
reading map (program ids and sizes): the load then reads lane `X` alone (its mask keeps
`X < size`, as the whole load's did for lane `X`), each of those values has 1 in that dim, and
the reads at `X` read lane 0. Every value the kernel stores is unchanged: each read of the
chain's lanes read lane `X` before and reads the same element now.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from axon.dialects import xt
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Read, ScalarExpr, map_reads, reads
from axon.dialects.form.syntax import parse_form


def cut_picked_lanes(kernel: xt.KernelOp) -> int:
    """Cut every load of `kernel` whose uses pick one lane of a dim (module docstring); the
    number of loads cut."""
    count = 0
    for op in list(kernel.walk()):
        if not isinstance(op, xt.LoadOp):
            continue
        for axis in range(len(op.attrs()["shape"])):
            plan = _plan(op, axis)
            if plan is not None:
                _rewrite(op, axis, *plan)
                count += 1
                break
    return count


def _plan(load: xt.LoadOp, axis: int
          ) -> tuple[dict[SSAValue, int], list[xt.MapOp], IntExpr] | None:
    """The values computed along `axis` of the load (each with its axis there), the maps
    that read one of them at the picked lane, and that lane; None when the dim is not cut."""
    attrs = load.attrs()
    one, zero = IntExpr.const(1), IntExpr.const(0)
    if attrs["shape"][axis] == one or attrs["offsets"][axis] != zero:
        return None
    chain: dict[SSAValue, int] = {load.results[0]: axis}
    pickers: list[xt.MapOp] = []
    lane: IntExpr | None = None
    work = [load.results[0]]
    while work:
        value = work.pop()
        at = chain[value]
        for use in value.uses:
            user = use.operation
            if isinstance(user, xt.ReduceOp):
                red = user.attrs()["axis"]
                if red == at:
                    return None
                keep = user.attrs()["keepdims"]
                chain[user.results[0]] = at if keep or red > at else at - 1
                work.append(user.results[0])
                continue
            if not isinstance(user, xt.MapOp):
                return None
            form = parse_form(user.form.data, len(user.inputs))
            dims = {d.name: k for k, d in enumerate(form.parallel)}
            kept: set[int] = set()
            picked = False
            for r in reads(form.body):
                source = user.inputs[r.operand]
                if source not in chain:
                    continue
                index = r.index[chain[source]]
                if index.as_symbol in dims:
                    kept.add(dims[index.as_symbol])
                elif not index.symbols() & set(dims) and lane in (None, index):
                    lane, picked = index, True
                else:
                    return None
            if len(kept) > 1:
                return None
            if kept:
                (k,) = kept
                name = form.parallel[k].name
                if any(user.inputs[r.operand] not in chain
                       and any(name in i.symbols() for i in r.index) for r in reads(form.body)):
                    return None  # another operand varies along the cut dim
                if user.results[0] not in chain:
                    chain[user.results[0]] = k
                    work.append(user.results[0])
            if picked and user not in pickers:
                pickers.append(user)
    if lane is None:
        return None
    return chain, pickers, lane


def _rewrite(load: xt.LoadOp, axis: int, chain: dict[SSAValue, int],
             pickers: list[xt.MapOp], lane: IntExpr) -> None:
    one = IntExpr.const(1)
    kernel = load.parent_op()
    while kernel is not None and not isinstance(kernel, xt.KernelOp):
        kernel = kernel.parent_op()
    assert kernel is not None
    owners = {v.owner for v in chain} | set(pickers)
    for op in list(kernel.walk()):
        if op not in owners:
            continue
        if isinstance(op, xt.LoadOp):
            attrs = op.attrs()
            new: Operation = xt.LoadOp.make(list(op.operands), **{
                **attrs,
                "offsets": [lane if k == axis else o for k, o in enumerate(attrs["offsets"])],
                "shape": [one if k == axis else s for k, s in enumerate(attrs["shape"])],
                "extents": [one if k == axis else e for k, e in enumerate(attrs["extents"])]})
        elif isinstance(op, xt.ReduceOp):
            new = xt.ReduceOp.make(list(op.operands), **op.attrs())
        else:
            assert isinstance(op, xt.MapOp)
            new = _cut_map(op, chain, lane)
        if op.results[0] in chain:
            chain[new.results[0]] = chain.pop(op.results[0])
        _replace(op, new)


def _cut_map(op: xt.MapOp, chain: dict[SSAValue, int], lane: IntExpr) -> Operation:
    """The map over the cut operands: its dim along the cut (if it keeps one) 1, its reads at
    the picked lane at 0."""
    form = parse_form(op.form.data, len(op.inputs))

    def at_zero(r: Read) -> ScalarExpr:
        source = op.inputs[r.operand]
        if source not in chain or r.index[chain[source]] != lane:
            return r
        k = chain[source]
        return Read(r.operand, tuple(IntExpr.const(0) if j == k else i
                                     for j, i in enumerate(r.index)))

    cut = chain.get(op.results[0])
    domain = tuple(LoopDim(d.name, d.lower, IntExpr.const(1)) if k == cut else d
                   for k, d in enumerate(form.parallel))
    body = map_reads(form.body, at_zero)
    return xt.MapOp.make(list(op.inputs), form=str(GenericForm(domain, body, len(op.inputs))),
                         dtype=op.attrs()["dtype"])


def _replace(old: Operation, new: Operation) -> None:
    block = old.parent_block()
    assert block is not None
    block.insert_op_before(new, old)
    old.results[0].replace_all_uses_with(new.results[0])
    old.detach()
    old.erase()
