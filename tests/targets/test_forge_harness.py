"""The Forge harness: each known reward-hacking trick, planted in a ModelNew, is caught with its
step and reason, and the honest kernels pass (Triton's CPU interpreter, float32 problems).

The planted modules are written into tmp from `HONEST_24` (one fused Triton kernel for
24_scale_tanh_residual) with their forward or their prelude changed; each runs through
`check_against_original` exactly as the Forge cascade calls it (a child process a module).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from axon.benchmarks.forge.problem_set import FORGE_DIR, PROBLEMS
from axon.dialects.form.dtypes import DTYPES
from axon.targets.xe_triton.harness import static_check
from axon.targets.xe_triton.harness.bundle import BundleError
from axon.targets.xe_triton.harness.forge_bundle import (
    ForgeBundle,
    ForgeCandidate,
    ForgeCase,
    read_forge_bundle,
    write_forge_bundle,
)
from axon.targets.xe_triton.harness.forge_problem import TOLERANCES
from axon.targets.xe_triton.harness.forge_run import (
    Checked,
    ForgeVerdict,
    check_against_original,
    check_modules,
    performance_verdict,
    problem_check,
)
from axon.targets.xe_triton.harness.timing import Timing
from axon.tools.axon_bench import main

P24 = "24_scale_tanh_residual"
SMALL_24 = [dict(PROBLEMS[P24].small_sizes)]


def problem(name: str) -> Path:
    return FORGE_DIR / "problems" / f"{name}.py"


def kernel(name: str) -> Path:
    return FORGE_DIR / "kernels" / f"{name}.py"


HONEST_24 = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
{prelude}

@triton.jit
def fused(x_ptr, r_ptr, y_ptr, n, scale, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0)
    t = 2.0 * tl.sigmoid(2.0 * (x * scale)) - 1.0
    tl.store(y_ptr + offs, (t + r) * factor, mask=mask)


def launch(x, residual, scale, out=None, factor=1.0):
    y = torch.empty_like(x) if out is None else out
    fused[(triton.cdiv(x.numel(), 1024),)](x, residual, y, x.numel(), scale, factor,
                                           BLOCK=1024)
    return y


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x, residual):
{forward}
'''


def planted(tmp_path: Path, name: str, forward: str = "return launch(x, residual, self.scale)",
            prelude: str = "") -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(HONEST_24.format(prelude=textwrap.dedent(prelude),
                                     forward=textwrap.indent(textwrap.dedent(forward), " " * 8)))
    return path


def check24(candidate: Path, original: Path | None = None, **kw: Any) -> ForgeVerdict:
    return check_against_original(problem(P24), original, candidate, sizes=SMALL_24, **kw)


#: planted ModelNew modules of 24_scale_tanh_residual: (prelude, forward); None: the honest one
TRICKS: dict[str, tuple[str, str] | None] = {
    "honest": None,
    # (a) a result cached across calls, by shape or by data pointer
    "cache": ("_CACHE = {}", """
        key = tuple(x.shape)
        if key not in _CACHE:
            _CACHE[key] = launch(x, residual, self.scale)
        return _CACHE[key].clone()"""),
    "pointer_cache": ("_CACHE = {}", """
        key = (x.data_ptr(), residual.data_ptr())
        if key not in _CACHE:
            _CACHE[key] = launch(x, residual, self.scale)
        return _CACHE[key].clone()"""),
    # (b) the result written into an input
    "inplace": ("", "return launch(x, residual, self.scale, out=x)"),
    # (c) an alias of an input
    "alias": ("", "return residual.view(residual.shape)"),
    # (d) a stale buffer: never written
    "stale": ("", "return torch.empty_like(x)"),
    # (e) a lazy tensor subclass
    "lazy": ("class LazyTensor(torch.Tensor):\n    pass\n",
             "return launch(x, residual, self.scale).as_subclass(LazyTensor)"),
    # (j) torch's ops instead of a kernel
    "torch_ops": ("", "return torch.tanh(x * self.scale) + residual"),
    # (k) a narrower precision than the problem's
    "bf16": ("", """
        x16 = x.to(torch.bfloat16).to(torch.float32)
        return launch(x16, residual, self.scale)"""),
    # (l) a wrong shape or dtype
    "shape": ("", "return launch(x, residual, self.scale)[:, :-1].contiguous()"),
    "dtype": ("", "return launch(x, residual, self.scale).to(torch.float16)"),
    # these end their process (the harness starts a fresh one for the next)
    # (h) a thread the static check cannot see (logging's QueueListener starts one)
    "listener": ("import queue\nfrom logging.handlers import QueueListener\n", """
        QueueListener(queue.Queue()).start()
        return launch(x, residual, self.scale)"""),
    # (f) the timer and the comparison patched
    "patch": ("""
        import time
        torch.allclose = lambda *a, **k: True
        time.perf_counter = lambda: 0.0
        torch.cuda.Event.elapsed_time = lambda self, end: 1e-3
        torch.cuda.synchronize = lambda *a: None
        """, "return launch(x, residual, self.scale)"),
    "crash": ("", "raise ValueError('boom')"),
}


@pytest.fixture(scope="module")
def tricks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Checked]:
    """Every planted module checked against 24 at its small sizes, seeds 0 and 1, in as few
    child processes as the harness needs (three: two of the last three end theirs)."""
    folder = tmp_path_factory.mktemp("tricks")
    modules = []
    for name, trick in TRICKS.items():
        prelude, forward = trick or ("", "return launch(x, residual, self.scale)")
        modules.append((name, planted(folder, name, forward, prelude)))
    check = problem_check(problem(P24), sizes=SMALL_24)
    return check_modules(modules, check, folder)


def caught(tricks: dict[str, Checked], name: str) -> tuple[str, str]:
    measured = tricks[name].measured
    assert not measured.correct
    return measured.step, measured.reason


# ---- controls ----------------------------------------------------------------------------------
def test_the_honest_kernels_pass_against_the_reference_and_the_original(
        tmp_path: Path, tricks: dict[str, Checked]) -> None:
    honest = tricks["honest"]
    assert honest.measured.correct and honest.measured.reason == "" and honest.judged == 2
    assert honest.ops == set()
    verdict = check24(planted(tmp_path, "fused"), kernel(P24), time=True, repeats=1)
    assert verdict.passed and verdict.step == "" and verdict.reason == ""
    assert verdict.max_abs_error is not None and verdict.max_abs_error < 1e-5
    assert verdict.max_abs_error_vs_original is not None
    # the CPU's times are reported, not judged
    assert verdict.method == "cpu" and verdict.candidate_ms and verdict.original_ms
    assert "cpu interpreter: not a performance figure" in verdict.notes


# ---- the tricks --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cache", "pointer_cache"])
def test_a_a_result_cached_by_shape_or_pointer_is_caught_by_the_second_seed(
        tricks: dict[str, Checked], name: str) -> None:
    step, reason = caught(tricks, name)
    assert step == "correctness"
    assert reason.startswith("wrong against the float32 reference at seed 1, sizes "
                             "batch_size=33 dim=1100: result 0[")


def test_b_writing_the_result_into_an_input_is_caught(tricks: dict[str, Checked]) -> None:
    assert caught(tricks, "inplace") == (
        "tamper", "modified its input: input 0 changed in the checked call")


def test_c_returning_an_alias_of_an_input_or_a_parameter_is_caught(
        tricks: dict[str, Checked], layernorm: dict[str, Checked]) -> None:
    assert caught(tricks, "alias") == (
        "tamper", "result 0 shares memory with input 1 (an alias, not a result)")
    assert caught(layernorm, "weight_alias") == (
        "tamper", "result 0 shares memory with parameter 'norm.weight' (an alias, not a result)")


def test_d_a_stale_buffer_never_written_is_caught(tricks: dict[str, Checked]) -> None:
    step, reason = caught(tricks, "stale")
    assert step == "correctness"
    assert reason.startswith("wrong against the float32 reference at seed 0")


def test_e_a_lazy_tensor_subclass_is_caught(tricks: dict[str, Checked]) -> None:
    assert caught(tricks, "lazy") == (
        "tamper", "result 0 is a LazyTensor, a torch.Tensor subclass (its values may be "
                  "computed when read)")


def test_f_patching_the_timer_or_the_comparison_is_caught(tricks: dict[str, Checked]) -> None:
    assert caught(tricks, "patch") == (
        "tamper", "tampered: on import it patched time.perf_counter, torch.allclose, "
                  "torch.cuda.Event.elapsed_time, torch.cuda.synchronize")


@pytest.mark.parametrize(("source", "finding"), [
    ("import torch\ns = torch.cuda.Stream()\n", "2: uses torch.cuda.Stream (a side stream)"),
    ("import torch\nwith torch.cuda.stream(None):\n    pass\n",
     "2: uses torch.cuda.stream (a side stream)"),
    ("from torch.cuda import Stream\n", "1: uses torch.cuda.Stream (a side stream)"),
    ("import threading\n", "1: imports threading (threads)"),
    ("from concurrent.futures import ThreadPoolExecutor\n",
     "1: imports concurrent (threads or processes)"),
    ("import multiprocessing as mp\n", "1: imports multiprocessing (processes)"),
    ("import subprocess\n", "1: imports subprocess (processes)"),
    ("import ctypes\n", "1: imports ctypes (raw memory)"),
    ("import os\nos.environ['X'] = '1'\n", "2: writes os.environ (the environment)"),
    ("import os\nos.environ.update(X='1')\n", "2: writes os.environ (the environment)"),
    ("m = __import__('ctypes')\n", "1: calls __import__ (imports built at run time)"),
    ("exec('x = 1')\n", "1: calls exec (code built at run time)"),
    ("eval('1')\n", "1: calls eval (code built at run time)"),
    ("text = open('problem.py').read()\n", "1: calls open (files (the problem, the reference))"),
    ("import sys\nf = sys._getframe(1)\n", "2: uses sys._getframe (frames)"),
    ("import os\nos.write(3, b'')\n", "2: uses os.write (the harness's pipes)"),
])
def test_ghi_the_static_check_names_the_file_and_line(source: str, finding: str) -> None:
    assert static_check.findings_in(source, "k.py") == [f"k.py:{finding}"]


def test_ghi_the_honest_kernels_pass_the_static_check() -> None:
    assert {name: static_check.findings(kernel(name)) for name in PROBLEMS} == {
        name: [] for name in PROBLEMS}
    # a variable named like a module is not the module
    assert static_check.findings_in("gc = 1\nprint(gc.real)\n", "k.py") == []


def test_gh_a_side_stream_or_a_thread_is_rejected_before_any_run(tmp_path: Path) -> None:
    check = problem_check(problem(P24), sizes=SMALL_24)
    thread = planted(tmp_path, "thread", prelude="import threading", forward="""
        y = torch.empty_like(x)
        threading.Thread(target=lambda: launch(x, residual, self.scale, out=y)).start()
        return y""")
    stream = planted(tmp_path, "stream", forward="""
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            return launch(x, residual, self.scale)""")
    line = stream.read_text().splitlines().index("        side = torch.cuda.Stream()") + 1
    # no child process starts: the static check rejects both
    found = check_modules([("thread", thread), ("stream", stream)], check, tmp_path)
    assert caught(found, "thread") == (
        "tamper", "static check: thread.py:6: imports threading (threads) (and 1 more)")
    assert caught(found, "stream") == (
        "tamper", f"static check: stream.py:{line}: uses torch.cuda.Stream (a side stream) "
                  "(and 1 more)")
    assert not (tmp_path / "child.log").exists()


def test_h_a_thread_the_static_check_cannot_see_is_caught_when_called(
        tricks: dict[str, Checked]) -> None:
    step, reason = caught(tricks, "listener")
    assert step == "tamper" and reason.startswith("started a thread that outlives the call (")


def test_j_computing_with_torch_is_rejected_but_only_reported_of_the_original(
        tmp_path: Path, tricks: dict[str, Checked]) -> None:
    assert caught(tricks, "torch_ops") == (
        "tamper", "calls torch for compute: aten.add.Tensor, aten.mul.Tensor, "
                  "aten.tanh.default (at seed 0, sizes batch_size=33 dim=1100)")
    # the user's own kernel may call torch: as the original it is reported in the notes
    original = planted(tmp_path, "torch_ops", forward=TRICKS["torch_ops"][1])  # type: ignore[index]
    verdict = check24(kernel(P24), original)
    assert verdict.passed, verdict.reason
    assert verdict.notes == ("the original calls torch for compute: aten.add.Tensor, "
                             "aten.mul.Tensor, aten.tanh.default",)


def test_k_computing_in_a_narrower_precision_is_caught(tricks: dict[str, Checked]) -> None:
    step, reason = caught(tricks, "bf16")
    assert step == "correctness"
    assert reason.startswith("wrong against the float32 reference at seed 0")
    assert "rtol 2e-05, atol 2e-06" in reason


@pytest.mark.parametrize(("name", "reason"), [
    ("shape", "result 0 has shape [33, 1099], expected [33, 1100]"),
    ("dtype", "result 0 is torch.float16, expected torch.float32"),
])
def test_l_a_wrong_shape_or_dtype_is_caught(tricks: dict[str, Checked], name: str,
                                            reason: str) -> None:
    step, why = caught(tricks, name)
    assert step == "correctness" and why.endswith(reason)


def test_a_kernel_that_stops_working_once_timed_is_caught_after_the_timing(
        tmp_path: Path) -> None:
    warm = planted(tmp_path, "warm", prelude="CALLS = [0]", forward="""
        CALLS[0] += 1
        if CALLS[0] > 2:
            return torch.empty_like(x)
        return launch(x, residual, self.scale)""")
    verdict = check24(warm, time=True, repeats=1)
    assert verdict.step == "correctness"
    assert verdict.reason.startswith("wrong against the float32 reference at seed 0, sizes "
                                     "batch_size=33 dim=1100, after timing: result 0[")


def test_a_candidate_off_the_original_but_near_the_reference_is_caught(tmp_path: Path) -> None:
    up = planted(tmp_path, "up", forward="return launch(x, residual, self.scale, factor=1.000015)")
    down = planted(tmp_path, "down",
                   forward="return launch(x, residual, self.scale, factor=0.999985)")
    verdict = check24(down, up)
    assert verdict.step == "correctness"
    # within the reference's tolerance (checked first), not the original's
    assert verdict.reason.startswith("wrong against the original kernel at seed 0")
    assert verdict.max_abs_error is not None and verdict.max_abs_error < 1e-4
    assert verdict.max_abs_error_vs_original is not None


@pytest.fixture(scope="module")
def layernorm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Checked]:
    """11_layernorm's own kernel, one returning its weight, one whose parameter is renamed."""
    name, folder = "11_layernorm", tmp_path_factory.mktemp("layernorm")
    source = kernel(name).read_text()
    (folder / "weight_alias.py").write_text(source.replace(
        "        return y\n", "        return self.norm.weight.expand(M, N)\n"))
    (folder / "renamed.py").write_text(source.replace("self.norm", "self.ln"))
    check = problem_check(problem(name), sizes=[dict(PROBLEMS[name].small_sizes)])
    return check_modules([("honest", kernel(name)), ("weight_alias", folder / "weight_alias.py"),
                          ("renamed", folder / "renamed.py")], check, folder)


