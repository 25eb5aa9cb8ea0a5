"""Each Triton-level stage of Forge rewrites problem-set kernels into modules that still agree
with the problem's Model (CPU interpreter, float32), and says why where it does not apply."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest
import torch

from axon.benchmarks.forge import problem_set as forge
from axon.forge.source import KernelFile
from axon.forge.stages import (
    AnalysisStage,
    AutotuneStage,
    BlockPointersStage,
    DtypeStage,
    ForgeOptions,
    MemoryAccessStage,
    PersistentStage,
    SwizzleStage,
    XeTuningStage,
    analyse_file,
    prove_bijection,
    prove_cover,
)
from axon.forge.stages.swizzle import SWIZZLE_TEMPLATE
from axon.forge.triton_path import with_head_dims
from axon.targets.xe_triton.kb import load_device

B70 = load_device("b70")
H200 = load_device("h200")
SMALL = ForgeOptions(max_proposals=2, max_configs=2)

Checked = Callable[[str, str], forge.CheckResult]


def kernel_file(name: str) -> KernelFile:
    return KernelFile.read(forge.PROBLEMS[name].kernel_path)


def test_analysis_reports_each_kernel() -> None:
    """The report names dots, casts, blocks, warps, grids and whether each kernel raises."""
    report = analyse_file(kernel_file("02_gemm_gelu"))
    linear, gelu = report.kernels["linear_kernel"], report.kernels["gelu_kernel"]
    assert (linear.kind, linear.dots, linear.program_axes) == ("matmul", 1, (0, 1))
    assert linear.block_params == {"BLOCK_M": (64,), "BLOCK_N": (64,), "BLOCK_K": (32,)}
    assert [c.operand for c in linear.dot_casts] == ["x.to(tl.float32)", "w.to(tl.float32)"]
    assert linear.raises_xt and not linear.atomics and linear.num_warps == (None,)
    assert (gelu.kind, gelu.dots, gelu.grid_ranks) == ("elementwise", 0, (1,))
    text = "\n".join(report.lines())
    assert "float32 casts of loaded operands: x.to(tl.float32) at 28:23" in text
    assert "grid (name, rank 2) (triton.cdiv(M, 64), triton.cdiv(N, 64))" in text
    softmax = analyse_file(kernel_file("16_softmax")).kernels["softmax_kernel"]
    assert softmax.num_warps == ("4",) and softmax.kind == "softmax"
    assert AnalysisStage().propose(kernel_file("16_softmax"), B70) == []
    broken = KernelFile("import triton\n@triton.jit\ndef k(x:\n", "bad.py")
    verdict = AnalysisStage().applies(broken)
    assert not verdict.applies and "bad.py:3" in verdict.why


@pytest.mark.parametrize("name", ["01_gemm_bias_relu", "06_bmm_scale"])
def test_swizzle_keeps_the_outputs(name: str, checked: Checked) -> None:
    file = kernel_file(name)
    assert SwizzleStage(SMALL).applies(file).applies
    proposals = SwizzleStage(SMALL).propose(file, B70)
    assert len(proposals) == 1 and "GROUP_SIZE_M=4" in proposals[0].description
    assert "remap proved" in proposals[0].description
    text = proposals[0].source
    assert "pid_n = (pid % num_pid_in_group) // group_size_m" in text
    assert "triton.cdiv(M, 64) * triton.cdiv(N, 64)" in text
    if name == "06_bmm_scale":  # the batch moves to axis 1
        assert "(triton.cdiv(M, 64) * triton.cdiv(N, 64), B)" in text
        assert "pid_b = tl.program_id(1)" in text
    assert '"""' in text.split("def ")[1]  # the kernel's docstring survives the span edits
    assert checked(name, text).passed
    # NVIDIA's KB groups by 8
    assert "GROUP_SIZE_M=8" in SwizzleStage(SMALL).propose(file, H200)[0].source


def test_swizzle_not_applicable_says_why() -> None:
    assert SwizzleStage().applies(kernel_file("16_softmax")).why == (
        "swizzle: not applicable: kernel `softmax_kernel` has no tl.dot")
    one_d = kernel_file("01_gemm_bias_relu").source.replace(
        "pid_n = tl.program_id(1)", "pid_n = 0")
    assert SwizzleStage().applies(KernelFile(one_d)).why == (
        "swizzle: not applicable: kernel `linear_bias_relu_kernel` is launched on a 1-D grid")


