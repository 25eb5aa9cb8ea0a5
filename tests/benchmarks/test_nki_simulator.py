"""The NKI simulator benchmark runs, and rmsnorm at 1024 x 1024 simulates in under 2 s
(issue 12)."""

from __future__ import annotations

import pytest

from axon.benchmarks import nki_simulator


def test_rmsnorm_1024_simulates_in_under_two_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    nki_simulator.main(["--repeats", "1"])
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["kernel", "inputs", "instructions", "seconds", "traced", "s"]
    name, shape, weight, instructions, seconds, traced = row.split()
    assert (name, shape, weight) == ("rmsnorm", "1024x1024", "1024")
    assert int(instructions) == 1 + 8 * 7  # the weight's load, then 7 instructions a row tile
    assert float(seconds) < 2.0 and float(traced) < 2.0
