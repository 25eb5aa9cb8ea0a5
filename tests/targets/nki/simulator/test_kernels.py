"""The six kernels written in the project from the public NKI tutorials' algorithms (tensor
addition, transpose, tiled matmul, rmsnorm, softmax, cumsum), run from their files, against numpy
within the project's per-dtype tolerances."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from axon.dialects.form.dtypes import DTYPES
from axon.targets.nki.simulator import HardwareLimits, load_kernel, simulate

from .conftest import KERNELS

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
#: the project's dtype names of the dtypes these tests use
FORM = {"float32": "f32", "bfloat16": "bf16"}


def check(actual: np.ndarray, expected: np.ndarray) -> None:
    """actual matches a float64 reference within its dtype's tolerance."""
    rtol, atol = DTYPES[FORM[actual.dtype.name]].tolerance
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol)


def inputs(*shapes: tuple[int, ...], dtype: np.dtype = F32, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("grid", [(), (3,)])
def test_tensor_add(trn2: HardwareLimits, dtype: np.dtype, grid: tuple[int, ...]) -> None:
    a, b = inputs((300, 512), (300, 512), dtype=dtype)
    kernel = load_kernel(KERNELS / "tensor_add.py")
    out = simulate(kernel[grid] if grid else kernel, a, b, limits=trn2)
    assert out.dtype == dtype
    check(out, a.astype(np.float64) + b.astype(np.float64))


@pytest.mark.parametrize("shape", [(128, 128), (300, 200), (64, 1000)])
def test_transpose2d(trn2: HardwareLimits, shape: tuple[int, int]) -> None:
    (x,) = inputs(shape, dtype=BF16)
    out = simulate(load_kernel(KERNELS / "transpose2d.py"), x, limits=trn2)
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_matmul_tiled(trn2: HardwareLimits, dtype: np.dtype) -> None:
    lhsT, rhs = inputs((384, 256), (384, 1024), dtype=dtype)
    out = simulate(load_kernel(KERNELS / "matmul_tiled.py"), lhsT, rhs, limits=trn2)
    expected = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    rtol, atol = DTYPES[FORM[dtype.name]].tolerance
    # an fp32-accumulated sum of 384 products: error relative to the sum of |products|
    magnitude = np.abs(lhsT.astype(np.float64)).T @ np.abs(rhs.astype(np.float64))
    assert np.all(np.abs(out.astype(np.float64) - expected)
                  <= rtol * np.abs(expected) + atol * magnitude / 384 + 1e-5 * magnitude)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("shape", [(1024, 1024), (200, 96)])
def test_rmsnorm(trn2: HardwareLimits, dtype: np.dtype, shape: tuple[int, int]) -> None:
    x, w = inputs(shape, (shape[1],), dtype=dtype)
    out = simulate(load_kernel(KERNELS / "rmsnorm.py"), x, w, limits=trn2)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    check(out, x64 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + 1e-6) * w64)


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_softmax(trn2: HardwareLimits, dtype: np.dtype) -> None:
    (x,) = inputs((300, 700), dtype=dtype)
    out = simulate(load_kernel(KERNELS / "softmax.py"), x, limits=trn2)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    check(out, e / e.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_cumsum(trn2: HardwareLimits, dtype: np.dtype) -> None:
    (x,) = inputs((200, 1100), dtype=dtype)
    out = simulate(load_kernel(KERNELS / "cumsum.py"), x, limits=trn2)
    expected = np.cumsum(x.astype(np.float64), axis=1)
    rtol, atol = DTYPES[FORM[dtype.name]].tolerance
    # fp32 running sums of up to 1100 terms of size ~1: their rounding grows with the length
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=rtol, atol=atol + 1e-4)


def test_kernels_run_on_trn1_limits_too() -> None:
    from axon.targets.nki.simulator_limits import load_limits

    x, w = inputs((256, 512), (512,))
    out = simulate(load_kernel(KERNELS / "rmsnorm.py"), x, w, limits=load_limits("trn1"))
    check(out, x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1, keepdims=True) + 1e-6) * w)
