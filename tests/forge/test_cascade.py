"""The Forge cascade on the Triton path: each proposal in order, syntax, structure against the KB
(nothing a stage brings in outside the portable API, launches and autotune configs the device
runs), correctness against the ORIGINAL kernel and the problem's reference by the frozen harness;
the Triton path end to end keeps only what passes, and `axon forge` writes it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from axon.benchmarks.forge.problem_set import PROBLEMS
from axon.forge.cascade import ForgeCascade, structure_error, syntax_error
from axon.forge.driver import optimize_source
from axon.forge.source import KernelFile
from axon.forge.stages.autotune import AutotuneStage
from axon.forge.stages.facts import ForgeOptions
from axon.forge.triton_path import EachConfigChecked, forge_kernel
from axon.targets.xe_triton.kb import load_device

NAME = "24_scale_tanh_residual"
KERNEL = PROBLEMS[NAME].kernel_path
PROBLEM = PROBLEMS[NAME].problem_path
#: `axon forge ARGS...` in a child process (the `axon_forge` fixture of conftest.py)
Forge = Callable[..., subprocess.CompletedProcess[str]]


def test_syntax_and_structure_steps() -> None:
    original = KERNEL.read_text()
    assert syntax_error(original, "k.py") is None
    assert "line" in (syntax_error(original.replace("def ", "def def ", 1), "k.py") or "")
    h200, b70 = load_device("h200"), load_device("b70")
    assert structure_error(original, "k.py", h200, original) is None
    # a launch a device does not run, and a stage bringing in a non-portable tl API
    bad_warps = original.replace("BLOCK_SIZE=1024)", "BLOCK_SIZE=1024, num_warps=3)")
    assert bad_warps != original
    assert "h200: num_warps 3 is not one of (1, 2, 4, 8, 16, 32)" in (
        structure_error(bad_warps, "k.py", h200, original) or "")
    # the KB's launch rule, GRF modes included: Intel's mode on NVIDIA, a mode's warp cap
    nvidia_grf = original.replace("BLOCK_SIZE=1024)", "BLOCK_SIZE=1024, grf_mode='256')")
    assert "grf_mode 256 is Intel's" in (structure_error(nvidia_grf, "k.py", h200, original)
                                          or "")
    assert structure_error(nvidia_grf, "k.py", b70, original) is None
    brought = original.replace("tl.sigmoid(", "tl.inline_asm_elementwise(", 1)
    assert "tl.inline_asm_elementwise is not a Triton 3.6 API" in (
        structure_error(brought, "k.py", b70, original) or "")
    config = ("import triton\nconfigs = [triton.Config({'BLOCK_SIZE': 96}, num_warps=4)]\n")
    assert "BLOCK_SIZE=96 is not a power of two" in (
        structure_error(original + config, "k.py", h200, original) or "")


def test_cascade_checks_against_the_original(tmp_path: Path) -> None:
    """An honest rewrite passes; one that changes the result is caught at correctness, one that
    patches the timer at the harness's static check."""
    original = KERNEL.read_text()
    cascade = ForgeCascade(KERNEL, PROBLEM, load_device("h200"), [PROBLEMS[NAME].small_sizes],
                           tmp_path)
    same = original.replace("BLOCK_SIZE=1024)", "BLOCK_SIZE=1024, num_warps=8)")
    assert same != original
    passed = cascade(original, same)
    assert passed.passed, passed
    wrong = original.replace("tl.sigmoid(", "tl.exp(", 1)
    assert wrong != original
    outcome = cascade(original, wrong)
    assert not outcome.passed and outcome.step == "correctness"
    assert "against the original" in outcome.reason or "reference" in outcome.reason
    hack = original + "\nimport time\ntime.perf_counter = lambda: 0.0\n"
    outcome = cascade(original, hack)
    assert not outcome.passed and outcome.step in ("tamper", "correctness"), outcome
    assert cascade.checked == 3


def test_triton_path_keeps_only_checked_stages(tmp_path: Path) -> None:
    """On a GEMM kernel the stages apply in the planner's order, each through the cascade; the
    autotune stage is not applied without a GPU and says why; the result still matches."""
    name = "01_gemm_bias_relu"
    result, checked = forge_kernel(PROBLEMS[name].kernel_path, PROBLEMS[name].problem_path,
                                   load_device("h200"), [PROBLEMS[name].small_sizes], gpu=False,
                                   scratch=tmp_path)
    assert result.applied() == ["block_pointers", "swizzle", "persistent", "xe_tuning"]
    assert checked >= 3
    lines = "\n".join(result.report_lines())
    assert "autotune: skipped: autotune: not applied: choosing among its configurations needs " \
           "a GPU's timer" in lines
    assert "tl.make_block_ptr" in result.source and "GROUP_SIZE_M" in result.source
    final = ForgeCascade(PROBLEMS[name].kernel_path, PROBLEMS[name].problem_path,
                         load_device("h200"), [PROBLEMS[name].small_sizes], tmp_path)
    assert final(result.original, result.source).passed


