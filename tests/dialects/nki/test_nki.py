"""The `nki` dialect: each instruction's generic form run by the reference interpreter on
random tiles of random shapes within the NKI limits, against an independent numpy statement of
the instruction (reference/nki.md section 3: compute in fp32, round once to the dst dtype); the
identities a lowering relies on, proved by the verifier through the forms for all sizes; and the
op verifier's limits (read from the NKI profiles) and diagnostics."""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.ir import Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import (
    AddOp,
    ConstantOp,
    ExpOp,
    GeOp,
    MatmulOp,
    MulOp,
    NegOp,
    ReduceMaxOp,
    SubOp,
    SumOp,
    TensorType,
    TransposeOp,
)
from axon.dialects.ax import CumsumOp as AxCumsumOp
from axon.dialects.ax import IotaOp as AxIotaOp
from axon.dialects.ax import SelectOp as AxSelectOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.nki import (
    ALL_OPS,
    ENGINES,
    ActivationOp,
    ActivationReduceOp,
    AffineSelectOp,
    DmaCopyOp,
    DmaTransposeOp,
    IotaOp,
    MemsetOp,
    NcMatmulOp,
    NcTransposeOp,
    SelectOp,
    TensorCopyOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
    TensorTensorScanOp,
)
from axon.dialects.nki.limits import generic_limits, nki_profiles
from axon.interpreter import run_function, run_module
from axon.targets.nki.sketches import Add, build_function
from axon.tools.embed import parse_mlir
from axon.verifier import Proved, Refuted, prove_equivalent

# ---- building functions of instructions: arguments in HBM, the last value returned ----
#: `build_function` of the NKI sketches: adds an op, gives its result
function = build_function


def to_sbuf(add: Add, value: SSAValue, **attrs: Any) -> SSAValue:
    """`value` DMA-copied into SBUF."""
    return add(DmaCopyOp.make([value], buffer="sbuf", **attrs))


# ---- each form in the interpreter against numpy ------------------------------------------
LIMITS = generic_limits()
F32 = np.float32
BF16 = ml_dtypes.bfloat16
#: free sizes drawn (up to 256: a scan evaluates an F x F triangle per partition)
FREE = st.integers(1, 256)
PARTITIONS = st.integers(1, LIMITS.partitions)
EXAMPLES = settings(max_examples=25, deadline=None)

#: the ALU ops, stated independently of the dialect's table
NUMPY_ALU: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
    "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b)),
    "equal": lambda a, b: (a == b).astype(F32), "not_equal": lambda a, b: (a != b).astype(F32),
    "greater": lambda a, b: (a > b).astype(F32), "greater_equal": lambda a, b: (a >= b).astype(F32),
    "less": lambda a, b: (a < b).astype(F32), "less_equal": lambda a, b: (a <= b).astype(F32),
}


def tiles(seed: int, *shapes: tuple[int, ...], dtype: Any = F32) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(F32).astype(dtype) for s in shapes]


def run(params: list[TensorType], build: Any, inputs: list[np.ndarray]) -> np.ndarray:
    (out,) = run_function(function("k", params, build), inputs)
    return out


def t(shape: tuple[int, ...], dtype: str = "f32") -> TensorType:
    return TensorType(list(shape), dtype)


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol)


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16), to_bf16=st.booleans(),
       reshape=st.booleans())
def test_dma_copy_casts_through_fp32_and_keeps_the_row_major_order(
        p: int, f: int, seed: int, to_bf16: bool, reshape: bool) -> None:
    (x,) = tiles(seed, (p, f))
    reshape = reshape and f <= LIMITS.partitions  # the new shape's partitions are f
    shape = (f, p) if reshape else (p, f)
    attrs: dict[str, Any] = {"dtype": "bf16"} if to_bf16 else {}
    if reshape:
        attrs["shape"] = list(shape)
    got = run([t((p, f))], lambda a, add: to_sbuf(add, a[0], **attrs), [x])
    want = x.reshape(shape).astype(BF16 if to_bf16 else F32)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


#: dma_transpose's permutation per rank, as the SDK states it
DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


@EXAMPLES
@given(rank=st.sampled_from(sorted(DMA_TRANSPOSE_AXES)), seed=st.integers(0, 2**16),
       data=st.data())
