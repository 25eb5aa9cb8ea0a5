"""Forge's raised path: a user's kernel raised to `ax` with proof goes through the Triton
target's selection, its launch becomes a call of Axon's kernel on the user's tensors, and the
module passes the Forge cascade against the ORIGINAL kernel (Triton's CPU interpreter, float32,
through the frozen harness); a kernel that does not raise keeps its launch, and the report says
why."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from axon.benchmarks.forge.problem_set import check, load_file, load_problem
from axon.forge import raised_path
from axon.forge.fuse_raised import fuse_host
from axon.forge.launch_record import record_launches
from axon.forge.raised_path import SIZE, assumption_error, forge_raised, raise_file
from axon.forge.source import KernelFile
from axon.forge.triton_path import forge_kernel
from axon.frontend.triton.raise_tile import NotRaised
from axon.selection.executor import make_executor
from axon.targets.xe_triton.kb import load_device
from axon.targets.xe_triton.select import SelectionError, SelectOptions
from axon.verifier import Proved

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "forge"


def _asked(monkeypatch: pytest.MonkeyPatch, kernel: Path, name: str,
           tmp_path: Path) -> tuple[dict[str, tuple[list[str], dict[str, int]]], list[str]]:
    """forge_raised on `kernel` with the selection replaced by a spy that fails: per function
    selected, its input types and the sizes it was asked at; and the result's notes."""
    asked: dict[str, tuple[list[str], dict[str, int]]] = {}

    def spy(func: object, options: SelectOptions, *args: object, program: str = "",
            **kwargs: object) -> None:
        types = func.function_type.inputs.data  # type: ignore[attr-defined]
        asked[program] = ([str(t) for t in types], dict(options.sizes))
        raise SelectionError("the spy selects nothing")

    monkeypatch.setattr(raised_path, "select_kernel", spy)
    executor = make_executor("local")
    try:
        result = forge_raised(kernel, ROOT / "problems" / f"{name}.py", load_device("h200"),
                              [{}], executor, gpu=False, scratch=tmp_path)
    finally:
        executor.close()
    assert result.replaced == [] and result.outcome is None  # nothing selected: no cascade
    return asked, result.notes


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


def test_the_launches_are_recorded_at_the_problems_benchmark_sizes() -> None:
    """13's host code runs on meta tensors at the problem's own sizes: the flat add's
    `n_elements` is M * N, the norm's rows are its grid, every tensor bf16."""
    name = "13_add_layernorm"
    problem = load_problem(name)
    assert (problem.batch_size, problem.dim, problem.dtype) == (4096, 4096, torch.bfloat16)
    file = KernelFile.read(ROOT / "kernels" / f"{name}.py")
    record = record_launches(file, ROOT / "kernels" / f"{name}.py",
                             ROOT / "problems" / f"{name}.py")
    assert record.error == "" and record.sizes == {"batch_size": 4096, "dim": 4096}
    add_site, norm_site = file.module.launches
    add, norm = record.at(add_site), record.at(norm_site)
    assert add is not None and norm is not None
    assert add.size("n_elements") == 4096 * 4096 and add.grid == (4096 * 4096 // 1024,)
    assert (norm.size("G0"), norm.size("N"), norm.size("BLOCK_N")) == (4096, 4096, 4096)
    assert norm.dtype("x_ptr") == norm.dtype("y_ptr") == add.dtype("a_ptr") == "bf16"
    assert norm.dtype("eps") is None and norm.args["eps"] == pytest.approx(1e-5)
    small = record_launches(file, ROOT / "kernels" / f"{name}.py",
                            ROOT / "problems" / f"{name}.py", {"batch_size": 33, "dim": 1100})
    small_add = small.at(add_site)
    assert small_add is not None and small_add.size("n_elements") == 33 * 1100


def test_the_selection_is_asked_at_the_recorded_sizes_in_the_tensors_dtype(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "13_add_layernorm"
    asked, _ = _asked(monkeypatch, ROOT / "kernels" / f"{name}.py", name, tmp_path)
    assert asked["add_kernel"] == (["bf16[n_elements]", "bf16[n_elements]"],
                                   {"n_elements": 4096 * 4096})
    # the float parameter eps stays float32, as the user's kernel reads it
    assert asked["layernorm_kernel"] == (["bf16[G0, N]", "bf16[N]", "bf16[N]", "f32[1]"],
                                         {"G0": 4096, "N": 4096})


def test_host_code_that_cannot_run_on_meta_falls_back_to_the_priced_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "12_rmsnorm"
    text = (ROOT / "kernels" / f"{name}.py").read_text()
    # a data-dependent check in forward: `.item()` has no value on the meta device
    needs_data = text.replace("M, N = x.shape", "M, N = x.shape\n"
                              "        assert x.sum().item() == x.sum().item()")
    assert needs_data != text
    kernel = tmp_path / f"{name}.py"
    kernel.write_text(needs_data)
    asked, notes = _asked(monkeypatch, kernel, name, tmp_path)
    assert asked["rmsnorm_kernel"] == (["f32[G0, N]", "f32[N]", "f32[1]"],
                                       {"G0": SIZE, "N": SIZE})
    assert any("not recorded at the problem's sizes" in n and "meta" in n for n in notes), notes


def test_the_raised_log_softmax_replaces_the_launch_and_matches_the_original(
        tmp_path: Path) -> None:
    """17 is bf16: Axon's kernel is selected at the benchmark sizes in bf16 and its launch
    passes the user's tensors as they are; the cascade on the CPU checks the float32 twin (its
    inputs widened) against the original, and the bf16 module matches the Model too."""
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
    problem = load_problem(name)
    (selected,) = result.selected
    assert selected.endswith(f"selected at G0={problem.batch_size}, N={problem.dim} in bf16")
    view = "torch.as_strided(x, ((M), N,), (x.stride(0), 1,))"
    assert f"{view}.float()" in result.source
    assert "log_softmax_kernel[(M,)]" not in result.source  # the user's launch is gone
    assert "class ModelNew(nn.Module)" in result.source  # the user's module otherwise
    # for the GPU: no widening, the kernel takes bf16 and writes bf16
    device = result.device_source
    assert f"{view}," in device and ".float()" not in device
    assert "in0.dtype != torch.bfloat16" in device and "in0.dtype != torch.float32" in \
        result.source
    # the checked module at the problem's bf16: its inputs widened, its result narrowed into
    # the user's output; the bf16 module itself (no tl.dot: the interpreter computes it right)
    for n, text in enumerate((result.source, device)):
        forged = tmp_path / f"forged_{n}.py"
        forged.write_text(text)
        module = load_file(forged, f"forged_log_softmax_{n}")
        checked = check(name, {"batch_size": 33, "dim": 65}, dtype=torch.bfloat16,
                        kernel=module)
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
    assert fused.inputs[0] == "torch.as_strided(x, (n,), (1,))"
    assert fused.outputs == ["torch.as_strided(y, (n,), (1,))"]
    # each input's launch and parameter (their dtype is the argument's), the size's binding
    scale_site = fused.sites[0]
    assert fused.input_params[:2] == [(scale_site, "x_ptr"), (scale_site, "scale")]
    assert fused.symbols == {"n": (scale_site, "n_elements")}
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
