"""The command-line tools (`axon-opt`, `axon`), the embedding API and the lit-coverage guard.

The drivers are run both in-process (`main(argv)`, fast, exact exit codes) and as real subprocesses
through their console scripts, because only a subprocess shows what a user sees: the exit status
and whether a Python traceback leaks onto stderr.
"""

from __future__ import annotations

import re
import subprocess
import sys
import types
from importlib.metadata import version
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ParseError, VerifyException

from axon.dialects.ax import ALL_OPS
from axon.dialects.ax.op_base import TensorOp
from axon.tools import axon_main, axon_opt, embed
from axon.tools.registry import get_all_dialects, get_all_passes, upstream_dialects, upstream_passes

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the venv's bin/, where the console scripts are installed

T = "!ax.tensor<[M, K], f32>"
GOOD = f"""\
func.func @f(%x: {T}, %y: {T}) -> {T} {{
  %a = ax.add %x, %y : ({T}, {T}) -> {T}
  %b = ax.add %x, %y : ({T}, {T}) -> {T}
  %dead = ax.exp %x : ({T}) -> {T}
  %r = ax.mul %a, %b : ({T}, {T}) -> {T}
  func.return %r : {T}
}}
"""
# line 3 declares a result shape that the operands do not give
BAD_VERIFY = f"""\
func.func @f(%x: {T}, %y: !ax.tensor<[M, 1], f32>) -> {T} {{
  %a = ax.exp %x : ({T}) -> {T}
  %b = ax.add %a, %y : ({T}, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], f32>
  func.return %a : {T}
}}
"""
BAD_PARSE = f"""\
func.func @f(%x: {T}) -> {T} {{
  %a = ax.exp %x, : ({T}) -> {T}
  func.return %a : {T}
}}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run_script(script: str, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run an installed console script as a user would, from `cwd`."""
    exe = BIN / script
    assert exe.exists(), f"console script {script} is not installed next to {sys.executable}"
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def run_opt(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`axon-opt argv` in-process: (exit status, stdout, stderr)."""
    try:
        axon_opt.main(argv)
        code = 0
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# ---- axon-opt, in-process --------------------------------------------------------------------
def test_good_input_prints_the_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_opt([str(write(tmp_path, "good.mlir", GOOD))], capsys)
    assert (code, err) == (0, "")
    assert "%a = ax.add %x, %y" in out and "%dead = ax.exp %x" in out


def test_cse_merges_identical_ops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_opt([str(write(tmp_path, "good.mlir", GOOD)), "-p", "cse"], capsys)
    assert code == 0
    assert out.count("ax.add") == 1
    assert re.search(r"ax\.mul %a, %a", out), out


def test_canonicalize_drops_dead_pure_ops(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_opt([str(write(tmp_path, "good.mlir", GOOD)), "-p", "canonicalize"], capsys)
    assert code == 0
    assert "ax.exp" not in out
    assert "ax.mul" in out


def test_split_input_file_handles_each_chunk(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD + "// -----\n" + GOOD.replace("@f", "@g")
    code, out, _ = run_opt([str(write(tmp_path, "two.mlir", text)), "--split-input-file"], capsys)
    assert code == 0
    first, second = out.split("// -----\n")
    assert "func.func @f" in first and "func.func @g" in second


def test_verifier_error_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad.mlir", BAD_VERIFY)
    code, out, err = run_opt([str(path)], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:3:3: error: 'ax.add': result type is "
                          "!ax.tensor<[M, 1], f32>, but the operands give !ax.tensor<[M, K], f32>")
    assert "%b = ax.add %a, %y" in err  # the source line is quoted under the location


def test_verify_diagnostics_prints_and_exits_zero(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    text = BAD_VERIFY + "// -----\n" + GOOD
    path = write(tmp_path, "bad.mlir", text)
    code, out, _ = run_opt([str(path), "--split-input-file", "--verify-diagnostics"], capsys)
    assert code == 0
    assert "'ax.add': result type is" in out
    assert "func.func @f" in out.split("// -----\n")[1]  # the good chunk is still processed


def test_lines_count_from_the_file_start_under_split(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad.mlir", GOOD + "// -----\n" + BAD_VERIFY)
    code, out, _ = run_opt([str(path), "--split-input-file", "--verify-diagnostics"], capsys)
    line = GOOD.count("\n") + 1 + 3  # the separator line, then line 3 of the chunk
    assert code == 0 and f"bad.mlir:{line}:3: error: 'ax.add'" in out


def test_invalid_type_is_a_located_parse_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "ty.mlir", "func.func @f(%x: !ax.tensor<[M, -2], f32>) {\n"
                                      "  func.return\n}\n")
    code, _, err = run_opt([str(path)], capsys)
    assert code == 1
    assert err.startswith(f"{path}:1:18: error: tensor dim -2 is negative")


@pytest.mark.parametrize("pipeline, message", [
    ("cse{bogus=1}", 'Provided arguments ["bogus"] not found'),
    ("cse{", "Expected argument name here"),
])
def test_bad_pipelines_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        pipeline: str, message: str) -> None:
    code, out, err = run_opt([str(write(tmp_path, "good.mlir", GOOD)), "-p", pipeline], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"axon-opt: error: invalid pass pipeline '{pipeline}'")
    assert message in err


def test_unknown_pass_names_the_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_opt([str(write(tmp_path, "good.mlir", GOOD)), "-p", "cse,canonicalise"],
                             capsys)
    assert code == 1 and out == ""
    assert err == ("axon-opt: error: unknown pass 'canonicalise'; did you mean canonicalize? the "
                   "passes are: propagate, verify-equivalence, build-nugraph, tile, lower-nki, "
                   "fuse-nki, canonicalize, cse, dce, licm\n")


def test_missing_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_opt([str(tmp_path / "absent.mlir")], capsys)
    assert code == 1
    assert err.strip() == (f"axon-opt: error: cannot open '{tmp_path / 'absent.mlir'}': "
                           "No such file or directory")


def test_output_may_not_overwrite_the_input(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "good.mlir", GOOD)
    alias = tmp_path / "." / "good.mlir"  # the same file under another spelling
    code, _, err = run_opt([str(path), "-p", "canonicalize", "-o", str(alias)], capsys)
    assert code == 1 and "refusing to overwrite the input file" in err
    assert path.read_text() == GOOD


def test_output_file_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_path = tmp_path / "out.mlir"
    code, out, _ = run_opt([str(write(tmp_path, "good.mlir", GOOD)), "-o", str(out_path)], capsys)
    assert code == 0 and out == ""
    assert "ax.mul" in out_path.read_text()


def test_python_source_frontend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "prog.py", "def f(x: f32[M, K], w: f32[K, N]):\n    return x @ w\n")
    code, out, _ = run_opt([str(path)], capsys)
    assert code == 0
    assert "func.func @f" in out and "ax.matmul" in out


def test_source_errors_follow_the_diagnostics_flags(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A SourceError is a user error (exit 1), and under --verify-diagnostics it is printed and
    the exit is 0. A stand-in frontend pins the driver's side independently of the real one."""

    class SourceError(Exception):
        pass

    def parse_source(source: str | bytes, filename: str) -> ModuleOp:
        text = source.decode() if isinstance(source, bytes) else source
        line = text.count("\n", 0, text.index("oops")) + 1
        raise SourceError(f"{filename}:{line}:5: error: unknown name 'oops'")

    monkeypatch.setitem(sys.modules, "axon.frontend.numpy_subset",
                        types.SimpleNamespace(parse_source=parse_source))
    monkeypatch.setitem(sys.modules, "axon.frontend.diagnostics",
                        types.SimpleNamespace(SourceError=SourceError))
    path = write(tmp_path, "prog.py", "def f(x: f32[M]):\n    return x\n# -----\n"
                                      "def g(x: f32[M]):\n    oops\n")
    code, _, err = run_opt([str(path)], capsys)
    assert code == 1 and err.strip() == f"{path}:5:5: error: unknown name 'oops'"
    code, out, _ = run_opt([str(path), "--verify-diagnostics"], capsys)
    assert code == 0 and f"{path}:5:5: error: unknown name 'oops'" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_opt(["--version"], capsys)
    assert code == 0 and out == f"axon-opt {version('axon')} (xdsl {version('xdsl')})\n"


# ---- axon-opt, as a subprocess ---------------------------------------------------------------
def test_script_good_input(tmp_path: Path) -> None:
    result = run_script("axon-opt", write(tmp_path, "good.mlir", GOOD), "-p", "cse,canonicalize",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("ax.add") == 1 and "ax.exp" not in result.stdout


@pytest.mark.parametrize("name, text, location", [
    ("bad.mlir", BAD_VERIFY, "bad.mlir:3:3: error: 'ax.add': result type is"),
    ("parse.mlir", BAD_PARSE, "parse.mlir:2:19: error: operand expected"),
    ("prog.py", "def f(x: f32[M, K]):\n    return x @ x\n",
     "prog.py:2:14: error: contracted dims differ"),
])
def test_script_bad_input(tmp_path: Path, name: str, text: str, location: str) -> None:
    write(tmp_path, name, text)
    result = run_script("axon-opt", name, cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith(location), result.stderr
    assert "Traceback" not in result.stderr


def test_script_unknown_pass(tmp_path: Path) -> None:
    result = run_script("axon-opt", write(tmp_path, "good.mlir", GOOD), "-p", "no-such-pass",
                        cwd=tmp_path)
    assert result.returncode == 1
    assert "unknown pass 'no-such-pass'" in result.stderr
    assert "Traceback" not in result.stderr


def test_script_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`axon-opt big.mlir | head -1` must not end in a BrokenPipeError traceback."""
    path = write(tmp_path, "many.mlir", "\n// -----\n".join([GOOD] * 200))
    result = subprocess.run(f"'{BIN / 'axon-opt'}' '{path}' --split-input-file | head -1",
                            shell=True, capture_output=True, text=True, timeout=120)
    assert result.stdout == "builtin.module {\n"
    assert "Traceback" not in result.stderr


# ---- axon --------------------------------------------------------------------------------------
def test_axon_demo_optimizes_rmsnorm_matmul(capsys: pytest.CaptureFixture[str]) -> None:
    """`axon` alone shows what Axon does: the search reported on stderr, the cheaper program on
    stdout, then one line on what to try next."""
    axon_main.main([])
    out, err = capsys.readouterr()
    assert "func.func @rmsnorm_matmul" in out and "ax.matmul" in out
    parsed = embed.print_ir(embed.parse_source(
        (ROOT / "benchmarks" / "programs" / "rmsnorm_matmul.py").read_text(), "p.py"))
    assert out != parsed  # not the parsed IR: the propagated program
    report = re.search(r"propagate: @rmsnorm_matmul: .*; cost ([0-9.]+)us -> ([0-9.]+)us", err)
    assert report is not None and float(report[2]) < float(report[1]), err
    assert err.splitlines()[-1] == axon_main.NEXT_STEPS


def test_axon_demo_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    axon_main.main(["--quiet"])
    out, err = capsys.readouterr()
    assert "func.func @rmsnorm_matmul" in out and err == ""


def test_axon_lists_the_packaged_programs(capsys: pytest.CaptureFixture[str]) -> None:
    axon_main.main(["--list"])
    listed = capsys.readouterr().out.split()
    on_disk = sorted(p.stem for p in (ROOT / "benchmarks" / "programs").glob("*.py"))
    assert listed == on_disk and "rmsnorm_matmul" in listed


def test_axon_program_by_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "prog.py", "def double(x: bf16[N]):\n    return x + x\n")
    axon_main.main([str(path), "--generic"])
    out = capsys.readouterr().out
    assert '"func.func"() <{sym_name = "double"' in out and '"ax.add"' in out


def test_axon_unknown_program(tmp_path: Path) -> None:
    result = run_script("axon", "rmsnorm_matmu", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == ("axon: error: 'rmsnorm_matmu' is neither a file nor a "
                                     "benchmark program; did you mean rmsnorm_matmul, rmsnorm, "
                                     "softmax_matmul?")


def test_axon_bad_program(tmp_path: Path) -> None:
    write(tmp_path, "prog.py", "def f(x: f32[M]):\n    return expp(x)\n")
    result = run_script("axon", "prog.py", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("prog.py:2:12: error: ")


def test_axon_runs_a_pipeline_before_printing(capsys: pytest.CaptureFixture[str]) -> None:
    axon_main.main(["transpose_matmul", "-p", "propagate"])
    out = capsys.readouterr().out
    # the transpose is absorbed into the contraction: the extracted program has no ax.transpose
    assert "func.func @transpose_matmul" in out
    assert "ax.transpose" not in out and "in0[r0, d0] * in1[r0, d1]" in out


def test_axon_bad_pipeline(tmp_path: Path) -> None:
    result = run_script("axon", "-p", "nosuch", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("axon: error: unknown pass 'nosuch'; the passes are: ")


def test_axon_help_names_the_kernel_target(tmp_path: Path) -> None:
    result = run_script("axon", "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "--target {xe_triton,nki}" in result.stdout and "--profile" in result.stdout


# ---- the embedding API -------------------------------------------------------------------------
def test_embed_parse_run_print_round_trip() -> None:
    module = embed.parse_mlir(GOOD)
    assert embed.run_pipeline(module, "cse,canonicalize") is module
    text = embed.print_ir(module)
    assert text.count("ax.add") == 1 and "ax.exp" not in text
    again = embed.parse_mlir(embed.print_ir(module, generic=True))
    assert embed.print_ir(again) == text


def test_embed_parse_source() -> None:
    module = embed.parse_source("def f(x: f32[M]):\n    return exp(x)\n", "f.py")
    assert "ax.exp" in embed.print_ir(module)


def test_embed_errors_are_exceptions_with_locations() -> None:
    with pytest.raises(ParseError) as parse_error:
        embed.parse_mlir(BAD_PARSE, "bad.mlir")
    assert parse_error.value.span.get_location()[1:] == (2, 19)
    with pytest.raises(VerifyException, match="'ax.add': result type is"):
        embed.parse_mlir(BAD_VERIFY)
    module = embed.parse_mlir(GOOD)
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        embed.run_pipeline(module, "nope")
    with pytest.raises(ValueError, match="Expected argument name"):
        embed.run_pipeline(module, "cse{")


def test_embed_context_knows_axon_and_upstream_dialects() -> None:
    ctx = embed.make_context()
    assert ctx.get_optional_op("ax.matmul") is not None
    assert ctx.get_optional_op("func.func") is not None


# ---- registry and lit coverage ----------------------------------------------------------------
def test_axon_names_do_not_shadow_upstream_ones() -> None:
    assert not set(get_all_dialects()) & set(upstream_dialects())
    assert not set(get_all_passes()) & set(upstream_passes())


def test_registered_passes_load() -> None:
    for name, factory in get_all_passes().items():
        assert factory().name == name


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_op_has_lit_tests(op: type[TensorOp]) -> None:
    """A new op must come with a round-trip test and an invalid-IR test of its own verifier."""
    dialects = ROOT / "lit_tests" / "dialects"
    round_trip = (dialects / "ax.mlir").read_text()
    invalid = (dialects / "ax_invalid.mlir").read_text()
    assert re.search(rf"^// CHECK-NEXT: .* = {re.escape(op.name)} ", round_trip, re.M), (
        f"lit_tests/dialects/ax.mlir has no CHECK line printing {op.name}")
    assert re.search(rf"^// GENERIC: .* = \"{re.escape(op.name)}\"", round_trip, re.M), (
        f"lit_tests/dialects/ax.mlir has no GENERIC line printing {op.name}")
    assert re.search(rf"^// CHECK: .*'{re.escape(op.name)}': ", invalid, re.M), (
        f"lit_tests/dialects/ax_invalid.mlir has no diagnostic from {op.name}'s verifier")