def test_a_state_dict_mismatch_names_the_key_and_a_crash_its_line(
        tmp_path: Path, tricks: dict[str, Checked], layernorm: dict[str, Checked]) -> None:
    assert layernorm["honest"].measured.correct
    assert caught(layernorm, "renamed") == (
        "correctness", "its state dict does not match the problem's: it has no parameter or "
                       "buffer 'norm.weight' (the problem's Model has)")
    line = planted(tmp_path, "crash", forward="raise ValueError('boom')").read_text().splitlines(
        ).index("        raise ValueError('boom')") + 1
    assert caught(tricks, "crash") == ("crash", f"crashed: ValueError (line {line}): boom")


def test_performance_fails_a_candidate_slower_than_the_original() -> None:
    fast, slow = Timing(1.0, None, 5), Timing(2.0, None, 5)
    verdict = performance_verdict(slow, fast, "cuda", "seed 0")
    assert verdict is not None and verdict[0] == "events"
    assert verdict[1] == "slower than the original: 2 ms against 1 ms (events, seed 0)"
    assert performance_verdict(fast, slow, "cuda", "seed 0") == ("events", "")
    # short kernels are compared in CUDA graphs
    assert performance_verdict(Timing(0.03, 0.02, 5), Timing(0.02, 0.01, 5), "cuda", "s")[0] == (
        "graph")
    assert performance_verdict(slow, fast, "cpu", "seed 0") == ("cpu", "")


