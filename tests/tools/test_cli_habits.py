"""What users of `mlir-opt` and other compilers expect from `axon` and `axon-opt`: `--version`,
`-o`, `-` for stdin, one-line errors with exit 1 (and exit 2 for a bug, its traceback only with
`--debug`), progress on stderr for long steps unless `--quiet`, a `--help` that lists Axon's own
dialects and passes, and upstream targets that cannot print Axon IR refused up front."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from axon.tools import axon_main, axon_opt, progress
from axon.tools.user_errors import describe

BIN = Path(sys.executable).parent
T = "!ax.tensor<[M], f32>"
GOOD = (f"func.func @f(%x: {T}) -> {T} {{\n  %e = ax.exp %x : ({T}) -> {T}\n"
        f"  func.return %e : {T}\n}}\n")
PROGRAM = "def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x @ w, axis=1)\n"


def run_tool(main: object, argv: list[str],
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `main(argv)` in-process."""
    assert callable(main)
    try:
        main(argv)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def script(name: str, *args: str, stdin: str = "",
           cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *args], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---- --version, -o, stdin ----------------------------------------------------------------------
def test_versions(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_tool(axon_main.main, ["--version"], capsys) == (0, f"axon {version('axon')}\n", "")
    code, out, _ = run_tool(axon_opt.main, ["--version"], capsys)
    assert (code, out) == (0, f"axon-opt {version('axon')} (xdsl {version('xdsl')})\n")


def test_axon_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = write(tmp_path, "prog.py", PROGRAM)
    out_path = tmp_path / "out.mlir"
    code, out, _ = run_tool(axon_main.main, [str(program), "-o", str(out_path)], capsys)
    assert (code, out) == (0, "") and "ax.matmul" in out_path.read_text()
    code, _, err = run_tool(axon_main.main, [str(program), "-o", str(tmp_path / "." / "prog.py")],
                            capsys)
    assert code == 1 and err == f"axon: error: refusing to overwrite the input file '{program}' " \
                                "with -o\n"
    assert program.read_text() == PROGRAM


def test_dash_reads_stdin() -> None:
    result = script("axon", "-", stdin=PROGRAM)
    assert result.returncode == 0 and "func.func @f" in result.stdout, result.stderr
    result = script("axon-opt", "-", stdin=GOOD)
    assert result.returncode == 0 and "ax.exp" in result.stdout, result.stderr
    result = script("axon-opt", "-", "-f", "py", stdin=PROGRAM)
    assert result.returncode == 0 and "ax.matmul" in result.stdout, result.stderr


# ---- inputs each command does not read ---------------------------------------------------------
def test_python_piped_into_axon_opt_says_to_use_f_py() -> None:
    result = script("axon-opt", stdin="# a comment\n" + PROGRAM)
    assert result.returncode == 1
    assert result.stderr.startswith("stdin:2:1: error: expected MLIR, but this looks like a "
                                    "NumPy-subset program: read it with -f py")


def test_input_that_is_not_utf8_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "bad.mlir").write_bytes(b"// ok\n\x80\n")
    result = script("axon-opt", str(tmp_path / "bad.mlir"))
    assert (result.returncode, result.stderr) == (
        1, f"{tmp_path / 'bad.mlir'}:2:1: error: the input is not UTF-8 text (byte 0x80)\n")
    undecodable = UnicodeDecodeError("utf-8", b"ab\xff", 2, 3, "invalid start byte")
    assert describe(undecodable) == "error: the input is not UTF-8 text (byte 0xff at offset 2)"


