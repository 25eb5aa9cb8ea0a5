"""`python -m axon.benchmarks.tiling` prints its table: a row per program and profile with the
proved kernels, cold and warm times and the best kernel's modeled traffic, then the summary
(which counts warm runs whose result differs from the cold run's)."""

from __future__ import annotations

import pytest

from axon.benchmarks import tiling


def test_the_table_has_a_row_per_program_and_the_summary(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert tiling.main(["matmul", "softmax", "--profile", "h200", "--profile", "trn2"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {(line.split()[0], line.split()[1]): line.split() for line in out[1:]
            if line.split()[0] in ("h200", "trn2")}
    assert set(rows) == {(p, n) for p in ("h200", "trn2") for n in ("matmul", "softmax")}
    matmul = rows[("h200", "matmul")]
    assert matmul[2:5] == ["4", "4", "0"]  # proposed, proved, fused: a single op fuses nothing
    assert matmul[7] == "blocks_k"
    assert float(matmul[-2]) <= 1.2  # the 4096^3 matmul within 1.2x of compulsory on h200
    softmax = rows[("trn2", "softmax")]
    assert softmax[7] == "rows" and softmax[8] == "BM=128"
    assert any(line.startswith("h200: 2 of 2 programs tiled; cold median") for line in out)
    assert out[-1] == ("summary: 0 program-profile pairs without a proved kernel, 0 whose warm "
                       "result differs from the cold one")