def test_swizzle_remap_is_proved_and_a_wrong_one_refuted() -> None:
    """z3 proves the template a bijection; without the min() for the last group it is not,
    and the counterexample shows a program outside the grid or two on one point."""
    names = {"pid": "pid", "num_pid_m": "nm", "num_pid_n": "nn", "num_pid_in_group": "g",
             "group_id": "gid", "first_pid_m": "f", "group_size_m": "gs", "pid_m": "pm",
             "pid_n": "pn", "GROUP": "G", "tl": "tl", "M": "M", "N": "N", "BLOCK_M": "BM",
             "BLOCK_N": "BN"}
    good = "\n".join(line.format(**names) for line in SWIZZLE_TEMPLATE)
    proof = prove_bijection(good, "pid", "nm", "nn", "G", "pm", "pn")
    assert proof.proved, proof.detail
    wrong = good.replace("gs = tl.minimum(nm - f, G)", "gs = G")
    refuted = prove_bijection(wrong, "pid", "nm", "nn", "G", "pm", "pn")
    assert not refuted.proved and refuted.detail.startswith("refuted: ")
    ex = refuted.counterexample
    outside = not (0 <= ex["pm(pid_a)"] < ex["Mb"] and 0 <= ex["pn(pid_a)"] < ex["Nb"])
    clash = ex["pid_a"] != ex["pid_b"] and (ex["pm(pid_a)"], ex["pn(pid_a)"]) == (
        ex["pm(pid_b)"], ex["pn(pid_b)"])
    assert outside or clash
    # the stage proposes nothing it cannot prove
    planted = tuple(line.replace("{tl}.minimum({num_pid_m} - {first_pid_m}, {GROUP})",
                                 "{GROUP}") for line in SWIZZLE_TEMPLATE)
    assert SwizzleStage(template=planted).propose(kernel_file("01_gemm_bias_relu"), B70) == []
    swapped = good.replace("pn = (pid % g) // gs", "pn = (pid % g) % gs")
    assert not prove_bijection(swapped, "pid", "nm", "nn", "G", "pm", "pn").proved


@pytest.mark.parametrize("name", ["01_gemm_bias_relu", "06_bmm_scale", "16_softmax",
                                  "19_attention"])