def test_lexer_message_names_the_character(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_tool(axon_opt.main, [str(write(tmp_path, "x.mlir", "%\n"))], capsys)
    assert code == 1 and "Expected suffix identifier after '%'" in err and "{" not in err


def test_empty_inputs_are_empty_modules(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("empty.mlir", "empty.py"):
        code, out, err = run_tool(axon_opt.main, [str(write(tmp_path, name, "\n"))], capsys)
        assert (code, out, err) == (0, "builtin.module {\n}\n\n", ""), name
    code, _, err = run_tool(axon_main.main, [str(tmp_path / "empty.py")], capsys)
    assert code == 1
    assert err == f"axon: error: {tmp_path / 'empty.py'} defines no function: there is nothing " \
                  "to optimize\n"


def test_axon_refuses_mlir_with_a_pointer_to_axon_opt(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "prog.mlir", GOOD)
    code, _, err = run_tool(axon_main.main, [str(path)], capsys)
    assert code == 1
    assert err == (f"axon: error: '{path}' is MLIR; axon reads NumPy-subset programs (.py files "
                   f"and benchmark names): run MLIR through `axon-opt {path} -p PIPELINE`\n")


def test_axon_on_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_tool(axon_main.main, [str(tmp_path)], capsys)
    assert code == 1
    assert err == (f"axon: error: '{tmp_path}' is a directory; axon reads one program: a .py "
                   "file or a benchmark name\n")


# ---- errors: one line, exit 1; bugs: exit 2, traceback with --debug ----------------------------
@pytest.mark.parametrize("main, tool", [(axon_main.main, "axon"), (axon_opt.main, "axon-opt")])
def test_bad_arguments_are_one_line_exit_one(main: object, tool: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_tool(main, ["--no-such-flag"], capsys)
    assert (code, out) == (1, "")
    assert err == (f"{tool}: error: unrecognized arguments: --no-such-flag ({tool} --help lists "
                   "the options)\n")


@pytest.mark.parametrize("main, tool, argv", [
    (axon_main.main, "axon", ["prog.py"]),
    (axon_opt.main, "axon-opt", ["prog.py"]),
])
def test_internal_errors_exit_two_without_a_traceback(
        main: object, tool: str, argv: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str, filename: str) -> None:
        raise RuntimeError("the frontend broke\nsecond line")

    monkeypatch.setattr(axon_main, "parse_source", broken)
    monkeypatch.setattr(axon_opt, "parse_source", broken)
    write(tmp_path, "prog.py", PROGRAM)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_tool(main, argv, capsys)
    assert (code, out) == (2, "")
    assert err == (f"{tool}: internal error: RuntimeError: the frontend broke (a bug in Axon, "
                   "not in the input; run again with --debug for the traceback)\n")
    with pytest.raises(RuntimeError, match="the frontend broke"):
        assert callable(main)
        main([*argv, "--debug"])


def test_script_internal_error_has_no_traceback(tmp_path: Path) -> None:
    """A subprocess shows what a user sees: here a pass that crashes (an `ax.generic` whose form
    the nu-graph cannot import would be a user error, so the crash is forced through Python)."""
    code = ("import sys\n"
            "from axon.tools import axon_opt\n"
            "def crash(*args):\n    raise KeyError('boom')\n"
            "axon_opt.AxonOptMain.apply_passes = crash\n"
            "axon_opt.main(sys.argv[1:])\n")
    path = write(tmp_path, "good.mlir", GOOD)
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("axon-opt: internal error: KeyError: 'boom'")
    result = subprocess.run([sys.executable, "-c", code, str(path), "--debug"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" in result.stderr  # Python's own exit status


# ---- targets and passes that cannot take Axon IR -----------------------------------------------
@pytest.mark.parametrize("target", ["llvm", "mps", "riscv-asm", "x86-asm", "wgsl", "csl"])
def test_upstream_targets_are_refused(target: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_tool(axon_opt.main, [str(write(tmp_path, "g.mlir", GOOD)), "-t", target],
                              capsys)
    assert (code, out) == (1, "")
    assert err == (f"axon-opt: error: '{target}' is an xDSL target for its own dialects; it "
                   "cannot print Axon IR (axon-opt prints MLIR: -t mlir)\n")


def test_upstream_passes_for_other_dialects_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_tool(axon_opt.main,
                              [str(write(tmp_path, "g.mlir", GOOD)), "-p", "cse,mlir-opt"], capsys)
    assert (code, out) == (1, "")
    assert err.startswith("axon-opt: error: 'mlir-opt' is an xDSL pass for other dialects; it "
                          "does not take Axon IR (the passes are: propagate, ")
    assert err.count("\n") == 1


def test_help_lists_axon_first_and_no_unrelated_upstream_passes(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_tool(axon_opt.main, ["--help"], capsys)
    assert code == 0
    assert out.index("Axon's dialects:") < out.index("Axon's passes") < out.index("options:")
    for expected in ("  ax    ", "  nu    ", "  propagate ", "  verify-equivalence ",
                     "  build-nugraph ", "max_iterations=6: propagation iterations per function "
                     "(an integer >= 1)", "fail_on_refuted=false", "canonicalize, cse, dce, licm"):
        assert expected in out, expected
    for unrelated in ("convert-arith-to-riscv", "riscv-asm", "x86-asm", "mlir-opt,"):
        assert unrelated not in out, unrelated


# ---- progress on stderr ------------------------------------------------------------------------
@pytest.fixture
def fast_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress lines after 10 ms rather than 2 s, so a short propagation is a long step."""
    monkeypatch.setattr(progress, "DELAY_S", 0.01)
    monkeypatch.setattr(progress, "INTERVAL_S", 0.05)


@pytest.mark.usefixtures("fast_progress")
def test_axon_shows_progress_unless_quiet(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    program = str(write(tmp_path, "prog.py", PROGRAM))
    code, out, err = run_tool(axon_main.main, [program, "-p", "propagate"], capsys)
    assert code == 0 and "func.func @f" in out
    # the pipeline's own step may speak first on a busy machine (10 ms is short)
    inner = [line for line in err.splitlines() if line.startswith("axon: propagate @f: ")]
    assert inner and inner[0].endswith("s)"), err
    assert inner[-1].startswith("axon: propagate @f: done in "), err
    code, out, err = run_tool(axon_main.main, [program, "-p", "propagate", "--quiet"], capsys)
    assert (code, err) == (0, "") and "func.func @f" in out


@pytest.mark.usefixtures("fast_progress")
def test_axon_opt_progress_is_asked_for(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """axon-opt's stderr is read by scripts and FileCheck: progress only on a terminal (not
    here) or with --progress."""
    program = str(write(tmp_path, "prog.py", PROGRAM))
    code, _, err = run_tool(axon_opt.main, [program, "-p", "propagate"], capsys)
    assert (code, err) == (0, "")
    code, _, err = run_tool(axon_opt.main, [program, "-p", "propagate", "--progress"], capsys)
    assert code == 0 and "axon-opt: propagate @f: done in " in err, err


def test_progress_is_off_in_the_embedding_api(capsys: pytest.CaptureFixture[str]) -> None:
    with progress.step("a step") as step:
        step.update("detail")
    assert step.tool is None and capsys.readouterr().err == ""