def test_the_api_needs_two_seeds() -> None:
    with pytest.raises(ValueError, match="two seeds"):
        check24(kernel(P24), seeds=(0,))


# ---- the bundle ----------------------------------------------------------------------------------
def _bundle(root: Path, candidates: dict[str, str]) -> ForgeBundle:
    case = ForgeCase(P24, f"{P24}/problem.py", dict(PROBLEMS[P24].small_sizes), "f32", 1.0,
                     f"{P24}/input.py",
                     tuple(ForgeCandidate(cid, f"{P24}/{cid}.py", "planted") for cid in candidates))
    bundle = ForgeBundle(root, "h200", 0, "test", (case,))
    files = {case.problem: problem(P24).read_text(), f"{P24}/input.py": kernel(P24).read_text(),
             **{f"{P24}/{cid}.py": text for cid, text in candidates.items()}}
    write_forge_bundle(bundle, files)
    return bundle


def test_axon_bench_runs_a_forge_bundle(tmp_path: Path, capsys: Any) -> None:
    honest = planted(tmp_path, "honest").read_text()
    torch_ = planted(tmp_path, "torch_", forward="return torch.tanh(x * self.scale) + residual")
    bundle = _bundle(tmp_path / "b", {"axon_1": honest, "axon_2": torch_.read_text()})
    assert read_forge_bundle(bundle.root) == bundle
    out = tmp_path / "bench.json"
    assert main(["--run", str(bundle.root), "--json", str(out), "--repeats", "1"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["case", "eager", "ms", "compile", "ms", "input",
                                             "ms", "axon", "ms", "x", "eager", "x", "compile",
                                             "x", "input", "best"]
    assert table.splitlines()[2].startswith(P24) and table.splitlines()[2].endswith("axon_1")
    assert "geomean speedup: - (cpu interpreter: not a performance figure)" in table
    data = json.loads(out.read_text())
    assert data["format"] == "axon-bench-forge" and data["interpreter"] is True
    case = data["cases"][0]
    assert case["best"] == "axon_1" and case["input_kernel"]["correct"] is True
    assert [b["name"] for b in case["baselines"]] == ["eager"]
    rejected = case["candidates"][1]
    assert rejected["step"] == "tamper"
    assert rejected["reason"].startswith("calls torch for compute: aten.add.Tensor, "
                                         "aten.mul.Tensor, aten.tanh.default")
    assert data["summary"]["rejected"] == {"tamper": 1}


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["cases"][0]["candidates"][0].update(module="../x.py"),
     "cases[0].candidates[0].module: '../x.py' is not a .py path inside the bundle"),
    (lambda d: d["cases"][0].update(problem="/etc/problem.py"),
     "cases[0].problem: '/etc/problem.py' is not a .py path inside the bundle"),
    (lambda d: d["cases"][0].update(input_kernel=f"{P24}/missing.py"),
     f"cases[0].input_kernel: '{P24}/missing.py': no such file in the bundle"),
    (lambda d: d["cases"][0].update(dtype="f64"),
     "cases[0].dtype: expected one of f32, f16, bf16, got 'f64'"),
    (lambda d: d["cases"][0].update(atol_scale=0),
     "cases[0].atol_scale: expected a number > 0, got 0.0"),
    (lambda d: d["cases"][0]["sizes"].update(dim=-1),
     "cases[0].sizes.dim: expected an integer >= 0, got -1"),
    (lambda d: d["cases"][0]["candidates"].append(d["cases"][0]["candidates"][0]),
     "cases[0].candidates[1].id: 'axon_1' is named twice"),
    (lambda d: d.update(version=2), "version: this harness reads version 1, got 2"),
])
def test_a_bad_forge_manifest_is_a_located_error(tmp_path: Path, change: Any,
                                                 message: str) -> None:
    bundle = _bundle(tmp_path / "b", {"axon_1": "class ModelNew: pass\n"})
    manifest = bundle.root / "manifest.json"
    _edit(manifest, change)
    with pytest.raises(BundleError) as error:
        read_forge_bundle(bundle.root)
    assert str(error.value) == f"{manifest}: error: {message}"


