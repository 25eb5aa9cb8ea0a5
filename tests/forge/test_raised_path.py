"""Forge's raised path: a user's kernel raised to `ax` with proof goes through the Triton
target's selection, its launch becomes a call of Axon's kernel on the user's tensors, and the
module passes the Forge cascade against the ORIGINAL kernel (Triton's CPU interpreter, float32,
through the frozen harness); a kernel that does not raise keeps its launch, and the report says
why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from axon.benchmarks.forge.problem_set import PROBLEMS, check, load_file, load_problem
from axon.benchmarks.suite import PROGRAMS as SUITE
from axon.benchmarks.suite import make_inputs
from axon.dialects.ax import TensorType, TransposeOp
from axon.forge import raised_path
from axon.forge.fuse_raised import _allocations, _product, fuse_host, reviewed
from axon.forge.launch_record import record_launches
from axon.forge.raised_path import (
    SIZE,
    assumption_error,
    copy_reason,
    forge_raised,
    raise_file,
)
from axon.forge.source import KernelFile
from axon.forge.triton_path import forge_kernel
from axon.frontend.triton.raise_tile import NotRaised, _parse
from axon.interpreter import run_function
from axon.selection.executor import make_executor
from axon.targets.xe_triton.kb import load_device
from axon.targets.xe_triton.select import SelectionError, SelectOptions
from axon.tools.embed import parse_source
from axon.verifier import Proved, Refuted, prove_equivalent

ROOT = Path(__file__).resolve().parents[2] / "benchmarks" / "forge"


Asked = dict[str, tuple[list[str], dict[str, int]]]


def _asked(monkeypatch: pytest.MonkeyPatch, kernel: Path, name: str,
           tmp_path: Path, results: Asked | None = None,
           fuse: bool = True) -> tuple[Asked, list[str]]:
    """forge_raised on `kernel` with the selection replaced by a spy that fails: per function
    selected, its input types and the sizes it was asked at (into `results`: its result
    types and options' sizes); and the result's notes."""
    asked: Asked = {}

    def spy(func: object, options: SelectOptions, *args: object, program: str = "",
            **kwargs: object) -> None:
        types = func.function_type  # type: ignore[attr-defined]
        asked[program] = ([str(t) for t in types.inputs.data], dict(options.sizes))
        if results is not None:
            results[program] = ([str(t) for t in types.outputs.data], dict(options.sizes))
        raise SelectionError("the spy selects nothing")

    monkeypatch.setattr(raised_path, "select_kernel", spy)
    executor = make_executor("local")
    try:
        result = forge_raised(kernel, ROOT / "problems" / f"{name}.py", load_device("h200"),
                              [{}], executor, gpu=False, scratch=tmp_path, fuse=fuse)
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
    row_max = raised["row_max_kernel"]  # a running max from -inf
    assert row_max.raised is not None and isinstance(row_max.raised.verdict, Proved)
    (cumsum,) = raise_file(KernelFile.read(ROOT / "kernels" / "23_cumsum.py"))
    assert cumsum.raised is None and cumsum.reason.startswith("the raise to xt stops at 19:13")
    assert "not raised to ax" in cumsum.line()


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


def test_a_bf16_gemm_writing_a_float32_buffer_is_selected_in_bf16_with_a_float32_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """08's GEMM reads bf16 and writes the float32 buffer `z` the user allocated: its inputs
    stay bf16 (a bf16 `tl.dot`, no `.float()`), its result is cast to float32; the row sum
    reading `z` is float32 with a bf16 result, as the user's `y` (the two kernels not
    fused)."""
    name = "08_gemm_sum_scale"
    results: Asked = {}
    asked, _ = _asked(monkeypatch, ROOT / "kernels" / f"{name}.py", name, tmp_path, results,
                      fuse=False)
    # w as the user holds it ([N, K] row-major; the kernel reads its transpose by strides)
    assert asked["linear_kernel"][0] == ["bf16[M, K]", "bf16[N, K]", "bf16[N]"]
    assert results["linear_kernel"][0] == ["f32[M, N]"]
    assert asked["row_sum_scale_kernel"][0] == ["f32[G0, N]", "f32[1]"]
    assert results["row_sum_scale_kernel"][0] == ["bf16[G0]"]


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
    assert selected.endswith(f"selected at G0={problem.batch_size}, N={problem.dim} in bf16; "
                             "y_ptr written directly (out=)")
    view = "torch.as_strided(x, ((M), N,), (x.stride(0), 1,))"
    out = "torch.as_strided(y, ((M), N,), (y.stride(0), 1,))"
    assert f"{view}.float()" in result.source
    assert "log_softmax_kernel[(M,)]" not in result.source  # the user's launch is gone
    assert "class ModelNew(nn.Module)" in result.source  # the user's module otherwise
    # for the GPU: no widening, the kernel takes bf16 and writes bf16 into the user's y
    device = result.device_source
    assert f"{view}," in device and ".float()" not in device
    assert f"out=({out},))" in device and ".copy_(" not in device
    assert "in0.dtype != torch.bfloat16" in device and "in0.dtype != torch.float32" in \
        result.source
    # the float32 twin's result is not y's bf16: copied (narrowed) into it
    assert f"{out}.copy_(_axon_out0)" in result.source
    # the checked module at the problem's bf16: its inputs widened, its result narrowed into
    # the user's output; the bf16 module itself writing into y (no tl.dot: the interpreter
    # computes it right)
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


def test_a_buffer_the_host_did_not_allocate_read_through_another_view_is_not_fused(
        ) -> None:
    """02 with `z` a transposed view (`torch.empty((N, M)).t()`, not row-major): the GELU's
    flat read of `z` is not the GEMM's `[M, N]` value, so the kernels are not composed."""
    text = (ROOT / "kernels" / "02_gemm_gelu.py").read_text()
    transposed = text.replace("z = torch.empty((M, N), device=x.device, dtype=torch.float32)",
                              "z = torch.empty((N, M), device=x.device, dtype=torch.float32).t()")
    assert transposed != text
    file = KernelFile(transposed, "02.py")
    with pytest.raises(NotRaised, match="gelu_kernel reads z through another view"):
        fuse_host(file, raise_file(file), "forward")


