"""Every instruction against an independent numpy formula of its generic form, on random shapes
within the limits and random data (hypothesis).

Each test builds a one-instruction kernel around the drawn shapes, runs it through `simulate` and
compares with a formula written from the instruction's definition (../shared/reference/nki.md
section 3), in float64 where the instruction computes, rounded to the output's dtype where it
stores. Tolerances are the project's per-dtype ones (`dialects/form/dtypes.py`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon.dialects.form.dtypes import DTYPES
from axon.targets.nki.simulator import HardwareLimits, KernelError, simulate
from axon.targets.nki.simulator import api as nki
from axon.targets.nki.simulator import isa as nisa
from axon.targets.nki.simulator import language as nl

#: the project's dtype names of the NKI float dtypes the tests draw
_FORM_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
FLOAT_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)]
EXAMPLES = settings(max_examples=20, deadline=None)


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) of a result stored in `dtype`."""
    return DTYPES[_FORM_NAMES[dtype.name]].tolerance


def run(body: Callable[..., Any], *inputs: np.ndarray, limits: HardwareLimits) -> Any:
    """`body(*hbm_inputs)` as a kernel; it returns its shared_hbm outputs."""
    return simulate(nki.jit(body), *inputs, limits=limits)


def random(data: st.DataObject, shape: tuple[int, ...], dtype: np.dtype,
           low: float = -4.0, high: float = 4.0) -> np.ndarray:
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="seed")
    values = np.random.default_rng(seed).uniform(low, high, size=shape)
    return values.astype(dtype)


def close(actual: np.ndarray, expected: np.ndarray, dtype: np.dtype) -> None:
    """actual (stored in dtype) matches the float64 formula rounded to dtype."""
    rtol, atol = tolerance(dtype)
    np.testing.assert_allclose(actual.astype(np.float64),
                               expected.astype(dtype).astype(np.float64), rtol=rtol, atol=atol)


partitions = st.integers(1, 128)
free_sizes = st.integers(1, 300)
float_dtypes = st.sampled_from(FLOAT_DTYPES)


def load(src: Any, dtype: Any = None) -> Any:
    """An SBUF tile holding an HBM input."""
    tile = nl.ndarray(src.shape, dtype=src.dtype if dtype is None else dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=src)
    return tile


def store(tile: Any) -> Any:
    """A shared_hbm output holding an SBUF tile."""
    out = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile)
    return out


@EXAMPLES
@given(st.data(), partitions, free_sizes, float_dtypes, float_dtypes)
def test_dma_copy_converts_through_fp32(trn2: HardwareLimits, data: st.DataObject, p: int,
                                        f: int, src_dtype: np.dtype, dst_dtype: np.dtype) -> None:
    x = random(data, (p, f), src_dtype)

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, f), dtype=dst_dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        return store(tile)

    out = run(body, x, limits=trn2)
    assert out.dtype == dst_dtype
    np.testing.assert_array_equal(out, x.astype(np.float32).astype(dst_dtype))


@EXAMPLES
@given(st.data(), st.integers(1, 128), st.integers(1, 128))
def test_dma_transpose_2d(trn2: HardwareLimits, data: st.DataObject, p: int, f: int) -> None:
    x = random(data, (p, f), np.dtype(ml_dtypes.bfloat16))

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((f, p), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tile, src=x)
        return store(tile)

    out = run(body, x, limits=trn2)
    np.testing.assert_array_equal(out, np.array([[x[j, i] for j in range(p)] for i in range(f)]))


@EXAMPLES
@given(st.data(), st.integers(1, 128), st.integers(1, 128), st.integers(1, 512),
       st.sampled_from([np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16),
                        np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)]),
       st.integers(1, 3))
def test_nc_matmul_accumulates_in_psum(trn2: HardwareLimits, data: st.DataObject, k: int,
                                       m: int, n: int, dtype: np.dtype, groups: int) -> None:
    lhs = [random(data, (k, m), dtype) for _ in range(groups)]
    rhs = [random(data, (k, n), dtype) for _ in range(groups)]

    def body(*operands):  # type: ignore[no-untyped-def]
        acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
        for g in range(groups):
            nisa.nc_matmul(dst=acc, stationary=load(operands[g]),
                           moving=load(operands[groups + g]))
        res = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        return store(res)

    out = run(body, *lhs, *rhs, limits=trn2)
    expected = np.zeros((m, n))
    magnitude = np.zeros((m, n))
    for a, b in zip(lhs, rhs, strict=True):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        for i in range(m):
            for j in range(n):
                expected[i, j] += float(np.dot(a64[:, i], b64[:, j]))
        magnitude += np.abs(a64).T @ np.abs(b64)
    assert np.all(np.abs(out - expected) <= 2e-6 * magnitude + 1e-6)


