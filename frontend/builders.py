"""The builder functions of the Axon NumPy subset (docs/language.md), one definition for both
frontends.

Each function takes `Tensor`s (an SSA value plus the `GraphBuilder` of the function being built),
Python numbers, or size symbols used as numbers, and appends primitive `ax` ops. Composites
(softmax, rmsnorm, attention, ...) are written here in terms of the primitives, so nothing has two
definitions. Every user mistake surfaces as `ShapeError` (the ops' own messages for shapes and
dtypes); the source frontend adds the location.

Scalars: a Python number meeting a tensor becomes a 0-d `ax.constant` in the tensor's dtype; a size
symbol becomes `ax.generic` with form `out[] = cast(idx(D), dtype)`. A function of a scalar that is
not yet placed (`sqrt(D)`) stays a `Scalar` until it meets a tensor, so `x / sqrt(D)` keeps x's
dtype. Two plain numbers fold as Python would.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.ir import SSAValue

from axon.dialects import ax
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import (
    ShapeError,
    exact_quotient,
    normalize_axes,
    normalize_axis,
    product,
)
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.intexpr import IntExpr
from axon.frontend.graph import GraphBuilder, current_builder
from axon.frontend.specs import as_dim, dtype_name

Number = int | float | bool


# ---- values ------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Scalar:
    """A number that has no dtype yet: a literal or size symbol with unary functions applied.

    It takes the dtype of the tensor it meets (f32 when it meets none)."""

    base: Number | IntExpr
    functions: tuple[str, ...] = ()

    def materialize(self, builder: GraphBuilder, dtype: str) -> Tensor:
        """The 0-d tensor of this value in `dtype`."""
        if isinstance(self.base, IntExpr) and not self.base.is_const:
            target = dtype if dtype in ("f32", "f16", "bf16", "i32") else "f32"
            value = builder.insert(ax.GenericOp.make(
                [], form=f"out[] = cast(idx({self.base}), {target})", dtype=target))
        else:
            value = builder.insert(ax.ConstantOp.make(
                [], value=float(_number(self.base)), shape=[], dtype=dtype))
        result = Tensor(value, builder)
        for fn in self.functions:
            result = _UNARY_BUILDERS[fn](result)
        return result


def _number(v: Number | IntExpr) -> Number:
    return v.value if isinstance(v, IntExpr) else v


Operand = Any  # Tensor | Scalar | Number | IntExpr, checked at run time by _lift


@dataclass(frozen=True, eq=False)
class Tensor:
    """A traced tensor: an SSA value of type `!ax.tensor` and the builder of its function."""

    value: SSAValue
    builder: GraphBuilder

    @property
    def type(self) -> TensorType:
        assert isinstance(self.value.type, TensorType)
        return self.value.type

    @property
    def shape(self) -> tuple[IntExpr, ...]:
        """The dims, as integer expressions over size symbols."""
        return self.type.shape

    @property
    def dtype(self) -> str:
        return self.type.dtype

    @property
    def ndim(self) -> int:
        return self.type.rank

    @property
    def T(self) -> Tensor:  # noqa: N802 - NumPy's name
        return transpose(self)

    def __repr__(self) -> str:
        return f"Tensor({self.type})"

    def __bool__(self) -> bool:
        raise TypeError("a traced tensor has no truth value: Python control flow on tensors is "
                        "not part of the Axon subset (use where(cond, a, b))")

    # operators; each is the builder function of the same meaning
    def __add__(self, other: Operand) -> Tensor:
        return add(self, other)

    def __radd__(self, other: Operand) -> Tensor:
        return add(other, self)

    def __sub__(self, other: Operand) -> Tensor:
        return subtract(self, other)

    def __rsub__(self, other: Operand) -> Tensor:
        return subtract(other, self)

    def __mul__(self, other: Operand) -> Tensor:
        return multiply(self, other)

    def __rmul__(self, other: Operand) -> Tensor:
        return multiply(other, self)

    def __truediv__(self, other: Operand) -> Tensor:
        return divide(self, other)

    def __rtruediv__(self, other: Operand) -> Tensor:
        return divide(other, self)

    def __matmul__(self, other: Operand) -> Tensor:
        return matmul(self, other)

    def __rmatmul__(self, other: Operand) -> Tensor:
        return matmul(other, self)

    def __pow__(self, exponent: Operand) -> Tensor:
        return power(self, exponent)

    def __rpow__(self, base: Operand) -> Tensor:
        raise ShapeError("a tensor exponent is not supported: the exponent must be a number")

    def __neg__(self) -> Tensor:
        return neg(self)

    def __abs__(self) -> Tensor:
        return abs(self)

    def __lt__(self, other: Operand) -> Tensor:
        return less(self, other)

    def __le__(self, other: Operand) -> Tensor:
        return less_equal(self, other)

    def __gt__(self, other: Operand) -> Tensor:
        return greater(self, other)

    def __ge__(self, other: Operand) -> Tensor:
        return greater_equal(self, other)

    def __eq__(self, other: Operand) -> Tensor:  # type: ignore[override]
        return equal(self, other)

    def __ne__(self, other: Operand) -> Tensor:  # type: ignore[override]
        return not_equal(self, other)

    __hash__ = object.__hash__

    def __getitem__(self, key: Any) -> Tensor:
        return getitem(self, key)

    # methods (NumPy's array methods of the same names)
    def sum(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return sum(self, axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return mean(self, axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return max(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return min(self, axis, keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        return prod(self, axis, keepdims)

    def reshape(self, *shape: Any) -> Tensor:
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes: Any) -> Tensor:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], tuple | list)):
            return transpose(self, axes[0])
        return transpose(self, axes or None)

    def astype(self, dtype: Any) -> Tensor:
        return astype(self, dtype)


#: Tensor methods the source frontend accepts as `x.name(...)`
METHODS = ("sum", "mean", "max", "min", "prod", "reshape", "transpose", "astype")


# ---- lifting and checking arguments ------------------------------------------------------------
def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | bool) and not isinstance(v, np.ndarray)


def _is_scalar(v: Any) -> bool:
    return _is_number(v) or isinstance(v, IntExpr | Scalar)


def _builder(*values: Any) -> GraphBuilder:
    builders = {id(v.builder): v.builder for v in values if isinstance(v, Tensor)}
    if len(builders) > 1:
        raise ShapeError("operands belong to different functions")
    return next(iter(builders.values())) if builders else current_builder()


def _lift(v: Any, dtype: str, builder: GraphBuilder, what: str) -> Tensor:
    """A tensor for `v`: tensors pass, scalars become 0-d tensors of `dtype`."""
    if isinstance(v, Tensor):
        return v
    if isinstance(v, Scalar):
        return v.materialize(builder, dtype)
    if _is_number(v) or isinstance(v, IntExpr):
        return Scalar(v).materialize(builder, dtype)
    raise ShapeError(f"{what} must be a tensor or a number, not {_describe(v)}")


def _tensor(v: Any, what: str) -> Tensor:
    """`v` as a tensor; a lone scalar becomes a 0-d f32 tensor, as NumPy would make an array."""
    return _lift(v, "f32", _builder(v), what)


def _describe(v: Any) -> str:
    if isinstance(v, tuple | list):
        return f"a {type(v).__name__} {v!r}"
    return f"{type(v).__name__} {v!r}"


def _scalar_dtype(values: Sequence[Any]) -> str:
    """The dtype scalars take: the first tensor's."""
    for v in values:
        if isinstance(v, Tensor):
            return v.dtype
    return "f32"


