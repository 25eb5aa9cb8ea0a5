"""Forge's raised path: a user's kernel raised to `ax` with proof goes through the Triton
target's selection, its launch becomes a call of Axon's kernel on the user's tensors, and the
module passes the Forge cascade against the ORIGINAL kernel (Triton's CPU interpreter, float32,
through the frozen harness); a kernel that does not raise keeps its launch, and the report says
why."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from axon.benchmarks.forge.problem_set import check
from axon.forge.fuse_raised import fuse_host
from axon.forge.raised_path import assumption_error, forge_raised, raise_file
from axon.forge.source import KernelFile
from axon.forge.triton_path import forge_kernel
from axon.frontend.triton.raise_tile import NotRaised
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
    (cumsum,) = raise_file(KernelFile.read(ROOT / "kernels" / "23_cumsum.py"))
    assert cumsum.raised is None and cumsum.reason.startswith("the raise to xt stops at 19:13")


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
    assert "torch.as_strided(x, ((M), N,), (x.stride(0), 1,)).float()" in result.source
    assert "log_softmax_kernel[(M,)]" not in result.source  # the user's launch is gone
    assert "class ModelNew(nn.Module)" in result.source  # the user's module otherwise
    # Axon's kernel takes float32: the problem's own bf16 inputs are widened at the call and
    # the result narrowed into the user's output (the cascade checks float32 on the CPU)
    forged = tmp_path / "forged.py"
    forged.write_text(result.source)
    spec = importlib.util.spec_from_file_location("forged_log_softmax", forged)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    checked = check(name, {"batch_size": 33, "dim": 65}, dtype=torch.bfloat16, kernel=module)
    assert checked.passed and checked.dtype == torch.bfloat16, checked.message


def test_the_triton_path_runs_the_raised_path_first_and_fuses_the_chain(
        tmp_path: Path) -> None:
    """24's three elementwise kernels (scale, tanh, residual add) compose through their
    buffers into one ax program, selected once: one Axon kernel replaces the three launches."""
    name = "24_scale_tanh_residual"
    result, checked = forge_kernel(ROOT / "kernels" / f"{name}.py",
                                   ROOT / "problems" / f"{name}.py", load_device("h200"),
                                   [{"batch_size": 5, "dim": 33}], gpu=False, scratch=tmp_path,
                                   raised=True)
    first = result.records[0]
    assert first.stage == "raise" and first.status == "applied", first.line()
    assert "forward(): scale_kernel, tanh_kernel, add_kernel fused into one ax program" \
        in first.why
    assert checked >= 1
    for kernel in ("scale_kernel[", "tanh_kernel[", "add_kernel["):
        assert kernel not in result.source
    assert "forward_fused" in result.source
    assert "torch.full((1,), self.scale, dtype=torch.float32, device=y.device)" in result.source


def test_launches_through_different_views_are_not_fused() -> None:
    file = KernelFile.read(ROOT / "kernels" / "02_gemm_gelu.py")
    with pytest.raises(NotRaised, match="gelu_kernel reads z through another view"):
        fuse_host(file, raise_file(file), "forward")


def test_the_fused_chain_is_one_function_of_the_external_buffers() -> None:
    file = KernelFile.read(ROOT / "kernels" / "24_scale_tanh_residual.py")
    fused = fuse_host(file, raise_file(file), "forward")
    assert fused.kernels == ["scale_kernel", "tanh_kernel", "add_kernel"]
    assert fused.inputs[0] == "torch.as_strided(x, (n,), (1,)).float()"
    assert fused.outputs == ["torch.as_strided(y, (n,), (1,))"]
    assert [str(t) for t in fused.ax.function_type.inputs.data] == ["f32[n]", "f32[1]", "f32[n]"]
    # the intermediates `scaled` and `squashed` are values inside it, not inputs
    assert "scaled" not in fused.ax_text and "squashed" not in fused.ax_text


def test_a_launch_that_may_break_the_raises_assumption_is_not_replaced() -> None:
    """17's raise assumes BLOCK_N >= N (the row held whole): a launch passing
    `triton.next_power_of_2(N)` keeps it; a literal block does not, and is said."""
    text = (ROOT / "kernels" / "17_log_softmax.py").read_text()
    (kernel,) = raise_file(KernelFile(text, "17.py"))
    (site,) = KernelFile(text, "17.py").kernel_launches("log_softmax_kernel")
    assert assumption_error(kernel, site) is None
    literal = text.replace("BLOCK_N=triton.next_power_of_2(N)", "BLOCK_N=64")
    (kernel,) = raise_file(KernelFile(literal, "17.py"))
    (site,) = KernelFile(literal, "17.py").kernel_launches("log_softmax_kernel")
    assert assumption_error(kernel, site) == (
        "the raise assumes BLOCK_N >= N (the block holds the dim whole); the launch at line 32 "
        "passes BLOCK_N='64', not triton.next_power_of_2(N)")
