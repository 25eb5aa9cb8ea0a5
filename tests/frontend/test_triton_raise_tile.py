"""Triton kernels raised past `xt`: to a `tile` kernel and the `ax` function it computes, proved
equal by the verifier; a planted mismatch (a wrong reduction, a wrong offset) is refuted and the
kernel is not raised; what this slice does not read is not raised, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

from axon.forge.source import KernelFile
from axon.forge.stages.analysis import analysable
from axon.frontend.triton import analyse_kernel, parse_triton_source, raise_tile
from axon.frontend.triton.raise_tile import NotRaised, prove_raised, raise_to_ax, raise_to_tile
from axon.frontend.triton.raise_xt import raise_kernel
from axon.frontend.triton.report import launch_constexprs
from axon.tools.embed import parse_mlir
from axon.verifier import ProofBudget, Proved

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "forge" / "kernels"


def xt_of(problem: str, kernel: str):
    """The `xt` function of one kernel of a Forge problem's kernel file."""
    module = analysable(KernelFile.read(KERNELS / f"{problem}.py"))
    jit = module.kernels[kernel]
    return raise_kernel(analyse_kernel(module, jit, launch_constexprs(module, jit)))


def xt_of_text(text: str, kernel: str):
    module = parse_triton_source(text, "user.py")
    return raise_kernel(analyse_kernel(module, kernel))


@pytest.mark.parametrize(("problem", "kernel", "assumptions", "ops"), [
    # elementwise: a chain of maps over BLOCK*pid + lane
    ("24_scale_tanh_residual", "tanh_kernel", [], ["ax.generic"]),
    ("05_gemm_swiglu", "silu_mul_kernel", [], ["ax.generic"]),
    # the tiled GEMM: its K loop accumulating tl.dot is ax.matmul, the epilogue after it
    ("01_gemm_bias_relu", "linear_bias_relu_kernel", [], ["ax.matmul", "ax.generic"]),
    ("02_gemm_gelu", "linear_kernel", [], ["ax.matmul"]),  # acc += tl.dot(...)
    # a row held whole (one block of next_power_of_2(N)): reductions over the dim
    ("17_log_softmax", "log_softmax_kernel", ["BLOCK_N >= N"], ["ax.reduce_max", "ax.sum"]),
    ("10_gemm_softmax", "softmax_kernel", ["BLOCK_N >= N"], ["ax.reduce_max", "ax.sum"]),
    # a float parameter (scale, eps): an input of one element the math reads
    ("24_scale_tanh_residual", "scale_kernel", [], ["ax.generic"]),
    ("03_gemm_swish_scale", "linear_swish_scale_kernel", [], ["ax.matmul", "ax.generic"]),
    ("12_rmsnorm", "rmsnorm_kernel", ["BLOCK_N >= N"], ["ax.sum"]),
    # tl.where on the row's mask (the lanes past N are 0 where the sums read them)
    ("13_add_layernorm", "layernorm_kernel", ["BLOCK_N >= N"], ["ax.sum"]),
    # a loop summing blocks lane by lane, then the lanes: the sum over the dim
    ("08_gemm_sum_scale", "row_sum_scale_kernel", [], ["ax.sum"]),
    # ... and a second loop, carrying nothing, writing the row a block at a time (parallel)
    ("15_l2_normalize", "l2_normalize_kernel", [], ["ax.sum"]),
    # tl.where on a loop block's mask: `BLOCK_N*it + d0 < N` is the whole index's `d0 < N`
    ("11_layernorm", "layernorm_kernel", [], ["ax.sum"]),
])
def test_a_kernel_family_raises_to_ax_with_proof(problem: str, kernel: str,
                                                 assumptions: list[str], ops: list[str]) -> None:
    raised = raise_to_ax(xt_of(problem, kernel))
    assert isinstance(raised.verdict, Proved)
    assert raised.assumptions == assumptions
    # the xt kernel itself is proved too, with none of the raise's steps (embed_xt), except
    # where it reads -inf: the verifier reasons over the reals, the raise's own proof stands
    if problem in ("17_log_softmax", "10_gemm_softmax"):
        assert not raised.xt_proved
        assert "-inf: the verifier reasons over the reals" in str(raised.xt_verdict)
    else:
        assert raised.xt_proved, raised.xt_verdict
    body = [op.name for op in raised.ax.body.block.ops]
    for op in ops:
        assert op in body
    assert "tile.kernel" in raised.tile_text and "xt." not in raised.tile_text


