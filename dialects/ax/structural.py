"""Data-movement ops: transpose, reshape (row-major, quasi-affine index maps), broadcast_to,
slice with step, and concat (a select over index ranges)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import I64, ArrayAttr, DenseArrayBase, IntegerAttr, StringAttr, i64
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ONE, ShapeError, fmt_shape, product
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Index, Read, ScalarExpr, call


def _parallel(types: Sequence[TensorType], out: Sequence[IntExpr]
              ) -> tuple[tuple[LoopDim, ...], list[IntExpr]]:
    avoid = {s for t in types for d in t.shape for s in d.symbols()}
    avoid |= {s for d in out for s in d.symbols()}
    names = fresh_names("d", len(out), avoid)
    return (tuple(LoopDim(n, IntExpr.const(0), e) for n, e in zip(names, out, strict=True)),
            [IntExpr.sym(n) for n in names])


@irdl_op_definition
class TransposeOp(TensorOp):
    """Permute dims: out dim i is input dim perm[i]."""

    name = "ax.transpose"
    ATTRS: ClassVar[dict[str, str]] = {"perm": "ints"}
    input = operand_def(TensorType)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        perm = tuple(attrs.get("perm", ()))
        if sorted(perm) != list(range(x.rank)):
            raise ShapeError(f"perm {list(perm)} is not a permutation of the {x.rank} dims of "
                             f"operand #0 (input) {fmt_shape(x.shape)}")
        out = [x.shape[p] for p in perm]
        par, d = _parallel(operand_types, out)
        index = [IntExpr.const(0)] * x.rank
        for i, p in enumerate(perm):
            index[p] = d[i]
        form = GenericForm(par, Read(0, tuple(index)), 1)
        return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class ReshapeOp(TensorOp):
    """Row-major reshape; the element counts must be equal as polynomials in the sizes."""

    name = "ax.reshape"
    ATTRS: ClassVar[dict[str, str]] = {"shape": "dims"}
    input = operand_def(TensorType)
    shape = prop_def(ArrayAttr[StringAttr])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        out = [IntExpr.lift(d) for d in attrs.get("shape", ())]
        if product(out) != product(x.shape):
            raise ShapeError(f"cannot reshape operand #0 (input) {fmt_shape(x.shape)} "
                             f"({product(x.shape)} elements) to {fmt_shape(out)} "
                             f"({product(out)} elements)")
        par, d = _parallel(operand_types, out)
        kept_in = [j for j, dim in enumerate(x.shape) if dim != ONE]
        kept_out = [i for i, dim in enumerate(out) if dim != ONE]
        if [x.shape[j] for j in kept_in] == [out[i] for i in kept_out]:
            # only unit dims put in or taken out: each other dim reads its own (the row-major
            # order is the same), with no flattened index for the prover to take apart
            read = [IntExpr.const(0)] * x.rank
            for j, i in zip(kept_in, kept_out, strict=True):
                read[j] = d[i]
            form = GenericForm(par, Read(0, tuple(read)), 1)
            return Semantics(form, TensorType(form.output_shape, x.dtype))
        grouped = _grouped_index(list(x.shape), out, d)
        if grouped is None:  # the whole index flattened and taken apart again
            linear = IntExpr.const(0)
            for i, dim in enumerate(d):
                linear = linear + dim * product(out[i + 1:])
            grouped = []
            for j in range(x.rank):
                part = linear.floordiv(product(x.shape[j + 1:]))
                grouped.append(part if j == 0 else part.mod(x.shape[j]))
        form = GenericForm(par, Read(0, tuple(grouped)), 1)
        return Semantics(form, TensorType(form.output_shape, x.dtype))


def _grouped_index(shape: list[IntExpr], out: list[IntExpr], d: Sequence[IntExpr]
                   ) -> list[IntExpr] | None:
    """The index of `shape` that `out`'s index `d` reads through a row-major reshape, where
    the dims pair up left to right as groups of one dim against a run of the other whose
    product it is (`[B, HKV, G, L, D] -> [B, HKV*G, L, D]`: `HKV*G` against `HKV, G`): each
    group's index is flattened and taken apart alone, so the prover meets `h floordiv G`
    rather than the whole flattened index. None where the dims do not pair up so."""
    index: list[IntExpr] = []
    i = j = 0
    while i < len(shape) and j < len(out):
        if shape[i] == out[j]:
            index.append(d[j])
            i, j = i + 1, j + 1
            continue
        merge = next((k for k in range(2, len(shape) - i + 1)
                      if product(shape[i:i + k]) == out[j]), None)
        if merge is not None:  # shape[i:i+merge] flattened into out[j]
            for m in range(merge):
                part = d[j].floordiv(product(shape[i + m + 1:i + merge]))
                index.append(part if m == 0 else part.mod(shape[i + m]))
            i, j = i + merge, j + 1
            continue
        split = next((k for k in range(2, len(out) - j + 1)
                      if product(out[j:j + k]) == shape[i]), None)
        if split is None:
            return None
        linear = IntExpr.const(0)  # out[j:j+split] flattened into shape[i]
        for m in range(split):
            linear = linear + d[j + m] * product(out[j + m + 1:j + split])
        index.append(linear)
        i, j = i + 1, j + split
    # what is left on either side is unit dims (read at 0; the element counts are equal)
    if any(dim != ONE for dim in [*shape[i:], *out[j:]]):
        return None
    return index + [IntExpr.const(0)] * (len(shape) - i)


@irdl_op_definition
class BroadcastToOp(TensorOp):
    """Broadcast to `shape` with NumPy's rules (align right; size-1 dims stretch)."""

    name = "ax.broadcast_to"
    ATTRS: ClassVar[dict[str, str]] = {"shape": "dims"}
    input = operand_def(TensorType)
    shape = prop_def(ArrayAttr[StringAttr])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        out = [IntExpr.lift(d) for d in attrs.get("shape", ())]
        lead = len(out) - x.rank
        if lead < 0:
            raise ShapeError(f"cannot broadcast operand #0 (input) {fmt_shape(x.shape)} to the "
                             f"lower rank {fmt_shape(out)}")
        par, d = _parallel(operand_types, out)
        index = []
        for k, dim in enumerate(x.shape):
            if dim == out[lead + k]:
                index.append(d[lead + k])
            elif dim == ONE:
                index.append(IntExpr.const(0))
            else:
                raise ShapeError(f"cannot broadcast operand #0 (input) dim {k} ({dim}) to "
                                 f"{out[lead + k]} in {fmt_shape(out)}: dims must be equal or 1")
        form = GenericForm(par, Read(0, tuple(index)), 1)
        return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class SliceOp(TensorOp):
    """Strided slice: out[.., i, ..] = x[.., start + step*i, ..]
    for i < ceil((stop - start) / step).

    `start`, `stop` and `step` give one entry per dim (sizes may be symbolic); step must be a
    positive constant and 0 <= start <= stop <= dim where that can be decided."""

    name = "ax.slice"
    ATTRS: ClassVar[dict[str, str]] = {"start": "dims", "stop": "dims", "step": "dims"}
    input = operand_def(TensorType)
    start = prop_def(ArrayAttr[StringAttr])
    stop = prop_def(ArrayAttr[StringAttr])
    step = prop_def(ArrayAttr[StringAttr])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        start, stop, step = ([IntExpr.lift(v) for v in attrs.get(k, ())]
                             for k in ("start", "stop", "step"))
        if not len(start) == len(stop) == len(step) == x.rank:
            raise ShapeError(f"start, stop and step need {x.rank} entries each (one per dim of "
                             f"operand #0 (input)), got {len(start)}, {len(stop)}, {len(step)}")
        out = []
        for k, (lo, hi, st, dim) in enumerate(zip(start, stop, step, x.shape, strict=True)):
            if not st.is_const or st.value < 1:
                raise ShapeError(f"dim {k}: step {st} must be a positive integer constant")
            for what, a, b in (("start", IntExpr.const(0), lo), ("stop", lo, hi), ("dim", hi, dim)):
                gap = b - a
                if gap.is_const and gap.value < 0:
                    raise ShapeError(f"dim {k}: slice [{lo}:{hi}:{st}] does not fit in extent "
                                     f"{dim} (needs 0 <= start <= stop <= dim; {what} breaks it)")
            out.append((hi - lo).ceildiv(st))
        par, d = _parallel(operand_types, out)
        index = tuple(lo + st * di for lo, st, di in zip(start, step, d, strict=True))
        form = GenericForm(par, Read(0, index), 1)
        return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class ConcatOp(TensorOp):
    """Concatenate along `axis`; other dims must agree."""

    name = "ax.concat"
    ATTRS: ClassVar[dict[str, str]] = {"axis": "int"}
    inputs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        if not operand_types:
            raise ShapeError("concat needs at least one operand")
        first = operand_types[0]
        axis = int(attrs.get("axis", 0))
        if not 0 <= axis < first.rank:
            raise ShapeError(f"axis {axis} is out of range for rank {first.rank}")
        for i, t in enumerate(operand_types[1:], 1):
            if t.dtype != first.dtype:
                raise ShapeError(f"operand #{i} has element type {t.dtype}, expected {first.dtype}")
            if t.rank != first.rank or any(a != b for k, (a, b) in
                                           enumerate(zip(t.shape, first.shape, strict=True))
                                           if k != axis):
                raise ShapeError(f"operand #{i} {fmt_shape(t.shape)} does not match operand #0 "
                                 f"{fmt_shape(first.shape)} outside axis {axis}")
        out = list(first.shape)
        out[axis] = sum((t.shape[axis] for t in operand_types[1:]), first.shape[axis])
        par, d = _parallel(operand_types, out)
        offsets = [IntExpr.const(0)]
        for t in operand_types:
            offsets.append(offsets[-1] + t.shape[axis])

        def read(i: int) -> Read:
            return Read(i, tuple(di - offsets[i] if k == axis else di for k, di in enumerate(d)))

        body: ScalarExpr = read(len(operand_types) - 1)
        for i in reversed(range(len(operand_types) - 1)):
            body = call("select", call("lt", Index(d[axis]), Index(offsets[i + 1])), read(i), body)
        form = GenericForm(par, body, len(operand_types))
        return Semantics(form, TensorType(form.output_shape, first.dtype))
