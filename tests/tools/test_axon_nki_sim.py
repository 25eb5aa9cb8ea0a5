"""`axon-nki-sim`: runs a kernel file on .npy inputs; bad input is one diagnostic and status 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from axon.tools import axon_nki_sim

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "benchmarks" / "nki_kernels"
CLI = (ROOT / "docs" / "cli.md").read_text()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = axon_nki_sim.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def save(tmp_path: Path, name: str, value: np.ndarray) -> str:
    path = tmp_path / name
    np.save(path, value)
    return str(path)


def test_runs_a_kernel_and_saves_outputs_and_trace(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    a = np.arange(256 * 8, dtype=np.float32).reshape(256, 8)
    b = np.ones((256, 8), dtype=np.float32)
    code, out, err = run([str(KERNELS / "tensor_add.py"), "--inputs", save(tmp_path, "a.npy", a),
                          save(tmp_path, "b.npy", b), "--grid", "2", "--output",
                          str(tmp_path / "out.npz"), "--trace", str(tmp_path / "t.jsonl")],
                         capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == ["output_0: float32[256, 8] min 1 max 2048", "8 instructions"]
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["output_0"], a + b)
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [r["name"] for r in records[:4]] == ["dma_copy", "dma_copy", "tensor_tensor",
                                                "dma_copy"]
    assert records[2]["engine"] == "DVE" and records[2]["program_id"] == [0]


def test_a_failing_kernel_is_one_located_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    x = save(tmp_path, "x.npy", np.ones((128, 640), dtype=np.float32))
    kernel = tmp_path / "bad.py"
    kernel.write_text((KERNELS / "rmsnorm.py").read_text().replace(
        "(pmax, cols), dtype=nl.float32", "(pmax + 1, cols), dtype=nl.float32", 1))
    code, out, err = run([str(kernel), "--inputs", x,
                          save(tmp_path, "w.npy", np.ones(640, dtype=np.float32))], capsys)
    assert code == 1 and out == ""
    line = next(n for n, text in enumerate(kernel.read_text().splitlines(), 1)
                if "pmax + 1" in text)
    assert err == (f"{kernel}:{line}: error: nl.ndarray: a SBUF tile of shape (129, 640) spans "
                   f"129 partitions; limit partitions=128 (trn2)\n")


@pytest.mark.parametrize("argv, message", [
    (["missing.py"], "missing.py:0: error: cannot read the kernel file"),
    ([str(KERNELS / "softmax.py"), "--inputs", "absent.npy"],
     "axon-nki-sim: error: input 'absent.npy': cannot read it as a .npy array"),
    ([str(KERNELS / "softmax.py"), "--grid", "0"],
     "axon-nki-sim: error: --grid '0': expected positive ints"),
    ([str(KERNELS / "softmax.py"), "--profile", "h100"],
     "axon-nki-sim: error: unknown device profile 'h100'"),
    ([str(KERNELS / "softmax.py"), "--frobnicate"],
     "axon-nki-sim: error: unrecognized arguments: --frobnicate"),
])
def test_bad_input_is_a_diagnostic_and_status_1(argv: list[str], message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(argv, capsys)
    assert code == 1
    assert err.startswith(message) and err.count("\n") == 1, err


def test_a_float64_input_names_the_dtypes_nki_has(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(KERNELS / "softmax.py"), "--inputs",
                        save(tmp_path, "x.npy", np.ones((4, 4)))], capsys)
    assert code == 1
    assert err.startswith("axon-nki-sim: error: simulate: input 0: dtype float64 is not an NKI "
                          "dtype; expected one of float32, float16, bfloat16")


def test_every_option_is_documented() -> None:
    options = {o for action in axon_nki_sim.parser()._actions for o in action.option_strings}
    missing = sorted(o for o in options - {"-h", "--help"} if f"`{o}" not in CLI)
    assert not missing, f"docs/cli.md does not document axon-nki-sim's {missing}"


def test_warnings_go_to_stderr_and_the_run_succeeds(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    kernel = tmp_path / "partial.py"
    kernel.write_text("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n"
                      "@nki.jit\ndef partial(x):\n"
                      "    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
                      "    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)\n"
                      "    nisa.dma_copy(dst=tile, src=x)\n"
                      "    nisa.dma_copy(dst=out[0:2], src=tile[0:2])\n"
                      "    return out\n")
    code, out, err = run([str(kernel), "--inputs",
                          save(tmp_path, "x.npy", np.ones((4, 4), dtype=np.float32))], capsys)
    assert code == 0
    assert out.splitlines() == ["output_0: float32[4, 4] min 1 max 1, 8 NaN", "2 instructions"]
    # located at the kernel's definition (its decorator)
    assert err == (f"{kernel}:6: warning: kernel output 0 has 8 of 16 elements the kernel never "
                   f"wrote (they hold the uninitialized pattern)\n")