def test_the_gemm_reads_off_as_a_matmul_of_the_whole_tensors() -> None:
    raised = raise_to_ax(xt_of("01_gemm_bias_relu", "linear_bias_relu_kernel"))
    assert "ax.matmul %in0, %in1 : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>)" \
        in raised.ax_text
    assert "tile.for" in raised.tile_text and 'extent = "(BLOCK_K + K - 1) floordiv BLOCK_K"' \
        in raised.tile_text


def test_a_raise_reading_the_wrong_reduction_is_refuted_and_not_raised() -> None:
    func = xt_of("17_log_softmax", "log_softmax_kernel")
    tile, ax, assume = raise_to_tile(func)
    assert isinstance(prove_raised(func, tile, ax, assume).verdict, Proved)
    # the max's choice does not matter (log_softmax is shift-invariant: the verifier proves
    # the read-off with a min too); the sum of exponentials does
    assert isinstance(prove_raised(func, tile, ax.replace("ax.reduce_max", "ax.reduce_min"),
                                   assume).verdict, Proved)
    wrong = ax.replace("ax.sum", "ax.reduce_max")
    with pytest.raises(NotRaised, match="did not prove.*Refuted"):
        prove_raised(func, tile, wrong, assume)


def test_a_raise_reading_the_wrong_offset_is_refuted_and_not_raised() -> None:
    func = xt_of("24_scale_tanh_residual", "tanh_kernel")
    tile, ax, assume = raise_to_tile(func)
    wrong = tile.replace('offsets = ["BLOCK_SIZE*pid0"], shape',
                         'offsets = ["BLOCK_SIZE*pid0 + 1"], shape')
    assert wrong != tile
    with pytest.raises(NotRaised, match="did not prove.*Refuted"):
        prove_raised(func, wrong, ax, assume)


def test_a_dropped_bias_in_the_read_off_is_refuted() -> None:
    func = xt_of("01_gemm_bias_relu", "linear_bias_relu_kernel")
    tile, ax, assume = raise_to_tile(func)
    wrong = ax.replace("in0[d0, d1] + in1[0, d1]", "in0[d0, d1] + 0.0 * in1[0, d1]")
    assert wrong != ax
    with pytest.raises(NotRaised, match="did not prove.*Refuted"):
        prove_raised(func, tile, wrong, assume)


ROW_SUM = """\
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, N, stride_xm, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + offs, mask=offs < N, other=PAD)
    tl.store(y_ptr + row, tl.sum(x, axis=0))
"""


def test_a_row_sum_held_whole_raises_where_its_pad_is_the_sums_identity() -> None:
    raised = raise_to_ax(xt_of_text(ROW_SUM.replace("PAD", "0.0"), "row_sum_kernel"))
    assert raised.assumptions == ["BLOCK_N >= N"]
    assert "ax.sum %in0 {axes = array<i64: 1>" in raised.ax_text


def test_a_row_sum_whose_padded_lanes_reach_the_sum_is_not_raised() -> None:
    with pytest.raises(NotRaised, match="lanes past the dim's size hold 1.0 where the add "
                                        "needs 0.0"):
        raise_to_tile(xt_of_text(ROW_SUM.replace("PAD", "1.0"), "row_sum_kernel"))


@pytest.mark.parametrize(("problem", "kernel", "ops"), [
    ("07_gemm_row_max", "row_max_kernel", ["ax.reduce_max"]),
    ("09_gemm_logsumexp", "row_logsumexp_kernel", ["ax.reduce_max", "ax.sum"]),
    ("16_softmax", "softmax_kernel", ["ax.reduce_max", "ax.sum"]),
])
def test_a_running_max_of_blocks_raises_with_proof(problem: str, kernel: str,
                                                   ops: list[str]) -> None:
    """`running = tl.maximum(running, x)` from -inf over a loop's blocks of a load padding
    with -inf, then `tl.max(running)`: the max over the dim. The tile's loop starts at its
    first step and takes the block's first lane in place of the lanes past the end; a later
    pass's `exp(x - m)` of the same -inf-padded load holds 0 there (IEEE), selected in."""
    raised = raise_to_ax(xt_of(problem, kernel))
    assert isinstance(raised.verdict, Proved) and raised.assumptions == []
    assert all(op in raised.ax_text for op in ops)
    assert "select((idx(BLOCK_N*0 + d0) < idx(N)), in0[d0], in0[0])" in raised.tile_text
    assert "float('-inf')" not in raised.tile_text and "inf" not in raised.tile_text
    if "ax.sum" in ops:  # the second pass's exp(x - m) is 0 past the end, as the user's
        assert "in0[d0], 0.0)" in raised.tile_text


