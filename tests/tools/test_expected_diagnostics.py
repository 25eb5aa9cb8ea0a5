"""`axon-opt --verify-diagnostics` checks `expected-error` annotations
(`axon.tools.expected_diagnostics`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon.tools import axon_opt
from axon.tools.expected_diagnostics import Expected, Produced, find_annotations, mismatches

T = "!ax.tensor<[M], i32>"
BAD_EXP = f"  %r = ax.exp %x : ({T}) -> {T}\n"


def run_opt(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        axon_opt.main(argv)
        code = 0
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_annotation_forms() -> None:
    text = ("a // expected-error {{here}}\n"
            "// expected-error@+2 {{two down}}\n"
            "// expected-error @-1 {{one up}}\n"
            "// expected-error @below {{below}}\n"
            "x\n"
            "# expected-error @unknown {{anywhere}}\n")
    found = find_annotations(text, first_line=11)
    assert [(e.text, e.line) for e in found] == [
        ("here", 11), ("two down", 14), ("one up", 12), ("below", 15), ("anywhere", None)]
    assert found[0] == Expected("error", "here", 11, (11, 3))


def test_diagnostic_locations_are_read_from_the_text() -> None:
    assert Produced.of_text("f.mlir:7:3: error: 'ax.exp': bad\n  source\n  ^") == Produced(
        7, 3, "'ax.exp': bad\n  source\n  ^")
    assert Produced.of_text("propagate: sizes names Q") == Produced(
        None, None, "propagate: sizes names Q")


def test_mismatches() -> None:
    expected = [Expected("error", "needs a float", 3, (2, 3))]
    assert mismatches("f.mlir", expected, [Produced(3, 3, "'exp' needs a float type")]) == []
    assert mismatches("f.mlir", expected, []) == [
        "f.mlir:2:3: error: expected error at line 3 was not produced: {{needs a float}}"]
    assert mismatches("f.mlir", [], [Produced(None, None, "boom")]) == [
        "f.mlir:1:1: error: unexpected error without a location (an expected-error @unknown "
        "annotation expects one): boom"]


def test_met_annotations_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(f"func.func @f(%x: {T}) {{\n  // expected-error @+1 {{{{needs a float}}}}\n"
                    f"{BAD_EXP}  func.return\n}}\n")
    code, out, err = run_opt([str(path), "--verify-diagnostics"], capsys)
    assert (code, err) == (0, "")
    assert f"{path}:3:3: error: 'ax.exp'" in out  # still printed


def test_unmet_annotations_exit_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(f"func.func @f(%x: {T}) {{\n  // expected-error {{{{needs a float}}}}\n"
                    f"{BAD_EXP}  func.return\n}}\n")
    code, _, err = run_opt([str(path), "--verify-diagnostics"], capsys)
    assert code == 1
    assert err.splitlines() == [
        f"{path}:3:3: error: unexpected error: 'ax.exp': operand #0 (input) has element type "
        "i32; 'exp' needs a float type",
        f"{path}:2:3: error: expected error at line 2 was not produced: {{{{needs a float}}}}"]


def test_unlocated_pass_error_and_python_comments(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "prog.py"
    path.write_text("# expected-error @unknown {{sizes names Q, which is not a size symbol}}\n"
                    "def f(x: f32[M]):\n    return exp(x)\n")
    code, _, err = run_opt([str(path), "--verify-diagnostics", "-p",
                            'propagate{sizes="Q=5"}'], capsys)
    assert (code, err) == (0, "")


def test_without_annotations_diagnostics_are_only_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text(f"func.func @f(%x: {T}) {{\n{BAD_EXP}  func.return\n}}\n")
    code, out, _ = run_opt([str(path), "--verify-diagnostics"], capsys)
    assert code == 0 and "'exp' needs a float type" in out