def _emit(op_cls: type[TensorOp], operands: Sequence[Tensor], builder: GraphBuilder,
          **attrs: Any) -> Tensor:
    return Tensor(builder.insert(op_cls.make([t.value for t in operands], **attrs)), builder)


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | IntExpr):
        raise ShapeError(f"{what} must be an integer, not {_describe(v)}")
    if isinstance(v, IntExpr):
        if not v.is_const:
            raise ShapeError(f"{what} must be a constant integer, not the size expression {v}")
        return v.value
    return v


def _axes(axis: Any, rank: int) -> tuple[int, ...]:
    """Normalized, sorted axes for None (all), an int, or a tuple/list of ints."""
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, tuple | list):
        return normalize_axes([_int(a, "axis") for a in axis], rank)
    return (normalize_axis(_int(axis, "axis"), rank),)


def _shape(shape: Any, what: str = "shape") -> list[IntExpr]:
    if isinstance(shape, tuple | list):
        return [as_dim(d) for d in shape]
    if isinstance(shape, int | IntExpr) and not isinstance(shape, bool):
        return [as_dim(shape)]
    raise ShapeError(f"{what} must be a tuple or list of dims, not {_describe(shape)}")


# ---- elementwise -------------------------------------------------------------------------------
_FOLD_UNARY: dict[str, Callable[[Any], Any]] = {"neg": operator.neg, "abs": builtins.abs}


