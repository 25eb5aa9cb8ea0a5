"""The value ops of the `xt` dialect: masked loads and stores, constant blocks, elementwise
math, reductions and `dot`, each a Triton construct on blocks whose dims are `tl.constexpr`
powers of two.

A block's dims are the kernel's block parameters (`BM`, `BK`) or the power of two covering a
whole dim (`B_N`, bound by the kernel's `blocks`); a dim may hold more lanes than the data it
carries (`extents`), and what lies past an extent is masked where it matters: a load reads
`other` there, a store writes nothing there, a reduction leaves it out.

    %x = xt.load %in {offsets = ["BM*i", "0"], shape = ["BM", "B_N"], extents = ["BM", "N"],
                      other = 0.0 : f64} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, B_N], f32>
    %e = xt.map %x {form = "out[d0 < BM, d1 < B_N] = exp(in0[d0, d1])", dtype = f32} : ...
    %s = xt.reduce %e {kind = "add", axis = 1, extent = "N", keepdims = true} : ...
    %c = xt.dot %a, %b, %acc : (...) -> !ax.tensor<[BM, BN], f32>
    xt.store %c {result = 0, offsets = ["BM*i", "BN*j"], extents = ["BM", "BN"]} : ...

Every op that makes a value states its meaning as one generic form (`semantics`), so a lowering
to this level is checked the way the tensor and tiled levels are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import I64, ArrayAttr, BoolAttr, FloatAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import ConstantOp, GenericOp, TensorType
from axon.dialects.ax import CumsumOp as AxCumsumOp
from axon.dialects.ax import ReshapeOp as AxReshapeOp
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Index, Read, call
from axon.dialects.tile.memory import dim_exprs, guarded_read

#: the reductions `xt.reduce` performs (Triton's tl.sum, tl.max, tl.min)
REDUCE_KINDS = ("add", "max", "min")


@irdl_op_definition
class LoadOp(TensorOp):
    """`tl.load` of a block at `offsets + tl.arange(0, B)` per dim, masked to the lanes inside
    the tensor and inside `extents`, `other` elsewhere.

        out[t0 < B0, t1 < B1] = select(t0 < E0 and o0 + t0 < M and t1 < E1 and o1 + t1 < N,
                                       in0[o0 + t0, o1 + t1], other)
    """

    name = "xt.load"
    ATTRS: ClassVar[dict[str, str]] = {"offsets": "dims", "shape": "dims", "extents": "dims",
                                       "other": "float"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"other": 0.0}
    source = operand_def(TensorType)
    offsets = prop_def(ArrayAttr[StringAttr])
    shape = prop_def(ArrayAttr[StringAttr])
    extents = prop_def(ArrayAttr[StringAttr])
    other = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        offsets = dim_exprs(attrs.get("offsets", ()), "offsets", x.rank)
        shape = dim_exprs(attrs.get("shape", ()), "shape", x.rank)
        extents = dim_exprs(attrs.get("extents", ()), "extents", x.rank)
        return guarded_read(x, offsets, shape, float(attrs.get("other", 0.0)), extents)


@irdl_op_definition
class FullOp(TensorOp):
    """`tl.full(shape, value, dtype)`: a block of one value; its meaning is `ax.constant`'s."""

    name = "xt.full"
    ATTRS: ClassVar[dict[str, str]] = {"value": "float", "shape": "dims", "dtype": "dtype"}
    value = prop_def(FloatAttr)
    shape = prop_def(ArrayAttr[StringAttr])
    dtype = prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())
    assembly_format = "attr-dict `:` type($result)"

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        return ConstantOp.semantics(operand_types, attrs)


