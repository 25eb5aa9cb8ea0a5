"""Ops without tensor operands: a constant filled with one value (0-d for a scalar literal),
and iota (the index along one axis)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import I64, ArrayAttr, FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import TypeAttribute
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def
from xdsl.traits import ConstantLike, Pure

from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Index, call


def _dtype(attrs: Mapping[str, Any]) -> str:
    dtype = attrs.get("dtype")
    if dtype not in DTYPES:
        raise ShapeError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return dtype


def _domain(shape: Sequence[IntExpr]) -> tuple[tuple[LoopDim, ...], list[str]]:
    names = fresh_names("d", len(shape), {s for d in shape for s in d.symbols()})
    return (tuple(LoopDim(n, IntExpr.const(0), e) for n, e in zip(names, shape, strict=True)),
            list(names))


@irdl_op_definition
class ConstantOp(TensorOp):
    """A tensor of `shape` filled with `value` (shape [] for a scalar)."""

    name = "ax.constant"
    ATTRS: ClassVar[dict[str, str]] = {"value": "float", "shape": "dims", "dtype": "dtype"}
    value = prop_def(FloatAttr)
    shape = prop_def(ArrayAttr[StringAttr])
    dtype = prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm(), ConstantLike())
    assembly_format = "attr-dict `:` type($result)"

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        dtype = _dtype(attrs)
        shape = [IntExpr.lift(d) for d in attrs.get("shape", ())]
        value = float(attrs.get("value", 0.0))
        body = Const(bool(value) if dtype == "i1" else int(value) if dtype == "i32" else value)
        if dtype in ("i1", "i32") and value != int(value):
            raise ShapeError(f"value {value} is not representable in {dtype}")
        par, _ = _domain(shape)
        form = GenericForm(par, body, 0)
        return Semantics(form, TensorType(form.output_shape, dtype))


@irdl_op_definition
class IotaOp(TensorOp):
    """out[.., i, ..] = i along `axis`, converted to `dtype`."""

    name = "ax.iota"
    ATTRS: ClassVar[dict[str, str]] = {"shape": "dims", "axis": "int", "dtype": "dtype"}
    shape = prop_def(ArrayAttr[StringAttr])
    axis = prop_def(IntegerAttr[I64])
    dtype = prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())
    assembly_format = "attr-dict `:` type($result)"

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        dtype = _dtype(attrs)
        if dtype == "i1":
            raise ShapeError("iota needs a numeric dtype, got i1")
        shape = [IntExpr.lift(d) for d in attrs.get("shape", ())]
        axis = int(attrs.get("axis", 0))
        if not 0 <= axis < len(shape):
            raise ShapeError(f"axis {axis} is out of range for shape of rank {len(shape)}")
        par, names = _domain(shape)
        form = GenericForm(par, call("cast", Index(IntExpr.sym(names[axis])), param=dtype), 0)
        return Semantics(form, TensorType(form.output_shape, dtype))