def test_persistent_keeps_the_outputs(name: str, checked: Checked,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Grid axis 0 becomes a loop over tiles (a GEMM's bound in the kernel's own blocks, a row
    kernel's passed at the launch); any number of programs gives the same outputs, so one
    program looping over every tile at the small sizes must match the Model. The GEMMs are
    swizzled first (the planner's order), so axis 0 holds every tile of the output."""
    file = kernel_file(name)
    if name in ("01_gemm_bias_relu", "06_bmm_scale"):
        file = KernelFile(SwizzleStage(SMALL).propose(file, H200)[0].source)
    assert PersistentStage().applies(file).applies
    proposals = PersistentStage(SMALL).propose(file, H200)
    assert [p.description.split(": ")[1].split(" programs")[0] for p in proposals] == [
        "132", "264"]
    text = proposals[0].source
    assert "PERSISTENT_PROGRAMS = 132" in text
    assert "in range(tl.program_id(0), num_tiles, tl.num_programs(0)):" in text
    assert "cover proved" in proposals[0].description
    if name == "16_softmax":
        assert "num_tiles=M" in text and "softmax_kernel[(min(M, PERSISTENT_PROGRAMS),)]" in text
    elif name == "01_gemm_bias_relu":
        assert "num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)" in text
        assert "grid = (min(triton.cdiv(M, 64) * triton.cdiv(N, 64), PERSISTENT_PROGRAMS),)" \
            in text
    few = text.replace("PERSISTENT_PROGRAMS = 132", "PERSISTENT_PROGRAMS = 1")
    assert checked(name, few).passed
    # a loop that strides past its programs' tiles leaves outputs unwritten (new memory is
    # NaN here, so a row left over from an earlier run cannot pass for one written)
    for alloc in ("empty", "empty_like"):
        real = getattr(torch, alloc)
        monkeypatch.setattr(torch, alloc, lambda *a, _real=real, **k: _real(*a, **k).fill_(
            float("nan")))
    skipping = few.replace("tl.num_programs(0)):", "2 * tl.num_programs(0)):")
    assert checked(name, few).passed
    assert skipping != few and not checked(name, skipping).passed


def test_persistent_cover_is_proved_and_a_wrong_stride_refuted() -> None:
    assert prove_cover().proved
    refuted = prove_cover(step_programs=2)
    assert not refuted.proved and refuted.detail.startswith("refuted (every tile is visited)")
    assert PersistentStage.program_counts(H200, 4) == [132, 264, 528]
    assert PersistentStage.program_counts(H200, 32) == [132, 264]  # 64 warps an SM


@pytest.mark.parametrize(("edit", "why"), [
    (("x_row = x_ptr + row * stride_xm", "x_ptr += row * stride_xm\n    x_row = x_ptr"),
     "kernel `softmax_kernel` assigns x_ptr after reading its program id (a tile would see "
     "the one before)"),
    (("    x_row = ", "    if row < 0:\n        return\n    x_row = "),
     "kernel `softmax_kernel` returns early (a loop over tiles would stop)"),
    (("tl.store(y_ptr + row * stride_ym", "tl.store(x_ptr + row * stride_xm"),
     "kernel `softmax_kernel` loads and stores x_ptr (a tile may read another's output)"),
    (("x_row = x_ptr + row * stride_xm", "x_row = x_ptr + row * stride_xm * tl.num_programs(0)"),
     "kernel `softmax_kernel` reads tl.num_programs"),
])
def test_persistent_not_applicable_says_why(edit: tuple[str, str], why: str) -> None:
    text = kernel_file("16_softmax").source
    assert edit[0] in text
    verdict = PersistentStage().applies(KernelFile(text.replace(edit[0], edit[1], 1)))
    assert not verdict.applies and verdict.why == f"persistent: not applicable: {why}"


@pytest.mark.parametrize("name", ["16_softmax", "11_layernorm"])
def test_memory_access_hints_keep_the_outputs(name: str, checked: Checked) -> None:
    """A multi-pass row kernel keeps its row cached for the next pass and drops it after the
    last; a vector every program reads stays cached; a row read once is left alone. On an
    Intel device the hints are the one proposal (its pipeliner stages no loads)."""
    file = kernel_file(name)
    (proposal,) = MemoryAccessStage().propose(file, B70)
    text = proposal.source
    assert text.count('eviction_policy="evict_last"') == (2 if name == "16_softmax" else 4)
    assert text.count('eviction_policy="evict_first"') == 1
    assert "tl.range" not in text
    if name == "11_layernorm":
        assert 'tl.load(w_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last")' in text
        assert "`w_ptr + offs` is read by every program" in proposal.description
    assert "is read for the last of 3 passes" in proposal.description
    assert checked(name, text).passed


@pytest.mark.parametrize("name", ["16_softmax", "08_gemm_sum_scale", "23_cumsum"])
def test_memory_access_prefetches_dot_free_loops(name: str, checked: Checked) -> None:
    """On the H200 each loop of a kernel without a dot whose loads advance with it iterates
    over `tl.range(..., num_stages=S)` for each of the KB's counts, the hints alone last; the
    kernel with a dot in the same file keeps its loops."""
    file = kernel_file(name)
    proposals = MemoryAccessStage().propose(file, H200)
    loops = {"16_softmax": 3, "08_gemm_sum_scale": 1, "23_cumsum": 1}[name]
    for proposal, stages in zip(proposals, (2, 3), strict=False):
        assert proposal.source.count(f"in tl.range(0, N, BLOCK_N, num_stages={stages}):") \
            == loops, proposal.source
        assert proposal.description.startswith(f"prefetch: tl.range(..., num_stages={stages})")
    hinted = name == "16_softmax"
    assert len(proposals) == 2 + hinted
    if hinted:
        assert "tl.range" not in proposals[-1].source
        assert proposals[-1].description.startswith("cache hints: ")
    if name == "08_gemm_sum_scale":  # the GEMM's K loop is the pipeliner's already
        assert "for k0 in range(0, K, BLOCK_K):" in proposals[0].source
    assert checked(name, proposals[0].source).passed


def test_memory_access_prefetch_refused_says_why() -> None:
    """A kernel that stores into a buffer it loads, a loop whose loads do not advance, a loop
    with a loop inside and one over `tl.range` already are not prefetched."""
    text = kernel_file("16_softmax").source
    store = "tl.store(y_ptr + row * stride_ym"
    assert store in text
    in_place = KernelFile(text.replace(store, "tl.store(x_ptr + row * stride_xm"))
    assert "kernel `softmax_kernel` stores into a buffer it loads (x_ptr): a pipelined load " \
        "could pass an earlier iteration's store" in MemoryAccessStage().applies(in_place).why
    assert all("tl.range" not in p.source
               for p in MemoryAccessStage().propose(in_place, H200))
    fixed = text.replace("offs = n0 + tl.arange(0, BLOCK_N)", "offs = tl.arange(0, BLOCK_N)")
    plain = MemoryAccessStage().propose(KernelFile(fixed), H200)
    assert all("tl.range" not in p.source for p in plain)
    staged = text.replace("in range(0, N, BLOCK_N)", "in tl.range(0, N, BLOCK_N, num_stages=4)")
    assert all(p.source.count("num_stages=4") == 3 and "num_stages=2" not in p.source
               for p in MemoryAccessStage().propose(KernelFile(staged), H200))
    nested = text.replace("    for n0 in range(0, N, BLOCK_N):\n",
                          "    for n0 in range(0, N, BLOCK_N):\n        for _ in range(1):\n"
                          "            pass\n", 1)
    counts = [p.source.count("num_stages=2") for p in
              MemoryAccessStage().propose(KernelFile(nested), H200)]
    assert counts[0] == 2  # the outer loop holds a loop; the inner one loads nothing


def test_memory_access_not_applicable_says_why() -> None:
    assert MemoryAccessStage().applies(kernel_file("17_log_softmax")).why == (
        "memory_access: not applicable: kernel `log_softmax_kernel` has no `range` loop whose "
        "loads advance with it; kernel `log_softmax_kernel` reads nothing twice and nothing "
        "every program reads")
    assert MemoryAccessStage().applies(kernel_file("01_gemm_bias_relu")).why == (
        "memory_access: not applicable: kernel `linear_bias_relu_kernel` has a tl.dot (its "
        "tiles' reuse is the swizzle's, its loads the pipeliner's)")
    # a load the user gave a hint is the user's: rmsnorm's one shared load, hinted already
    text = kernel_file("12_rmsnorm").source
    load = "w = tl.load(w_ptr + offs, mask=mask, other=0.0)"
    assert load in text
    hinted = text.replace(load, 'w = tl.load(w_ptr + offs, mask=mask, other=0.0, '
                                'cache_modifier=".cg")')
    assert not MemoryAccessStage().applies(KernelFile(hinted)).applies
    # a row read through a name assigned from the program id is no shared vector
    assert MemoryAccessStage().applies(KernelFile(text)).applies
    per_row = text.replace("w_ptr + offs", "w_ptr + row * 0 + offs")
    assert not MemoryAccessStage().applies(KernelFile(per_row)).applies


def test_dtype_keeps_the_loaded_dtype_for_the_dot(checked: Checked) -> None:
    file = kernel_file("02_gemm_gelu")
    assert DtypeStage().applies(file).applies
    both, dots, buffers = DtypeStage().propose(file, B70)
    assert "acc += tl.dot(x, w)" in both.source and "changes rounding" in both.description
    narrowed = "z = torch.empty((M, N), device=x.device, dtype=x.dtype)"
    assert narrowed in both.source and narrowed not in dots.source and narrowed in buffers.source
    assert "acc += tl.dot(x, w)" in dots.source and "acc += tl.dot(x, w)" not in buffers.source
    assert checked("02_gemm_gelu", both.source).passed
    assert DtypeStage().applies(kernel_file("01_gemm_bias_relu")).why == (
        "dtype: not applicable: no tl.dot takes both operands as loaded values cast to "
        "tl.float32; no float32 buffer between two launches")


@pytest.mark.parametrize("name", ["07_gemm_row_max", "09_gemm_logsumexp"])
def test_dtype_narrows_the_float32_buffer_between_launches(name: str, checked: Checked) -> None:
    file = kernel_file(name)
    applies = DtypeStage().applies(file)
    assert applies.why.startswith("dtype: narrow `z` in forward() in x's dtype (written by "
                                  "linear_kernel, ")
    (proposal,) = DtypeStage().propose(file, B70)
    text = proposal.source
    assert "z = torch.empty((M, N), device=x.device, dtype=x.dtype)" in text
    loads = text.count('other=float("-inf")).to(tl.float32)')
    assert loads == (2 if name.startswith("09") else 1)
    # the writer casts what it stores (a block pointer's store, which block_pointers makes of
    # it, takes no implicit cast: the GPU refused the uncast store at stop 37)
    assert "offs_n[None, :] * stride_zn, acc.to(z_ptr.dtype.element_ty)," in text
    assert checked(name, text).passed


@pytest.mark.parametrize(("old", "new", "reason"), [
    # the buffer is returned: the caller would see bf16
    ("        return y\n", "        return y + z.sum() * 0\n", "used at line"),
    # handed to a call that looks like a launch (a subscript called) but launches no kernel
    ("        y = torch.empty((M, 1)", "        [print][0](z)\n        y = torch.empty((M, 1)",
     "used at line"),
    # the buffer is read by torch, not only by the kernels
    ("        y = torch.empty((M, 1)", "        z.relu_()\n        y = torch.empty((M, 1)",
     "used at line"),
])
def test_dtype_leaves_a_buffer_the_host_reads(old: str, new: str, reason: str) -> None:
    text = kernel_file("07_gemm_row_max").source
    assert text.count(old) == 1
    applies = DtypeStage().applies(KernelFile(text.replace(old, new)))
    assert not applies.applies and reason in applies.why, applies.why
    # 05's buffer leaves the helper that allocates it
    why = DtypeStage().applies(kernel_file("05_gemm_swiglu")).why
    assert "`z` in _matmul_nt(): not stored by one launch and only loaded by the others" in why


@pytest.mark.parametrize("name", ["01_gemm_bias_relu", "06_bmm_scale", "02_gemm_gelu",
                                  "05_gemm_swiglu"])
def test_block_pointers_keep_the_outputs(name: str, checked: Checked) -> None:
    file = kernel_file(name)
    (proposal,) = BlockPointersStage().propose(file, B70)
    text = proposal.source
    assert text.count("tl.make_block_ptr(") == 3 and text.count("tl.advance(") == 2
    assert 'boundary_check=(0, 1), padding_option="zero"' in text
    assert checked(name, text).passed


def test_block_pointers_not_applicable_on_row_kernels() -> None:
    verdict = BlockPointersStage().applies(kernel_file("16_softmax"))
    assert not verdict.applies and verdict.why.startswith("block_pointers: not applicable: ")


@pytest.mark.parametrize("name", ["01_gemm_bias_relu", "06_bmm_scale", "16_softmax"])
def test_xe_tuning_proposals_keep_the_outputs(name: str, checked: Checked) -> None:
    file = kernel_file(name)
    proposals = XeTuningStage(SMALL).propose(file, B70)
    assert len(proposals) == 2
    for proposal in proposals:
        text = proposal.source
        if name != "16_softmax":  # a dot kernel: the KB's tile, grf_mode a constexpr
            assert 'grf_mode: tl.constexpr = "default"' in text and "BLOCK_M=256" in text
            assert "triton.cdiv(M, 256)" in text
        assert "num_warps=" in text
        assert checked(name, text).passed, proposal.description
    nvidia = XeTuningStage(SMALL).propose(file, H200)
    assert nvidia and all("grf_mode" not in p.source for p in nvidia)


@pytest.mark.parametrize("name", ["01_gemm_bias_relu", "06_bmm_scale", "16_softmax"])
def test_autotune_every_config_keeps_the_outputs(
        name: str, loaded: Callable[[str], ModuleType], checked: Checked) -> None:
    file = kernel_file(name)
    (proposal,) = AutotuneStage(SMALL).propose(file, B70)
    text = proposal.source
    assert "@triton.autotune(configs=[" in text and "grid = lambda META:" in text or \
        name == "16_softmax"
    assert "num_warps=4)" not in text.split("class ModelNew")[1]
    assert checked(name, text).passed  # every configuration timed by the test double
    module = loaded(text)
    tuner = next(v for v in vars(module).values() if type(v).__name__ == "Autotuner")
    configs = list(tuner.configs)
    # the KB's two and the launch's own: its literal blocks at the B70's launch defaults (4
    # warps, 2 stages: XPUOptions), the third where it is not one of the two (16's 4 warps at
    # 2 stages is the KB's first)
    launched = {"01_gemm_bias_relu": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
                "06_bmm_scale": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}}
    assert len(configs) == (3 if name in launched else 2)
    assert any(c.num_warps == 4 and c.num_stages == 2 and c.kwargs == launched.get(name, {})
               for c in configs)
    for config in configs:  # each configuration alone
        tuner.configs = [config]
        tuner.cache.clear()
        assert forge.check(name, forge.PROBLEMS[name].small_sizes, dtype=torch.float32,
                           kernel=module).passed, config


def test_autotune_not_applicable_says_why() -> None:
    text = kernel_file("01_gemm_bias_relu").source.replace(
        "triton.cdiv(N, 64))", "triton.cdiv(N, 64) * 2)")
    why = AutotuneStage().applies(KernelFile(text)).why
    assert why == ("autotune: not applicable: grid `(triton.cdiv(M, 64), triton.cdiv(N, 64) * "
                   "2)`: the literal 2 is no block the launch binds")


def test_autotune_refuses_a_kernel_that_reads_its_output() -> None:
    """The autotuner reruns the kernel per configuration on the same buffers."""
    text = kernel_file("16_softmax").source.replace("tl.store(y_ptr + row * stride_ym",
                                                    "tl.store(x_ptr + row * stride_xm")
    assert AutotuneStage().applies(KernelFile(text)).why == (
        "autotune: not applicable: kernel `softmax_kernel` loads and stores x_ptr: a rerun per "
        "configuration would read its own output")


def test_attention_tiles_come_from_the_kbs_flash_attention_grid(checked: Checked) -> None:
    """An attention kernel's BLOCK_M (program id 0's block) and BLOCK_N (the key loop's step)
    take the KB's flash-attention tiles; HEAD_DIM=D, no literal, stays the user's."""
    file = kernel_file("19_attention")
    (tuned,) = XeTuningStage(ForgeOptions(max_proposals=1)).propose(file, B70)
    assert "BLOCK_M=128, BLOCK_N=64, HEAD_DIM=D" in tuned.source
    assert "triton.cdiv(L, 128)" in tuned.source
    assert checked("19_attention", tuned.source).passed
    (autotuned,) = AutotuneStage(ForgeOptions(max_configs=1)).propose(file, B70)
    assert "triton.Config({'BLOCK_M': 128, 'BLOCK_N': 64}, num_warps=8, num_stages=2)" in \
        autotuned.source
    assert "grid = lambda META: (triton.cdiv(L, META['BLOCK_M']), B * H)" in autotuned.source
    assert "HEAD_DIM=D)" in autotuned.source
    assert checked("19_attention", autotuned.source).passed
    assert SwizzleStage().applies(file).why == (
        "swizzle: not applicable: grid dim `B * H` is not `triton.cdiv(size, block)` of "
        "attention_kernel's parameters")


def test_the_head_dim_comes_from_the_recorded_launch() -> None:
    """`HEAD_DIM=D` is no literal: the launch recorded at the problem's sizes gives 64 for 19
    and 128 for 21, and the H200's tiles follow it (64 rows at 4 warps at 64, 128 rows at 8
    warps at 128); a file with no attention kernel records nothing."""
    def options(name: str) -> ForgeOptions:
        problem = forge.PROBLEMS[name]
        return with_head_dims(ForgeOptions(max_proposals=1, max_configs=4),
                              problem.kernel_path, problem.problem_path)

    small, large = options("19_attention"), options("21_gqa_attention")
    assert small.head_dims == (("attention_kernel", 64),)
    assert large.head_dims == (("gqa_attention_kernel", 128),)
    assert options("01_gemm_bias_relu").head_dims == ()
    (tuned,) = XeTuningStage(small).propose(kernel_file("19_attention"), H200)
    assert "BLOCK_M=64, BLOCK_N=64, HEAD_DIM=D, num_warps=4" in tuned.source
    (tuned,) = XeTuningStage(large).propose(kernel_file("21_gqa_attention"), H200)
    assert "BLOCK_M=128, BLOCK_N=64" in tuned.source and "num_warps=8" in tuned.source
    (autotuned,) = AutotuneStage(small).propose(kernel_file("19_attention"), H200)
    assert "triton.Config({'BLOCK_M': 64, 'BLOCK_N': 64}, num_warps=4, num_stages=3)" in \
        autotuned.source


def test_autotune_reads_a_grid_indexed_by_a_shape() -> None:
    """`(x.shape[0],)`: the 0 is an index, not a block the grid should read from META."""
    (proposal,) = AutotuneStage(SMALL).propose(kernel_file("18_causal_masked_softmax"), B70)
    assert "causal_softmax_kernel[lambda META: (x.shape[0],)](" in proposal.source