def test_dma_transpose_permutes_the_dims_bit_exactly(rank: int, seed: int, data: Any) -> None:
    axes = DMA_TRANSPOSE_AXES[rank]
    shape = tuple(data.draw(st.integers(1, 6)) for _ in range(rank - 1))
    shape = (*shape, data.draw(st.integers(1, LIMITS.partitions)))  # dst's partition dim
    (x,) = tiles(seed, shape, dtype=BF16)
    got = run([t(shape, "bf16")],
              lambda a, add: add(DmaTransposeOp.make([a[0]], buffer="sbuf")), [x])
    np.testing.assert_array_equal(got, np.transpose(x, axes))


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16),
       engine=st.sampled_from(["vector", "scalar", "gpsimd"]))
def test_tensor_copy_rounds_once_to_the_dst_dtype(p: int, f: int, seed: int,
                                                  engine: str) -> None:
    (x,) = tiles(seed, (p, f))
    got = run([t((p, f))], lambda a, add: add(TensorCopyOp.make(
        [to_sbuf(add, a[0])], buffer="sbuf", dtype="bf16", engine=engine)), [x])
    np.testing.assert_array_equal(got, x.astype(BF16))


@EXAMPLES
@given(p=PARTITIONS, f=FREE, value=st.sampled_from([0.0, 1.0, -2.5, 3.0]),
       dtype=st.sampled_from(["f32", "bf16", "i32"]))
def test_memset_fills_the_tile(p: int, f: int, value: float, dtype: str) -> None:
    (got,) = run_function(function("k", [], lambda a, add: add(MemsetOp.make(
        [], value=value if dtype != "i32" else int(value), shape=[p, f], dtype=dtype,
        buffer="sbuf"))), [])
    storage = {"f32": F32, "bf16": BF16, "i32": np.int32}[dtype]
    np.testing.assert_array_equal(got, np.full((p, f), value, dtype=storage))


@EXAMPLES
@given(p=PARTITIONS, f=FREE, g=st.integers(1, 4), steps=st.lists(st.integers(-3, 3),
       min_size=2, max_size=2), multiplier=st.integers(-4, 4), offset=st.integers(-50, 50),
       dtype=st.sampled_from(["i32", "f32"]))
def test_iota_is_the_affine_function_of_the_indices(p: int, f: int, g: int, steps: list[int],
                                                    multiplier: int, offset: int,
                                                    dtype: str) -> None:
    (got,) = run_function(function("k", [], lambda a, add: add(IotaOp.make(
        [], shape=[p, f, g], pattern=tuple(steps), channel_multiplier=multiplier,
        offset=offset, dtype=dtype, buffer="sbuf"))), [])
    pi, fi, gi = np.meshgrid(np.arange(p), np.arange(f), np.arange(g), indexing="ij")
    want = offset + pi * multiplier + fi * steps[0] + gi * steps[1]
    np.testing.assert_array_equal(got, want.astype(np.int32 if dtype == "i32" else F32))


@EXAMPLES
@given(k=PARTITIONS, m=st.integers(1, LIMITS.matmul_stationary_free_max),
       n=st.integers(1, LIMITS.matmul_moving_free_max), seed=st.integers(0, 2**16),
       dtype=st.sampled_from(["bf16", "f32"]),
       accumulate=st.booleans())
def test_nc_matmul_contracts_the_partition_dim_in_fp32(k: int, m: int, n: int, seed: int,
                                                       dtype: str, accumulate: bool) -> None:
    storage = BF16 if dtype == "bf16" else F32
    s0, m0, s1, m1 = tiles(seed, (k, m), (k, n), (k, m), (k, n), dtype=storage)

    def build(a: Any, add: Any) -> Any:
        st0, mv0, st1, mv1 = (to_sbuf(add, v) for v in a)
        first = add(NcMatmulOp.make([st0, mv0], buffer="psum"))
        if not accumulate:
            return first
        return add(NcMatmulOp.make([st1, mv1, first], buffer="psum"))

    got = run([t((k, m), dtype), t((k, n), dtype)] * 2, build, [s0, m0, s1, m1])
    want = s0.astype(np.float64).T @ m0.astype(np.float64)
    if accumulate:
        want = want.astype(F32) + s1.astype(np.float64).T @ m1.astype(np.float64)
    close(got, want.astype(F32), rtol=1e-5, atol=1e-4)


@EXAMPLES
@given(seed=st.integers(0, 2**16), engine=st.sampled_from(["tensor", "vector"]),
       data=st.data())
