"""Property tests: the reference interpreter agrees with the naive loop evaluator on every ax op.

For each op class of `ALL_OPS` a generator draws small shapes (dims 1..4, ranks 0..4 where legal,
NumPy broadcasting across ranks and size-1 dims), attributes, dtypes and inputs; the op is built
with `Op.make` inside a one-op `func.func` (some dims symbolic, bound from the input shapes), run by
the interpreter, and compared with `evaluate_op_naive` on the same stored inputs in float64, using
the tolerances of `dialects/form/dtypes.py` (exact for i32 and i1).

A second property runs every named op's generic form, printed and re-parsed as an `ax.generic`,
through the interpreter's vectorized form evaluator and compares it with the op's own kernel.

Example budget (max_examples are set per test below):
  * test_interpreter_agrees_with_naive: 44 op classes x 40 = 1760 examples
  * test_generic_form_evaluator_matches_kernel: 43 op classes x 12 = 516 examples
  * test_hand_written_generic_forms: 13 templates x 20 = 260 examples
  total 2536 examples, about 35 s of CPU time (parsing the text of ax.generic forms dominates).

Float inputs are mostly multiples of 1/8 in [-2, 2] so sums and products are exact in float32 and
disagreements come from semantics, not from accumulation order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from axon.dialects.ax import (
    ALL_OPS,
    BINARY_OPS,
    COMPARE_OPS,
    REDUCE_OPS,
    UNARY_OPS,
    BroadcastToOp,
    CastOp,
    ConcatOp,
    ConstantOp,
    CumsumOp,
    DivOp,
    GenericOp,
    IotaOp,
    MatmulOp,
    MeanOp,
    PowOp,
    ProdOp,
    ReshapeOp,
    SelectOp,
    SliceOp,
    TensorOp,
    TensorType,
    TransposeOp,
)
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import FUNCTIONS
from axon.interpreter import evaluate_op_naive, run_function

SYMS = ("M", "N", "K", "P")
FLOATS = ("f32", "bf16", "f16")
NUMERIC = (*FLOATS, "i32")
ALL_DTYPES = (*NUMERIC, "i1")

Draw = Callable[[st.SearchStrategy[Any]], Any]


# ---- cases --------------------------------------------------------------------------------------
@dataclass
class Dims:
    """Size symbols of one example: each has a value and is written symbolically or as a number."""

    values: dict[str, int]
    symbolic: dict[str, bool]

    def dim(self, key: str | int) -> IntExpr:
        """The type-level dim for a key (a symbol name, or the literal 1)."""
        if isinstance(key, int):
            return IntExpr.const(key)
        return IntExpr.sym(key) if self.symbolic[key] else IntExpr.const(self.values[key])

    def value(self, key: str | int) -> int:
        return key if isinstance(key, int) else self.values[key]

    def text(self, key: str) -> str:
        return str(self.dim(key))


@dataclass
class Case:
    """One op application: operand types and stored inputs, attributes, all size values."""

    op_class: type[TensorOp]
    types: list[TensorType]
    inputs: list[np.ndarray]
    attrs: dict[str, Any]
    sizes: dict[str, int]
    notes: list[str] = field(default_factory=list)


@st.composite
def dims_strategy(draw: Draw) -> Dims:
    return Dims({s: draw(st.integers(1, 4)) for s in SYMS},
                {s: draw(st.booleans()) for s in SYMS})


def make_data(rng: np.random.Generator, shape: Sequence[int], dtype: str, kind: str = "any"
              ) -> np.ndarray:
    """Inputs in the storage dtype, drawn so the op stays in its domain."""
    shape = tuple(shape)
    if dtype == "i1":
        return rng.random(shape) < 0.5
    if dtype == "i32":
        lo, hi = {"unit": (-1, 1), "ties": (-2, 2), "positive": (1, 5)}.get(kind, (-5, 5))
        ints = rng.integers(lo, hi + 1, shape)
        if kind == "nonzero":
            ints = np.where(ints == 0, 1, ints)
        return ints.astype(np.int32)
    values: np.ndarray
    if kind == "positive":
        values = rng.integers(4, 17, shape) / 8.0
    elif kind == "nonzero":
        values = rng.choice([-1.0, 1.0], shape) * rng.integers(4, 17, shape) / 8.0
    elif kind == "unit":
        values = rng.choice([-1.0, -0.5, 0.5, 1.0], shape)
    elif kind == "ties":
        values = rng.integers(-2, 3, shape) / 2.0
    elif kind == "continuous":
        values = rng.uniform(-4.0, 4.0, shape) * (rng.random(shape) < 0.9)
    else:
        values = rng.integers(-16, 17, shape) / 8.0
    return np.asarray(values).astype(DTYPES[dtype].storage)


def _shape_keys(draw: Draw, lo: int = 0, hi: int = 4, ones: bool = True) -> list[str | int]:
    rank = draw(st.integers(lo, hi))
    choices: list[Any] = [*SYMS, 1] if ones else list(SYMS)
    return [draw(st.sampled_from(choices)) for _ in range(rank)]


def _broadcast_operand(draw: Draw, out: list[str | int]) -> list[str | int]:
    """A shape that broadcasts to `out`: a suffix with some dims replaced by 1."""
    rank = draw(st.integers(0, len(out)))
    suffix = out[len(out) - rank:]
    return [1 if draw(st.integers(0, 3)) == 0 else k for k in suffix]


def _operand(dims: Dims, rng: np.random.Generator, keys: Sequence[str | int], dtype: str,
             kind: str = "any") -> tuple[TensorType, np.ndarray]:
    t = TensorType([dims.dim(k) for k in keys], dtype)
    return t, make_data(rng, [dims.value(k) for k in keys], dtype, kind)


def _rng(draw: Draw) -> np.random.Generator:
    return np.random.default_rng(draw(st.integers(0, 2**32 - 1)))


# ---- generators, one per op family --------------------------------------------------------------
DOMAIN = {"log": "positive", "sqrt": "positive", "rsqrt": "positive", "reciprocal": "nonzero"}


def gen_unary(cls: type[TensorOp]) -> Callable[[Draw, Dims], Case]:
    def gen(draw: Draw, dims: Dims) -> Case:
        fn = cls.FUNCTION  # type: ignore[attr-defined]
        dtype = draw(st.sampled_from(FLOATS if FUNCTIONS[fn].float_only else NUMERIC))
        t, x = _operand(dims, _rng(draw), _shape_keys(draw), dtype, DOMAIN.get(fn, "any"))
        return Case(cls, [t], [x], {}, dims.values)
    return gen


def gen_binary(cls: type[TensorOp]) -> Callable[[Draw, Dims], Case]:
    def gen(draw: Draw, dims: Dims) -> Case:
        compare = cls in COMPARE_OPS
        options = ALL_DTYPES if compare else FLOATS if cls is DivOp else NUMERIC
        dtype = draw(st.sampled_from(options))
        out = _shape_keys(draw)
        rng = _rng(draw)
        kinds = ["ties", "ties"] if compare else ["any", "nonzero" if cls is DivOp else "any"]
        pairs = [_operand(dims, rng, _broadcast_operand(draw, out), dtype, k) for k in kinds]
        return Case(cls, [p[0] for p in pairs], [p[1] for p in pairs], {}, dims.values)
    return gen


def gen_pow(draw: Draw, dims: Dims) -> Case:
    exponent = draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5, 1.5, -1.0, -2.0, -0.5]))
    # fractional exponents need x > 0, negative ones x != 0
    kind = "any" if exponent >= 0 and exponent == int(exponent) else "positive"
    t, x = _operand(dims, _rng(draw), _shape_keys(draw), draw(st.sampled_from(FLOATS)), kind)
    return Case(PowOp, [t], [x], {"exponent": exponent}, dims.values)


def gen_select(draw: Draw, dims: Dims) -> Case:
    dtype = draw(st.sampled_from(ALL_DTYPES))
    out = _shape_keys(draw)
    rng = _rng(draw)
    ops = [_operand(dims, rng, _broadcast_operand(draw, out), dt)
           for dt in ("i1", dtype, dtype)]
    return Case(SelectOp, [o[0] for o in ops], [o[1] for o in ops], {}, dims.values)


def gen_cast(draw: Draw, dims: Dims) -> Case:
    src, dst = draw(st.sampled_from(ALL_DTYPES)), draw(st.sampled_from(ALL_DTYPES))
    t, x = _operand(dims, _rng(draw), _shape_keys(draw), src, "continuous")
    return Case(CastOp, [t], [x], {"dtype": dst}, dims.values)


def gen_constant(draw: Draw, dims: Dims) -> Case:
    dtype = draw(st.sampled_from(ALL_DTYPES))
    value = (draw(st.sampled_from([0.0, 1.0])) if dtype == "i1" else
             float(draw(st.integers(-5, 5))) if dtype == "i32" else
             draw(st.sampled_from([0.0, 1.5, -0.1, 3.0, -2.75, 100.3])))
    shape = [dims.dim(k) for k in _shape_keys(draw, 0, 3)]
    return Case(ConstantOp, [], [], {"value": value, "shape": shape, "dtype": dtype},
                dims.values)


def gen_iota(draw: Draw, dims: Dims) -> Case:
    keys = _shape_keys(draw, 1, 4)
    axis = draw(st.integers(0, len(keys) - 1))
    return Case(IotaOp, [], [], {"shape": [dims.dim(k) for k in keys], "axis": axis,
                                 "dtype": draw(st.sampled_from(NUMERIC))}, dims.values)


def gen_matmul(draw: Draw, dims: Dims) -> Case:
    dtype = draw(st.sampled_from(NUMERIC))
    ra, rb = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    m, k, n = (draw(st.sampled_from(SYMS)) for _ in range(3))
    batch = [draw(st.sampled_from([*SYMS, 1])) for _ in range(max(ra, rb) - 2)]

    def batch_part(rank: int) -> list[str | int]:
        part = batch[len(batch) - max(rank - 2, 0):] if rank > 2 else []
        return [1 if draw(st.integers(0, 3)) == 0 else key for key in part]

    a_keys = [k] if ra == 1 else [*batch_part(ra), m, k]
    b_keys = [k] if rb == 1 else [*batch_part(rb), k, n]
    rng = _rng(draw)
    (ta, a), (tb, b) = _operand(dims, rng, a_keys, dtype), _operand(dims, rng, b_keys, dtype)
    return Case(MatmulOp, [ta, tb], [a, b], {}, dims.values)


def gen_reduce(cls: type[TensorOp]) -> Callable[[Draw, Dims], Case]:
    def gen(draw: Draw, dims: Dims) -> Case:
        dtype = draw(st.sampled_from(FLOATS if cls is MeanOp else NUMERIC))
        keys = _shape_keys(draw, 1, 4)
        axes = sorted(draw(st.sets(st.integers(0, len(keys) - 1), min_size=1)))
        # products of values in {-1, -1/2, 1/2, 1} are exact powers of two (no overflow)
        t, x = _operand(dims, _rng(draw), keys, dtype, "unit" if cls is ProdOp else "any")
        return Case(cls, [t], [x], {"axes": tuple(axes), "keepdims": draw(st.booleans())},
                    dims.values)
    return gen


def gen_cumsum(draw: Draw, dims: Dims) -> Case:
    keys = _shape_keys(draw, 1, 4)
    t, x = _operand(dims, _rng(draw), keys, draw(st.sampled_from(NUMERIC)))
    return Case(CumsumOp, [t], [x], {"axis": draw(st.integers(0, len(keys) - 1))}, dims.values)


def gen_transpose(draw: Draw, dims: Dims) -> Case:
    keys = _shape_keys(draw)
    t, x = _operand(dims, _rng(draw), keys, draw(st.sampled_from(ALL_DTYPES)))
    perm = tuple(draw(st.permutations(range(len(keys)))))
    return Case(TransposeOp, [t], [x], {"perm": perm}, dims.values)


def _group(draw: Draw, factors: list[tuple[IntExpr, int]]) -> list[tuple[IntExpr, int]]:
    """Shuffle factors and multiply consecutive runs into dims (with stray 1s inserted)."""
    order = draw(st.permutations(factors)) if factors else []
    dims: list[tuple[IntExpr, int]] = []
    for expr, value in order:
        if dims and draw(st.booleans()):
            dims[-1] = (dims[-1][0] * expr, dims[-1][1] * value)
        else:
            dims.append((expr, value))
        if draw(st.integers(0, 4)) == 0:
            dims.append((IntExpr.const(1), 1))
    return dims


def gen_reshape(draw: Draw, dims: Dims) -> Case:
    # both shapes group the same factors, so their element counts are equal as polynomials
    keys = [draw(st.sampled_from([*SYMS, 2, 3])) for _ in range(draw(st.integers(0, 4)))]
    factors = [(dims.dim(k), dims.value(k)) for k in keys]
    src, dst = _group(draw, factors), _group(draw, factors)
    dtype = draw(st.sampled_from(ALL_DTYPES))
    t = TensorType([e for e, _ in src], dtype)
    x = make_data(_rng(draw), [v for _, v in src], dtype)
    return Case(ReshapeOp, [t], [x], {"shape": [e for e, _ in dst]}, dims.values)


def gen_broadcast_to(draw: Draw, dims: Dims) -> Case:
    keys = _shape_keys(draw, 0, 3)
    lead = [draw(st.sampled_from([*SYMS, 1])) for _ in range(draw(st.integers(0, 2)))]
    out = [*lead, *(draw(st.sampled_from([*SYMS, 1])) if k == 1 else k for k in keys)]
    t, x = _operand(dims, _rng(draw), keys, draw(st.sampled_from(ALL_DTYPES)))
    return Case(BroadcastToOp, [t], [x], {"shape": [dims.dim(k) for k in out]}, dims.values)


def gen_slice(draw: Draw, dims: Dims) -> Case:
    keys = _shape_keys(draw)
    start, stop, step = [], [], []
    for key in keys:
        v = dims.value(key)
        lo = draw(st.integers(0, v))
        hi = draw(st.integers(lo, v))
        step.append(draw(st.integers(1, 3)))
        start.append(IntExpr.const(lo))
        # a symbolic stop gives result dims like (M + 1) floordiv 2
        symbolic = isinstance(key, str) and dims.symbolic[key] and draw(st.booleans())
        if symbolic and isinstance(key, str):
            stop.append(IntExpr.sym(key) - (v - hi))
        else:
            stop.append(IntExpr.const(hi))
    t, x = _operand(dims, _rng(draw), keys, draw(st.sampled_from(ALL_DTYPES)))
    return Case(SliceOp, [t], [x], {"start": start, "stop": stop, "step": step}, dims.values)


def gen_concat(draw: Draw, dims: Dims) -> Case:
    keys = _shape_keys(draw, 1, 4)
    axis = draw(st.integers(0, len(keys) - 1))
    dtype = draw(st.sampled_from(ALL_DTYPES))
    rng = _rng(draw)
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        own = list(keys)
        own[axis] = draw(st.sampled_from([*SYMS, 1]))
        ops.append(_operand(dims, rng, own, dtype))
    return Case(ConcatOp, [o[0] for o in ops], [o[1] for o in ops], {"axis": axis}, dims.values)


# hand-written generic forms: (form with {SYM} placeholders, operand shapes, dtypes, data kind,
# result dtype or None for the operand dtype)
GENERIC_TEMPLATES: list[tuple[str, list[list[str]], tuple[str, ...], str, str | None]] = [
    ("out[d0 < {M}, d1 < {N}] = add over r0 in [0, d1 + 1) of in0[d0, r0]",
     [["{M}", "{N}"]], NUMERIC, "any", None),
    ("out[d0 < {N}] = add over r0 in [d0 + 1, {N}) of in0[r0] * in0[d0]",
     [["{N}"]], NUMERIC, "any", None),
    ("out[d0 < {N}] = max over r0 in [d0 + 1, {N}) of in0[r0]", [["{N}"]], FLOATS, "any", None),
    ("out[d0 < {M}] = in0[2*d0 + 1]", [["2*{M} + 1"]], ALL_DTYPES, "any", None),
    ("out[d0 < {M} + {N}] = select(idx(d0) < idx({M}), in0[d0], in1[d0 - {M}])",
     [["{M}"], ["{N}"]], ALL_DTYPES, "any", None),
    ("out[d0 < {N}, d1 < {M}] = -in0[{M} - 1 - d1, d0]", [["{M}", "{N}"]], NUMERIC, "any", None),
    ("out[d0 < 2*{M}] = in0[d0 floordiv 2] + in1[d0 mod 2]", [["{M}"], ["2"]], NUMERIC, "any",
     None),
    ("out[d0 < {N}] = add over r0 in [0, d0 + 1), r1 in [0, r0 + 1) of in0[r1]", [["{N}"]],
     NUMERIC, "any", None),
    ("out[d0 < {M}] = add over r0 in [0, {K}) of in0[d0, r0] * in0[d0, r0] "
     "then sqrt(acc / idx({K}))", [["{M}", "{K}"]], FLOATS, "any", None),
    ("out[d0 < {N}] = min over r0 in [max(d0 - 1, 0), min(d0 + 2, {N})) of in0[r0]", [["{N}"]],
     NUMERIC, "any", None),
    ("out[d0 < {M}] = add over r0 in [0, {K}) of in0[d0, r0] * cast(idx(r0), f32)",
     [["{M}", "{K}"]], FLOATS, "any", None),
    ("out[d0 < {M}] = in0[d0] > in1[0]", [["{M}"], ["1"]], NUMERIC, "ties", "i1"),
    ("out[d0 < {N}] = mul over r0 in [0, d0) of in0[r0]", [["{N}"]], NUMERIC, "unit", None),
]


def _fill(template: str, dims: Dims) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: dims.text(m.group(1)), template)


def gen_generic(draw: Draw, dims: Dims, index: int | None = None) -> Case:
    if index is None:
        index = draw(st.integers(0, len(GENERIC_TEMPLATES) - 1))
    form, shapes, dtypes, kind, result = GENERIC_TEMPLATES[index]
    dtype = draw(st.sampled_from(dtypes))
    rng = _rng(draw)
    types, inputs = [], []
    for shape in shapes:
        exprs = [IntExpr.lift(_fill(s, dims)) for s in shape]
        types.append(TensorType(exprs, dtype))
        inputs.append(make_data(rng, [e.evaluate(dims.values) for e in exprs], dtype, kind))
    return Case(GenericOp, types, inputs, {"form": _fill(form, dims), "dtype": result or dtype},
                dims.values)


GENERATORS: dict[type[TensorOp], Callable[[Draw, Dims], Case]] = {
    **{cls: gen_unary(cls) for cls in UNARY_OPS},
    **{cls: gen_binary(cls) for cls in (*BINARY_OPS, *COMPARE_OPS)},
    **{cls: gen_reduce(cls) for cls in REDUCE_OPS},
    PowOp: gen_pow, SelectOp: gen_select, CastOp: gen_cast, ConstantOp: gen_constant,
    IotaOp: gen_iota, MatmulOp: gen_matmul, CumsumOp: gen_cumsum, TransposeOp: gen_transpose,
    ReshapeOp: gen_reshape, BroadcastToOp: gen_broadcast_to, SliceOp: gen_slice,
    ConcatOp: gen_concat, GenericOp: gen_generic,
}


# ---- running ------------------------------------------------------------------------------------
def one_op_function(op_class: type[TensorOp], types: Sequence[TensorType],
                    attrs: dict[str, Any]) -> tuple[FuncOp, TensorOp]:
    """`func.func @f(args) { %r = op(args); return %r }`."""
    block = Block(arg_types=list(types))
    op = op_class.make(list(block.args), **attrs)
    block.add_ops([op, ReturnOp(op.results[0])])
    func = FuncOp("f", (list(types), [op.results[0].type]), Region(block))
    func.verify()
    return func, op


def unbound_sizes(types: Sequence[TensorType], sizes: dict[str, int]) -> dict[str, int]:
    """Sizes that no parameter dim names directly: the caller has to supply them (constant
    shapes, reshape targets); the rest must be bound (or solved) from the input shapes."""
    bare = {d.as_symbol for t in types for d in t.shape}
    return {k: v for k, v in sizes.items() if k not in bare}


def assert_agree(got: np.ndarray, want: np.ndarray, dtype: str, what: str) -> None:
    """Interpreter result (storage dtype) against a float64/bool reference of the same shape."""
    assert got.dtype == DTYPES[dtype].storage, f"{what}: result dtype {got.dtype}, want {dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    if dtype == "i1":
        np.testing.assert_array_equal(got, want.astype(np.bool_), err_msg=what)
    elif dtype == "i32":
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64), err_msg=what)
        assert np.all(want == np.round(want)), f"{what}: reference is not integral"
    else:
        rtol, atol = DTYPES[dtype].tolerance
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=what)


def describe(case: Case, op: TensorOp) -> str:
    return (f"{op.name} {case.attrs} on {[str(t) for t in case.types]} sizes {case.sizes}; "
            f"form: {op.generic_form()}")


def check_case(case: Case) -> None:
    func, op = one_op_function(case.op_class, case.types, case.attrs)
    what = describe(case, op)
    (got,) = run_function(func, case.inputs, unbound_sizes(case.types, case.sizes))
    naive_inputs = [x if x.dtype == np.bool_ else x.astype(np.float64) for x in case.inputs]
    want = evaluate_op_naive(op, naive_inputs, case.sizes)
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    assert_agree(got, want, result_type.dtype, what)


SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- tests --------------------------------------------------------------------------------------
def test_every_op_class_has_a_generator() -> None:
    missing = [cls.name for cls in ALL_OPS if cls not in GENERATORS]
    assert not missing, f"no generator for: {', '.join(missing)}"


@pytest.mark.parametrize("op_class", ALL_OPS, ids=lambda c: c.name)
@settings(SETTINGS, max_examples=40)
@given(data=st.data(), dims=dims_strategy())
def test_interpreter_agrees_with_naive(op_class: type[TensorOp], data: st.DataObject,
                                       dims: Dims) -> None:
    check_case(GENERATORS[op_class](data.draw, dims))


@pytest.mark.parametrize("op_class", [c for c in ALL_OPS if c is not GenericOp],
                         ids=lambda c: c.name)
@settings(SETTINGS, max_examples=12)
@given(data=st.data(), dims=dims_strategy())
def test_generic_form_evaluator_matches_kernel(op_class: type[TensorOp], data: st.DataObject,
                                               dims: Dims) -> None:
    """The op's printed form, as an ax.generic, runs through the vectorized form evaluator and
    must agree with the op's own kernel (the form text must also round-trip)."""
    case = GENERATORS[op_class](data.draw, dims)
    func, op = one_op_function(case.op_class, case.types, case.attrs)
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    gfunc, gop = one_op_function(GenericOp, case.types, {"form": str(op.generic_form()),
                                                         "dtype": result_type.dtype})
    assert gop.results[0].type == result_type
    extra = unbound_sizes(case.types, case.sizes)
    (want,) = run_function(func, case.inputs, extra)
    (got,) = run_function(gfunc, case.inputs, extra)
    reference = want if want.dtype == np.bool_ else want.astype(np.float64)
    assert_agree(got, reference, result_type.dtype, describe(case, op))


@pytest.mark.parametrize("template", range(len(GENERIC_TEMPLATES)),
                         ids=lambda i: GENERIC_TEMPLATES[i][0][:40])
@settings(SETTINGS, max_examples=20)
@given(data=st.data(), dims=dims_strategy())
def test_hand_written_generic_forms(template: int, data: st.DataObject, dims: Dims) -> None:
    check_case(gen_generic(data.draw, dims, template))
