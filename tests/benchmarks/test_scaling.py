"""The scaling benchmark: its programs parse to the sizes asked for, and a quick run prints one
row per program with every stage timed."""

from __future__ import annotations

import pytest

from axon.benchmarks.scaling import BLOCK_STATEMENTS, HEADER, PROGRAMS, main
from axon.frontend.numpy_subset import parse_source


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_grow_to_the_statements_asked_for(name: str) -> None:
    source = PROGRAMS[name](5 * BLOCK_STATEMENTS)
    body = source.splitlines()[1:]
    assert 5 * BLOCK_STATEMENTS <= len(body) <= 5 * BLOCK_STATEMENTS + 2
    parse_source(source, f"{name}.py").verify()


def test_a_quick_run_prints_a_row_per_program(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sizes", "24", "--time-limit", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == HEADER
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert sorted(rows) == sorted(PROGRAMS)
    for fields in rows.values():
        # statements, ops, then parse, propagate, print, total and reread seconds, peak MB
        numbers = [float(x) for x in fields[1:9]]
        assert numbers[0] >= 24 and all(x >= 0 for x in numbers)
        assert numbers[6] > 0 and numbers[7] > 0
    assert rows["chain"][12:] == ["saturated"]


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sizes", "ten"]) == 1
    assert main(["nope"]) == 1
    assert "unknown program(s): nope" in capsys.readouterr().err
