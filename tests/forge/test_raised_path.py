"""Forge's raised path: a user's kernel raised to `ax` with proof goes through the Triton
target's selection, its launch becomes a call of Axon's kernel on the user's tensors, and the
module passes the Forge cascade against the ORIGINAL kernel (Triton's CPU interpreter, float32,
through the frozen harness); a kernel that does not raise keeps its launch, and the report says
why."""

from __future__ import annotations

from pathlib import Path

from axon.forge.raised_path import forge_raised, raise_file
from axon.forge.source import KernelFile
from axon.forge.triton_path import forge_kernel
from axon.selection.executor import make_executor
from axon.targets.xe_triton.kb import load_device
from axon.verifier import Proved

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "forge"


def test_each_launched_kernel_is_raised_or_says_why_not() -> None:
    raised = {k.name: k for k in raise_file(KernelFile.read(ROOT / "kernels" /
                                                            "07_gemm_row_max.py"))}
    linear = raised["linear_kernel"]
    assert linear.raised is not None and isinstance(linear.raised.verdict, Proved)
    assert linear.inputs == ["x_ptr", "w_ptr", "b_ptr"] and linear.outputs == ["z_ptr"]
    row_max = raised["row_max_kernel"]
    assert row_max.raised is None and "running max started at -inf" in row_max.reason
    assert "not raised to ax" in row_max.line()
    scale = raise_file(KernelFile.read(ROOT / "kernels" / "24_scale_tanh_residual.py"))[0]
    assert scale.name == "scale_kernel" and scale.reason.startswith("the raise to xt stops at")


def test_the_raised_log_softmax_replaces_the_launch_and_matches_the_original(
        tmp_path: Path) -> None:
    name = "17_log_softmax"
    executor = make_executor("local")
    try:
        result = forge_raised(ROOT / "kernels" / f"{name}.py", ROOT / "problems" / f"{name}.py",
                              load_device("h200"), [{"batch_size": 33, "dim": 65}], executor,
                              gpu=False, scratch=tmp_path)
    finally:
        executor.close()
    assert result.replaced == ["log_softmax_kernel"]
    assert result.outcome is not None and result.outcome.passed, result.report_lines()
    assert "torch.as_strided(x, ((M), N,), (x.stride(0), 1,))" in result.source
    assert "log_softmax_kernel[(M,)]" not in result.source  # the user's launch is gone
    assert "class ModelNew(nn.Module)" in result.source  # the user's module otherwise


def test_the_triton_path_runs_the_raised_path_first(tmp_path: Path) -> None:
    name = "24_scale_tanh_residual"
    result, checked = forge_kernel(ROOT / "kernels" / f"{name}.py",
                                   ROOT / "problems" / f"{name}.py", load_device("h200"),
                                   [{"batch_size": 5, "dim": 33}], gpu=False, scratch=tmp_path,
                                   raised=True)
    first = result.records[0]
    assert first.stage == "raise" and first.status == "applied", first.line()
    assert "kernel scale_kernel: not raised to ax" in first.why
    assert "tanh_kernel, add_kernel replaced" in first.why
    assert checked >= 1
    assert "tanh_kernel[" not in result.source and "scale_kernel[" in result.source
