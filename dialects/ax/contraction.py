"""Ops that reduce over a dim: batched matmul (NumPy rules), reductions with axes and keepdims,
and cumsum (a triangular reduction domain)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import I64, BoolAttr, DenseArrayBase, IntegerAttr, i64
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError, broadcast_shapes, fmt_shape, product
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Index, Read, Reduced, call


def _symbols(types: Sequence[TensorType]) -> set[str]:
    return {s for t in types for d in t.shape for s in d.symbols()}


@irdl_op_definition
class MatmulOp(TensorOp):
    """`a @ b` with NumPy's rules: 1-D operands are promoted and the added dim dropped,
    leading (batch) dims broadcast."""

    name = "ax.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        a, b = operand_types
        if a.dtype != b.dtype:
            raise ShapeError(f"operand #1 (rhs) has element type {b.dtype}, expected {a.dtype}")
        if not DTYPES[a.dtype].is_float and a.dtype != "i32":
            raise ShapeError(f"matmul needs numbers, operands are {a.dtype}")
        if a.rank == 0 or b.rank == 0:
            raise ShapeError("matmul operands must have rank >= 1; use mul for scalars")
        a_shape, b_shape = a.shape, b.shape
        a_vec, b_vec = a.rank == 1, b.rank == 1
        a2 = (IntExpr.const(1), *a_shape) if a_vec else a_shape
        b2 = (*b_shape, IntExpr.const(1)) if b_vec else b_shape
        k_a, k_b = a2[-1], b2[-2]
        if k_a != k_b:
            raise ShapeError(
                f"contracted dims differ: operand #0 (lhs) {fmt_shape(a_shape)} has {k_a} in its "
                f"last dim, operand #1 (rhs) {fmt_shape(b_shape)} has {k_b} in dim "
                f"{max(b.rank - 2, 0)}")
        batch = broadcast_shapes([a2[:-2], b2[:-2]],
                                 ["operand #0 (lhs) batch", "operand #1 (rhs) batch"])
        avoid = _symbols(operand_types)
        nb = len(batch)
        par_names = fresh_names("d", nb + 2, avoid)
        (red,) = fresh_names("r", 1, avoid)
        out_dims = [*batch, a2[-2], b2[-1]]
        par = [LoopDim(n, IntExpr.const(0), e) for n, e in zip(par_names, out_dims, strict=True)]

        def batch_index(shape: Sequence[IntExpr]) -> list[IntExpr]:
            lead = nb - len(shape)
            one = IntExpr.const(1)
            return [IntExpr.const(0) if d == one and batch[lead + k] != one
                    else IntExpr.sym(par_names[lead + k]) for k, d in enumerate(shape)]

        m, n, k = IntExpr.sym(par_names[nb]), IntExpr.sym(par_names[nb + 1]), IntExpr.sym(red)
        a_index = [k] if a_vec else [*batch_index(a2[:-2]), m, k]
        b_index = [k] if b_vec else [*batch_index(b2[:-2]), k, n]
        body = call("mul", Read(0, tuple(a_index)), Read(1, tuple(b_index)))
        # drop the promoted unit dims from the output, as NumPy does; the 1-D operand has no
        # index for them, so the body never mentions them
        par = [p for i, p in enumerate(par)
               if not (a_vec and i == nb) and not (b_vec and i == nb + 1)]
        form = GenericForm(tuple(par), body, 2, "add", (LoopDim(red, IntExpr.const(0), k_a),))
        return Semantics(form, TensorType(form.output_shape, a.dtype))


class ReduceOp(TensorOp):
    """Reduce over `axes` with REDUCTION; `keepdims` keeps them as size-1 dims."""

    REDUCTION: ClassVar[str]
    ATTRS: ClassVar[dict[str, str]] = {"axes": "ints", "keepdims": "bool"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"keepdims": False}
    input = operand_def(TensorType)
    axes = prop_def(DenseArrayBase.constr(i64))
    keepdims = prop_def(BoolAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def finalizer(cls, extent: IntExpr) -> Any:
        """Applied to the reduced value; only mean has one."""
        del extent
        return None

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        axes = tuple(attrs.get("axes", ()))
        keepdims = bool(attrs.get("keepdims", False))
        if not axes:
            raise ShapeError("reduction needs at least one axis")
        for a in axes:
            if not 0 <= a < x.rank:
                raise ShapeError(f"axis {a} is out of range for operand #0 (input) of rank "
                                 f"{x.rank}")
        if len(set(axes)) != len(axes) or list(axes) != sorted(axes):
            raise ShapeError(f"axes {list(axes)} must be distinct and increasing")
        if x.dtype == "i1" or (cls.finalizer(IntExpr.const(1)) is not None
                               and not DTYPES[x.dtype].is_float):
            raise ShapeError(f"'{cls.name}' does not apply to element type {x.dtype}")
        shape = x.shape
        avoid = _symbols(operand_types)
        kept = [i for i in range(x.rank) if i not in axes or keepdims]
        par_names = fresh_names("d", len(kept), avoid)
        red_names = fresh_names("r", len(axes), avoid)
        par, index = [], []
        by_axis = dict(zip(axes, red_names, strict=True))
        names = iter(par_names)
        for i in range(x.rank):
            if i in by_axis:
                if keepdims:
                    par.append(LoopDim(next(names), IntExpr.const(0), IntExpr.const(1)))
                index.append(IntExpr.sym(by_axis[i]))
            else:
                name = next(names)
                par.append(LoopDim(name, IntExpr.const(0), shape[i]))
                index.append(IntExpr.sym(name))
        reduced = tuple(LoopDim(by_axis[a], IntExpr.const(0), shape[a]) for a in axes)
        form = GenericForm(tuple(par), Read(0, tuple(index)), 1, cls.REDUCTION, reduced,
                           cls.finalizer(product([shape[a] for a in axes])))
        return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class SumOp(ReduceOp):
    """Sum over `axes`."""

    name = "ax.sum"
    REDUCTION: ClassVar[str] = "add"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over `axes`."""

    name = "ax.reduce_max"
    REDUCTION: ClassVar[str] = "max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over `axes`."""

    name = "ax.reduce_min"
    REDUCTION: ClassVar[str] = "min"


