"""The calibration kernels compute what their tutorials' algorithms compute (small shapes)."""

from __future__ import annotations

from pathlib import Path

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