@EXAMPLES
@given(st.data(), st.integers(1, 128), st.integers(1, 128), float_dtypes)
def test_nc_transpose_on_tensor_engine(trn2: HardwareLimits, data: st.DataObject, p: int,
                                       f: int, dtype: np.dtype) -> None:
    x = random(data, (p, f), dtype)

    def body(x):  # type: ignore[no-untyped-def]
        flipped = nl.ndarray((f, p), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=flipped, data=load(x))
        res = nl.ndarray((f, p), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=flipped)
        return store(res)

    out = run(body, x, limits=trn2)
    for i in range(f):
        for j in range(p):
            assert out[i, j] == np.float32(x[j, i])


@EXAMPLES
@given(st.data(), st.integers(1, 32), st.integers(1, 32), float_dtypes)
def test_nc_transpose_on_vector_engine(trn2: HardwareLimits, data: st.DataObject, p: int,
                                       f: int, dtype: np.dtype) -> None:
    x = random(data, (p, f), dtype)

    def body(x):  # type: ignore[no-untyped-def]
        res = nl.ndarray((f, p), dtype=x.dtype, buffer=nl.sbuf)
        nisa.nc_transpose(dst=res, data=load(x), engine=nisa.engine.vector)
        return store(res)

    out = run(body, x, limits=trn2)
    assert out.dtype == dtype
    assert all(out[i, j] == x[j, i] for i in range(f) for j in range(p))


BINARY: dict[str, Callable[[float, float], float]] = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b, "maximum": max, "minimum": min,
    "greater": lambda a, b: float(a > b), "abs_max": lambda a, b: max(abs(a), abs(b))}


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 64), st.sampled_from(sorted(BINARY)), float_dtypes,
       float_dtypes)
def test_tensor_tensor(trn2: HardwareLimits, data: st.DataObject, p: int, f: int, op: str,
                       in_dtype: np.dtype, out_dtype: np.dtype) -> None:
    a, b = random(data, (p, f), in_dtype), random(data, (p, f), in_dtype)

    def body(a, b):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=out_dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=load(a), data2=load(b), op=getattr(nl, op))
        return store(res)

    out = run(body, a, b, limits=trn2)
    fn = BINARY[op]
    expected = np.array([[fn(float(a[i, j]), float(b[i, j])) for j in range(f)]
                         for i in range(p)])
    close(out, expected, out_dtype)


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 64), st.sampled_from(["add", "multiply",
                                                                  "subtract", "maximum"]),
       st.sampled_from([None, "add", "multiply", "minimum"]), st.booleans(), st.booleans(),
       st.booleans(), float_dtypes)
def test_tensor_scalar_one_and_two_ops(trn2: HardwareLimits, data: st.DataObject, p: int, f: int,
                                       op0: str, op1: str | None, vector0: bool, reverse0: bool,
                                       reverse1: bool, dtype: np.dtype) -> None:
    x = random(data, (p, f), dtype)
    column = random(data, (p, 1), np.dtype(np.float32))
    scalar0, scalar1 = 0.75, -1.5

    def body(x, column):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
        operand0 = load(column) if vector0 else scalar0
        nisa.tensor_scalar(dst=res, data=load(x), op0=getattr(nl, op0), operand0=operand0,
                           reverse0=reverse0,
                           op1=getattr(nl, op1) if op1 else None,
                           operand1=scalar1 if op1 else None, reverse1=reverse1)
        return store(res)

    out = run(body, x, column, limits=trn2)
    fns = {**BINARY}
    expected = np.empty((p, f))
    for i in range(p):
        for j in range(f):
            v = float(x[i, j])
            c = float(column[i, 0]) if vector0 else scalar0
            v = fns[op0](c, v) if reverse0 else fns[op0](v, c)
            if op1:
                v = fns[op1](scalar1, v) if reverse1 else fns[op1](v, scalar1)
            expected[i, j] = v
    close(out, expected, np.dtype(np.float32))


ACTIVATIONS: dict[str, Callable[[float], float]] = {
    "exp": math.exp, "tanh": math.tanh, "square": lambda v: v * v,
    "relu": lambda v: max(v, 0.0), "copy": lambda v: v,
    "sigmoid": lambda v: 1.0 / (1.0 + math.exp(-v)),
    "silu": lambda v: v / (1.0 + math.exp(-v)),
    "gelu": lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))}


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 64), st.sampled_from(sorted(ACTIVATIONS)),
       st.booleans(), st.booleans(), st.booleans(), float_dtypes)