def test_an_elementwise_kernel_over_a_flat_buffer_is_taken_at_the_gemms_shape() -> None:
    """02: the GEMM writes `z` (allocated `(M, N)`, so `z.stride(0)` is `N`) as `[M, N]`; the
    GELU reads it flat, `M * N` elements. The GELU is taken at `[M, N]` (proved equal to the
    flat one between reshapes) and composes: one function, its result written to `y` seen as
    `[M, N]` row-major, the same elements as the flat view."""
    file = KernelFile.read(ROOT / "kernels" / "02_gemm_gelu.py")
    fused = fuse_host(file, raise_file(file), "forward")
    assert fused.kernels == ["linear_kernel", "gelu_kernel"]
    assert [str(t) for t in fused.ax.function_type.inputs.data] == \
        ["f32[M, K]", "f32[K, N]", "f32[N]"]
    assert [str(t) for t in fused.ax.function_type.outputs.data] == ["f32[M, N]"]
    assert fused.outputs == ["torch.as_strided(y, (M, N,), (N, 1,))"]
    assert "out[d0 < M, d1 < N]" in fused.ax_text and "M * N" not in fused.ax_text
    # 04: the residual, a user's input read flat, is read at [M, N] the same way; `z` is read
    # outside the launches only for its shape (`torch.empty_like(z)`)
    file = KernelFile.read(ROOT / "kernels" / "04_gemm_residual_add.py")
    fused = fuse_host(file, raise_file(file), "forward")
    assert fused.inputs[-1] == "torch.as_strided(residual, (M, N,), (N, 1,))"
    # 10: the softmax reads `z` by rows (`z.stride(0)`, unit stride): the GEMM's own view
    file = KernelFile.read(ROOT / "kernels" / "10_gemm_softmax.py")
    assert fuse_host(file, raise_file(file), "forward").kernels == \
        ["linear_kernel", "softmax_kernel"]


def test_the_fused_gemm_takes_w_as_the_user_holds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """02 fused: the composed function is selected in bf16 with `w` as `[N, K]` (transposed
    inside it, as the unfused GEMM takes it), its result in y's bf16 (the spy selects nothing,
    so each kernel is then asked alone too)."""
    name = "02_gemm_gelu"
    results: Asked = {}
    asked, notes = _asked(monkeypatch, ROOT / "kernels" / f"{name}.py", name, tmp_path,
                          results)
    assert asked["forward_fused"] == (["bf16[M, K]", "bf16[N, K]", "bf16[N]"],
                                      {"M": 2048, "K": 4096, "N": 4096})
    assert results["forward_fused"][0] == ["bf16[M, N]"]
    assert any("composed" in n or "fused" in n for n in notes), notes


def test_the_flat_kernel_at_a_shape_is_proved_and_a_wrong_one_refuted() -> None:
    (_, gelu) = raise_file(KernelFile.read(ROOT / "kernels" / "02_gemm_gelu.py"))
    assert gelu.raised is not None
    shaped, reference = reviewed(gelu.raised.ax_text, "n_elements", 3)
    assert "!ax.tensor<[V0, V1, V2], f32>" in shaped and "ax.reshape" in reference
    assert isinstance(prove_equivalent(_parse(shaped, "a"), _parse(reference, "b")), Proved)
    # a planted wrong shaped kernel (every element read from the first plane): refuted
    wrong = shaped.replace("in0[d0, d1, d2]", "in0[0, d1, d2]")
    assert wrong != shaped
    assert isinstance(prove_equivalent(_parse(wrong, "a"), _parse(reference, "b")), Refuted)


