"""A batched tiled kernel's tiles without their leading unit dims, the layout NKI needs.

A batched tiling (`batched_rows_k`, ...) runs one program per batch coordinate, so its tiles
are `[1, 1, BM, D]`: every dim but the last two of size 1. NKI holds a tile with its first dim
on the partitions (reference/nki.md 2.1), so such a tile would use one partition of 128. This
module rewrites the kernel so that every such tile is `[BM, D]`:

    %7 = tile.load %q {offsets = ["b0", "b1", "BM*i", "0"], shape = ["1", "1", "BM", "D"]}
 -> %7 = tile.load ... (unchanged), %8 = ax.reshape %7 {shape = ["BM", "D"]}

each op then computes on the rank-2 tiles (an `ax.generic`'s form drops the unit dims: its
reads of them index 0), and a stored tile is reshaped back before its `tile.store`. The
reshapes next to the loads and stores become the DMAs themselves (`lower.py`: a DMA needs
only equal element counts; `emit.py` prints the batch coordinates as integer indices).

The rewrite is not trusted: the lowering of the squeezed kernel is proved equal to the
original tiled kernel (`lower.lower_and_prove`). A kernel holding a tile of rank 3 or more
with a leading dim other than 1 (`[1, HKV, BK, D]`), a loop stating an invariant, or an op
this module does not know how to retype is left as it is (`squeezed` returns None).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.ir import Block, Operation, SSAValue

from axon.dialects.ax import (
    ConstantOp,
    GenericOp,
    ReshapeOp,
    TensorType,
    TransposeOp,
)
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Read, ScalarExpr, map_reads, substitute
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.dialects.tile.rebuild import KernelRebuild

_ONE = IntExpr.const(1)
_ZERO = IntExpr.const(0)


class _Unsqueezable(Exception):
    """The kernel keeps its layout (the reason is for tests and reports)."""


def _type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def unit_lead(block: TensorType, held: TensorType) -> int:
    """How many leading unit dims `block` has that `held` lacks, where `held` is `block`
    without them (a squeezed tile and its block); 0 otherwise."""
    k = block.rank - held.rank
    ones = all(d == _ONE for d in block.shape[:k])
    return k if k >= 1 and ones and tuple(block.shape[k:]) == tuple(held.shape) else 0


def _leading_ones(t: TensorType) -> int:
    count = 0
    while count < t.rank and t.shape[count] == _ONE:
        count += 1
    return count


def _batch_dims(types: list[TensorType]) -> int:
    """How many leading dims every tile of rank 3 or more has of size 1 (the batch dims of a
    batched kernel: its blocks `[1, 1, BM, D]`, its per-row values `[1, 1, BM]`), each tile
    keeping one or two dims; 0 where there is no such tile. `_Unsqueezable` when a tile keeps
    a batch dim (`[1, HKV, BK, D]`) or would keep more than two dims."""
    big = [t for t in types if t.rank >= 3]
    if not big:
        return 0
    count = min(min(_leading_ones(t), t.rank - 1) for t in big)
    if count == 0 or any(_cut(t, count) is None for t in big):
        raise _Unsqueezable("a tile keeps a batch dim or more than two dims")
    return count


def _cut(t: TensorType, batch: int) -> int | None:
    """The leading unit dims a tile of rank 3 or more loses: the kernel's `batch` dims, and
    more where it would keep more than two dims and the next are ones too (a broadcast
    operand's `[1, 1, 1, BM, D]` beside `[1, 1, BM, D]` tiles); None where it cannot."""
    cut = max(batch, t.rank - 2)
    return cut if _leading_ones(t) >= cut else None


def squeezed(kernel: KernelOp) -> KernelOp | None:
    """`kernel` with every tile of rank 3 or more held without its leading unit dims, or None
    where it has no such tile or cannot be rewritten (see the module docstring)."""
    ops = [op for op in kernel.walk() if op is not kernel]
    types = [_type(r) for op in ops for r in op.results if isinstance(r.type, TensorType)]
    try:
        batch = _batch_dims(types)
        return _Squeeze(kernel, batch=batch).rebuild(list(kernel.inputs)) if batch else None
    except _Unsqueezable:
        return None


@dataclass
class _Squeeze(KernelRebuild):
    batch: int = 0

    def cut(self, t: TensorType) -> int:
        """The leading unit dims a tile of type `t` loses (tiles of rank 3 or more; `_cut`)."""
        if t.rank < 3:
            return 0
        cut = _cut(t, self.batch)
        if cut is None:
            raise _Unsqueezable(f"a tile {t} keeps a batch dim or more than two dims")
        return cut

    def squeezed_type(self, t: TensorType) -> TensorType:
        return TensorType(t.shape[self.cut(t):], t.dtype)

    def rebuild_op(self, op: Operation, target: Block) -> list[tuple[Block, Block]]:
        if isinstance(op, ForOp):
            if op.invariant is not None:
                raise _Unsqueezable("a loop states an invariant about its unsqueezed tiles")
            return self.loop(op, target)[1]
        if isinstance(op, YieldOp):
            target.add_op(YieldOp(*[self.values[v] for v in op.values]))
        elif isinstance(op, StoreOp):
            value = self.values[op.value]
            whole = _type(op.value)
            if _type(value).shape != whole.shape:
                value = self.add(target, ReshapeOp.make([value], shape=list(whole.shape)))
            target.add_op(StoreOp(value, op.result.value.data, op.offset_exprs()))
        elif isinstance(op, LoadOp):
            new = op.clone()
            new.operands = [self.values[op.source]]  # type: ignore[assignment]
            loaded = self.add(target, new)
            t = _type(op.result)
            if self.cut(t):
                loaded = self.add(target, ReshapeOp.make(
                    [loaded], shape=list(self.squeezed_type(t).shape)))
            self.values[op.result] = loaded
        elif isinstance(op, FullOp):
            t = self.squeezed_type(_type(op.result))
            self.values[op.result] = self.add(target, FullOp.make(
                [], value=op.value.value.data, shape=list(t.shape), dtype=t.dtype,
                space=op.space.data))
        elif isinstance(op, ConstantOp):
            self.values[op.results[0]] = self.add(target, op.clone())
        else:
            self.values[op.results[0]] = self.add(target, self.compute(op))
        return []

    def compute(self, op: Operation) -> Operation:
        if len(op.results) != 1 or not hasattr(op, "make"):
            raise _Unsqueezable(f"'{op.name}' is not a one-result tensor op")
        operands = [self.values[v] for v in op.operands]
        attrs = dict(op.attrs())  # type: ignore[attr-defined]
        cut = self.cut(_type(op.results[0]))
        if isinstance(op, GenericOp):
            form = _squeezed_form(op.generic_form(), cut,
                                  [self.cut(_type(v)) for v in op.operands])
            attrs["form"] = str(form)
        elif isinstance(op, TransposeOp):
            perm = [int(a) for a in attrs["perm"]]
            if perm[:cut] != list(range(cut)):
                raise _Unsqueezable("a transpose moves a unit dim it drops")
            attrs["perm"] = [a - cut for a in perm[cut:]]
        elif isinstance(op, ReshapeOp):
            attrs["shape"] = list(self.squeezed_type(_type(op.results[0])).shape)
        elif "axes" in attrs:
            rank = _type(op.operands[0]).rank
            gone = self.cut(_type(op.operands[0]))
            axes = [int(a) % rank - gone for a in attrs["axes"]]
            if any(a < 0 for a in axes):
                raise _Unsqueezable(f"'{op.name}' reduces over a unit dim it drops")
            attrs["axes"] = axes
        elif any(isinstance(v, (list, tuple)) for v in attrs.values()) \
                and (cut or any(self.cut(_type(v)) for v in op.operands)):
            raise _Unsqueezable(f"'{op.name}' has dims among its properties")
        made = type(op).make(operands, **attrs)  # type: ignore[attr-defined]
        if _type(made.results[0]) != self.squeezed_type(_type(op.results[0])):
            raise _Unsqueezable(f"'{op.name}' does not keep its shape when squeezed")
        return made


def _squeezed_form(form: GenericForm, cut: int, operand_cuts: list[int]) -> GenericForm:
    """`form` without its first `cut` parallel dims (each `[0, 1)`, read as 0) and without the
    first `operand_cuts[k]` indices of each read of operand k (each 0 once the dropped dims
    read 0)."""
    lead = form.parallel[:cut]
    if any(d.lower != _ZERO or d.upper != _ONE for d in lead):
        raise _Unsqueezable(f"the form `{form}` has a leading dim other than [0, 1)")
    zero = {d.name: _ZERO for d in lead}

    def read(r: Read) -> ScalarExpr:
        index = [i.substitute(zero) for i in r.index]
        n = operand_cuts[r.operand]
        if any(i != _ZERO for i in index[:n]):
            raise _Unsqueezable(f"the form `{form}` reads a dropped dim at a nonzero index")
        return Read(r.operand, tuple(index[n:]))

    body = map_reads(substitute(form.body, zero), read)
    finalize = None if form.finalize is None else \
        map_reads(substitute(form.finalize, zero), read)
    return replace(form, parallel=form.parallel[cut:], body=body, finalize=finalize)