def test_activation_scale_bias_and_reduce(trn2: HardwareLimits, data: st.DataObject, p: int,
                                          f: int, op: str, vector_scale: bool, with_bias: bool,
                                          with_reduce: bool, dtype: np.dtype) -> None:
    x = random(data, (p, f), dtype, -2.0, 2.0)
    scale_col = random(data, (p, 1), np.dtype(np.float32), -1.0, 1.0)
    bias_col = random(data, (p, 1), np.dtype(np.float32), -1.0, 1.0)

    def body(x, scale_col, bias_col):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
        total = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=total, value=0.0)
        nisa.activation(dst=res, op=getattr(nl, op), data=load(x),
                        scale=load(scale_col) if vector_scale else 0.5,
                        bias=load(bias_col) if with_bias else None,
                        reduce_op=nl.add if with_reduce else None,
                        reduce_res=total if with_reduce else None)
        return store(res), store(total)

    out, total = run(body, x, scale_col, bias_col, limits=trn2)
    fn = ACTIVATIONS[op]
    expected = np.empty((p, f))
    for i in range(p):
        for j in range(f):
            s = float(scale_col[i, 0]) if vector_scale else 0.5
            b = float(bias_col[i, 0]) if with_bias else 0.0
            expected[i, j] = fn(float(x[i, j]) * s + b)
    close(out, expected, dtype)
    if with_reduce:
        np.testing.assert_allclose(total[:, 0], expected.sum(axis=1), rtol=1e-4, atol=1e-4)
    else:
        assert np.all(total == 0.0)


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 6), st.integers(1, 40),
       st.sampled_from(["add", "maximum", "minimum", "multiply"]), st.booleans(),
       st.sampled_from([(2,), (1, 2)]))
def test_tensor_reduce_over_trailing_free_axes(trn2: HardwareLimits, data: st.DataObject,
                                               p: int, f1: int, f2: int, op: str, negate: bool,
                                               axes: tuple[int, ...]) -> None:
    x = random(data, (p, f1, f2), np.dtype(np.float32), 0.5, 1.5)
    kept = (p, f1) if axes == (2,) else (p, 1)

    def body(x):  # type: ignore[no-untyped-def]
        res = nl.ndarray(kept, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=res, op=getattr(nl, op), data=load(x), axis=axes, negate=negate)
        return store(res)

    out = run(body, x, limits=trn2)
    reducers: dict[str, Callable[[list[float]], float]] = {
        "add": sum, "maximum": max, "minimum": min, "multiply": math.prod}
    combine = reducers[op]
    expected = np.empty(kept)
    for i in range(p):
        if axes == (2,):
            for j in range(f1):
                expected[i, j] = combine([float(v) for v in x[i, j, :]])
        else:
            expected[i, 0] = combine([float(v) for v in x[i].reshape(-1)])
    if negate:
        expected = -expected
    np.testing.assert_allclose(out, expected, rtol=1e-5)


@EXAMPLES
@given(st.data(), partitions, free_sizes, float_dtypes, float_dtypes)
def test_tensor_copy(trn2: HardwareLimits, data: st.DataObject, p: int, f: int,
                     src_dtype: np.dtype, dst_dtype: np.dtype) -> None:
    x = random(data, (p, f), src_dtype)

    def body(x):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=dst_dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=load(x))
        return store(res)

    out = run(body, x, limits=trn2)
    np.testing.assert_array_equal(out, x.astype(np.float32).astype(dst_dtype))


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 80), st.sampled_from(["add", "multiply",
                                                                  "maximum"]),
       st.sampled_from(["add", "multiply", "maximum"]), st.booleans())
def test_tensor_tensor_scan(trn2: HardwareLimits, data: st.DataObject, p: int, f: int,
                            op0: str, op1: str, tile_initial: bool) -> None:
    d0 = random(data, (p, f), np.dtype(np.float32), 0.5, 1.0)
    d1 = random(data, (p, f), np.dtype(np.float32), -1.0, 1.0)
    init = random(data, (p, 1), np.dtype(np.float32), -1.0, 1.0)

    def body(d0, d1, init):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=res, data0=load(d0), data1=load(d1),
                                initial=load(init) if tile_initial else 0.25,
                                op0=getattr(nl, op0), op1=getattr(nl, op1))
        return store(res)

    out = run(body, d0, d1, init, limits=trn2)
    fns: dict[str, Callable[[float, float], float]] = {
        "add": lambda a, b: a + b, "multiply": lambda a, b: a * b, "maximum": max}
    expected = np.empty((p, f))
    for i in range(p):
        r = float(init[i, 0]) if tile_initial else 0.25
        for j in range(f):
            r = fns[op1](fns[op0](float(d0[i, j]), r), float(d1[i, j]))
            expected[i, j] = r
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


@EXAMPLES
@given(partitions, st.lists(st.tuples(st.integers(-3, 3), st.integers(1, 5)), min_size=1,
                            max_size=3),
       st.integers(-50, 50), st.integers(-4, 4),
       st.sampled_from([np.dtype(np.int32), np.dtype(np.float32)]))