def test_command_on_a_kernel_file(tmp_path: Path, axon_forge: Forge) -> None:
    out = tmp_path / "opt.py"
    done = axon_forge(str(KERNEL), "--problem", str(PROBLEM), "--profile", "b70", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "xe_tuning: applied" in done.stderr
    assert "class ModelNew" in out.read_text() and out.read_text() != KERNEL.read_text()
    no_inputs = axon_forge(str(KERNEL), "--profile", "b70")
    assert no_inputs.returncode == 1
    assert "no get_inputs(); give the problem the kernel solves with --problem" in \
        no_inputs.stderr
    unknown = axon_forge(str(KERNEL), "--problem", str(PROBLEM), "--profile", "nope")
    assert unknown.returncode == 1 and "unknown profile 'nope'" in unknown.stderr
    assert "Traceback" not in no_inputs.stderr + unknown.stderr


def test_command_checks_where_the_users_kernel_runs(tmp_path: Path, axon_forge: Forge) -> None:
    """Causal attention's kernel wants a power-of-two head dim: `axon forge` checks at sizes
    where it runs and agrees with Model (head dim 64, not the odd 130 Model alone takes), so
    its stages apply instead of every proposal failing on the original's crash."""
    name = "20_causal_attention"
    out = tmp_path / "opt.py"
    done = axon_forge(str(PROBLEMS[name].kernel_path), "--problem",
                      str(PROBLEMS[name].problem_path), "--profile", "h200", "--no-raise",
                      "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "4 applied (algorithmic, base2, persistent, xe_tuning)" in done.stderr
    assert "head_dim=64" in done.stderr and "tl.exp2(" in out.read_text()


def test_autotune_for_a_gpu_later_checks_every_configuration(tmp_path: Path) -> None:
    """Bound for a GPU (the bundle), the autotune stage applies on the CPU through the cascade
    checking each of its configurations alone (the CPU interpreter has no timer for the tuner
    to pick by); a wrong configuration among them fails the whole with its number."""
    name = "01_gemm_bias_relu"
    problem = PROBLEMS[name]
    device = load_device("h200")
    cascade = ForgeCascade(problem.kernel_path, problem.problem_path, device,
                           [problem.small_sizes], tmp_path)
    source = problem.kernel_path.read_text(encoding="utf-8")
    stage = AutotuneStage(ForgeOptions(max_configs=2))
    split = stage.propose_split(KernelFile(source, name), device)
    assert split is not None
    whole, singles = split
    # the KB's two and the launch's own (64x64x32 at 4 warps)
    assert len(singles) == 3 and all(s.source.count("triton.Config(") == 1 for s in singles)
    assert whole.source.count("triton.Config(") == 3
    result = optimize_source(source, name, device, cascade,
                             stages=[EachConfigChecked(stage, cascade)])
    (record,) = result.records
    assert record.status == "applied" and "each configuration checked alone" in record.why
    (_, outcome), = record.outcomes
    assert outcome.passed and "each of its 3 configurations alone matches" in outcome.reason
    assert result.source == whole.source
    # a planted wrong configuration (the ReLU dropped from its module) fails the whole
    relu = "tl.maximum(acc, 0.0)"
    assert relu in singles[1].source
    cascade.vouch(whole.source, [singles[0].source, singles[1].source.replace(relu, "acc")])
    outcome = cascade(source, whole.source)
    assert not outcome.passed and outcome.step == "correctness"
    assert outcome.reason.startswith("configuration 2 of 2 alone: ")


def test_a_module_for_the_gpu_runs_once_in_the_problems_dtype(tmp_path: Path) -> None:
    """07 with its float32 buffer narrowed and its stores through block pointers: the store's
    cast to the buffer's element type kept, the module passes; dropped (the bug the GPU found
    at stop 37: a float32 value stored through a bf16 block pointer), the float32 check on the
    CPU passes it but the run in the problem's bf16 crashes, and the cascade says so."""
    from axon.forge.stages import BlockPointersStage, DtypeStage

    name = "07_gemm_row_max"
    problem = PROBLEMS[name]
    device = load_device("h200")
    (narrowed,) = DtypeStage().propose(KernelFile.read(problem.kernel_path), device)
    (blocks,) = BlockPointersStage().propose(KernelFile(narrowed.source, name), device)
    cast = "acc.to(z_ptr.dtype.element_ty)"
    assert blocks.source.count(cast) == 1
    uncast = blocks.source.replace(cast, "acc")
    source = problem.kernel_path.read_text(encoding="utf-8")
    cascade = ForgeCascade(problem.kernel_path, problem.problem_path, device,
                           [problem.small_sizes], tmp_path, smoke_dtype="bf16")
    assert cascade(source, blocks.source).passed
    outcome = cascade(source, uncast)
    assert not outcome.passed and outcome.step == "crash"
    assert "in bf16: " in outcome.reason and "mismatch" in outcome.reason, outcome.reason
    float32_only = ForgeCascade(problem.kernel_path, problem.problem_path, device,
                                [problem.small_sizes], tmp_path / "f32")
    (tmp_path / "f32").mkdir()
    assert float32_only(source, uncast).passed
