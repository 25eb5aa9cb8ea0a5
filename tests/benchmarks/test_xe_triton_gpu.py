"""`python -m axon.benchmarks.xe_triton_gpu --emit DIR` writes a bundle `axon-bench` reads: the
kernels checked on the CPU interpreter first, the cases at their sizes with the suite's inits."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon.benchmarks import xe_triton_gpu
from axon.targets.xe_triton.harness.bundle import read_bundle
from axon.targets.xe_triton.harness.run import check_programs


def test_the_first_bundle_is_one_axon_bench_reads(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # the script's cases at small sizes: the same path, without the 4096^3 modules' sizes
    monkeypatch.setattr(xe_triton_gpu, "CASES", [
        ("rmsnorm_matmul", "blocks_k", {"M": 6, "N": 5, "K": 7},
         {"BM": 16, "BN": 16, "BK": 16, "num_warps": 4})])
    assert xe_triton_gpu.main(["--emit", str(tmp_path)]) == 0
    bundle = read_bundle(tmp_path)
    check_programs(bundle)
    (case,) = bundle.cases
    assert (case.case, case.dtype, case.tolerance) == ("rmsnorm_matmul_6x7x5", "bf16",
                                                       (0.06, 0.016))
    assert [(s.name, s.shape, s.init.kind if s.init else None) for s in case.inputs] == [
        ("x", (6, 7), "normal"), ("g", (7,), "uniform"), ("w", (7, 5), "normal")]
    assert case.inputs[2].init is not None and case.inputs[2].init.scale == pytest.approx(7**-0.5)
    assert (case.flops, case.bytes) == (2 * 6 * 5 * 7, 2 * (6 * 7 + 7 + 7 * 5 + 6 * 5))
    (candidate,) = case.candidates
    assert candidate.id == "blocks_k.BM16.BN16.BK16.w4"
    assert candidate.kwargs == {"BM": 16, "BN": 16, "BK": 16, "num_warps": 4}
    assert f"def {candidate.function}(" in bundle.module_path(candidate).read_text()