def test_iota(trn2: HardwareLimits, p: int, pattern: list[tuple[int, int]], offset: int,
              multiplier: int, dtype: np.dtype) -> None:
    counts = [num for _, num in pattern]

    def body():  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, *counts), dtype=dtype, buffer=nl.sbuf)
        nisa.iota(dst=res, pattern=[list(step) for step in pattern], offset=offset,
                  channel_multiplier=multiplier)
        return store(res)

    out = run(body, limits=trn2)
    for index in np.ndindex(p, *counts):
        value = offset + index[0] * multiplier + sum(
            step * i for (step, _), i in zip(pattern, index[1:], strict=True))
        assert out[index] == value


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 64), st.integers(-70, 70), st.integers(-2, 2),
       st.sampled_from(["greater_equal", "equal", "less"]))
def test_affine_select(trn2: HardwareLimits, data: st.DataObject, p: int, f: int, offset: int,
                       multiplier: int, cmp: str) -> None:
    x = random(data, (p, f), np.dtype(np.float32))

    def body(x):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
        nisa.affine_select(dst=res, pattern=[[-1, f]], channel_multiplier=multiplier,
                           on_true_tile=load(x), on_false_value=-9999.0,
                           cmp_op=getattr(nl, cmp), offset=offset)
        return store(res)

    out = run(body, x, limits=trn2)
    compare: dict[str, Callable[[int], bool]] = {
        "greater_equal": lambda v: v >= 0, "equal": lambda v: v == 0, "less": lambda v: v < 0}
    keeps = compare[cmp]
    for i in range(p):
        for j in range(f):
            keep = keeps(offset + i * multiplier - j)
            assert out[i, j] == (x[i, j] if keep else np.float32(-9999.0))


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 64), st.booleans())
def test_select(trn2: HardwareLimits, data: st.DataObject, p: int, f: int,
                tile_false: bool) -> None:
    predicate = (random(data, (p, f), np.dtype(np.float32)) > 0).astype(np.float32)
    a, b = random(data, (p, f), np.dtype(np.float32)), random(data, (p, f), np.dtype(np.float32))

    def body(predicate, a, b):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select(dst=res, predicate=load(predicate), on_true=load(a),
                    on_false=load(b) if tile_false else 3.5)
        return store(res)

    out = run(body, predicate, a, b, limits=trn2)
    for i in range(p):
        for j in range(f):
            other = b[i, j] if tile_false else np.float32(3.5)
            assert out[i, j] == (a[i, j] if predicate[i, j] != 0 else other)


@EXAMPLES
@given(partitions, free_sizes, st.floats(-1e3, 1e3, width=32),
       st.sampled_from([*FLOAT_DTYPES, np.dtype(np.int32)]))
def test_memset(trn2: HardwareLimits, p: int, f: int, value: float, dtype: np.dtype) -> None:
    def body():  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=dtype, buffer=nl.sbuf)
        nisa.memset(dst=res, value=value)
        return store(res)

    out = run(body, limits=trn2)
    expected = np.rint(value) if dtype == np.int32 else value
    assert np.all(out == np.array(expected, dtype=np.float32).astype(dtype))


@EXAMPLES
@given(st.data(), partitions, st.integers(1, 64), st.booleans(), float_dtypes)
def test_exponential_with_running_sum(trn2: HardwareLimits, data: st.DataObject, p: int,
                                      f: int, vector_max: bool, dtype: np.dtype) -> None:
    x = random(data, (p, f), dtype, -3.0, 3.0)
    peak = random(data, (p, 1), np.dtype(np.float32), 0.0, 3.0)

    def body(x, peak):  # type: ignore[no-untyped-def]
        res = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
        total = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.exponential(dst=res, src=load(x), max_value=load(peak) if vector_max else 1.0,
                         reduce_res=total, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        return store(res), store(total)

    # no profile here is a NeuronCore-v4: trn2's sizes with the v4 generation, for the numerics
    v4 = dataclasses.replace(trn2, profile="trn2 as a NeuronCore-v4", neuron_core_version=4)
    out, total = run(body, x, peak, limits=v4)
    expected = np.array([[math.exp(float(x[i, j]) - (float(peak[i, 0]) if vector_max else 1.0))
                          for j in range(f)] for i in range(p)])
    close(out, expected, dtype)
    np.testing.assert_allclose(total[:, 0], expected.sum(axis=1), rtol=1e-4)


def test_exponential_needs_a_neuron_core_v4(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        res = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.exponential(dst=res, src=load(x))
        return store(res)

    with pytest.raises(KernelError, match=r"nisa.exponential: available on NeuronCore-v4 and "
                                          r"newer only; profile trn2 is NeuronCore-v3"):
        run(body, np.zeros((4, 4), dtype=np.float32), limits=trn2)