def test_views_compare_as_products_with_allocated_buffers_strides() -> None:
    allocated = {"z": ("M", "N"), "t": ("B", "M * N")}
    assert _product("N*M", allocated) == _product("(M) * N", allocated) == "M * N"
    assert _product("z.stride(0)", allocated) == "N"
    assert _product("z.stride(1)", allocated) == _product("1", allocated) == "1"
    assert _product("t.stride(0)", allocated) == "M * N"
    assert _product("x.stride(0)", allocated) == "x.stride(0)"  # not allocated: as written
    assert _product("2 * M + 1", allocated) == "2 * M + 1"
    source = (ROOT / "kernels" / "04_gemm_residual_add.py").read_text()
    found = _allocations(KernelFile(source, "04.py"), "forward")
    assert found == {"z": ("M", "N"), "y": ("M", "N")}  # y = torch.empty_like(z)
    # a buffer bound twice is not known to be contiguous
    twice = source.replace("return y", "y = y.t()\n        return y")
    assert "y" not in _allocations(KernelFile(twice, "04.py"), "forward")
    # a shape held by a name (it may be a tuple) or spelled with a starred part is not read
    held = source.replace("torch.empty((M, N),", "torch.empty(shape,")
    starred = source.replace("torch.empty((M, N),", "torch.empty((*x.shape[:-1], N),")
    assert held != source and starred != source
    for text in (held, starred):
        assert _allocations(KernelFile(text, "04.py"), "forward") == {}


def test_a_buffer_between_the_kernels_read_for_its_values_is_not_fused() -> None:
    source = (ROOT / "kernels" / "04_gemm_residual_add.py").read_text()
    peeked = source.replace("return y", "return y + z.sum()")
    file = KernelFile(peeked, "04.py")
    with pytest.raises(NotRaised, match="z .a buffer between the kernels. is read at line"):
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


def test_a_float32_problems_output_is_written_directly_through_the_cascade(
        tmp_path: Path) -> None:
    """15 is float32: the twin the cascade runs is the kernel itself, its result written into
    the user's y (`out=`, no copy), and it matches the original."""
    name = "15_l2_normalize"
    executor = make_executor("local")
    try:
        result = forge_raised(ROOT / "kernels" / f"{name}.py", ROOT / "problems" / f"{name}.py",
                              load_device("h200"), [{"batch_size": 9, "dim": 70}], executor,
                              gpu=False, scratch=tmp_path, max_candidates=1)
    finally:
        executor.close()
    assert result.outcome is not None and result.outcome.passed, result.report_lines()
    (selected,) = result.selected
    assert selected.endswith("in f32; y_ptr written directly (out=)")
    out = "out=(torch.as_strided(y, ((M), N,), (y.stride(0), 1,)),))"
    for text in (result.source, result.device_source):
        assert out in text and ".copy_(" not in text


def test_an_output_view_that_is_not_row_major_keeps_the_copy(tmp_path: Path) -> None:
    """17 writing into the first N columns of a wider buffer: Axon's kernel stores row-major,
    so its result is copied into that view, and the module still matches the original."""
    name = "17_log_softmax"
    text = (ROOT / "kernels" / f"{name}.py").read_text()
    padded = text.replace("y = torch.empty_like(x)",
                          "y = torch.empty((M, N + 3), dtype=x.dtype, device=x.device)[:, :N]")
    assert padded != text
    kernel = tmp_path / f"{name}.py"
    kernel.write_text(padded)
    executor = make_executor("local")
    try:
        result = forge_raised(kernel, ROOT / "problems" / f"{name}.py", load_device("h200"),
                              [{"batch_size": 9, "dim": 33}], executor, gpu=False,
                              scratch=tmp_path, max_candidates=1)
    finally:
        executor.close()
    assert result.outcome is not None and result.outcome.passed, result.report_lines()
    (selected,) = result.selected
    assert selected.endswith("y_ptr copied (its view (sizes (4096, 8192), strides (8195, 1)) "
                             "is not row-major)")
    for module in (result.source, result.device_source):
        assert "out=(" not in module
        assert "torch.as_strided(y, ((M), N,), (y.stride(0), 1,)).copy_(_axon_out0)" in module


@pytest.mark.parametrize(("allocation", "why"), [
    ("y = torch.empty_like(x, dtype=torch.float64)", "it is torch.float64, the result f32"),
    ("y = x", "it shares memory with x_ptr, which the kernel reads")])