@irdl_op_definition
class ProdOp(ReduceOp):
    """Product over `axes`."""

    name = "ax.prod"
    REDUCTION: ClassVar[str] = "mul"


@irdl_op_definition
class MeanOp(ReduceOp):
    """Mean over `axes`: a sum finalized by division by the reduced extent."""

    name = "ax.mean"
    REDUCTION: ClassVar[str] = "add"

    @classmethod
    def finalizer(cls, extent: IntExpr) -> Any:
        return call("div", Reduced(), Index(extent))


REDUCE_OPS: tuple[type[ReduceOp], ...] = (SumOp, ReduceMaxOp, ReduceMinOp, ProdOp, MeanOp)


@irdl_op_definition
class CumsumOp(TensorOp):
    """Inclusive prefix sum along `axis`:
    out[.., j, ..] = sum over k in [0, j + 1) of x[.., k, ..]."""

    name = "ax.cumsum"
    ATTRS: ClassVar[dict[str, str]] = {"axis": "int"}
    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        if "axis" not in attrs:
            raise ShapeError("missing the 'axis' attribute")
        axis = int(attrs["axis"])
        if not 0 <= axis < x.rank:
            raise ShapeError(f"axis {axis} is out of range for operand #0 (input) of rank {x.rank}")
        if x.dtype == "i1":
            raise ShapeError("'ax.cumsum' does not apply to element type i1")
        avoid = _symbols(operand_types)
        par_names = fresh_names("d", x.rank, avoid)
        (red,) = fresh_names("r", 1, avoid)
        par = tuple(LoopDim(n, IntExpr.const(0), e)
                    for n, e in zip(par_names, x.shape, strict=True))
        index = tuple(IntExpr.sym(red) if i == axis else IntExpr.sym(n)
                      for i, n in enumerate(par_names))
        reduced = (LoopDim(red, IntExpr.const(0), IntExpr.sym(par_names[axis]) + 1),)
        form = GenericForm(par, Read(0, index), 1, "add", reduced)
        return Semantics(form, TensorType(form.output_shape, x.dtype))