def test_nc_transpose_on_either_engine(seed: int, engine: str, data: Any) -> None:
    bound = LIMITS.partitions if engine == "tensor" else LIMITS.vector_transpose_max
    g = data.draw(st.integers(1, 4))  # a second free dim, flattened with the first
    p, f = data.draw(st.integers(1, bound)), data.draw(st.integers(1, bound // g))
    shape = (p, f) if g == 1 else (p, f, g)
    (x,) = tiles(seed, shape)
    buffer = "psum" if engine == "tensor" else "sbuf"
    got = run([t(shape)], lambda a, add: add(NcTransposeOp.make(
        [to_sbuf(add, a[0])], buffer=buffer, engine=engine)), [x])
    np.testing.assert_array_equal(got, x.reshape(p, f * g).T)


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16), op=st.sampled_from(sorted(NUMPY_ALU)),
       dtype=st.sampled_from(["f32", "bf16"]))
def test_tensor_tensor_applies_the_alu_op_elementwise(p: int, f: int, seed: int, op: str,
                                                      dtype: str) -> None:
    a, b = tiles(seed, (p, f), (p, f))
    b[: p // 2] = a[: p // 2]  # equal elements, so that comparisons see both outcomes
    got = run([t((p, f)), t((p, f))], lambda v, add: add(TensorTensorOp.make(
        [to_sbuf(add, v[0]), to_sbuf(add, v[1])], op=op, buffer="sbuf", dtype=dtype)), [a, b])
    with np.errstate(all="ignore"):
        want = NUMPY_ALU[op](a, b).astype(F32).astype(BF16 if dtype == "bf16" else F32)
    close(got, want)


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16),
       op0=st.sampled_from(["add", "subtract", "multiply", "maximum", "divide"]),
       op1=st.sampled_from([None, "add", "multiply", "minimum", "subtract"]),
       reverse=st.lists(st.booleans(), min_size=2, max_size=2),
       vector=st.lists(st.booleans(), min_size=2, max_size=2))
def test_tensor_scalar_applies_two_ops_with_constants_or_vectors(
        p: int, f: int, seed: int, op0: str, op1: str | None, reverse: list[bool],
        vector: list[bool]) -> None:
    x, v0, v1 = tiles(seed, (p, f), (p, 1), (p, 1))
    constants = (1.5, -0.75)
    attrs: dict[str, Any] = {"op0": op0, "reverse0": reverse[0]}
    ops = [op0] if op1 is None else [op0, op1]
    if op1 is not None:
        attrs.update(op1=op1, reverse1=reverse[1])
    params, inputs, operands = [t((p, f))], [x], []
    for k, _ in enumerate(ops):
        if vector[k]:
            params.append(t((p, 1)))
            inputs.append((v0, v1)[k])
            operands.append((v0, v1)[k])
        else:
            attrs[f"scalar{k}"] = constants[k]
            operands.append(np.full((p, 1), constants[k], dtype=F32))
    got = run(params, lambda a, add: add(TensorScalarOp.make(
        [to_sbuf(add, v) for v in a], buffer="sbuf", **attrs)), inputs)
    want = x
    with np.errstate(all="ignore"):
        for k, op in enumerate(ops):
            lhs, rhs = (operands[k], want) if reverse[k] else (want, operands[k])
            want = NUMPY_ALU[op](lhs, rhs).astype(F32)
    close(got, want, rtol=1e-5)


NUMPY_ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "copy": lambda x: x, "exp": np.exp, "tanh": np.tanh, "square": np.square,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
    "abs": np.abs, "silu": lambda x: x / (1 + np.exp(-x)),
}


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16),
       func=st.sampled_from(sorted(NUMPY_ACTIVATIONS)), operands=st.integers(0, 2),
       scale=st.sampled_from([1.0, -0.5, 2.0]), reduce=st.booleans())
def test_activation_is_func_of_data_times_scale_plus_bias_and_its_row_sum(
        p: int, f: int, seed: int, func: str, operands: int, scale: float,
        reduce: bool) -> None:
    x, bias, vscale = tiles(seed, (p, f), (p, 1), (p, 1))
    params = [t((p, f))] + [t((p, 1))] * operands
    inputs = [x, bias, vscale][:operands + 1]
    attrs: dict[str, Any] = {"func": func}
    if operands < 2:
        attrs["scale"] = scale
    op = ActivationReduceOp if reduce else ActivationOp
    got = run(params, lambda a, add: add(op.make([to_sbuf(add, v) for v in a], buffer="sbuf",
                                                 **attrs)), inputs)
    pre = x.astype(np.float64) * (vscale if operands == 2 else scale)
    if operands:
        pre = pre + bias
    want = NUMPY_ACTIVATIONS[func](pre)
    if reduce:
        want = want.sum(axis=1, keepdims=True)
    close(got, want.astype(F32), rtol=1e-5, atol=1e-5)