def _unary(fn: str, op_cls: type[TensorOp]) -> Callable[[Operand], Any]:
    def build(x: Operand) -> Any:
        if isinstance(x, Tensor):
            return _emit(op_cls, [x], x.builder)
        if isinstance(x, Scalar):
            return Scalar(x.base, (*x.functions, fn))
        if _is_number(x) or isinstance(x, IntExpr):
            if fn in _FOLD_UNARY and (_is_number(x) or fn == "neg"):
                return _FOLD_UNARY[fn](x)
            return Scalar(x, (fn,))
        raise ShapeError(f"'{fn}' needs a tensor or a number, not {_describe(x)}")

    build.__name__ = build.__qualname__ = fn
    build.__doc__ = f"Elementwise `{fn}(x)`."
    return build


neg = _unary("neg", ax.NegOp)
abs = _unary("abs", ax.AbsOp)  # noqa: A001 - NumPy's name
exp = _unary("exp", ax.ExpOp)
log = _unary("log", ax.LogOp)
sqrt = _unary("sqrt", ax.SqrtOp)
rsqrt = _unary("rsqrt", ax.RsqrtOp)
reciprocal = _unary("reciprocal", ax.ReciprocalOp)
tanh = _unary("tanh", ax.TanhOp)
sigmoid = _unary("sigmoid", ax.SigmoidOp)
relu = _unary("relu", ax.ReluOp)
silu = _unary("silu", ax.SiluOp)
gelu = _unary("gelu", ax.GeluOp)
erf = _unary("erf", ax.ErfOp)
square = _unary("square", ax.SquareOp)
_UNARY_BUILDERS: dict[str, Callable[[Operand], Any]] = {
    f.__name__: f for f in (neg, abs, exp, log, sqrt, rsqrt, reciprocal, tanh, sigmoid, relu,
                            silu, gelu, erf, square)}


