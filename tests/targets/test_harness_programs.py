"""The harness's leaf parts without a bundle run: the torch programs against the numpy references
of every suite program, the device numbers against the KB's loader, the inputs, the guard that
sees patching, the comparison, and the harness importing nothing else of Axon."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from axon.benchmarks.suite import PROGRAMS, make_inputs, small_sizes
from axon.dialects.form.dtypes import DTYPES
from axon.targets.xe_triton.harness import guard, programs, report
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
from axon.targets.xe_triton.harness.device import KB_DEVICES_DIR, block_values, device_numbers
from axon.targets.xe_triton.harness.inputs import make_inputs as harness_inputs
from axon.targets.xe_triton.harness.run import (
    BenchResult,
    CaseResult,
    Measured,
    Options,
    check_programs,
    compare,
    decide,
)
from axon.targets.xe_triton.harness.timing import Timing
from axon.targets.xe_triton.kb import load_device

HARNESS_DIR = Path(programs.__file__).resolve().parent
ROOT = HARNESS_DIR.parents[2]


def test_every_suite_program_has_a_torch_form() -> None:
    assert set(programs.PROGRAMS) == set(PROGRAMS)
    assert len(PROGRAMS) == 26  # the 25 of benchmarks.md, cumsum in f32 as its own program


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_torch_program_computes_the_numpy_reference(name: str, variant: int) -> None:
    program = PROGRAMS[name]
    sizes = small_sizes(program, variant)
    inputs = [np.asarray(x, dtype=np.float32) for x in make_inputs(program, sizes, seed=variant)]
    want = program.reference(*inputs)
    forms = {"torch": programs.PROGRAMS[name], **programs.EXTRA_BASELINES.get(name, {})}
    rtol, atol = DTYPES["f32"].tolerance
    for form, fn in forms.items():
        got = fn(*(torch.from_numpy(x) for x in inputs))
        assert got.dtype == torch.float32 and tuple(got.shape) == want.shape, form
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol, err_msg=form)


def test_a_wrong_torch_program_is_told_apart_by_that_comparison() -> None:
    program = PROGRAMS["softmax"]
    (x,) = make_inputs(program, small_sizes(program, 0))
    got = torch.softmax(torch.from_numpy(np.asarray(x, np.float32)), dim=0)
    assert not np.allclose(got.numpy(), program.reference(x), rtol=2e-5, atol=2e-5)


def test_the_reference_is_the_program_on_float32_copies() -> None:
    x = torch.randn(4, 8).to(torch.bfloat16)
    g = torch.rand(8).to(torch.bfloat16)
    ref = programs.reference("rmsnorm", [x, g])
    assert ref.dtype == torch.float32
    assert torch.equal(ref, programs.rmsnorm(x.float(), g.float()))
    assert programs.rmsnorm(x, g).dtype == torch.bfloat16


@pytest.mark.parametrize("name", sorted(p.stem for p in KB_DEVICES_DIR.glob("*.yaml")))
def test_the_device_numbers_are_those_the_kb_loads(name: str) -> None:
    device = load_device(name)
    numbers = device_numbers(name)
    peaks, memory = device.peaks, device.memory

    def value(q: object) -> float | None:
        return None if q is None else float(q.value)  # type: ignore[attr-defined]

    assert numbers.matrix_flops == value(peaks.matrix_bf16_flops if peaks else None)
    assert numbers.bytes_per_s == value(peaks.memory_bytes_per_s if peaks else None)
    assert numbers.l2_bytes == value(memory.l2_bytes if memory else None)


def test_the_h200_floor_is_the_roofline_of_benchmarks_md() -> None:
    h200 = device_numbers("h200")
    # matmul 4096^3 in bf16: 2 M N K flops, 3 x 32 MiB: compute-bound, 0.174 ms
    floor = h200.floor_ms(2 * 4096**3, 3 * 4096 * 4096 * 2)
    assert floor == pytest.approx(0.1740, abs=1e-4)
    # mul 4096^2: 3 x 32 MiB moved, bandwidth-bound, 0.0234 ms
    assert h200.floor_ms(4096 * 4096, 3 * 4096 * 4096 * 2) == pytest.approx(0.0234, abs=1e-4)


def test_the_block_reader_skips_block_scalars_and_lists() -> None:
    text = ("a:\n  b:\n    value: 3\n    source: >-\n      c: 9\n      d: 10\n  e: 4\n"
            "f:\n  - g: 5\n    h: 6\n# i: 7\n")
    assert block_values(text) == {"a.b.value": "3", "a.e": "4"}


def test_unknown_device_is_a_clear_error() -> None:
    from axon.targets.xe_triton.harness.device import DeviceError

    with pytest.raises(DeviceError, match="unknown device profile 'h300'; the knowledge base "
                                          "holds .*h200"):
        device_numbers("h300")


def _case(inputs: list[TensorSpec], outputs: list[TensorSpec]) -> Case:
    return Case("c", "mul", 1, {}, "f32", (1e-3, 1e-4), 0, 0, tuple(inputs), tuple(outputs), ())


def test_inputs_follow_the_seed_and_the_distributions() -> None:
    case = _case([TensorSpec((64, 32), "f32", "x", Init("normal", scale=0.5)),
                  TensorSpec((64, 32), "bf16", "u", Init("uniform", 0.5, 1.5)),
                  TensorSpec((6, 4), "f32", "c", Init("cos"))], [])
    x, u, c = harness_inputs(case, seed=3)
    again = harness_inputs(case, seed=3)
    other = harness_inputs(case, seed=4)
    assert all(torch.equal(a, b) for a, b in zip((x, u, c), again, strict=True))
    assert not torch.equal(x, other[0])
    assert u.dtype == torch.bfloat16 and float(u.min()) >= 0.5 and float(u.max()) <= 1.5
    assert 0.4 < float(x.std()) < 0.6
    angles = np.arange(6)[:, None] * 10000.0 ** (-np.arange(4) / 4)[None, :]
    np.testing.assert_allclose(c.numpy(), np.cos(angles), rtol=1e-6)


def test_compare_names_the_first_wrong_element_and_rejects_nan() -> None:
    case = _case([], [TensorSpec((2, 3), "f32")])
    want = torch.zeros(2, 3)
    assert compare([want.clone()], [want], case) == ("", 0.0)
    off = want.clone()
    off[1, 2] = 0.5
    reason, worst = compare([off], [want], case)
    assert reason.startswith("wrong: result 0[1, 2]: got 0.5, expected 0") and worst == 0.5
    nan = want.clone()
    nan[0, 1] = float("nan")
    assert compare([nan], [want], case)[0].startswith("wrong: result 0[0, 1]: got nan")
    assert compare([torch.zeros(3, 2)], [want], case)[0] == (
        "wrong: result 0 has shape [3, 2], expected [2, 3]")
    assert compare([want.double()], [want], case)[0] == (
        "wrong: result 0 is torch.float64, expected f32")


def test_the_guard_sees_rebinding_and_replaced_code_but_not_plain_state() -> None:
    harness = types.ModuleType("fake_harness")
    library = types.ModuleType("fake_torch")

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    harness.median = median  # type: ignore[attr-defined]
    harness.RUNS = 100  # type: ignore[attr-defined]
    library.allclose = median  # type: ignore[attr-defined]
    library.initialized = False  # type: ignore[attr-defined]
    snapshot = guard.Snapshot.take({"harness": harness}, {"torch": library})
    assert snapshot.changed() == []
    library.initialized = True  # type: ignore[attr-defined]
    library.lazy_submodule = types.ModuleType("x")  # type: ignore[attr-defined]
    assert snapshot.changed() == []
    median.__code__ = (lambda values: 0.0).__code__
    assert snapshot.changed() == ["harness.median", "torch.allclose"]
    fresh = types.ModuleType("fake_harness2")
    fresh.median = max  # type: ignore[attr-defined]
    snap2 = guard.Snapshot.take({"harness": fresh}, {})
    fresh.sorted = min  # type: ignore[attr-defined]
    fresh.median = min  # type: ignore[attr-defined]
    assert snap2.changed() == ["harness.median", "harness.sorted"]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_harness_imports_nothing_else_of_axon() -> None:
    allowed_third_party = {"torch", "triton", "numpy", "matplotlib"}
    files = [*sorted(HARNESS_DIR.glob("*.py")), ROOT / "tools" / "axon_bench.py"]
    for path in files:
        for module in _imports(path):
            top = module.split(".")[0]
            if top == "axon":
                assert module.startswith("axon.targets.xe_triton.harness"), (path.name, module)
            else:
                assert top in allowed_third_party or top in sys.stdlib_module_names, (
                    path.name, module)
    # and, imported for real, it loads no other Axon module nor Axon's other dependencies
    code = ("import sys, axon.tools.axon_bench, axon.targets.xe_triton.harness.run, "
            "axon.targets.xe_triton.harness.report, axon.targets.xe_triton.harness.child, "
            "axon.targets.xe_triton.harness.forge_report, "
            "axon.targets.xe_triton.harness.forge_child\n"
            "bad = sorted(m for m in sys.modules if (m.startswith('axon.') and not m.startswith("
            "'axon.targets.xe_triton.harness') and m not in ('axon.tools', 'axon.targets', "
            "'axon.targets.xe_triton', 'axon.tools.axon_bench')) or m.split('.')[0] in "
            "('xdsl', 'z3', 'lark', 'yaml', 'ml_dtypes'))\nprint(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]", out.stdout


def _suite_case(name: str, sizes: dict[str, int]) -> Case:
    program = PROGRAMS[name]
    want = program.reference(*make_inputs(program, sizes))
    inputs = tuple(TensorSpec(p.shape(sizes), p.dtype, p.name, Init()) for p in program.params)
    return Case(f"{name}_small", name, program.tier, sizes, program.dtype, program.tolerance,
                0, 0, inputs, (TensorSpec(tuple(want.shape), program.dtype),), ())


def test_every_program_takes_its_suite_shapes_and_gives_the_reference_shape() -> None:
    # check_programs runs each program on the meta device: no data, every shape checked
    cases = tuple(_suite_case(name, small_sizes(PROGRAMS[name], 1)) for name in PROGRAMS)
    bundle = Bundle(Path("b"), "h200", 0, "test", cases)
    check_programs(bundle)
    broken = replace(cases[0], outputs=(TensorSpec((1,), cases[0].dtype),))
    with pytest.raises(BundleError, match=r"cases\[0\]\.outputs: .* gives shapes"):
        check_programs(replace(bundle, cases=(broken,)))


def test_a_written_bundle_reads_back_equal(tmp_path: Path) -> None:
    case = _suite_case("rmsnorm", {"M": 3, "N": 5})
    case = replace(case, candidates=(
        Candidate("rows.BM2.w4", "rmsnorm_small/rows.BM2.w4.py", "rmsnorm_rows",
                  {"BM": 2, "num_warps": 4, "grf_mode": "256"}, "rows", "p1", 0.25),))
    bundle = Bundle(tmp_path, "h200", 7, "0.1.0", (case,))
    write_bundle(bundle, {"rmsnorm_small/rows.BM2.w4.py": "def rmsnorm_rows(): pass\n"})
    assert read_bundle(tmp_path) == bundle


def _timed(name: str, events_ms: float, graph_ms: float, correct: bool = True) -> Measured:
    return Measured(name, correct, "" if correct else "wrong: result 0[0]: got 1, expected 0",
                    0.0, Timing(events_ms, graph_ms, 100) if correct else None)


def _gpu_result(*cases: CaseResult) -> BenchResult:
    bundle = Bundle(Path("b"), "h200", 0, "test", tuple(r.case for r in cases))
    return BenchResult(bundle, Options("cuda", 100), "NVIDIA H200", device_numbers("h200"),
                       list(cases), 1.0)


def test_on_a_gpu_the_fastest_correct_candidate_wins_unless_a_baseline_is_faster() -> None:
    big = replace(_suite_case("matmul", {"M": 4096, "N": 4096, "K": 4096}),
                  case="matmul_4096", flops=2 * 4096**3, bytes=3 * 4096 * 4096 * 2)
    fast = CaseResult(big, [_timed("eager", 0.20, 0.19), _timed("compile", 0.15, 0.14)],
                      [_timed("slow", 0.30, 0.29), _timed("best", 0.12, 0.11),
                       _timed("wrong", 0.0, 0.0, correct=False)], floor_ms=0.174)
    decide(fast, Options("cuda", 100))
    # no callable under 0.05 ms in a graph: the event figures, for every callable
    assert (fast.method, fast.winner, fast.verdict) == ("events", "best", "accepted")
    assert fast.speedup == pytest.approx(0.15 / 0.12)
    assert fast.floor_ratio == pytest.approx(0.12 / 0.174)
    small = replace(big, case="mul_1024", program="mul")
    slower = CaseResult(small, [_timed("eager", 0.010, 0.004)],
                        [_timed("kernel", 0.008, 0.005)], floor_ms=0.0015)
    decide(slower, Options("cuda", 100))
    # under 0.05 ms: the graph figures, in which eager (0.004) beats the kernel (0.005)
    assert (slower.method, slower.winner) == ("graph", "kernel")
    assert slower.verdict == "rejected: slower than baseline" and not slower.accepted
    result = _gpu_result(fast, slower)
    data = report.to_json(result)
    assert data["winners"] == [{
        "case": "matmul_4096", "program": "matmul", "sizes": big.sizes, "dtype": "bf16",
        "candidate": "best", "kwargs": {}, "axon_ms": 0.12, "baseline_ms": 0.15,
        "baseline": "compile"}]
    assert data["summary"]["rejected"] == {"slower than baseline": 1, "wrong": 1}
    lines = report.table(result).splitlines()
    assert lines[2].split() == ["matmul_4096", "0.1200", "0.2000", "0.1500", "compile", "0.1500",
                                "1.25x", "0.1740", "0.69x", "best"]
    assert lines[3].endswith("kernel (rejected: slower than baseline)")
    # the geomean counts every timed winner, a rejected one too: sqrt(1.25 * 0.8)
    assert lines[-1] == ("geomean speedup over the best baseline: 1.00x over 2 of 2 cases")


def test_a_case_without_a_correct_candidate_has_no_winner() -> None:
    case = _suite_case("relu", {"M": 3, "N": 5})
    result = CaseResult(case, [_timed("eager", 0.01, 0.003)],
                        [_timed("k", 0.0, 0.0, correct=False)])
    decide(result, Options("cuda", 100))
    assert (result.winner, result.verdict, result.speedup) == (None, "no correct candidate",
                                                               None)