@EXAMPLES
@given(p=PARTITIONS, f=st.integers(1, 16), g=st.integers(1, 8), seed=st.integers(0, 2**16),
       op=st.sampled_from(["add", "maximum", "minimum", "multiply"]), both=st.booleans(),
       negate=st.booleans(), keepdims=st.booleans())
def test_tensor_reduce_reduces_trailing_free_dims(p: int, f: int, g: int, seed: int, op: str,
                                                  both: bool, negate: bool,
                                                  keepdims: bool) -> None:
    negate = negate and op != "multiply"
    keepdims = keepdims or both  # an on-chip result keeps a free dim
    (x,) = tiles(seed, (p, f, g))
    axes = (1, 2) if both else (2,)
    got = run([t((p, f, g))], lambda a, add: add(TensorReduceOp.make(
        [to_sbuf(add, a[0])], op=op, axes=axes, negate=negate, keepdims=keepdims,
        buffer="sbuf")), [x])
    ufunc = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum,
             "multiply": np.multiply}[op]
    want = ufunc.reduce(x.astype(np.float64), axis=axes, keepdims=keepdims)
    if negate:
        want = -want
    close(got, want.astype(F32), rtol=1e-5, atol=1e-5)


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16),
       ops=st.sampled_from([("add", "add"), ("add", "subtract"), ("multiply", "multiply"),
                            ("maximum", "maximum"), ("minimum", "minimum")]),
       initial=st.sampled_from([None, 0.0, 1.0, -2.0, "operand"]))
def test_tensor_tensor_scan_follows_its_recurrence(p: int, f: int, seed: int,
                                                   ops: tuple[str, str],
                                                   initial: float | str | None) -> None:
    d0, d1, start = tiles(seed, (p, f), (p, f), (p, 1))
    if ops == ("multiply", "multiply"):  # keep products of many elements in range
        d0, d1 = (np.clip(np.abs(d), 0.5, 1.5).astype(F32) for d in (d0, d1))
    params, inputs = [t((p, f))] * 2, [d0, d1]
    attrs: dict[str, Any] = {"op0": ops[0], "op1": ops[1]}
    if initial == "operand":
        params, inputs = [*params, t((p, 1))], [*inputs, start]
    elif initial is not None:
        attrs["initial"] = initial
    got = run(params, lambda a, add: add(TensorTensorScanOp.make(
        [to_sbuf(add, v) for v in a], buffer="sbuf", **attrs)), inputs)
    step0, step1 = NUMPY_ALU[ops[0]], NUMPY_ALU[ops[1]]
    want = np.empty((p, f))
    carried = (start[:, 0].astype(np.float64) if initial == "operand"
               else np.full(p, initial or 0.0))
    for i in range(f):  # the instruction's loop, literally
        carried = step1(step0(d0[:, i].astype(np.float64), carried), d1[:, i])
        want[:, i] = carried
    close(got, want.astype(F32), rtol=1e-4, atol=1e-4)


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16), vector=st.booleans(),
       reverse=st.booleans())
def test_select_takes_on_true_where_the_predicate_holds(p: int, f: int, seed: int,
                                                       vector: bool, reverse: bool) -> None:
    pred, a, b = tiles(seed, (p, f), (p, f), (p, 1))
    flags = pred > 0
    params = [t((p, f), "i1"), t((p, f))] + ([t((p, 1))] if vector else [])
    inputs = [flags, a] + ([b] if vector else [])
    attrs: dict[str, Any] = {"reverse_pred": reverse}
    if not vector:
        attrs["on_false_value"] = -7.0
    got = run(params, lambda v, add: add(SelectOp.make([to_sbuf(add, x) for x in v],
                                                       buffer="sbuf", **attrs)), inputs)
    otherwise = b if vector else np.full((p, 1), -7.0, dtype=F32)
    np.testing.assert_array_equal(got, np.where(flags != reverse, a,
                                                np.broadcast_to(otherwise, (p, f))))