def _fold_binary(fold: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """Python's result for two numbers, or IntExpr arithmetic for sizes; None when not foldable."""
    if _is_number(a) and _is_number(b):
        try:
            return fold(a, b)
        except (ZeroDivisionError, OverflowError) as err:
            raise ShapeError(f"{a!r} and {b!r}: {err}") from None
    sizes = isinstance(a, IntExpr | int) and isinstance(b, IntExpr | int)
    if sizes and fold in (operator.add, operator.sub, operator.mul):
        return fold(IntExpr.lift(a), IntExpr.lift(b))
    return None


def _binary(fn: str, op_cls: type[TensorOp], fold: Callable[[Any, Any], Any],
            doc: str) -> Callable[[Operand, Operand], Any]:
    def build(a: Operand, b: Operand) -> Any:
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            if not _is_scalar(a) or not _is_scalar(b):
                bad = b if _is_scalar(a) else a
                raise ShapeError(f"'{fn}' needs tensors or numbers, not {_describe(bad)}")
            folded = _fold_binary(fold, a, b)
            if folded is not None:
                return folded
        builder = _builder(a, b)
        dtype = _scalar_dtype([a, b])
        lhs = _lift(a, dtype, builder, f"the first operand of '{fn}'")
        rhs = _lift(b, dtype, builder, f"the second operand of '{fn}'")
        return _emit(op_cls, [lhs, rhs], builder)

    build.__name__ = build.__qualname__ = fn
    build.__doc__ = doc
    return build


add = _binary("add", ax.AddOp, operator.add, "Elementwise `a + b` with NumPy broadcasting.")
subtract = _binary("subtract", ax.SubOp, operator.sub, "Elementwise `a - b`.")
multiply = _binary("multiply", ax.MulOp, operator.mul, "Elementwise `a * b`.")
divide = _binary("divide", ax.DivOp, operator.truediv, "Elementwise `a / b`.")
maximum = _binary("maximum", ax.MaxOp, builtins.max, "Elementwise maximum.")
minimum = _binary("minimum", ax.MinOp, builtins.min, "Elementwise minimum.")
equal = _binary("equal", ax.EqOp, operator.eq, "Elementwise `a == b` (i1).")
not_equal = _binary("not_equal", ax.NeOp, operator.ne, "Elementwise `a != b` (i1).")
less = _binary("less", ax.LtOp, operator.lt, "Elementwise `a < b` (i1).")
less_equal = _binary("less_equal", ax.LeOp, operator.le, "Elementwise `a <= b` (i1).")
greater = _binary("greater", ax.GtOp, operator.gt, "Elementwise `a > b` (i1).")
greater_equal = _binary("greater_equal", ax.GeOp, operator.ge, "Elementwise `a >= b` (i1).")


def power(x: Operand, p: Operand) -> Any:
    """`x ** p` for a number `p` (a constant exponent, as `ax.pow` takes)."""
    if isinstance(p, bool) or not isinstance(p, int | float):
        raise ShapeError(f"the exponent must be a number, not {_describe(p)}")
    if not isinstance(x, Tensor):
        if _is_number(x):
            return _fold_binary(_fold_power, x, p)
        x = _tensor(x, "the base of '**'")
    return _emit(ax.PowOp, [x], x.builder, exponent=float(p))


#: integer powers with a larger exponent fold in floats: `2 ** 2 ** 2 ** 2 ** 2 ** 2` is then an
#: overflow error at once, not a multi-million-digit integer that takes minutes to compute
_MAX_INTEGER_EXPONENT = 64


def _fold_power(x: Number, p: Number) -> Number:
    if isinstance(x, int) and isinstance(p, int) and p > _MAX_INTEGER_EXPONENT \
            and builtins.abs(x) > 1:
        return float(x) ** p
    return x ** p


def where(cond: Operand, a: Operand, b: Operand) -> Any:
    """`cond ? a : b` elementwise, the three broadcast together; cond is i1."""
    if isinstance(cond, bool):
        return a if cond else b
    if not isinstance(cond, Tensor):
        raise ShapeError(f"the condition of 'where' must be an i1 tensor, not {_describe(cond)}")
    builder = _builder(cond, a, b)
    dtype = _scalar_dtype([a, b])
    on_true = _lift(a, dtype, builder, "the second argument of 'where'")
    on_false = _lift(b, dtype, builder, "the third argument of 'where'")
    return _emit(ax.SelectOp, [cond, on_true, on_false], builder)


def astype(x: Operand, dtype: Any) -> Tensor:
    """Convert to `dtype` (a dtype spec like `f32` or its name)."""
    target = dtype_name(dtype)
    x = _tensor(x, "the argument of 'astype'")
    return x if x.dtype == target else _emit(ax.CastOp, [x], x.builder, dtype=target)


# ---- creation ----------------------------------------------------------------------------------
def full(shape: Any, value: Operand, dtype: Any = "f32") -> Tensor:
    """A tensor of `shape` filled with `value` (a number, or a size symbol used as a number)."""
    dims, name = _shape(shape), dtype_name(dtype)
    builder = current_builder()
    if _is_number(value):
        return _emit(ax.ConstantOp, [], builder, value=float(value), shape=dims, dtype=name)
    if isinstance(value, IntExpr | Scalar):
        scalar = value if isinstance(value, Scalar) else Scalar(value)
        filled = astype(scalar.materialize(builder, name), name)
        return broadcast_to(filled, dims)
    raise ShapeError(f"the fill value must be a number, not {_describe(value)}")


def zeros(shape: Any, dtype: Any = "f32") -> Tensor:
    """A tensor of zeros."""
    return full(shape, 0.0, dtype)


def ones(shape: Any, dtype: Any = "f32") -> Tensor:
    """A tensor of ones."""
    return full(shape, 1.0, dtype)


def iota(shape: Any, axis: Any = 0, dtype: Any = "i32") -> Tensor:
    """out[..., i, ...] = i along `axis`."""
    dims = _shape(shape)
    axis = normalize_axis(_int(axis, "axis"), len(dims)) if dims else _int(axis, "axis")
    return _emit(ax.IotaOp, [], current_builder(), shape=dims, axis=axis,
                 dtype=dtype_name(dtype))


# ---- contraction and reductions ----------------------------------------------------------------
def matmul(a: Operand, b: Operand) -> Tensor:
    """`a @ b` with NumPy's rules (1-D promotion, broadcast batch dims)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        bad = b if isinstance(a, Tensor) else a
        raise ShapeError(f"matmul operands must be tensors, not {_describe(bad)}")
    return _emit(ax.MatmulOp, [a, b], _builder(a, b))


def _reduction(fn: str, op_cls: type[TensorOp]) -> Callable[..., Tensor]:
    def build(x: Operand, axis: Any = None, keepdims: Any = False) -> Tensor:
        x = _tensor(x, f"the argument of '{fn}'")
        if not isinstance(keepdims, bool):
            raise ShapeError(f"keepdims must be True or False, not {_describe(keepdims)}")
        axes = _axes(axis, x.ndim)
        if not axes:  # a 0-d tensor reduced over all (no) axes is itself, as in NumPy
            return x
        return _emit(op_cls, [x], x.builder, axes=axes, keepdims=keepdims)

    build.__name__ = build.__qualname__ = fn
    build.__doc__ = f"`{fn}` over `axis` (None: all; an int; a tuple), keeping them if keepdims."
    return build


sum = _reduction("sum", ax.SumOp)  # noqa: A001 - NumPy's name
max = _reduction("max", ax.ReduceMaxOp)  # noqa: A001
min = _reduction("min", ax.ReduceMinOp)  # noqa: A001
mean = _reduction("mean", ax.MeanOp)
prod = _reduction("prod", ax.ProdOp)


def cumsum(x: Operand, axis: Any = -1) -> Tensor:
    """Inclusive prefix sum along `axis`."""
    x = _tensor(x, "the argument of 'cumsum'")
    return _emit(ax.CumsumOp, [x], x.builder, axis=normalize_axis(_int(axis, "axis"), x.ndim))


# ---- shape -------------------------------------------------------------------------------------
def transpose(x: Operand, axes: Any = None) -> Tensor:
    """Permute dims (reverse them when `axes` is None)."""
    x = _tensor(x, "the argument of 'transpose'")
    if axes is None:
        perm = tuple(reversed(range(x.ndim)))
    elif isinstance(axes, tuple | list):
        perm = tuple(normalize_axis(_int(a, "axis"), x.ndim) for a in axes)
    else:
        raise ShapeError(f"axes must be a tuple or list of ints, not {_describe(axes)}")
    if perm == tuple(range(x.ndim)):
        return x
    return _emit(ax.TransposeOp, [x], x.builder, perm=perm)


def reshape(x: Operand, shape: Any) -> Tensor:
    """Row-major reshape; one dim may be -1 (inferred, also for symbolic sizes)."""
    x = _tensor(x, "the argument of 'reshape'")
    entries = list(shape) if isinstance(shape, tuple | list) else [shape]
    holes = [i for i, d in enumerate(entries) if isinstance(d, int) and not isinstance(d, bool)
             and d == -1]
    if len(holes) > 1:
        raise ShapeError(f"reshape to {list(entries)}: only one dim may be -1")
    dims = [IntExpr.const(1) if i in holes else as_dim(d) for i, d in enumerate(entries)]
    if holes:
        inferred = exact_quotient(product(x.shape), product(dims))
        if inferred is None:
            raise ShapeError(f"cannot infer the -1 dim reshaping {list(map(str, x.shape))} to "
                             f"{list(entries)}: {product(x.shape)} is not a multiple of "
                             f"{product(dims)}")
        dims[holes[0]] = inferred
    if tuple(dims) == x.shape:
        return x
    return _emit(ax.ReshapeOp, [x], x.builder, shape=dims)


def broadcast_to(x: Operand, shape: Any) -> Tensor:
    """Broadcast to `shape` with NumPy's rules."""
    x = _tensor(x, "the argument of 'broadcast_to'")
    dims = _shape(shape)
    if tuple(dims) == x.shape:
        return x
    return _emit(ax.BroadcastToOp, [x], x.builder, shape=dims)


def concatenate(tensors: Any, axis: Any = 0) -> Tensor:
    """Join tensors along `axis`; the other dims must agree."""
    if not isinstance(tensors, tuple | list) or not tensors:
        raise ShapeError(f"concatenate needs a non-empty list of tensors, not "
                         f"{_describe(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise ShapeError(f"concatenate: item {i} must be a tensor, not {_describe(t)}")
    first = tensors[0]
    if first.ndim == 0:
        raise ShapeError("concatenate: 0-d tensors cannot be concatenated")
    return _emit(ax.ConcatOp, list(tensors), _builder(*tensors),
                 axis=normalize_axis(_int(axis, "axis"), first.ndim))


def _bound(v: Any, dim: IntExpr, default: IntExpr, clamp: bool) -> IntExpr:
    """A slice bound: negative constants count from the end; constants clamp like NumPy."""
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int | IntExpr):
        raise ShapeError(f"slice bounds must be integers or size expressions, not {_describe(v)}")
    bound = IntExpr.lift(v)
    if bound.is_const and bound.value < 0:
        bound = dim + bound
        if clamp and bound.is_const and bound.value < 0:
            bound = IntExpr.const(0)
    if clamp and bound.is_const and dim.is_const and bound.value > dim.value:
        bound = dim
    return bound


def getitem(x: Operand, key: Any) -> Tensor:
    """`x[key]`: slices `a:b:c` (positive step), integers (drop the dim) and `...`."""
    x = _tensor(x, "the sliced value")
    entries = list(key) if isinstance(key, tuple) else [key]
    if builtins.sum(1 for e in entries if e is Ellipsis) > 1:
        raise ShapeError("an index can only have a single ellipsis ('...')")
    if Ellipsis in entries:
        at = entries.index(Ellipsis)
        fill = x.ndim - (len(entries) - 1)
        entries[at:at + 1] = [slice(None)] * builtins.max(fill, 0)
    if len(entries) > x.ndim:
        raise ShapeError(f"too many indices ({len(entries)}) for a tensor of rank {x.ndim}")
    entries += [slice(None)] * (x.ndim - len(entries))
    start, stop, step, dropped = [], [], [], []
    for k, (entry, dim) in enumerate(zip(entries, x.shape, strict=True)):
        if isinstance(entry, slice):
            st = 1 if entry.step is None else _int(entry.step, "slice step")
            if st < 1:
                raise ShapeError(f"dim {k}: slice step {st} must be a positive integer")
            start.append(_bound(entry.start, dim, IntExpr.const(0), True))
            stop.append(_bound(entry.stop, dim, dim, True))
            step.append(IntExpr.const(st))
        elif isinstance(entry, int | IntExpr) and not isinstance(entry, bool):
            index = _bound(entry, dim, dim, False)
            if index.is_const and dim.is_const and not 0 <= index.value < dim.value:
                raise ShapeError(f"index {entry} is out of range for dim {k} of extent {dim}")
            start.append(index)
            stop.append(index + 1)
            step.append(IntExpr.const(1))
            dropped.append(k)
        else:
            raise ShapeError(f"an index must be a slice or an integer, not {_describe(entry)}")
    result = x
    whole = all(lo == IntExpr.const(0) and hi == d and s == IntExpr.const(1)
                for lo, hi, s, d in zip(start, stop, step, x.shape, strict=True))
    if not whole:
        result = _emit(ax.SliceOp, [x], x.builder, start=start, stop=stop, step=step)
    if dropped:
        kept = [d for k, d in enumerate(result.shape) if k not in dropped]
        result = reshape(result, kept)
    return result


# ---- composites: written in the primitives above -----------------------------------------------
def softmax(x: Operand, axis: Any = -1) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    x = _tensor(x, "the argument of 'softmax'")
    shifted = subtract(x, max(x, axis, keepdims=True))
    e = exp(shifted)
    return divide(e, sum(e, axis, keepdims=True))


def log_softmax(x: Operand, axis: Any = -1) -> Tensor:
    """(x - max) - log(sum(exp(x - max))) along `axis`."""
    x = _tensor(x, "the argument of 'log_softmax'")
    shifted = subtract(x, max(x, axis, keepdims=True))
    return subtract(shifted, log(sum(exp(shifted), axis, keepdims=True)))


def rmsnorm(x: Operand, g: Operand, eps: Any = 1e-6) -> Tensor:
    """x * rsqrt(mean(x * x, -1) + eps) * g."""
    x = _tensor(x, "the argument of 'rmsnorm'")
    ms = mean(multiply(x, x), -1, keepdims=True)
    return multiply(multiply(x, rsqrt(add(ms, eps))), g)


def layernorm(x: Operand, g: Operand, b: Operand, eps: Any = 1e-5) -> Tensor:
    """(x - mean) * rsqrt(var + eps) * g + b over the last axis."""
    x = _tensor(x, "the argument of 'layernorm'")
    centered = subtract(x, mean(x, -1, keepdims=True))
    var = mean(multiply(centered, centered), -1, keepdims=True)
    return add(multiply(multiply(centered, rsqrt(add(var, eps))), g), b)


def gelu_tanh(x: Operand) -> Tensor:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))."""
    x = _tensor(x, "the argument of 'gelu_tanh'")
    inner = multiply(math.sqrt(2.0 / math.pi), add(x, multiply(0.044715, power(x, 3))))
    return multiply(multiply(0.5, x), add(1.0, tanh(inner)))


def _lowest(dtype: str) -> float:
    """The most negative finite value of a float dtype: the causal mask's fill (finite, so the
    verifier reasons over reals)."""
    storage = DTYPES[dtype].storage
    is_bf16 = storage == np.dtype(ml_dtypes.bfloat16)
    info = ml_dtypes.finfo(storage) if is_bf16 else np.finfo(storage)
    return float(info.min)


def attention(q: Operand, k: Operand, v: Operand, scale: Any = None, causal: Any = False) -> Tensor:
    """softmax(q @ k^T * scale [causally masked]) @ v; scale defaults to 1/sqrt(head dim)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor) or t.ndim < 2:
            raise ShapeError(f"attention: {name} must be a tensor of rank >= 2, not "
                             f"{t if isinstance(t, Tensor) else _describe(t)}")
    if not isinstance(causal, bool):
        raise ShapeError(f"causal must be True or False, not {_describe(causal)}")
    perm = [*range(k.ndim - 2), k.ndim - 1, k.ndim - 2]
    scores = matmul(q, transpose(k, perm))
    if scale is None:
        head = q.shape[-1]
        scale = 1.0 / math.sqrt(head.value) if head.is_const and head.value > 0 \
            else Scalar(head, ("rsqrt",))
    scores = multiply(scores, scale)
    if causal:
        rows_cols = list(scores.shape[-2:])
        row = _emit(ax.IotaOp, [], scores.builder, shape=rows_cols, axis=0, dtype="i32")
        col = _emit(ax.IotaOp, [], scores.builder, shape=rows_cols, axis=1, dtype="i32")
        scores = where(less_equal(col, row), scores, _lowest(scores.dtype))
    return matmul(softmax(scores, -1), v)


