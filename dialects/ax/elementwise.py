"""Elementwise ops: unary functions, binary arithmetic with NumPy broadcasting, comparisons,
pow by a constant, select (where) and cast. Each is one scalar function of the scalar language
applied at matching (broadcast) indices."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import FloatAttr, TypeAttribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from axon.dialects.ax.op_base import TensorOp, operand_names
from axon.dialects.ax.shapes import ONE, Shape, ShapeError, broadcast_shapes
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import FUNCTIONS, Read, ScalarExpr, call


def elementwise_form(shapes: Sequence[Shape], names: Sequence[str],
                     body: Callable[[list[Read]], ScalarExpr]) -> GenericForm:
    """out[d...] = body(in0[map0(d)], in1[map1(d)], ...) under NumPy broadcasting."""
    out = broadcast_shapes(shapes, names)
    avoid = {s for shape in shapes for d in shape for s in d.symbols()}
    dims = fresh_names("d", len(out), avoid)
    loop_dims = tuple(LoopDim(n, IntExpr.const(0), e) for n, e in zip(dims, out, strict=True))
    reads: list[Read] = []
    for i, shape in enumerate(shapes):
        lead = len(out) - len(shape)
        index = tuple(IntExpr.const(0) if d == ONE and out[lead + k] != ONE
                      else IntExpr.sym(dims[lead + k]) for k, d in enumerate(shape))
        reads.append(Read(i, index))
    return GenericForm(loop_dims, body(reads), len(shapes))


def _require_float(fn: str, types: Sequence[TensorType], names: Sequence[str]) -> None:
    if FUNCTIONS[fn].float_only:
        for t, n in zip(types, names, strict=True):
            if not DTYPES[t.dtype].is_float:
                raise ShapeError(f"{n} has element type {t.dtype}; '{fn}' needs a float type")


def _same_dtype(types: Sequence[TensorType], names: Sequence[str]) -> str:
    first = types[0].dtype
    for t, n in zip(types[1:], names[1:], strict=True):
        if t.dtype != first:
            raise ShapeError(f"{n} has element type {t.dtype}, expected {first} "
                             f"(like {names[0]})")
    return first


class UnaryOp(TensorOp):
    """`out = fn(x)` for the scalar function named by FUNCTION."""

    FUNCTION: ClassVar[str]
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        names = operand_names(1, ["input"])
        _require_float(cls.FUNCTION, operand_types, names)
        if operand_types[0].dtype == "i1":
            raise ShapeError(f"{names[0]} has element type i1; '{cls.FUNCTION}' needs numbers")
        form = elementwise_form([operand_types[0].shape], names,
                                lambda r: call(cls.FUNCTION, r[0]))
        return Semantics(form, TensorType(form.output_shape, operand_types[0].dtype))


@irdl_op_definition
class NegOp(UnaryOp):
    """Elementwise `neg(x)`: -x."""

    name = "ax.neg"
    FUNCTION: ClassVar[str] = "neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    """Elementwise `abs(x)`: |x|."""

    name = "ax.abs"
    FUNCTION: ClassVar[str] = "abs"


@irdl_op_definition
class ExpOp(UnaryOp):
    """Elementwise `exp(x)`: e^x."""

    name = "ax.exp"
    FUNCTION: ClassVar[str] = "exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """Elementwise `log(x)`: natural logarithm."""

    name = "ax.log"
    FUNCTION: ClassVar[str] = "log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Elementwise `sqrt(x)`: square root."""

    name = "ax.sqrt"
    FUNCTION: ClassVar[str] = "sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """Elementwise `rsqrt(x)`: 1 / sqrt(x)."""

    name = "ax.rsqrt"
    FUNCTION: ClassVar[str] = "rsqrt"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """Elementwise `reciprocal(x)`: 1 / x."""

    name = "ax.reciprocal"
    FUNCTION: ClassVar[str] = "reciprocal"


@irdl_op_definition
class TanhOp(UnaryOp):
    """Elementwise `tanh(x)`: hyperbolic tangent."""

    name = "ax.tanh"
    FUNCTION: ClassVar[str] = "tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """Elementwise `sigmoid(x)`: 1 / (1 + e^-x)."""

    name = "ax.sigmoid"
    FUNCTION: ClassVar[str] = "sigmoid"


@irdl_op_definition
class ReluOp(UnaryOp):
    """Elementwise `relu(x)`: max(x, 0)."""

    name = "ax.relu"
    FUNCTION: ClassVar[str] = "relu"


@irdl_op_definition
class SiluOp(UnaryOp):
    """Elementwise `silu(x)`: x * sigmoid(x)."""

    name = "ax.silu"
    FUNCTION: ClassVar[str] = "silu"


@irdl_op_definition
class GeluOp(UnaryOp):
    """Elementwise `gelu(x)`: x * Phi(x), the erf form."""

    name = "ax.gelu"
    FUNCTION: ClassVar[str] = "gelu"


@irdl_op_definition
class ErfOp(UnaryOp):
    """Elementwise `erf(x)`: the error function."""

    name = "ax.erf"
    FUNCTION: ClassVar[str] = "erf"


@irdl_op_definition
class SquareOp(UnaryOp):
    """Elementwise `square(x)`: x * x."""

    name = "ax.square"
    FUNCTION: ClassVar[str] = "square"


UNARY_OPS: tuple[type[UnaryOp], ...] = (
    NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, SigmoidOp, ReluOp, SiluOp,
    GeluOp, ErfOp, SquareOp)


class BinaryOp(TensorOp):
    """`out = fn(lhs, rhs)` with NumPy broadcasting; comparisons give i1."""

    FUNCTION: ClassVar[str]
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        names = operand_names(2, ["lhs", "rhs"])
        dtype = _same_dtype(operand_types, names)
        _require_float(cls.FUNCTION, operand_types, names)
        spec = FUNCTIONS[cls.FUNCTION]
        if dtype == "i1" and not spec.boolean_result:
            raise ShapeError(f"'{cls.FUNCTION}' needs numbers, operands are i1")
        form = elementwise_form([t.shape for t in operand_types], names,
                                lambda r: call(cls.FUNCTION, r[0], r[1]))
        return Semantics(form, TensorType(form.output_shape,
                                          "i1" if spec.boolean_result else dtype))


@irdl_op_definition
class AddOp(BinaryOp):
    """Elementwise `add(lhs, rhs)` with NumPy broadcasting: lhs + rhs."""

    name = "ax.add"
    FUNCTION: ClassVar[str] = "add"


@irdl_op_definition
class SubOp(BinaryOp):
    """Elementwise `sub(lhs, rhs)` with NumPy broadcasting: lhs - rhs."""

    name = "ax.sub"
    FUNCTION: ClassVar[str] = "sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """Elementwise `mul(lhs, rhs)` with NumPy broadcasting: lhs * rhs."""

    name = "ax.mul"
    FUNCTION: ClassVar[str] = "mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Elementwise `div(lhs, rhs)` with NumPy broadcasting: lhs / rhs."""

    name = "ax.div"
    FUNCTION: ClassVar[str] = "div"


