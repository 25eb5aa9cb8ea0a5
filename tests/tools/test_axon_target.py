"""`axon PROGRAM --target xe_triton`: a checked kernel written without a GPU (timing said to
be skipped), progress and a summary; a cached winner used as it is; bad input a one-line
diagnostic with exit 1; the input file never overwritten."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from axon.benchmarks.suite import PROGRAMS
from axon.nugraph.stored import function_text
from axon.selection.cache import Winner, WinnerCache, winner_key
from axon.targets.xe_triton.command import TargetError, TargetOptions, emit_kernel
from axon.tiling.search import all_sizes
from axon.tools import axon_main
from axon.tools.embed import parse_mlir, parse_source

PROGRAM = "def f(x: f32[M, N], y: f32[M, N]):\n    return x * y\n"


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


def test_without_a_gpu_it_emits_checks_and_says_timing_was_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    out = tmp_path / "kernel.py"
    code, stdout, stderr = run_tool(axon_main.main, [
        str(source), "--target", "xe_triton", "--profile", "h200", "--sizes", "M=40,N=24",
        "--max-candidates", "2", "--cache", str(tmp_path / "w.json"), "-o", str(out)], capsys)
    assert code == 0, stderr
    assert stdout == ""
    tree = ast.parse(out.read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    (kernel,) = [n for n in names if n.endswith("_kernel")]
    host = kernel.removesuffix("_kernel")
    assert host.startswith("f_") and host in names
    assert "axon: xe_triton: @f: tilings:" in stderr
    assert "cascade: 2/2 candidates checked" in stderr
    assert "2 checked, 2 passed; rejected: syntax 0, structure 0, correctness 0, " \
           "performance 0" in stderr
    assert "axon: xe_triton: @f: chosen " in stderr and "timing skipped: no GPU" in stderr


def test_a_cached_winner_is_used_as_it_is(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (func,) = parse_source(PROGRAMS["softmax"].source, "softmax.py").ops
    sizes = all_sizes(func, {"M": 4096})  # type: ignore[arg-type]
    key = winner_key(function_text(func), sizes, ["bf16"], "h200")  # type: ignore[arg-type]
    cache = WinnerCache(tmp_path / "w.json")
    cache.put(key, Winner("softmax", sizes, "bf16", "h200", "softmax.rows.BM2.w8",
                          {"BM": 2, "num_warps": 8}, "softmax_rows", "# the timed module\n",
                          0.05, 0.07, "torch.compile"))
    cache.save()
    code, stdout, stderr = run_tool(axon_main.main, [
        "softmax", "--target", "xe_triton", "--sizes", "M=4096", "--cache",
        str(tmp_path / "w.json")], capsys)
    assert code == 0, stderr
    assert stdout == "# the timed module\n"
    assert "the cached winner softmax.rows.BM2.w8 (0.0500 ms on the GPU, torch.compile " \
           "0.0700 ms" in stderr


@pytest.mark.parametrize(("argv", "message"), [
    (["--profile", "h100"], "axon: error: --profile: unknown profile 'h100'; known: a770, "),
    (["--sizes", "M=x"], "axon: error: --sizes 'M=x': sizes entry 'M=x' is not NAME=INTEGER"),
    (["--sizes", "Q=4"], "axon: error: --sizes: Q is not a size of @softmax in "),
    (["--max-candidates", "0"], "axon: error: --max-candidates 0: expected at least 1"),
    (["-p", "propagate"], "axon: error: --target selects from the program itself; leave out -p"),
])
def test_bad_input_is_a_one_line_diagnostic(argv: list[str], message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, stderr = run_tool(axon_main.main, ["softmax", "--target", "xe_triton",
                                                     "--no-cache", *argv], capsys)
    assert code == 1 and stdout == ""
    assert stderr.startswith(message), stderr
    assert "Traceback" not in stderr


SUFFIX_SUM = """func.func @suffix(%x: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %c = ax.generic %x {form = "out[d0 < M, d1 < N] = add over r0 in [d1, N) of in0[d0, r0]",
                      dtype = f32} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32>
  func.return %c : !ax.tensor<[M, N], f32>
}
"""


def test_a_program_whose_kernels_do_not_lower_is_a_diagnostic(tmp_path: Path) -> None:
    # a suffix sum: its reduction starts at the row's own index, which no Triton op computes
    # (the NumPy subset has no way to write one, so the module is MLIR, as an embedding
    # compiler hands it over)
    (tmp_path / "w.json").write_text("{")  # a corrupt cache: a warning, then ignored
    said: list[str] = []
    options = TargetOptions(sizes="M=64,N=64", cache=str(tmp_path / "w.json"))
    with pytest.raises(TargetError) as info:
        emit_kernel(parse_mlir(SUFFIX_SUM, "suffix.mlir"), "suffix.mlir", options, said.append)
    assert said[0].startswith(f"warning: {tmp_path / 'w.json'}: winner cache ignored (")
    assert str(info.value).startswith(
        "suffix.mlir: @suffix: no candidate emits (not supported: 'ax.generic'"), info.value


def test_the_input_file_is_never_the_output(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    code, _, stderr = run_tool(axon_main.main, [str(source), "--target", "xe_triton",
                                                "-o", str(source)], capsys)
    assert code == 1 and "refusing to overwrite the input file" in stderr
    assert source.read_text() == PROGRAM