def as_results(out: Any, builder: GraphBuilder, name: str) -> list[SSAValue]:
    """The SSA values a function returns (a value or a tuple of them); scalars become 0-d f32."""
    items = list(out) if isinstance(out, tuple | list) else [out]
    if out is None or not items:
        raise ShapeError(f"{name} returns nothing; an Axon function returns one or more tensors")
    values = []
    for item in items:
        if isinstance(item, Tensor):
            if item.builder is not builder:
                raise ShapeError(f"{name} returns a tensor of another function")
            values.append(item.value)
        elif _is_scalar(item):
            values.append(_lift(item, "f32", builder, "a result").value)
        else:
            raise ShapeError(f"{name} returns {_describe(item)}, which is not a tensor")
    return values


#: every public builder by its language name (docs/language.md), for both frontends
BUILDERS: dict[str, Callable[..., Any]] = {f.__name__: f for f in (
    neg, abs, exp, log, sqrt, rsqrt, reciprocal, tanh, sigmoid, relu, silu, gelu, erf, square,
    add, subtract, multiply, divide, maximum, minimum, power,
    equal, not_equal, less, less_equal, greater, greater_equal,
    where, astype, full, zeros, ones, iota, matmul, sum, max, min, mean, prod, cumsum,
    transpose, reshape, broadcast_to, concatenate,
    softmax, log_softmax, rmsnorm, layernorm, gelu_tanh, attention)}