CMP: dict[str, Callable[[Any, Any], Any]] = {
    "equal": operator.eq, "not_equal": operator.ne, "greater": operator.gt,
    "greater_equal": operator.ge, "less": operator.lt, "less_equal": operator.le}


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16), step=st.integers(-2, 2),
       multiplier=st.integers(-2, 2), offset=st.integers(-20, 20),
       cmp=st.sampled_from(sorted(CMP)))
def test_affine_select_masks_by_an_affine_function_of_the_indices(
        p: int, f: int, seed: int, step: int, multiplier: int, offset: int, cmp: str) -> None:
    (x,) = tiles(seed, (p, f))
    got = run([t((p, f))], lambda a, add: add(AffineSelectOp.make(
        [to_sbuf(add, a[0])], pattern=(step,), channel_multiplier=multiplier, offset=offset,
        cmp_op=cmp, on_false_value=-9.0, buffer="sbuf")), [x])
    pi, fi = np.meshgrid(np.arange(p), np.arange(f), indexing="ij")
    keep = CMP[cmp](offset + pi * multiplier + fi * step, 0)
    np.testing.assert_array_equal(got, np.where(keep, x, F32(-9.0)))


LOOP = """
func.func @loop_accumulates(%a: !ax.tensor<[K, M], bf16>, %b: !ax.tensor<[K, N], bf16>)
    -> !ax.tensor<[M, N], f32> {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[K, M], bf16>) -> !ax.tensor<[K, M], bf16>
  %m = nki.dma_copy %b {buffer = "sbuf"} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[K, N], bf16>
  %p = nki.nc_matmul %s, %m {buffer = "psum"}
      : (!ax.tensor<[K, M], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], f32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %p) -> (!ax.tensor<[M, N], f32>) {
    %q = nki.nc_matmul %s, %m, %acc {buffer = "psum"}
        : (!ax.tensor<[K, M], bf16>, !ax.tensor<[K, N], bf16>, !ax.tensor<[M, N], f32>)
        -> !ax.tensor<[M, N], f32>
    scf.yield %q : !ax.tensor<[M, N], f32>
  }
  func.return %r : !ax.tensor<[M, N], f32>
}
"""


def test_a_loop_accumulates_matmuls_into_its_carried_psum_tile() -> None:
    a, b = tiles(7, (96, 40), (96, 200), dtype=BF16)
    (got,) = run_module(parse_mlir(LOOP), "loop_accumulates", [a, b])
    close(got, (4 * (a.astype(np.float64).T @ b.astype(np.float64))).astype(F32), rtol=1e-5,
          atol=1e-4)


@EXAMPLES
@given(p=PARTITIONS, f=FREE, seed=st.integers(0, 2**16))
def test_integer_inputs_are_computed_in_fp32(p: int, f: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-1000, 1000, size=(p, f)).astype(np.int32)
    b = rng.integers(1, 1000, size=(p, f)).astype(np.int32)
    got = run([t((p, f), "i32")] * 2, lambda v, add: add(TensorTensorOp.make(
        [to_sbuf(add, v[0]), to_sbuf(add, v[1])], op="divide", buffer="sbuf", dtype="f32")),
        [a, b])
    close(got, a.astype(F32) / b.astype(F32))


def test_int32_tiles_add_exactly_on_gpsimd_and_through_fp32_on_the_vector_engine() -> None:
    a = np.full((4, 3), 2**24 + 1, dtype=np.int32)
    b = np.zeros((4, 3), dtype=np.int32)
    params = [t((4, 3), "i32")] * 2
    for engine, want in ((None, 2**24 + 1), ("vector", 2**24)):
        attrs: dict[str, Any] = {} if engine is None else {"engine": engine}

        def build(v: Any, add: Any, attrs: dict[str, Any] = attrs) -> Any:
            return add(TensorTensorOp.make([to_sbuf(add, v[0]), to_sbuf(add, v[1])], op="add",
                                           buffer="sbuf", **attrs))

        func = function("k", params, build)
        op = func.body.block.ops.last.prev_op  # type: ignore[union-attr]
        assert isinstance(op, TensorTensorOp)
        assert op.engine_name() == (engine or "gpsimd")
        (got,) = run_function(func, [a, b])
        np.testing.assert_array_equal(got, np.full((4, 3), want, dtype=np.int32))


# ---- proofs through the forms ------------------------------------------------------------
X = TensorType(["P", "F"], "f32")
ROW = TensorType(["P", "1"], "f32")


