"""`axon-bench` on the CPU: small bundles of kernels emitted by Axon's Triton emitter, run on
Triton's CPU interpreter. A correct candidate wins; a wrong one, one that crashes, exits, hangs,
modifies its input or patches the checker or the timer is rejected with its reason and cannot
win; a corrupt manifest is a located error and a non-zero exit."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import NORMAL, PROGRAMS, make_inputs
from axon.dialects.form.dtypes import DTYPES
from axon.targets.xe_triton.emit import emit_triton
from axon.targets.xe_triton.harness import report
from axon.targets.xe_triton.harness.bundle import (
    Bundle,
    BundleError,
    Candidate,
    Case,
    Init,
    TensorSpec,
    read_bundle,
    write_bundle,
)
from axon.tiling.kernels import tile_function, tilings
from axon.tools.axon_bench import main
from axon.tools.embed import parse_source

# ---- building bundles: the writer's side of the contract, small f32 cases ----


def f32_program(name: str) -> FuncOp:
    """A suite program retyped to float32 (the CPU interpreter's bf16 tl.dot is wrong)."""
    program = PROGRAMS[name]
    module = parse_source(program.retyped_source("f32"), f"{name}.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func


def emitted_text(name: str, kind: str, blocks: dict[str, int]) -> tuple[str, str]:
    """(module text, host function name) of `name` tiled as `kind`, in float32."""
    func = f32_program(name)
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    emitted = emit_triton(tile_function(func, tiling, "registers", "registers"),
                          tile_sizes=blocks)
    return emitted.text, emitted.name


Module = tuple[str, str, str, dict[str, int]]


def make_case(name: str, sizes: dict[str, int],
              candidates: list[Module]) -> tuple[Case, dict[str, str]]:
    """A float32 case of suite program `name` at `sizes`; each candidate is (id, module text,
    host function, kwargs). Returns the case and its modules by path."""
    program = PROGRAMS[name]
    inputs = []
    for param in program.params:
        init = program.inits.get(param.name, NORMAL)
        scale = init.scale(sizes) if init.scale else 1.0
        inputs.append(TensorSpec(param.shape(sizes), "f32", param.name,
                                 Init(init.dist, init.low, init.high, scale)))
    want = program.reference(*make_inputs(program, sizes))
    outputs = (TensorSpec(tuple(want.shape), "f32"),)
    nbytes = 4 * (sum(s.numel for s in inputs) + sum(s.numel for s in outputs))
    case_name = f"{name}_" + "x".join(str(v) for v in sizes.values())
    modules, records = {}, []
    for cid, text, function, kwargs in candidates:
        path = f"{case_name}/{cid}.py"
        modules[path] = text
        records.append(Candidate(cid, path, function, dict(kwargs), "test", "", None))
    case = Case(case_name, name, program.tier, dict(sizes), "f32", DTYPES["f32"].tolerance,
                0, nbytes, tuple(inputs), outputs, tuple(records))
    return case, modules


def write_cases(root: Path, cases: list[tuple[Case, dict[str, str]]], seed: int = 0) -> Path:
    """A bundle of `cases` at `root`; returns the manifest's path."""
    modules = {path: text for _, m in cases for path, text in m.items()}
    bundle = Bundle(root, "h200", seed, "test", tuple(c for c, _ in cases))
    return write_bundle(replace(bundle), modules)


MUL_SIZES = {"M": 5, "N": 7}
BLOCKS = {"BM": 2, "BN": 4}
#: appended to a correct module: the checker patched (with a wrong kernel), or the timer
PATCH_CHECKER = ("\ntorch.allclose = lambda *a, **k: True\n"
                 "torch.equal = lambda *a, **k: True\n")
PATCH_TIMER = ("\nfrom axon.targets.xe_triton.harness import timing as _timing\n"
               "_timing.time_cpu = lambda fn, repeats: _timing.Timing(1e-6, None, 1)\n")
MUTATE = ("\ndef mul_mutating(in0, in1, **kwargs):\n"
          "    out = mul_blocks(in0, in1, **kwargs)\n"
          "    in0.zero_()\n"
          "    return out\n")


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`axon-bench` in this process: its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One bundle of three cases run once: mul with every kind of candidate, softmax with one
    correct candidate, and a bf16 case the CPU interpreter skips."""
    root = tmp_path_factory.mktemp("bundle")
    text, function = emitted_text("mul", "blocks", BLOCKS)
    assert "(v2 * v3)" in text
    wrong = text.replace("(v2 * v3)", "(v2 + v3)")
    mul = make_case("mul", MUL_SIZES, [
        ("good", text, function, BLOCKS),
        ("good_b8", text, function, {"BM": 8, "BN": 8}),
        ("wrong", wrong, function, BLOCKS),
        ("crash", text, function, {"BM": 3, "BN": 4}),
        ("patch_checker", wrong + PATCH_CHECKER, function, BLOCKS),
        ("patch_timer", text + PATCH_TIMER, function, BLOCKS),
        ("mutate", text + MUTATE, "mul_mutating", BLOCKS),
        ("exits", "import os\nos._exit(7)\n" + text, function, BLOCKS),
        ("hangs", "import time\ntime.sleep(600)\n" + text, function, BLOCKS),
    ])
    soft_text, soft_function = emitted_text("softmax", "rows", {"BM": 2})
    softmax = make_case("softmax", {"M": 3, "N": 6}, [("rows", soft_text, soft_function,
                                                       {"BM": 2})])
    bf16_case, bf16_modules = make_case("mul", {"M": 2, "N": 2},
                                        [("good", text, function, BLOCKS)])
    bf16 = (replace(bf16_case, case="mul_bf16", dtype="bf16",
                    candidates=tuple(replace(c, module="mul_bf16/good.py")
                                     for c in bf16_case.candidates)),
            {"mul_bf16/good.py": text})
    write_cases(root, [mul, softmax, bf16])
    status, out, err = run_cli("--run", str(root), "--json", str(root / "result.json"),
                               "--timeout", "8", "--repeats", "2")
    data = json.loads((root / "result.json").read_text())
    cases = {c["case"]: c for c in data["cases"]}
    return {"status": status, "out": out, "err": err, "data": data, "cases": cases,
            "mul": {c["name"]: c for c in cases["mul_5x7"]["candidates"]}}


def test_the_run_finishes_and_prints_the_table_and_a_summary(bench: dict[str, Any]) -> None:
    assert bench["status"] == 0, bench["err"]
    lines = bench["out"].splitlines()
    assert lines[0].split()[:4] == ["case", "axon", "ms", "eager"]
    assert any(ln.startswith("mul_5x7 ") for ln in lines)
    assert "timings: cpu interpreter: not a performance figure" in lines
    assert "[1/3] mul_5x7: 9 candidates" in bench["err"]
    assert ("3 cases (1 skipped, 0 with a winner); 10 of 11 candidates checked, 3 correct; "
            "rejected: 2 crashed, 1 modified its input, 2 tampered, 1 timed out, 1 wrong"
            ) in bench["err"], bench["err"]


def test_a_correct_candidate_wins(bench: dict[str, Any]) -> None:
    mul = bench["cases"]["mul_5x7"]
    assert mul["winner"] in ("good", "good_b8")
    assert mul["verdict"] == "checked (cpu interpreter: not a performance figure)"
    assert bench["mul"]["good"]["correct"] and bench["mul"]["good"]["max_abs_error"] == 0.0
    assert bench["mul"]["good"]["note"] == "cpu interpreter: not a performance figure"
    assert bench["cases"]["softmax_3x6"]["winner"] == "rows"
    # the CPU interpreter's winners are checked, not measured: none is recorded as a winner
    assert bench["data"]["winners"] == [] and bench["data"]["interpreter"] is True
    eager = bench["cases"]["softmax_3x6"]["baselines"][0]
    assert eager["name"] == "eager" and eager["correct"] and eager["runs"] == 2


def test_a_wrong_candidate_is_rejected_with_the_element(bench: dict[str, Any]) -> None:
    wrong = bench["mul"]["wrong"]
    assert not wrong["correct"] and wrong["ms"] is None
    assert wrong["reason"].startswith("wrong: result 0[0, 0]: got ")


def test_a_crash_is_rejected_with_its_reason(bench: dict[str, Any]) -> None:
    assert bench["mul"]["crash"]["reason"].startswith("crashed: ValueError (line ")
    assert bench["mul"]["crash"]["reason"].endswith("BM=3 is not a power of two")
    assert bench["mul"]["exits"]["reason"] == (
        "crashed: the process exited with status 7: no output")


def test_a_candidate_that_patches_the_checker_or_the_timer_is_rejected(
        bench: dict[str, Any]) -> None:
    checker = bench["mul"]["patch_checker"]["reason"]
    assert checker.startswith("tampered: on import it patched ")
    assert "torch.allclose" in checker and "torch.equal" in checker
    timer = bench["mul"]["patch_timer"]
    assert timer["reason"] == "tampered: on import it patched timing.time_cpu"
    assert not timer["correct"] and bench["cases"]["mul_5x7"]["winner"] != "patch_timer"


def test_a_candidate_that_modifies_its_input_is_rejected(bench: dict[str, Any]) -> None:
    assert bench["mul"]["mutate"]["reason"] == (
        "modified its input: x changed in the checked call")


def test_a_hanging_candidate_times_out(bench: dict[str, Any]) -> None:
    assert bench["mul"]["hangs"]["reason"] == "timed out: no verdict within 8 s"


def test_a_bf16_case_is_skipped_on_the_cpu(bench: dict[str, Any]) -> None:
    case = bench["cases"]["mul_bf16"]
    assert case["verdict"].startswith("skipped: a bf16 case needs a GPU")
    assert [c["reason"] for c in case["candidates"]] == ["not run: the case was skipped"]


def test_the_json_keeps_the_contract(bench: dict[str, Any]) -> None:
    data = bench["data"]
    assert (data["format"], data["version"], data["profile"]) == ("axon-bench", 1, "h200")
    assert data["peaks"]["l2_bytes"] == 62914560
    mul = bench["cases"]["mul_5x7"]
    assert mul["floor_ms"] == pytest.approx(3 * 35 * 4 / 4.3e12 * 1e3)
    assert set(mul) >= {"case", "program", "sizes", "dtype", "method", "winner", "verdict",
                        "axon_ms", "baseline", "baseline_ms", "baselines", "candidates"}


def _bundle(tmp_path: Path) -> Path:
    text, function = emitted_text("mul", "blocks", BLOCKS)
    write_cases(tmp_path, [make_case("mul", MUL_SIZES, [("good", text, function, BLOCKS)])])
    return tmp_path / "manifest.json"


def test_a_corrupt_manifest_is_a_located_error(tmp_path: Path) -> None:
    manifest = _bundle(tmp_path)
    manifest.write_text(manifest.read_text().replace('"seed": 0,', '"seed": 0'))
    status, out, err = run_cli("--run", str(tmp_path))
    assert status == 1 and out == ""
    assert f"{manifest}:6:2: error: invalid JSON: Expecting ',' delimiter" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("seed"), "error: missing key 'seed'"),
    (lambda d: d.update(format="other"), "error: format: expected 'axon-bundle', got 'other'"),
    (lambda d: d["cases"][0]["candidates"][0]["kwargs"].update(BM=[2]),
     "error: cases[0].candidates[0].kwargs.BM: expected a number, string or boolean, got [2]"),
    (lambda d: d["cases"][0]["candidates"][0].update(module="../x.py"),
     "error: cases[0].candidates[0].module: '../x.py' is not a .py path inside the bundle"),
    (lambda d: d["cases"][0]["inputs"][1]["init"].update(kind="gamma"),
     "error: cases[0].inputs[1].init.kind: expected one of normal, uniform, cos, sin, "
     "got 'gamma'"),
    (lambda d: d["cases"][0].update(tolerance=[1e-3]),
     "error: cases[0].tolerance: expected [rtol, atol], two numbers >= 0, got [0.001]"),
])
def test_a_manifest_that_breaks_the_contract_names_the_place(tmp_path: Path, edit: Any,
                                                              message: str) -> None:
    manifest = _bundle(tmp_path)
    data = json.loads(manifest.read_text())
    edit(data)
    manifest.write_text(json.dumps(data))
    with pytest.raises(BundleError) as raised:
        read_bundle(tmp_path)
    assert str(raised.value) == f"{manifest}: {message}"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda c: c.update(program="mull"), "error: cases[0].program: unknown program 'mull'; "
                                         "known: cumsum, cumsum_f32,"),
    (lambda c: c["outputs"][0].update(shape=[7, 5]),
     "error: cases[0].outputs: mul gives shapes [[5, 7]], the manifest says [[7, 5]]"),
])
def test_a_case_the_program_does_not_fit_is_an_error_before_any_run(
        tmp_path: Path, edit: Any, message: str) -> None:
    manifest = _bundle(tmp_path)
    data = json.loads(manifest.read_text())
    edit(data["cases"][0])
    manifest.write_text(json.dumps(data))
    status, out, err = run_cli("--run", str(tmp_path))
    assert status == 1 and out == "" and "Traceback" not in err
    assert f"axon-bench: {manifest}: {message}" in err


def test_bad_command_lines_exit_1(tmp_path: Path) -> None:
    _bundle(tmp_path)
    status, _, err = run_cli("--run", str(tmp_path), "--cases", "softmax*")
    assert status == 1 and "no case matches --cases 'softmax*'; the bundle has mul_5x7" in err
    status, _, err = run_cli("--run", str(tmp_path / "nothing"))
    assert status == 1 and "nothing: not a directory" in err
    with pytest.raises(SystemExit) as raised, redirect_stderr(io.StringIO()):
        main(["--run", str(tmp_path), "--repeats", "0"])
    assert raised.value.code == 1


def test_plot_needs_matplotlib_or_draws_the_speedups(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        assert report.plot_unavailable() == report.NO_MATPLOTLIB
        _bundle(tmp_path)
        status, out, err = run_cli("--run", str(tmp_path), "--plot", str(tmp_path / "p.png"))
        assert status == 1 and f"axon-bench: error: {report.NO_MATPLOTLIB}" in err
        assert not (tmp_path / "p.png").exists()
    else:
        assert report.plot_unavailable() is None


def test_a_spare_child_waits_for_its_job_and_refuses_another_devices() -> None:
    """`run._Spares` starts the next child ahead (its imports overlap the parent's work): the
    taken child and the waiting one are two live processes; a job for another device than the
    child was started for is refused (the interpreter is chosen at Triton's import); closing
    stops the spares and removes their logs."""
    from axon.targets.xe_triton.harness import run as run_module

    spares = run_module._Spares()
    try:
        taken = spares.take("cpu")
        waiting = spares.waiting["cpu"]
        assert taken is not waiting
        assert taken.process.poll() is None and waiting.process.poll() is None
        taken.start({"device": "cuda", "kind": "forge", "candidates": []}, 1 << 20)
        assert taken.process.wait(timeout=120) == 1
        assert "a cuda job given to a child started with the interpreter" in taken.last_words()
        taken.discard()
        assert not taken.log.exists()
        logs = [waiting.log]
    finally:
        spares.close()
    assert waiting.process.poll() is not None and not any(p.exists() for p in logs)
    assert spares.waiting == {}


def test_a_forked_process_starts_its_own_spares() -> None:
    """An executor's forked worker never takes or stops the spares its parent started (their
    pipes are the parent's): it starts its own."""
    import os

    from axon.targets.xe_triton.harness import run as run_module

    spares = run_module._Spares()
    try:
        spares.take("cpu").discard()
        parent = spares.waiting["cpu"]
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: a fresh spare, the parent's left alone
            status = 1
            try:
                mine = spares.take("cpu")
                status = 0 if mine is not parent and spares.waiting["cpu"] is not parent else 1
                mine.discard()
                spares.close()
            finally:
                os.write(write, bytes([status]))
                os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(read, 1) == b"\x00"
        assert parent.process.poll() is None  # still alive, still the parent's
    finally:
        spares.close()
