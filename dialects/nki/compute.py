"""Compute on the Vector, Scalar and GpSimd engines (reference/nki.md 3.3 to 3.5):
`tensor_tensor`, `tensor_scalar`, `activation`, `activation_reduce`, `tensor_reduce`,
`tensor_tensor_scan`, `select`, `affine_select`.

    %s = nki.tensor_tensor %a, %b {op = "add", buffer = "sbuf"} : (...) -> ...
    %t = nki.tensor_scalar %x, %v {op0 = "subtract", op1 = "multiply", scalar1 = 2.0 : f64, ...}
    %e = nki.activation %x, %bias {func = "exp", scale = -1.0 : f64, buffer = "sbuf"} : ...
    %r = nki.tensor_reduce %x {op = "add", axes = array<i64: 1>, keepdims = true, ...} : ...
    %c = nki.tensor_tensor_scan %zeros, %x {op0 = "add", op1 = "add", initial = 0.0 : f64, ...}

Every instruction computes in fp32 and rounds once, to the dst dtype, when it writes (the
interpreter's one rounding to the result dtype); a `[P, 1]` operand is a per-partition vector
broadcast along the free dims.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.ir import TypeAttribute
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Index, Read, ScalarExpr, call
from axon.dialects.nki.base import (
    NkiOp,
    alu,
    as_fp32,
    at_most,
    dims_of,
    dst_dtype,
    fp32_const,
    is_vector,
    same_shape,
    syms,
)
from axon.dialects.nki.limits import generic_limits
from axon.dialects.nki.movement import affine_index

#: activation functions (nki.language names) -> their scalar-language body; `copy` is the
#: identity (reference/nki.md 3.3; the ScalarE's approximations and valid input ranges are the
#: simulator's business: the generic form states the exact function)
ACTIVATIONS: dict[str, Callable[[ScalarExpr], ScalarExpr]] = {
    "copy": lambda x: x,
    "exp": lambda x: call("exp", x),
    "log": lambda x: call("log", x),
    "sqrt": lambda x: call("sqrt", x),
    "rsqrt": lambda x: call("rsqrt", x),
    "reciprocal": lambda x: call("reciprocal", x),
    "tanh": lambda x: call("tanh", x),
    "sigmoid": lambda x: call("sigmoid", x),
    "silu": lambda x: call("silu", x),
    "gelu": lambda x: call("gelu", x),
    "erf": lambda x: call("erf", x),
    "relu": lambda x: call("relu", x),
    "square": lambda x: call("square", x),
    "abs": lambda x: call("abs", x),
}

#: tensor_reduce's ops -> the form's reduction
REDUCE_OPS = {"add": "add", "maximum": "max", "minimum": "min", "multiply": "mul"}
#: the reduction of the negated values that equals the negated reduction (`negate=True`)
NEGATED = {"add": "add", "max": "min", "min": "max"}

#: tensor_tensor_scan's (op0, op1) pairs whose recurrence r_i = op1(op0(d0_i, r_(i-1)), d1_i)
#: is a prefix reduction: the reduction, the body over (d0, d1), and the identity `initial`
#: folds into at the first element
SCANS: dict[tuple[str, str], tuple[str, Callable[[ScalarExpr, ScalarExpr], ScalarExpr], float]] = {
    ("add", "add"): ("add", lambda a, b: call("add", a, b), 0.0),
    ("add", "subtract"): ("add", lambda a, b: call("sub", a, b), 0.0),
    ("multiply", "multiply"): ("mul", lambda a, b: call("mul", a, b), 1.0),
    ("maximum", "maximum"): ("max", lambda a, b: call("max", a, b), -math.inf),
    ("minimum", "minimum"): ("min", lambda a, b: call("min", a, b), math.inf),
}

#: comparisons of affine_select (nki.language names) -> scalar-language functions
COMPARISONS = {"equal": "eq", "not_equal": "ne", "greater": "gt", "greater_equal": "ge",
               "less": "lt", "less_equal": "le"}


def _at_partition(vector_operand: int, par: Sequence[LoopDim]) -> Read:
    """A `[P, 1]` operand read at the partition of an element (broadcast along free dims)."""
    return Read(vector_operand, (IntExpr.sym(par[0].name), IntExpr.const(0)))


@irdl_op_definition
class TensorTensorOp(NkiOp):
    """`nisa.tensor_tensor(dst, data1, data2, op, engine)`: elementwise, both inputs of one
    shape, at most one in PSUM; on the Vector engine, or GpSimd (no PSUM). Float arithmetic
    converts the inputs to fp32; when the inputs and the dst are all int32 the default engine is
    GpSimd, whose arithmetic is native int32 (exact).

        out[d0 < P, d1 < F] = in0[d0, d1] op in1[d0, d1]
    """

    name = "nki.tensor_tensor"
    ROLES: ClassVar[tuple[str, ...]] = ("data1", "data2")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector", "gpsimd")
    ATTRS: ClassVar[dict[str, str]] = {"op": "text", "buffer": "text", "dtype": "dtype",
                                       "engine": "text"}
    inputs = var_operand_def(TensorType)
    op = prop_def(StringAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    engine = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    #: the ops GpSimd runs in native int32 arithmetic (an integer division's rounding is not
    #: stated in reference/nki.md, so it has no form here)
    INTEGER_OPS: ClassVar[tuple[str, ...]] = (
        "add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "greater",
        "greater_equal", "less", "less_equal")

    @classmethod
    def all_int32(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> bool:
        """Are both inputs and the dst int32? (Then GpSimd is the default engine.)"""
        dst = attrs.get("dtype") or (operand_types[0].dtype if operand_types else None)
        return bool(operand_types) and all(t.dtype == "i32" for t in operand_types) \
            and dst == "i32"

    @classmethod
    def default_engine(cls, operand_types: Sequence[TensorType],
                       attrs: Mapping[str, Any]) -> str:
        return "gpsimd" if cls.all_int32(operand_types, attrs) else "vector"

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        a, b = operand_types
        same_shape("data1 and data2 differ in shape", a, b)
        op = attrs.get("op")
        apply = alu(op, "op")
        par = dims_of(a)
        lhs: ScalarExpr = Read(0, syms(par))
        rhs: ScalarExpr = Read(1, syms(par))
        if cls.all_int32(operand_types, attrs) and cls.engine_of(attrs, operand_types) == "gpsimd":
            if op not in cls.INTEGER_OPS:
                raise ShapeError(f"op '{op}' on int32 tiles (GpSimd's integer arithmetic): "
                                 f"expected one of {', '.join(cls.INTEGER_OPS)}")
        else:  # float arithmetic: the inputs converted to fp32
            lhs, rhs = as_fp32(lhs, a.dtype), as_fp32(rhs, b.dtype)
        form = GenericForm(par, apply(lhs, rhs), 2)
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, a.dtype)))

    def check_operands(self, buffers: Sequence[str | None]) -> None:
        if buffers.count("psum") > 1:
            raise VerifyException(f"'{self.name}': both inputs are in PSUM; at most one may be")


@irdl_op_definition
class TensorScalarOp(NkiOp):
    """`nisa.tensor_scalar(dst, data, op0, operand0, reverse0, op1, operand1, reverse1)`:
    `(data op0 operand0) op1 operand1`, each operand a constant (`scalar0`, `scalar1`) or, where
    that is absent, the next `[P, 1]` f32 vector operand; `reverse` swaps an op's operands. On
    the Vector (default), Scalar ((multiply, add), multiply or add alone, as on Trn2) or GpSimd
    engine.

        out[d0 < P, d1 < F] = (in0[d0, d1] - in1[d0, 0]) * 2.0
    """

    name = "nki.tensor_scalar"
    ROLES: ClassVar[tuple[str, ...]] = ("data", "[operand0]", "[operand1]")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector", "scalar", "gpsimd")
    #: the (op0, op1) the Scalar engine runs in tensor_scalar (Trn2; the SDK's
    #: `nki.isa.tensor_scalar`, reference/nki.md 3.4)
    SCALAR_ENGINE_OPS: ClassVar[tuple[tuple[str, str | None], ...]] = (
        ("multiply", "add"), ("multiply", None), ("add", None))
    ATTRS: ClassVar[dict[str, str]] = {"op0": "text", "scalar0": "float", "reverse0": "bool",
                                       "op1": "text", "scalar1": "float", "reverse1": "bool",
                                       "buffer": "text", "dtype": "dtype", "engine": "text"}
    inputs = var_operand_def(TensorType)
    op0 = prop_def(StringAttr)
    scalar0 = opt_prop_def(FloatAttr)
    reverse0 = opt_prop_def(BoolAttr)
    op1 = opt_prop_def(StringAttr)
    scalar1 = opt_prop_def(FloatAttr)
    reverse1 = opt_prop_def(BoolAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    engine = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        data, *vectors = operand_types
        par = dims_of(data)
        value: ScalarExpr = as_fp32(Read(0, syms(par)), data.dtype)
        steps = [k for k in (0, 1) if k == 0 or attrs.get("op1") is not None]
        if attrs.get("op1") is None and (attrs.get("scalar1") is not None
                                         or attrs.get("reverse1")):
            raise ShapeError("scalar1 or reverse1 given without op1")
        engine = cls.engine_of(attrs)
        pair = (attrs.get("op0"), attrs.get("op1"))
        if engine == "scalar" and pair not in cls.SCALAR_ENGINE_OPS:
            choices = ", ".join(f"({a}, {b})" if b else f"({a})"
                                for a, b in cls.SCALAR_ENGINE_OPS)
            shown = f"({pair[0]}, {pair[1]})" if pair[1] else f"({pair[0]})"
            raise ShapeError(f"ops {shown}: the Scalar engine's tensor_scalar runs {choices} "
                             "only")
        used = 0
        for k in steps:
            op = attrs.get(f"op{k}")
            apply = alu(op, f"op{k}")
            scalar = attrs.get(f"scalar{k}")
            operand: ScalarExpr
            if scalar is not None:
                operand = fp32_const(scalar, f"scalar{k}")
            else:
                if used == len(vectors):
                    raise ShapeError(f"operand{k} has neither a scalar{k} nor a [P, 1] vector "
                                     "operand")
                vector = vectors[used]
                if not is_vector(vector, data) or vector.dtype != "f32":
                    raise ShapeError(f"operand{k} is {vector}; a vector operand is "
                                     f"f32[{data.shape[0]}, 1]")
                used += 1
                operand = _at_partition(used, par)
            value = apply(operand, value) if attrs.get(f"reverse{k}") else apply(value, operand)
        if used != len(vectors):
            raise ShapeError(f"{len(vectors)} vector operands for {used} ops without a scalar")
        form = GenericForm(par, value, len(operand_types))
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, data.dtype)))


def _activation_body(operand_types: Sequence[TensorType], attrs: Mapping[str, Any],
                     par: Sequence[LoopDim], index: Sequence[IntExpr]) -> ScalarExpr:
    """`func(data * scale + bias)` for an element at `index` of partition `par[0]`."""
    data, *vectors = operand_types
    func = attrs.get("func")
    if func not in ACTIVATIONS:
        raise ShapeError(f"func '{func}' is not an activation function with a generic form; "
                         f"expected one of {', '.join(ACTIVATIONS)}")
    for role, vector in zip(("bias", "scale"), vectors, strict=False):
        if not is_vector(vector, data):
            raise ShapeError(f"{role} is {vector}; a [{data.shape[0]}, 1] vector is needed")
    value: ScalarExpr = as_fp32(Read(0, tuple(index)), data.dtype)
    if len(vectors) == 2:
        if attrs.get("scale") is not None:
            raise ShapeError("scale given both as an operand and as a constant")
        value = call("mul", value, _at_partition(2, par))
    elif float(attrs.get("scale", 1.0)) != 1.0:
        value = call("mul", value, fp32_const(attrs["scale"], "scale"))
    if vectors:
        value = call("add", value, _at_partition(1, par))
    return ACTIVATIONS[str(func)](value)


@irdl_op_definition
class ActivationOp(NkiOp):
    """`nisa.activation(dst, op, data, bias, scale)` on the Scalar engine: `func(data * scale +
    bias)`, all in fp32; `bias` a `[P, 1]` vector, `scale` a constant or a `[P, 1]` vector
    (after the bias).

        out[d0 < P, d1 < F] = exp(in0[d0, d1] * -1.0 + in1[d0, 0])
    """

    name = "nki.activation"
    ROLES: ClassVar[tuple[str, ...]] = ("data", "[bias]", "[scale]")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("scalar",)
    ATTRS: ClassVar[dict[str, str]] = {"func": "text", "scale": "float", "buffer": "text",
                                       "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    func = prop_def(StringAttr)
    scale = opt_prop_def(FloatAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        par = dims_of(operand_types[0])
        body = _activation_body(operand_types, attrs, par, syms(par))
        form = GenericForm(par, body, len(operand_types))
        return Semantics(form, TensorType(form.output_shape,
                                          dst_dtype(attrs, operand_types[0].dtype)))


@irdl_op_definition
class ActivationReduceOp(NkiOp):
    """The reduction of `nisa.activation(..., reduce_op=nl.add, reduce_res=...)` with
    `reset_reduce` (`nisa.activation_reduce`): per partition, the fp32 sum over the free dims
    of `func(data * scale + bias)`, written to a `[P, 1]` tile (the `reduce_res`).

        out[d0 < P, d1 < 1] = add over r0 in [0, F) of exp(in0[d0, r0])
    """

    name = "nki.activation_reduce"
    ROLES: ClassVar[tuple[str, ...]] = ("data", "[bias]", "[scale]")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("scalar",)
    ATTRS: ClassVar[dict[str, str]] = {"func": "text", "scale": "float", "reduce_op": "text",
                                       "buffer": "text", "dtype": "dtype"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"reduce_op": "add"}
    inputs = var_operand_def(TensorType)
    func = prop_def(StringAttr)
    scale = opt_prop_def(FloatAttr)
    reduce_op = prop_def(StringAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        data = operand_types[0]
        if attrs.get("reduce_op", "add") != "add":
            raise ShapeError(f"reduce_op '{attrs.get('reduce_op')}': the Scalar engine's "
                             "accumulators add")
        if data.rank < 2:
            raise ShapeError(f"data has rank {data.rank}; a partition dim and free dims are "
                             "needed")
        avoid = {s for d in data.shape for s in d.symbols()}
        (p,) = fresh_names("d", 1, avoid)
        reduced = tuple(LoopDim(n, IntExpr.const(0), e) for n, e in
                        zip(fresh_names("r", data.rank - 1, avoid | {p}), data.shape[1:],
                            strict=True))
        (q,) = fresh_names("d", 1, avoid | {p} | {d.name for d in reduced})
        par = (LoopDim(p, IntExpr.const(0), data.shape[0]), LoopDim(q, IntExpr.const(0),
                                                                     IntExpr.const(1)))
        index = (IntExpr.sym(p), *syms(reduced))
        body = _activation_body(operand_types, attrs, par, index)
        form = GenericForm(par, body, len(operand_types), "add", reduced)
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, "f32")))


@irdl_op_definition
class TensorReduceOp(NkiOp):
    """`nisa.tensor_reduce(dst, op, data, axis, negate, keepdims)` on the Vector engine: a
    reduction over trailing free dims only (`axes` such as (1,), (1, 2) of a 3-D tile), in fp32;
    `negate` negates the result (add, maximum, minimum).

        out[d0 < P, d1 < 1] = add over r0 in [0, F) of in0[d0, r0]
    """

    name = "nki.tensor_reduce"
    ROLES: ClassVar[tuple[str, ...]] = ("data",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector",)
    ATTRS: ClassVar[dict[str, str]] = {"op": "text", "axes": "ints", "negate": "bool",
                                       "keepdims": "bool", "buffer": "text", "dtype": "dtype"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"negate": False, "keepdims": False}
    inputs = var_operand_def(TensorType)
    op = prop_def(StringAttr)
    axes = prop_def(DenseArrayBase)
    negate = prop_def(BoolAttr)
    keepdims = prop_def(BoolAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (data,) = operand_types
        op = attrs.get("op")
        if op not in REDUCE_OPS:
            raise ShapeError(f"op '{op}' is not one of {', '.join(REDUCE_OPS)}")
        reduction = REDUCE_OPS[str(op)]
        axes = tuple(sorted(int(a) for a in attrs.get("axes", ())))
        trailing = tuple(range(data.rank - len(axes), data.rank))
        if not axes or axes != trailing or 0 in axes:
            last, every = [data.rank - 1], list(range(1, data.rank))
            choices = f"{last}" if last == every else f"{last}, ..., {every}"
            raise ShapeError(f"axes {list(axes)}: tensor_reduce reduces trailing free dims (of "
                             f"a rank-{data.rank} tile: {choices})")
        body: ScalarExpr
        avoid = {s for d in data.shape for s in d.symbols()}
        names = fresh_names("d", data.rank, avoid)
        reduced_names = fresh_names("r", len(axes), avoid | set(names))
        keep = bool(attrs.get("keepdims", False))
        kept = data.rank - len(axes)
        par = [LoopDim(n, IntExpr.const(0), d) for n, d in zip(names[:kept], data.shape[:kept],
                                                               strict=True)]
        if keep:
            par += [LoopDim(n, IntExpr.const(0), IntExpr.const(1)) for n in names[kept:]]
        reduced = tuple(LoopDim(n, IntExpr.const(0), data.shape[a])
                        for n, a in zip(reduced_names, axes, strict=True))
        body = as_fp32(Read(0, (*(IntExpr.sym(n) for n in names[:kept]), *syms(reduced))),
                       data.dtype)
        if attrs.get("negate"):
            if reduction not in NEGATED:
                raise ShapeError(f"negate applies to add, maximum and minimum, not '{op}'")
            body = call("neg", body)
            reduction = NEGATED[reduction]
        form = GenericForm(tuple(par), body, 1, reduction, reduced)
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, data.dtype)))


@irdl_op_definition
class TensorTensorScanOp(NkiOp):
    """`nisa.tensor_tensor_scan(dst, data0, data1, initial, op0, op1)` on the Vector engine:
    per partition `r[:, i] = op1(op0(data0[:, i], r[:, i-1]), data1[:, i])` from `r[:, -1] =
    initial`, in fp32; `initial` is the constant `initial` (0.0 when absent) or a third,
    `[P, 1]` f32 operand (a previous tile's last column, when a long scan is tiled). The pairs
    (op0, op1) whose recurrence is a prefix reduction have a generic form: (add, add),
    (add, subtract), (multiply, multiply), (maximum, maximum), (minimum, minimum). cumsum is
    (add, add) over a zero `data0`.

        out[d0 < P, d1 < F] = add over r0 in [0, d1 + 1) of
                              in0[d0, r0] + in1[d0, r0] + select(r0 < 1, in2[d0, 0], 0.0)
    """

    name = "nki.tensor_tensor_scan"
    ROLES: ClassVar[tuple[str, ...]] = ("data0", "data1", "[initial]")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector",)
    ATTRS: ClassVar[dict[str, str]] = {"op0": "text", "op1": "text", "initial": "float",
                                       "buffer": "text", "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    op0 = prop_def(StringAttr)
    op1 = prop_def(StringAttr)
    initial = opt_prop_def(FloatAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        d0, d1, *start = operand_types
        same_shape("data0 and data1 differ in shape", d0, d1)
        if d0.rank != 2:
            raise ShapeError(f"data0 has rank {d0.rank}; the scan runs along the one free dim "
                             "of a 2-D tile")
        pair = (str(attrs.get("op0")), str(attrs.get("op1")))
        if pair not in SCANS:
            raise ShapeError(f"(op0, op1) = {pair} has no generic form (its recurrence is no "
                             "prefix reduction); expected one of "
                             f"{', '.join(f'({a}, {b})' for a, b in SCANS)}")
        reduction, combine, identity = SCANS[pair]
        p, f = dims_of(d0)
        (r,) = fresh_names("r", 1, {p.name, f.name} | {s for d in d0.shape for s in d.symbols()})
        at = (IntExpr.sym(p.name), IntExpr.sym(r))
        body = combine(as_fp32(Read(0, at), d0.dtype), as_fp32(Read(1, at), d1.dtype))
        initial: ScalarExpr | None = None
        if start:
            if attrs.get("initial") is not None:
                raise ShapeError("initial given both as an operand and as a constant")
            if not is_vector(start[0], d0) or start[0].dtype != "f32":
                raise ShapeError(f"initial is {start[0]}; an initial operand is "
                                 f"f32[{d0.shape[0]}, 1]")
            initial = _at_partition(2, (p, f))
        elif float(attrs.get("initial") or 0.0) != identity:
            initial = fp32_const(attrs.get("initial") or 0.0, "initial")
        if initial is not None:
            if reduction in ("max", "min"):  # the initial value joins every prefix
                body = call(reduction, body, initial)
            else:  # it enters once, at the first element (`r < 1`: see nc_matmul)
                first = call("select", call("lt", Index(IntExpr.sym(r)), Const(1)), initial,
                             Const(identity))
                body = call(reduction, body, first)
        form = GenericForm((p, f), body, len(operand_types), reduction,
                           (LoopDim(r, IntExpr.const(0), IntExpr.sym(f.name) + 1),))
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, d0.dtype)))


@irdl_op_definition
class SelectOp(NkiOp):
    """The select of `nisa.select_reduce(dst, predicate, on_true, on_false, reverse_pred)`
    with no reduction (`reduce_cmd=idle`), on the Vector engine: `on_true` where the boolean
    predicate holds (fails, with `reverse_pred`), else `on_false`: the constant
    `on_false_value` or a `[P, 1]` vector operand. `on_true` is not i32; it and the predicate
    are not both in PSUM.

        out[d0 < P, d1 < F] = select(in0[d0, d1], in1[d0, d1], in2[d0, 0])
    """

    name = "nki.select"
    ROLES: ClassVar[tuple[str, ...]] = ("predicate", "on_true", "[on_false]")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector",)
    ATTRS: ClassVar[dict[str, str]] = {"on_false_value": "float", "reverse_pred": "bool",
                                       "buffer": "text", "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    on_false_value = opt_prop_def(FloatAttr)
    reverse_pred = opt_prop_def(BoolAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        pred, on_true, *on_false = operand_types
        same_shape("predicate and on_true differ in shape", pred, on_true)
        if pred.dtype != "i1":
            raise ShapeError(f"the predicate has dtype {pred.dtype}; it is a boolean (i1) tile")
        if on_true.dtype == "i32":
            raise ShapeError("on_true has dtype i32, which select_reduce does not take")
        par = dims_of(on_true)
        flag: ScalarExpr = Read(0, syms(par))
        if attrs.get("reverse_pred"):
            flag = call("not", flag)
        otherwise: ScalarExpr
        if on_false:
            if attrs.get("on_false_value") is not None:
                raise ShapeError("on_false given both as an operand and as a constant")
            if not is_vector(on_false[0], on_true):
                raise ShapeError(f"on_false is {on_false[0]}; a vector on_false is "
                                 f"[{on_true.shape[0]}, 1]")
            otherwise = _at_partition(2, par)
        elif attrs.get("on_false_value") is not None:
            otherwise = fp32_const(attrs["on_false_value"], "on_false_value")
        else:
            raise ShapeError("on_false is neither an operand nor an on_false_value")
        form = GenericForm(par, call("select", flag, Read(1, syms(par)), otherwise),
                           len(operand_types))
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, on_true.dtype)))

    def check_operands(self, buffers: Sequence[str | None]) -> None:
        if buffers[0] == "psum" and buffers[1] == "psum":
            raise VerifyException(f"'{self.name}': the predicate and on_true are both in PSUM; "
                                  "at most one may be")


@irdl_op_definition
class AffineSelectOp(NkiOp):
    """`nisa.affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value,
    cmp_op, offset)` on GpSimd, into SBUF: `on_true` where the affine value of the element's
    indices (iota's) compares true against 0, else the constant `on_false` (a causal mask).
    `size_offset` (iota's: sizes and loop indices, the value of `offset` when traced) makes
    the column mask of a block past a row's end: `N - BK*k - f > 0`.

        out[p < P, f < F] = select(0 + p * 1 + f * -1 >= 0, in0[p, f], -inf)
    """

    name = "nki.affine_select"
    ROLES: ClassVar[tuple[str, ...]] = ("on_true",)
    DST_BUFFERS: ClassVar[tuple[str, ...]] = ("sbuf",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("gpsimd",)
    ATTRS: ClassVar[dict[str, str]] = {"pattern": "ints", "channel_multiplier": "int",
                                       "offset": "int", "size_offset": "dims", "cmp_op": "text",
                                       "on_false_value": "float", "buffer": "text",
                                       "dtype": "dtype"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"offset": 0, "cmp_op": "equal"}
    inputs = var_operand_def(TensorType)
    pattern = prop_def(DenseArrayBase)
    channel_multiplier = prop_def(IntegerAttr[I64])
    offset = prop_def(IntegerAttr[I64])
    size_offset = opt_prop_def(ArrayAttr[StringAttr])
    cmp_op = prop_def(StringAttr)
    on_false_value = prop_def(FloatAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (on_true,) = operand_types
        cmp = attrs.get("cmp_op")
        if cmp not in COMPARISONS:
            raise ShapeError(f"cmp_op '{cmp}' is not one of {', '.join(COMPARISONS)}")
        if "on_false_value" not in attrs:
            raise ShapeError("missing on_false_value")
        if on_true.dtype == "i32":
            raise ShapeError("on_true has dtype i32; affine_select takes float or 8- or 16-bit "
                             "integer tiles")
        par = dims_of(on_true, "p")
        value = affine_index(par, attrs)
        condition = call(COMPARISONS[str(cmp)], Index(value), Const(0))
        body = call("select", condition, Read(0, syms(par)),
                    fp32_const(attrs["on_false_value"], "on_false_value"))
        form = GenericForm(par, body, 1)
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, on_true.dtype)))


#: the NeuronCore generation `nki.isa.exponential` needs ("Available only on NeuronCore-v4 and
#: newer", SDK@HEAD:nki/api/nki/isa/__init__.py, exponential)
EXPONENTIAL_VERSION = 4


@irdl_op_definition
class ExponentialOp(NkiOp):
    """`nisa.exponential(dst, src, max_value)` on the Vector engine of NeuronCore-v4 and newer:
    `exp(src - max_value)` in fp32, `max_value` the constant `max_value` (0.0 when absent) or a
    `[P, 1]` f32 operand. Its running sum (`reduce_res`) is not modelled. The op verifier
    accepts it only where every NKI profile is a NeuronCore-v4 or newer
    (`limits.neuron_core_version`); its form is the instruction's meaning either way.

        out[d0 < P, d1 < F] = exp(in0[d0, d1] - in1[d0, 0])
    """

    name = "nki.exponential"
    ROLES: ClassVar[tuple[str, ...]] = ("src", "[max_value]")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector",)
    ATTRS: ClassVar[dict[str, str]] = {"max_value": "float", "buffer": "text", "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    max_value = opt_prop_def(FloatAttr)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        src, *peak = operand_types
        if src.rank < 2:
            raise ShapeError(f"src has rank {src.rank}; a partition dim and free dims are needed")
        par = dims_of(src)
        shift: ScalarExpr
        if peak:
            if attrs.get("max_value") is not None:
                raise ShapeError("max_value given both as an operand and as a constant")
            if not is_vector(peak[0], src) or peak[0].dtype != "f32":
                raise ShapeError(f"max_value is {peak[0]}; a max_value operand is "
                                 f"f32[{src.shape[0]}, 1]")
            shift = _at_partition(1, par)
        else:
            shift = fp32_const(attrs.get("max_value") or 0.0, "max_value")
        body = call("exp", call("sub", as_fp32(Read(0, syms(par)), src.dtype), shift))
        form = GenericForm(par, body, len(operand_types))
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, src.dtype)))

    def check_operands(self, buffers: Sequence[str | None]) -> None:
        older = generic_limits().lacking(EXPONENTIAL_VERSION)
        if older:
            have = ", ".join(f"{name} is NeuronCore-v{v}" for name, v in older)
            raise VerifyException(f"'{self.name}': nki.isa.exponential runs on "
                                  f"NeuronCore-v{EXPONENTIAL_VERSION} and newer only; profile "
                                  f"{have} (limits.neuron_core_version); use nki.activation "
                                  "with func exp")


def _is(a: IntExpr, b: IntExpr) -> ScalarExpr:
    """The flag `a == b` of two index expressions."""
    return call("eq", Index(a), Index(b))


@irdl_op_definition
class BnStatsOp(NkiOp):
    """`nisa.bn_stats(dst, data)` on the Vector engine: per partition, `(count, mean, variance
    * count)` of data's even free elements, then of its odd ones, in fp32 (an empty half gives
    zeros); data `[P, F]` with F <= `bn_stats_free_max` (512), dst `[P, 6]` (f32 unless
    `dtype`). The form sums over pairs (r, s) of one half: a pair with r == s counts 1 and adds
    `x_r / n`; every pair adds `(x_r - x_s)^2 / 2n`, which sums to the half's variance times n
    (n = the half's count, `(F + 1 - half) floordiv 2`).

        out[d0 < P, d1 < 6] = add over r < F, s < F of (in the half d1 floordiv 3)
            [count, mean, variance * count][d1 mod 3] terms
    """

    name = "nki.bn_stats"
    ROLES: ClassVar[tuple[str, ...]] = ("data",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector",)
    ATTRS: ClassVar[dict[str, str]] = {"buffer": "text", "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (data,) = operand_types
        if data.rank != 2:
            raise ShapeError(f"data has rank {data.rank}; bn_stats reads a [P, F] tile")
        free = data.shape[1]
        at_most("the free size of data", free, generic_limits().bn_stats_free_max)
        avoid = {s for d in data.shape for s in d.symbols()}
        p, j = fresh_names("d", 2, avoid)
        r, s = fresh_names("r", 2, avoid | {p, j})
        sp, sj, sr, ss = (IntExpr.sym(n) for n in (p, j, r, s))
        half = sj.floordiv(3)
        kind = sj.mod(3)
        count = (free + 1 - half).floordiv(2)
        x_r = as_fp32(Read(0, (sp, sr)), data.dtype)
        x_s = as_fp32(Read(0, (sp, ss)), data.dtype)
        diagonal = _is(sr, ss)
        term = call("select", _is(kind, IntExpr.const(0)),
                    call("select", diagonal, Const(1.0), Const(0.0)),
                    call("select", _is(kind, IntExpr.const(1)),
                         call("select", diagonal, call("div", x_r, Index(count)), Const(0.0)),
                         call("div", call("square", call("sub", x_r, x_s)),
                              call("mul", Const(2.0), Index(count)))))
        in_half = call("select", _is(sr.mod(2), half),
                       call("select", _is(ss.mod(2), half), term, Const(0.0)), Const(0.0))
        form = GenericForm((LoopDim(p, IntExpr.const(0), data.shape[0]),
                            LoopDim(j, IntExpr.const(0), IntExpr.const(6))),
                           in_half, 1, "add",
                           (LoopDim(r, IntExpr.const(0), free), LoopDim(s, IntExpr.const(0), free)))
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, "f32")))


@irdl_op_definition
class BnAggrOp(NkiOp):
    """`nisa.bn_aggr(dst, data)` on the Vector engine: per partition, the mean and variance
    (dst `[P, 2]`, f32 unless `dtype`) of the elements data's `(count, mean, variance * count)`
    triples summarise (data `[P, 3G]`, one or more bn_stats results), in fp32: with N the sum
    of the counts, mean = sum of count * mean / N and variance = sum of (variance * count +
    count * (mean_g - mean)^2) / N. G is a constant (the form writes N and the mean as sums of
    G reads).

        out[d0 < P, d1 < 2] = add over g < G of
            select(d1 == 0, c_g * m_g / N, (v_g + c_g * (m_g - mean)^2) / N)
    """

    name = "nki.bn_aggr"
    ROLES: ClassVar[tuple[str, ...]] = ("data",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector",)
    ATTRS: ClassVar[dict[str, str]] = {"buffer": "text", "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (data,) = operand_types
        if data.rank != 2:
            raise ShapeError(f"data has rank {data.rank}; bn_aggr reads a [P, 3G] tile")
        free = data.shape[1]
        if not free.is_const or free.value % 3:
            raise ShapeError(f"data has {free} elements per partition; bn_aggr reads a constant "
                             "number of (count, mean, variance * count) triples")
        groups = free.value // 3
        avoid = {s for d in data.shape for s in d.symbols()}
        p, j = fresh_names("d", 2, avoid)
        (g,) = fresh_names("r", 1, avoid | {p, j})
        sp, sj, sg = (IntExpr.sym(n) for n in (p, j, g))

        def at(k: int | IntExpr) -> ScalarExpr:
            return as_fp32(Read(0, (sp, IntExpr.lift(k))), data.dtype)

        total: ScalarExpr = at(0)
        weighted: ScalarExpr = call("mul", at(0), at(1))
        for h in range(1, groups):
            total = call("add", total, at(3 * h))
            weighted = call("add", weighted, call("mul", at(3 * h), at(3 * h + 1)))
        mean = call("div", weighted, total)
        c_g, m_g, v_g = at(sg * 3), at(sg * 3 + 1), at(sg * 3 + 2)
        spread = call("add", v_g, call("mul", c_g, call("square", call("sub", m_g, mean))))
        body = call("select", _is(sj, IntExpr.const(0)), call("div", call("mul", c_g, m_g), total),
                    call("div", spread, total))
        form = GenericForm((LoopDim(p, IntExpr.const(0), data.shape[0]),
                            LoopDim(j, IntExpr.const(0), IntExpr.const(2))),
                           body, 1, "add", (LoopDim(g, IntExpr.const(0), IntExpr.const(groups)),))
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, "f32")))