def test_matmul_against_a_ones_vector_is_a_sum_over_the_partition_dim() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        ones = add(MemsetOp.make([], value=1.0, shape=["P", "1"], dtype="f32", buffer="sbuf"))
        return add(NcMatmulOp.make([ones, to_sbuf(add, args[0])], buffer="psum"))

    ax = function("ax", [X], lambda args, add: add(SumOp.make([args[0]], axes=(0,),
                                                                keepdims=True)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)


def test_accumulated_matmuls_are_the_sum_of_the_products() -> None:
    a0, a1 = TensorType(["K", "M"], "f32"), TensorType(["K", "M"], "f32")
    b = TensorType(["K", "N"], "f32")

    def nki(args, add):  # type: ignore[no-untyped-def]
        s0, s1, m = (to_sbuf(add, v) for v in args)
        first = add(NcMatmulOp.make([s0, m], buffer="psum"))
        return add(NcMatmulOp.make([s1, m, first], buffer="psum"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        x0, x1, m = args
        p0 = add(MatmulOp.make([add(TransposeOp.make([x0], perm=(1, 0))), m]))
        p1 = add(MatmulOp.make([add(TransposeOp.make([x1], perm=(1, 0))), m]))
        return add(AddOp.make([p0, p1]))

    params = [a0, a1, b]
    assert isinstance(prove_equivalent(function("nki", params, nki),
                                       function("ax", params, ax)), Proved)


def test_tensor_reduce_is_the_row_reduction_it_implements() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        return add(TensorReduceOp.make([to_sbuf(add, args[0])], op="add", axes=(1,),
                                       keepdims=True, buffer="sbuf"))

    ax = function("ax", [X], lambda args, add: add(SumOp.make([args[0]], axes=(1,),
                                                                keepdims=True)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)
    wrong = function("max", [X], lambda args, add: add(ReduceMaxOp.make([args[0]], axes=(1,),
                                                                         keepdims=True)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), wrong), Refuted)


def test_a_negated_max_reduction_is_minus_the_max() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        return add(TensorReduceOp.make([to_sbuf(add, args[0])], op="maximum", axes=(1,),
                                       negate=True, keepdims=True, buffer="sbuf"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        return add(NegOp.make([add(ReduceMaxOp.make([args[0]], axes=(1,), keepdims=True))]))

    assert isinstance(prove_equivalent(function("nki", [X], nki), function("ax", [X], ax)),
                      Proved)


def test_a_scan_of_add_over_zeros_is_cumsum() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        zeros = add(MemsetOp.make([], value=0.0, shape=["P", "F"], dtype="f32", buffer="sbuf"))
        return add(TensorTensorScanOp.make([zeros, to_sbuf(add, args[0])], op0="add",
                                           op1="add", initial=0.0, buffer="sbuf"))

    ax = function("ax", [X], lambda args, add: add(AxCumsumOp.make([args[0]], axis=1)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)


def test_a_scan_started_at_a_carried_column_is_cumsum_plus_the_carry() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        zeros = add(MemsetOp.make([], value=0.0, shape=["P", "F"], dtype="f32", buffer="sbuf"))
        x, carry = (to_sbuf(add, v) for v in args)
        return add(TensorTensorScanOp.make([zeros, x, carry], op0="add", op1="add",
                                           buffer="sbuf"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        return add(AddOp.make([add(AxCumsumOp.make([args[0]], axis=1)), args[1]]))

    assert isinstance(prove_equivalent(function("nki", [X, ROW], nki),
                                       function("ax", [X, ROW], ax)), Proved)


def test_tensor_scalar_with_a_reversed_vector_operand() -> None:
    def nki(reverse: bool):  # type: ignore[no-untyped-def]
        def build(args, add):  # type: ignore[no-untyped-def]
            x, v = (to_sbuf(add, a) for a in args)
            return add(TensorScalarOp.make([x, v], op0="subtract", reverse0=reverse,
                                           op1="multiply", scalar1=2.0, buffer="sbuf"))
        return function("nki", [X, ROW], build)

    def ax(args, add):  # type: ignore[no-untyped-def]
        two = add(ConstantOp.make([], value=2.0, shape=[], dtype="f32"))
        return add(MulOp.make([add(SubOp.make([args[1], args[0]])), two]))

    assert isinstance(prove_equivalent(nki(True), function("ax", [X, ROW], ax)), Proved)
    assert isinstance(prove_equivalent(nki(False), function("ax", [X, ROW], ax)), Refuted)


def test_affine_select_is_a_causal_mask() -> None:
    def nki(cmp: str):  # type: ignore[no-untyped-def]
        def build(args, add):  # type: ignore[no-untyped-def]
            return add(AffineSelectOp.make([to_sbuf(add, args[0])], pattern=(-1,),
                                           channel_multiplier=1, cmp_op=cmp,
                                           on_false_value=-30000.0, buffer="sbuf"))
        return function("nki", [X], build)

    def ax(args, add):  # type: ignore[no-untyped-def]
        rows, cols = (add(AxIotaOp.make([], shape=["P", "F"], axis=a, dtype="i32"))
                      for a in (0, 1))
        fill = add(ConstantOp.make([], value=-30000.0, shape=[], dtype="f32"))
        return add(AxSelectOp.make([add(GeOp.make([rows, cols])), args[0], fill]))

    assert isinstance(prove_equivalent(nki("greater_equal"), function("ax", [X], ax)), Proved)
    assert isinstance(prove_equivalent(nki("greater"), function("ax", [X], ax)), Refuted)


def test_the_tensor_engine_transpose_is_a_transpose() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        return add(NcTransposeOp.make([to_sbuf(add, args[0])], buffer="psum"))

    ax = function("ax", [X], lambda args, add: add(TransposeOp.make([args[0]], perm=(1, 0))))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)


def test_activation_with_a_bias_and_its_reduction() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        x, bias = (to_sbuf(add, v) for v in args)
        return add(ActivationOp.make([x, bias], func="exp", buffer="sbuf"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        return add(ExpOp.make([add(AddOp.make(list(args)))]))

    assert isinstance(prove_equivalent(function("nki", [X, ROW], nki),
                                       function("ax", [X, ROW], ax)), Proved)

    def nki_sum(args, add):  # type: ignore[no-untyped-def]
        x, bias = (to_sbuf(add, v) for v in args)
        return add(ActivationReduceOp.make([x, bias], func="exp", buffer="sbuf"))

    def ax_sum(args, add):  # type: ignore[no-untyped-def]
        return add(SumOp.make([add(ExpOp.make([add(AddOp.make(list(args)))]))], axes=(1,),
                              keepdims=True))

    assert isinstance(prove_equivalent(function("nki", [X, ROW], nki_sum),
                                       function("ax", [X, ROW], ax_sum)), Proved)


# ---- the op verifier ----------------------------------------------------------------------
def test_the_limits_are_the_smallest_over_the_nki_profiles() -> None:
    profiles = nki_profiles()
    assert {p.name for p in profiles} >= {"trn1", "trn2"}
    limits = generic_limits()
    for key, value in [("memory.partitions", limits.partitions),
                       ("memory.psum_bank_bytes", limits.psum_bank_bytes),
                       ("limits.matmul_stationary_free_max", limits.matmul_stationary_free_max),
                       ("limits.matmul_moving_free_max", limits.matmul_moving_free_max),
                       ("limits.vector_transpose_max", limits.vector_transpose_max),
                       ("limits.free_dims_max", limits.free_dims_max)]:
        assert value == min(p.quantities()[key].value for p in profiles)
    assert (limits.partitions, limits.psum_bank_bytes) == (128, 2048)


def verify(params: list[TensorType], build: object) -> None:
    function("k", params, build).verify()  # type: ignore[arg-type]


def test_matmul_limits_and_buffers() -> None:
    with pytest.raises(ShapeError, match="moving free size N is 513; at most 512"):
        NcMatmulOp.make([_value([128, 128]), _value([128, 513])], buffer="psum")
    with pytest.raises(ShapeError, match="stationary free size M is 129; at most 128"):
        NcMatmulOp.make([_value([128, 129]), _value([128, 8])], buffer="psum")
    with pytest.raises(ShapeError, match=r"contraction \(partition\) dims differ: 64 and 32"):
        NcMatmulOp.make([_value([64, 8]), _value([32, 8])], buffer="psum")
    with pytest.raises(ShapeError, match="dst buffer 'sbuf' is not one of psum"):
        NcMatmulOp.make([_value([64, 8]), _value([64, 8])], buffer="sbuf")
    ok = TensorType([64, 8], "bf16")
    with pytest.raises(VerifyException, match=r"operand #1 \(moving\) is in hbm; expected sbuf"):
        verify([ok, ok], lambda a, add: add(NcMatmulOp.make([to_sbuf(add, a[0]), a[1]],
                                                            buffer="psum")))


def test_accumulating_onto_psum_a_memset_wrote_is_refused() -> None:
    ok = TensorType([64, 8], "bf16")

    def build(a, add):  # type: ignore[no-untyped-def]
        zeros = add(MemsetOp.make([], value=0.0, shape=[8, 8], dtype="f32", buffer="psum"))
        return add(NcMatmulOp.make([to_sbuf(add, a[0]), to_sbuf(add, a[1]), zeros],
                                   buffer="psum"))

    with pytest.raises(VerifyException, match="acc.*written by 'nki.memset'.*undefined"):
        verify([ok, ok], build)


def test_buffer_and_engine_rules() -> None:
    x = TensorType([128, 512], "f32")

    def two_psum(a, add):  # type: ignore[no-untyped-def]
        p = add(TensorCopyOp.make([to_sbuf(add, a[0])], buffer="psum"))
        return add(TensorTensorOp.make([p, p], op="add", buffer="sbuf"))

    with pytest.raises(VerifyException, match="both inputs are in PSUM"):
        verify([x], two_psum)

    def gpsimd_psum(a, add):  # type: ignore[no-untyped-def]
        p = add(TensorCopyOp.make([to_sbuf(add, a[0])], buffer="psum"))
        return add(TensorCopyOp.make([p], buffer="sbuf", engine="gpsimd"))

    with pytest.raises(VerifyException, match="GpSimd engine cannot read PSUM"):
        verify([x], gpsimd_psum)
    with pytest.raises(ShapeError, match="4096 bytes per partition; one PSUM bank holds 2048"):
        TensorCopyOp.make([_value([128, 1024], "f32")], buffer="psum")
    with pytest.raises(ShapeError, match="has 129 partitions; at most 128"):
        TensorCopyOp.make([_value([129, 8])], buffer="sbuf")


def test_instruction_rules() -> None:
    with pytest.raises(ShapeError, match="reduces trailing free dims"):
        TensorReduceOp.make([_value([8, 4, 4])], op="add", axes=(1,), buffer="sbuf")
    with pytest.raises(ShapeError, match=r"\('multiply', 'add'\) has no generic form"):
        TensorTensorScanOp.make([_value([8, 4]), _value([8, 4])], op0="multiply", op1="add",
                                buffer="sbuf")


def _value(shape: list[int], dtype: str = "bf16") -> SSAValue:
    """A value of type `dtype[shape]` (a block argument: in HBM)."""
    return Block(arg_types=[TensorType(shape, dtype)]).args[0]


def test_every_instruction_names_its_engines_and_is_documented() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "nki.md").read_text()
    for op in ALL_OPS:
        assert op.ENGINE_CHOICES and set(op.ENGINE_CHOICES) <= set(ENGINES), op.name
        assert ("engine" in op.ATTRS) == (len(op.ENGINE_CHOICES) > 1), op.name
        assert f"`{op.name} " in docs or f"`{op.name}`" in docs, f"docs/nki.md lacks {op.name}"


def test_immediates_are_fp32_values_which_the_form_reads_as_they_are() -> None:
    tenth = float(np.float32(0.1))
    assert tenth != 0.1
    op = TensorScalarOp.make([_value([8, 4], "f32")], op0="multiply", scalar0=tenth,
                             buffer="sbuf")
    assert str(op.generic_form()) == f"out[d0 < 8, d1 < 4] = in0[d0, d1] * {tenth!r}"
    with pytest.raises(ShapeError, match=r"scalar0 0.1 is not an fp32 value \(an engine holds "
                                         r"its immediates in fp32; the nearest is "
                                         + repr(tenth).replace(".", r"\.")):
        TensorScalarOp.make([_value([8, 4], "f32")], op0="multiply", scalar0=0.1,
                            buffer="sbuf")
    for op_class, attrs in ((ActivationOp, {"func": "exp", "scale": 0.1}),
                            (AffineSelectOp, {"pattern": (1,), "channel_multiplier": 0,
                                              "on_false_value": 1e-6})):
        with pytest.raises(ShapeError, match="is not an fp32 value"):
            op_class.make([_value([8, 4], "f32")], buffer="sbuf", **attrs)
    with pytest.raises(ShapeError, match=r"value 0.1 is not a bf16 value"):
        MemsetOp.make([], value=0.1, shape=[8, 4], dtype="bf16", buffer="sbuf")
