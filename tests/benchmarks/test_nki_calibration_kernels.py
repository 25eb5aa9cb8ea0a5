"""The calibration kernels compute what their tutorials' algorithms compute (small shapes)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from axon.targets.nki.simulator import load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits

CALIBRATION = Path(__file__).resolve().parents[2] / "benchmarks" / "nki_kernels" / "calibration"


@pytest.mark.parametrize("name", ["matmul_hoist", "matmul_block_free", "matmul_optimized"])
def test_matmul_versions_match_numpy(name: str) -> None:
    rng = np.random.default_rng(1)
    # the smallest shape every version accepts (the fully optimized one blocks M by 2048, N and
    # K by 1024), two K blocks so that its SBUF accumulation runs
    lhsT = rng.standard_normal((2048, 2048), dtype=np.float32)
    rhs = rng.standard_normal((2048, 1024), dtype=np.float32)
    out = simulate(load_kernel(CALIBRATION / f"{name}.py"), lhsT, rhs,
                   limits=load_limits("trn1"))
    np.testing.assert_allclose(out, lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", ["layernorm_v1", "layernorm_v2"])
def test_layernorm_versions_match_numpy(name: str) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((300, 1000), dtype=np.float32) * 3 + 1  # a partial last row tile
    gamma = rng.standard_normal(1000, dtype=np.float32)
    beta = rng.standard_normal(1000, dtype=np.float32)
    out = simulate(load_kernel(CALIBRATION / f"{name}.py"), x, gamma, beta,
                   limits=load_limits("trn1"))
    mean = x.mean(axis=1, keepdims=True)
    expected = (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def _selective_scan(delta: np.ndarray, u: np.ndarray, a: np.ndarray, b: np.ndarray,
                    c: np.ndarray) -> np.ndarray:
    """Mamba's selective scan in float64, step by step along the sequence:
    h_t = exp(delta_t * A) * h_{t-1} + delta_t * u_t * B_t, out_t = sum over states of C_t * h_t."""
    batch, channels, length = delta.shape
    h = np.zeros((batch, channels, a.shape[1]))
    out = np.zeros((batch, channels, length))
    for t in range(length):
        h = np.exp(delta[:, :, None, t] * a[None]) * h \
            + (delta[:, :, t] * u[:, :, t])[:, :, None] * b[:, None, :, t]
        out[:, :, t] = (h * c[:, None, :, t]).sum(axis=-1)
    return out


@pytest.mark.parametrize("name", ["mamba_v1", "mamba_v2", "mamba_v3"])
@pytest.mark.parametrize(("batch", "channels", "length", "states"),
                         [(2, 256, 700, 3), (1, 128, 1024, 2), (1, 128, 37, 1)])
def test_mamba_versions_match_the_selective_scan(name: str, batch: int, channels: int,
                                                 length: int, states: int) -> None:
    # 700 columns: two sequence pieces of version 3, the second partial, and two TensorE
    # broadcast pieces of versions 1 and 2; 1024: two whole pieces, the scan's carry between them
    rng = np.random.default_rng(3)
    delta = rng.uniform(0.001, 0.5, (batch, channels, length)).astype(np.float32)
    u = rng.standard_normal((batch, channels, length), dtype=np.float32)
    a = -rng.uniform(0.5, 2.0, (channels, states)).astype(np.float32)
    b = rng.standard_normal((batch, states, length), dtype=np.float32)
    c = rng.standard_normal((batch, states, length), dtype=np.float32)
    out = simulate(load_kernel(CALIBRATION / f"{name}.py"), delta, u, a, b, c,
                   limits=load_limits("trn1"))
    np.testing.assert_allclose(out, _selective_scan(delta, u, a, b, c), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("dtype", "d", "tolerance"), [
    (np.float32, 128, 2e-3), (ml_dtypes.bfloat16, 128, 2e-2), (np.float16, 64, 2e-3)])
def test_sd_attention_matches_softmax_attention(dtype: type, d: int, tolerance: float) -> None:
    # the perf test's layout (q given as [d, L]) and value range, at 512 positions (four query
    # tiles, one PSUM bank group of key tiles); TensorE multiplies in bf16 whatever the dtype
    rng = np.random.default_rng(4)
    length = 512
    q: np.ndarray = rng.random((d, length), dtype=np.float32).astype(dtype)
    k: np.ndarray = rng.random((length, d), dtype=np.float32).astype(dtype)
    v: np.ndarray = rng.random((length, d), dtype=np.float32).astype(dtype)
    out = simulate(load_kernel(CALIBRATION / "sd_attention.py"), q, k, v,
                   limits=load_limits("trn1"))
    scores = q.astype(np.float64).T * 0.125 @ k.astype(np.float64).T
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    expected = probs / probs.sum(axis=1, keepdims=True) @ v.astype(np.float64)
    assert out.shape == (length, d)
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tolerance, atol=tolerance)