@irdl_op_definition
class MaxOp(BinaryOp):
    """Elementwise `max(lhs, rhs)` with NumPy broadcasting: the larger of lhs and rhs."""

    name = "ax.max"
    FUNCTION: ClassVar[str] = "max"


@irdl_op_definition
class MinOp(BinaryOp):
    """Elementwise `min(lhs, rhs)` with NumPy broadcasting: the smaller of lhs and rhs."""

    name = "ax.min"
    FUNCTION: ClassVar[str] = "min"


@irdl_op_definition
class EqOp(BinaryOp):
    """Elementwise `eq(lhs, rhs)` with NumPy broadcasting: lhs == rhs, an i1."""

    name = "ax.eq"
    FUNCTION: ClassVar[str] = "eq"


@irdl_op_definition
class NeOp(BinaryOp):
    """Elementwise `ne(lhs, rhs)` with NumPy broadcasting: lhs != rhs, an i1."""

    name = "ax.ne"
    FUNCTION: ClassVar[str] = "ne"


@irdl_op_definition
class LtOp(BinaryOp):
    """Elementwise `lt(lhs, rhs)` with NumPy broadcasting: lhs < rhs, an i1."""

    name = "ax.lt"
    FUNCTION: ClassVar[str] = "lt"


@irdl_op_definition
class LeOp(BinaryOp):
    """Elementwise `le(lhs, rhs)` with NumPy broadcasting: lhs <= rhs, an i1."""

    name = "ax.le"
    FUNCTION: ClassVar[str] = "le"