@irdl_op_definition
class MapOp(TensorOp):
    """Elementwise math on blocks: one Triton expression per element, given as a form with no
    reduction (`tl.exp`, `tl.where`, arithmetic, `tl.arange` for `idx(...)`); a read at a
    size-1 dim broadcasts, a read at a constant index of a longer dim extracts that lane."""

    name = "xt.map"
    ATTRS: ClassVar[dict[str, str]] = {"form": "text", "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    form = prop_def(StringAttr)
    dtype = prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        meaning = GenericOp.semantics(operand_types, attrs)  # ax.generic's, with no reduction
        if meaning.form.reduction is not None:
            raise ShapeError("a map has no reduction (xt.reduce reduces)")
        return meaning


@irdl_op_definition
class ReduceOp(TensorOp):
    """`tl.sum` / `tl.max` / `tl.min` over dim `axis` of a block, over its first `extent`
    lanes (the rest masked to the reduction's identity), keeping the dim as 1 or dropping it.

        out[d0 < BM, d1 < 1] = add over r in [0, extent) of in0[d0, r]
    """

    name = "xt.reduce"
    ATTRS: ClassVar[dict[str, str]] = {"kind": "text", "axis": "int", "extent": "text",
                                       "keepdims": "bool"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"keepdims": True}
    source = operand_def(TensorType)
    kind = prop_def(StringAttr)
    axis = prop_def(IntegerAttr[I64])
    extent = prop_def(StringAttr)
    keepdims = prop_def(BoolAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        kind = attrs.get("kind")
        if kind not in REDUCE_KINDS:
            raise ShapeError(f"kind {kind!r} is not one of {', '.join(REDUCE_KINDS)}")
        axis = int(attrs.get("axis", -1))
        if not 0 <= axis < x.rank:
            raise ShapeError(f"axis {axis} is not a dim of a block of rank {x.rank}")
        try:
            extent = IntExpr.lift(str(attrs.get("extent", "")))
        except ValueError as err:
            raise ShapeError(f"extent: {err}") from None
        keep = bool(attrs.get("keepdims", True))
        avoid = {s for e in (*x.shape, extent) for s in e.symbols()}
        names = fresh_names("d", x.rank, avoid)
        (red,) = fresh_names("r", 1, avoid | set(names))
        index = tuple(IntExpr.sym(red) if k == axis else IntExpr.sym(n)
                      for k, n in enumerate(names))
        par = tuple(LoopDim(n, IntExpr.const(0), IntExpr.const(1) if k == axis else d)
                    for k, (n, d) in enumerate(zip(names, x.shape, strict=True))
                    if keep or k != axis)
        form = GenericForm(par, Read(0, index), 1, kind,
                           (LoopDim(red, IntExpr.const(0), extent),))
        return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class DotOp(TensorOp):
    """`tl.dot(a, b, acc)`: a block matmul accumulated into `acc`, in `acc`'s dtype (fp32 for
    bf16 inputs).

        out[i < BM, j < BN] = add over k in [0, BK) of
                              in0[i, k] * in1[k, j] + select(k == 0, in2[i, j], 0.0)
    """

    name = "xt.dot"
    ATTRS: ClassVar[dict[str, str]] = {}
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    acc = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        a, b, acc = operand_types
        if a.rank != 2 or b.rank != 2 or acc.rank != 2:
            raise ShapeError("xt.dot takes blocks of rank 2")
        if a.shape[1] != b.shape[0]:
            raise ShapeError(f"contracted dims differ: {a.shape[1]} and {b.shape[0]}")
        if acc.shape != (a.shape[0], b.shape[1]):
            raise ShapeError(f"the accumulator is [{', '.join(map(str, acc.shape))}], the "
                             f"product [{a.shape[0]}, {b.shape[1]}]")
        if not DTYPES[acc.dtype].is_float:
            raise ShapeError(f"the accumulator has dtype {acc.dtype}, not a float")
        avoid = {s for e in (*a.shape, *b.shape) for s in e.symbols()}
        i, j, k = fresh_names("d", 3, avoid)
        si, sj, sk = IntExpr.sym(i), IntExpr.sym(j), IntExpr.sym(k)
        first = call("select", call("eq", Index(sk), Const(0)), Read(2, (si, sj)), Const(0.0))
        body = call("add", call("mul", Read(0, (si, sk)), Read(1, (sk, sj))), first)
        form = GenericForm((LoopDim(i, IntExpr.const(0), a.shape[0]),
                            LoopDim(j, IntExpr.const(0), b.shape[1])), body, 3, "add",
                           (LoopDim(k, IntExpr.const(0), a.shape[1]),))
        return Semantics(form, TensorType(form.output_shape, acc.dtype))


@irdl_op_definition
class ReshapeOp(TensorOp):
    """`tl.reshape(x, shape)`: the block's lanes in row-major order laid out as `shape` (the
    lowering uses it only where that keeps every lane holding data at the element it holds:
    unit dims dropped or added, or dims merged whose inner blocks hold no padding). Its meaning
    is `ax.reshape`'s on the blocks."""

    name = "xt.reshape"
    ATTRS: ClassVar[dict[str, str]] = {"shape": "dims"}
    source = operand_def(TensorType)
    shape = prop_def(ArrayAttr[StringAttr])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        return AxReshapeOp.semantics(operand_types, attrs)


@irdl_op_definition
class SplitOp(TensorOp):
    """`tl.split(x)[half]`: lane `half` (0 or 1) of a block whose last dim is 2, that dim dropped
    (the even or the odd elements of an interleaved row, after a reshape to `[.., B, 2]`).

        out[d0 < B0, d1 < B1] = in0[d0, d1, half]
    """

    name = "xt.split"
    ATTRS: ClassVar[dict[str, str]] = {"half": "int"}
    source = operand_def(TensorType)
    half = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        if x.rank < 1 or x.shape[-1] != IntExpr.const(2):
            raise ShapeError(f"xt.split takes a block whose last dim is 2, not "
                             f"[{', '.join(map(str, x.shape))}]")
        half = int(attrs.get("half", -1))
        if half not in (0, 1):
            raise ShapeError(f"half {half} is not 0 or 1")
        avoid = {s for e in x.shape for s in e.symbols()}
        names = fresh_names("d", x.rank - 1, avoid)
        par = tuple(LoopDim(n, IntExpr.const(0), d)
                    for n, d in zip(names, x.shape[:-1], strict=True))
        index = (*(IntExpr.sym(n) for n in names), IntExpr.const(half))
        form = GenericForm(par, Read(0, index), 1)
        return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class JoinOp(TensorOp):
    """`tl.join(a, b)`: two blocks of one shape side by side in a new last dim of 2 (the
    inverse of `xt.split`; reshaped, an interleaved row).

        out[d0 < B0, d1 < 2] = select(d1 == 0, in0[d0], in1[d0])
    """

    name = "xt.join"
    ATTRS: ClassVar[dict[str, str]] = {}
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        a, b = operand_types
        if a != b:
            raise ShapeError(f"xt.join takes two blocks of one type, not {a} and {b}")
        avoid = {s for e in a.shape for s in e.symbols()}
        names = fresh_names("d", a.rank + 1, avoid)
        par = tuple(LoopDim(n, IntExpr.const(0), d)
                    for n, d in zip(names, (*a.shape, IntExpr.const(2)), strict=True))
        index = tuple(IntExpr.sym(n) for n in names[:-1])
        body = call("select", call("eq", Index(IntExpr.sym(names[-1])), Const(0)),
                    Read(0, index), Read(1, index))
        form = GenericForm(par, body, 2)
        return Semantics(form, TensorType(form.output_shape, a.dtype))


@irdl_op_definition
class CumsumOp(TensorOp):
    """`tl.cumsum(x, axis)`: the inclusive prefix sum along `axis`; a lane reads only the
    lanes before it, so the lanes past a dim's extent change none that hold data. Its meaning
    is `ax.cumsum`'s on the block.

        out[d0 < BM, d1 < B_N] = add over r in [0, d1 + 1) of in0[d0, r]
    """

    name = "xt.cumsum"
    ATTRS: ClassVar[dict[str, str]] = {"axis": "int"}
    source = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        return AxCumsumOp.semantics(operand_types, attrs)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`tl.store` of a block into result #`result` of the kernel at `offsets + tl.arange`,
    masked to the lanes inside the result and inside `extents` (converted to its dtype)."""

    name = "xt.store"
    value = operand_def(TensorType)
    result = prop_def(IntegerAttr[I64])
    offsets = prop_def(ArrayAttr[StringAttr])
    extents = opt_prop_def(ArrayAttr[StringAttr])
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: Any, result: int, offsets: Sequence[Any],
                 extents: Sequence[Any]) -> None:
        super().__init__(operands=[value], properties={
            "result": IntegerAttr(result, i64),
            "offsets": ArrayAttr([StringAttr(str(IntExpr.lift(o))) for o in offsets]),
            "extents": ArrayAttr([StringAttr(str(IntExpr.lift(e))) for e in extents])})

    def offset_exprs(self) -> list[IntExpr]:
        return [IntExpr.lift(s.data) for s in self.offsets.data]

    def extent_exprs(self) -> list[IntExpr]:
        """The lanes of each dim that hold data (the block's dims where none are given)."""
        if self.extents is None:
            value = self.value.type
            assert isinstance(value, TensorType)
            return list(value.shape)
        return [IntExpr.lift(s.data) for s in self.extents.data]

    def verify_(self) -> None:
        value = self.value.type
        assert isinstance(value, TensorType)
        try:
            offsets, extents = self.offset_exprs(), self.extent_exprs()
        except ValueError as err:
            raise VerifyException(f"'xt.store': {err}") from None
        for what, exprs in (("offsets", offsets), ("extents", extents)):
            if len(exprs) != value.rank:
                raise VerifyException(f"'xt.store': {len(exprs)} {what} for a block of rank "
                                      f"{value.rank}")