def test_an_output_of_another_dtype_or_sharing_an_input_keeps_the_copy(
        tmp_path: Path, allocation: str, why: str) -> None:
    """The recorded launch decides: an output of a dtype Axon's kernel does not write, or one
    that is an input's memory (Axon's kernel may read a block after writing it), is copied."""
    name = "15_l2_normalize"
    text = (ROOT / "kernels" / f"{name}.py").read_text()
    changed = text.replace("y = torch.empty_like(x)", allocation)
    assert changed != text
    kernel = tmp_path / f"{name}.py"
    kernel.write_text(changed)
    file = KernelFile.read(kernel)
    (raised,) = raise_file(file)
    (site,) = file.kernel_launches(raised.name)
    record = record_launches(file, kernel, ROOT / "problems" / f"{name}.py")
    reads = [(site, "x_ptr")]
    assert copy_reason(record, raised, site, "y_ptr", "f32", reads) == why
    plain = record_launches(KernelFile.read(ROOT / "kernels" / f"{name}.py"),
                            ROOT / "kernels" / f"{name}.py", ROOT / "problems" / f"{name}.py")
    assert copy_reason(plain, raised, site, "y_ptr", "f32", reads) == ""


def test_the_bf16_gemm_into_a_float32_buffer_is_a_bf16_dot_stored_as_it_accumulates(
        tmp_path: Path) -> None:
    """08 through the raised path: the device module's GEMM takes bf16 (no `.float()`), runs a
    bf16 `tl.dot` accumulating in float32 and stores the accumulator into the user's float32 z
    without a bf16 rounding between; the float32 twin the CPU checks (the interpreter's bf16
    `tl.dot` is wrong) matches the original, at the problem's bf16 too."""
    name = "08_gemm_sum_scale"
    small = PROBLEMS[name].small_sizes
    executor = make_executor("local")
    try:
        result = forge_raised(ROOT / "kernels" / f"{name}.py", ROOT / "problems" / f"{name}.py",
                              load_device("h200"), [small], executor, gpu=False,
                              scratch=tmp_path, max_candidates=1,
                              atol_scale=PROBLEMS[name].atol_scale, fuse=False)
    finally:
        executor.close()
    assert result.outcome is not None and result.outcome.passed, result.report_lines()
    linear, row_sum = result.selected
    assert "in bf16, result in f32; z_ptr written directly (out=)" in linear
    assert "in f32, result in bf16; y_ptr written directly (out=)" in row_sum
    device = result.device_source
    assert "torch.as_strided(x, (M, K,), (x.stride(0), x.stride(1),))," in device
    # the kernel reads W^T through w's strides: the raised function takes w as the user holds
    # it, [N, K] row-major, and transposes it, so the host function copies nothing
    assert "torch.as_strided(w, (N, K,), (w.stride(0), w.stride(1),))," in device
    assert any("w_ptr taken as the user holds it" in line for line in result.report_lines())
    assert ".float()" not in device and ".copy_(" not in device
    assert "out=(torch.as_strided(z, (M, N,), (z.stride(0), z.stride(1),)),))" in device
    gemm = device.split("# ---- Axon: linear_kernel")[1].split("# ---- Axon:")[0]
    kernel, host = gemm.split("def _block_io")
    assert "tl.dot(" in kernel and "tl.bfloat16" not in kernel  # stored as accumulated
    assert "in0.dtype != torch.bfloat16" in host and "in1.dtype != torch.bfloat16" in host
    assert "_written_into(out, [((M, N), torch.float32)]" in host
    module = tmp_path / "forged_twin.py"
    module.write_text(result.source)
    checked = check(name, dict(small), dtype=torch.bfloat16,
                    kernel=load_file(module, "forged_gemm_sum_scale"))
    assert checked.passed and checked.dtype == torch.bfloat16, checked.message


def test_an_input_taken_transposed_is_the_same_function() -> None:
    # f'(x, w') = f(x, transpose(w')): matmul's w [K, N] taken as [N, K]
    (func,) = [op for op in parse_source(SUITE["matmul"].source, "matmul.py").ops]
    flipped = raised_path.transposed_inputs(func, [1])
    x_type, w_type = flipped.function_type.inputs.data
    assert isinstance(w_type, TensorType) and [str(d) for d in w_type.shape] == ["N", "K"]
    assert str(x_type) == str(func.function_type.inputs.data[0])
    first = flipped.body.block.first_op
    assert isinstance(first, TransposeOp) and first.operands[0] is flipped.body.block.args[1]
    sizes = {"M": 5, "K": 7, "N": 3}
    x, w = make_inputs(SUITE["matmul"], sizes)
    (want,) = run_function(func, [x, w], sizes)
    (got,) = run_function(flipped, [x, np.ascontiguousarray(w.T)], sizes)
    assert np.array_equal(got, want)