@pytest.mark.parametrize(("old", "new"), [
    ("in0[d0], in0[0])", "in0[d0], 0.0)"),  # lanes past the end as 0: a max of negatives
    ("max(in0[d0], in1[d0])", "min(in0[d0], in1[d0])"),  # the wrong running extremum
])
def test_a_running_max_planted_wrong_is_refuted(old: str, new: str) -> None:
    func = xt_of("07_gemm_row_max", "row_max_kernel")
    tile, ax, assume = raise_to_tile(func)
    assert old in tile
    with pytest.raises(NotRaised, match="did not prove.*Refuted"):
        prove_raised(func, tile.replace(old, new), ax, assume)


def test_a_softmax_pass_past_the_end_planted_wrong_is_refuted() -> None:
    func = xt_of("09_gemm_logsumexp", "row_logsumexp_kernel")
    tile, ax, assume = raise_to_tile(func)
    assert "in0[d0], 0.0)" in tile
    with pytest.raises(NotRaised, match="did not prove.*Refuted"):
        prove_raised(func, tile.replace("in0[d0], 0.0)", "in0[d0], 1.0)"), ax, assume)


RUNNING = """\
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(z_ptr, y_ptr, N, stride_zm, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    running = tl.full((BLOCK_N,), START, dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        z = tl.load(z_ptr + row * stride_zm + offs, mask=offs < N, other=PAD)
        running = tl.maximum(running, z)
    tl.store(y_ptr + row, RESULT)
"""


@pytest.mark.parametrize(("start", "pad", "result", "why"), [
    # the user's lanes past the end hold 0.0: the max of a row of negatives is 0 there
    ("float('-inf')", "0.0", "tl.max(running, axis=0)", "padded with a real"),
    # a running max from 0.0 is max(0, row max): not the running max this raise reads
    ("0.0", "float('-inf')", "tl.max(running, axis=0)",
     "takes a running max from a start that is not -inf"),
    # the lanes themselves read (tile lanes past the end are not the user's -inf)
    ("float('-inf')", "float('-inf')", "tl.sum(running * 2.0, axis=0)",
     "running max's .*lanes are read other than by the max"),
    # the min of a running max's lanes
    ("float('-inf')", "float('-inf')", "tl.min(running, axis=0)",
     "a min of the lanes of a loop's running max"),
])
def test_a_running_max_the_raise_does_not_read_is_not_raised(start: str, pad: str,
                                                             result: str, why: str) -> None:
    text = RUNNING.replace("START", start).replace("PAD", pad).replace("RESULT", result)
    with pytest.raises(NotRaised, match=why):
        raise_to_tile(xt_of_text(text, "row_max_kernel"))


def test_a_pass_writing_blocks_is_a_parallel_loop_and_a_float_parameter_an_input() -> None:
    raised = raise_to_ax(xt_of("15_l2_normalize", "l2_normalize_kernel"))
    assert 'kind = "parallel"' in raised.tile_text
    types = [str(t) for t in raised.ax.function_type.inputs.data]
    assert types == ["f32[G0, N]", "f32[1]"]  # x, then eps


def test_a_loop_sum_read_off_with_the_wrong_scale_is_refuted() -> None:
    func = xt_of("08_gemm_sum_scale", "row_sum_scale_kernel")
    tile, ax, assume = raise_to_tile(func)
    wrong = ax.replace("* in1[0]", "* 2.0 * in1[0]")
    assert wrong != ax
    with pytest.raises(NotRaised, match="did not prove.*Refuted"):
        prove_raised(func, tile, wrong, assume)


def test_a_loop_blocks_mask_in_the_math_reads_off_in_whole_coordinates() -> None:
    raised = raise_to_ax(xt_of("11_layernorm", "layernorm_kernel"))
    assert "select((idx(BLOCK_N*n0_iter_1 + d0) < idx(N)), in0[d0], 0.0)" in raised.tile_text
    assert "out[p0 < G0, d0 < N] = select((idx(d0) < idx(N)), in0[p0, d0], 0.0)" \
        in raised.ax_text


ROW_MATH = """\
import triton
import triton.language as tl


@triton.jit
def row_math_kernel(x_ptr, y_ptr, N, stride_xm, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + offs, mask=offs < N, other=PAD)
    tl.store(y_ptr + row, tl.sum(MATH, axis=0))
"""