@irdl_op_definition
class GtOp(BinaryOp):
    """Elementwise `gt(lhs, rhs)` with NumPy broadcasting: lhs > rhs, an i1."""

    name = "ax.gt"
    FUNCTION: ClassVar[str] = "gt"


@irdl_op_definition
class GeOp(BinaryOp):
    """Elementwise `ge(lhs, rhs)` with NumPy broadcasting: lhs >= rhs, an i1."""

    name = "ax.ge"
    FUNCTION: ClassVar[str] = "ge"


BINARY_OPS: tuple[type[BinaryOp], ...] = (AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp)
COMPARE_OPS: tuple[type[BinaryOp], ...] = (EqOp, NeOp, LtOp, LeOp, GtOp, GeOp)


@irdl_op_definition
class PowOp(TensorOp):
    """`out = x ** exponent` for a constant exponent."""

    name = "ax.pow"
    ATTRS: ClassVar[dict[str, str]] = {"exponent": "float"}
    input = operand_def(TensorType)
    exponent = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        names = operand_names(1, ["input"])
        _require_float("pow", operand_types, names)
        if "exponent" not in attrs:
            raise ShapeError("missing the 'exponent' attribute")
        exponent = float(attrs["exponent"])
        form = elementwise_form([operand_types[0].shape], names,
                                lambda r: call("pow", r[0], param=exponent))
        return Semantics(form, TensorType(form.output_shape, operand_types[0].dtype))


@irdl_op_definition
class SelectOp(TensorOp):
    """`out = cond ? on_true : on_false` (NumPy `where`), all three broadcast together."""

    name = "ax.select"
    cond = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        names = operand_names(3, ["cond", "on_true", "on_false"])
        if operand_types[0].dtype != "i1":
            raise ShapeError(f"{names[0]} has element type {operand_types[0].dtype}, expected i1")
        dtype = _same_dtype(operand_types[1:], names[1:])
        form = elementwise_form([t.shape for t in operand_types], names,
                                lambda r: call("select", r[0], r[1], r[2]))
        return Semantics(form, TensorType(form.output_shape, dtype))


@irdl_op_definition
class CastOp(TensorOp):
    """Convert to `dtype` (round to nearest even for floats, truncation toward zero to i32)."""

    name = "ax.cast"
    ATTRS: ClassVar[dict[str, str]] = {"dtype": "dtype"}
    input = operand_def(TensorType)
    dtype = prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        target = attrs.get("dtype")
        if target not in DTYPES:
            raise ShapeError(f"cast target {target!r} is not one of {', '.join(DTYPES)}")
        form = elementwise_form([operand_types[0].shape], operand_names(1, ["input"]),
                                lambda r: call("cast", r[0], param=target))
        return Semantics(form, TensorType(form.output_shape, target))


ELEMENTWISE_OPS: tuple[type[TensorOp], ...] = (
    *UNARY_OPS, *BINARY_OPS, *COMPARE_OPS, PowOp, SelectOp, CastOp)