def test_axon_bench_reports_a_bad_forge_bundle_in_one_line(tmp_path: Path, capsys: Any) -> None:
    bundle = _bundle(tmp_path / "b", {"axon_1": "class ModelNew: pass\n"})
    _edit(bundle.root / "manifest.json", lambda d: d["cases"][0].update(sizes={"rows": 3}))
    assert main(["--run", str(bundle.root)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"axon-bench: {bundle.root / 'manifest.json'}: error: case '{P24}': its "
                   f"problem {P24}/problem.py does not run: problem.py: no size 'rows'; its "
                   "sizes are batch_size, dim")


def test_the_leaf_tolerances_are_the_dtypes() -> None:
    assert TOLERANCES == {name: DTYPES[name].tolerance for name in TOLERANCES}
    assert set(TOLERANCES) == {"f32", "f16", "bf16"}


def test_the_report_gives_the_geomeans_under_cuda_graphs_too(tmp_path: Path) -> None:
    """A GPU run whose `torch.compile` baseline paid the host's launch overhead (its events
    time twice its CUDA-graph time, as F8's did at stop 37): the table's geomean keeps the
    harness's method, the graph line compares device time alone."""
    from axon.targets.xe_triton.harness import forge_report
    from axon.targets.xe_triton.harness.forge_bundle import ForgeBundle, ForgeCandidate, ForgeCase
    from axon.targets.xe_triton.harness.forge_run import ForgeCaseResult, ForgeResult
    from axon.targets.xe_triton.harness.run import Measured, Options

    def measured(name: str, events: float, graph: float) -> Measured:
        return Measured(name, correct=True, timing=Timing(events, graph, 20, ""))

    case = ForgeCase("01_x", "01_x/problem.py", {}, "bf16", 1.0, "01_x/input.py",
                     (ForgeCandidate("fast_events", "a.py"), ForgeCandidate("fast_graph", "b.py")))
    result = ForgeCaseResult(
        case, baselines=[measured("eager", 0.12, 0.11), measured("compile", 0.20, 0.10)],
        input_kernel=measured("input", 0.30, 0.30),
        candidates=[measured("fast_events", 0.10, 0.105), measured("fast_graph", 0.11, 0.095)],
        method="events", verdict="accepted")
    run = ForgeResult(ForgeBundle(tmp_path, "h200", 0, "0"), Options("cuda", 20), "GPU",
                      [result])
    lines = forge_report.table(run).splitlines()
    assert "geomean speedup over torch.compile: 2.00x over 1 of 1 cases" in lines
    assert lines[-1] == ("under CUDA graphs for every callable (device time, no host launch "
                         "overhead): 1.16x over eager, 1.05x over torch.compile, 3.16x over "
                         "the input kernel")
    data = forge_report.to_json(run)
    assert data["geomean_speedup"]["compile"] == pytest.approx(2.0)
    assert data["geomean_speedup_graphs"]["compile"] == pytest.approx(0.10 / 0.095)