def row_math(pad: str, math: str):
    return xt_of_text(ROW_MATH.replace("PAD", pad).replace("MATH", math), "row_math_kernel")


def test_a_pad_zero_at_the_lanes_the_old_check_sampled_but_not_at_all_is_not_raised() -> None:
    # 0 at lanes N, N + 1 and N + 3 past the row (the sampling's), -2 at N + 2: the sum reads it
    func = row_math("0.0", "x + (offs - N) * (offs - N - 1) * (offs - N - 3)")
    with pytest.raises(NotRaised, match="hold a value not proved constant .*z3 finds it "
                                        "varying.* where the add needs 0.0"):
        raise_to_tile(func)


def test_a_pad_zero_at_the_operand_values_the_old_check_sampled_is_not_raised() -> None:
    # b * (b + 2.5) * (b - 1.75) * (b - 3000) is 0 at the four values the sampling took
    text = str(xt_of_text(ROW_SUM.replace("PAD", "0.0").replace(
        "x_ptr, y_ptr", "x_ptr, b_ptr, y_ptr").replace(
        "    tl.store", "    b = tl.load(b_ptr + row)\n    x = x + b\n    tl.store"),
        "row_sum_kernel"))
    form = "out[d0 < BLOCK_N] = in0[d0] + in1[0]"
    assert form in text
    planted = text.replace(form, "out[d0 < BLOCK_N] = in0[d0] + in1[0] * (in1[0] + 2.5) * "
                                 "(in1[0] - 1.75) * (in1[0] - 3000.0)")
    (func,) = parse_mlir(planted, "<planted>").ops
    assert isinstance(func, FuncOp)
    with pytest.raises(NotRaised, match="hold a value not proved constant .* where the add "
                                        "needs 0.0"):
        raise_to_tile(func)


def test_a_pad_a_select_on_the_mask_decides_is_proved() -> None:
    # the lanes past N hold 1.0 + 1.0, but tl.where drops them: the facts decide the mask
    raised = raise_to_ax(row_math("1.0", "tl.where(offs < N, x + 1.0, 0.0)"))
    assert raised.assumptions == ["BLOCK_N >= N"]


def test_an_infinite_pad_is_carried_only_where_ieee_settles_it() -> None:
    # exp(-inf - m) is 0 for every real m; -inf * x has no one value (x may be 0 or negative)
    raise_to_ax(row_math("float('-inf')", "tl.exp(x - tl.max(x, axis=0))"))
    with pytest.raises(NotRaised, match="an infinity times a value not proved a nonzero"):
        raise_to_tile(row_math("float('-inf')", "x * tl.max(x, axis=0)"))
    # over the verifier's reals 0 * (1 / 0) is 0; IEEE gives NaN, so a pad divided by 0 is not read
    with pytest.raises(NotRaised, match="div of 0, 0 has no real value"):
        raise_to_tile(row_math("0.0", "x * 0.0 / x"))


TWO_WHOLE = """\
import triton
import triton.language as tl


@triton.jit
def rows_kernel(x_ptr, b_ptr, y_ptr, M, N, stride_xm, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :],
                mask=(offs_m[:, None] < M) & (offs_n[None, :] < N), other=0.0)
    b = tl.load(b_ptr + offs_m, mask=offs_m < M, other=0.0)
    tl.store(y_ptr + offs_m, tl.sum(MATH, axis=1), mask=offs_m < M)
"""


def test_a_pad_is_proved_past_each_dim_held_whole_apart() -> None:
    # past N and inside M, x + b holds b[m], not 0: the sum over N reads it
    with pytest.raises(NotRaised, match="hold a value not proved constant"):
        raise_to_tile(xt_of_text(TWO_WHOLE.replace("MATH", "x + b[:, None]"), "rows_kernel"))
    raised = raise_to_ax(xt_of_text(TWO_WHOLE.replace("MATH", "x * b[:, None]"), "rows_kernel"))
    assert raised.assumptions == ["BLOCK_M >= M", "BLOCK_N >= N"]


def test_a_pad_proof_out_of_budget_is_not_admitted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(raise_tile, "PAD_BUDGET", ProofBudget(steps=1, rlimit=1, seconds=10.0))
    with pytest.raises(NotRaised, match="not proved constant .*ran out of its budget"):
        raise_to_tile(row_math("1.0", "tl.where(offs < N, x + 1.0, 0.0)"))
