"""The tiled cost model: HBM traffic under the tiling (re-reads across programs, served by L2 on
a GPU only while the reused working set fits), on-chip capacity, flops and modeled time."""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType

import pytest
from xdsl.dialects.func import FuncOp

from axon.dialects.tile import KernelOp
from axon.targets.profiles import DeviceProfile, Quantity, load_profile
from axon.tiling.cost import (
    KernelPlan,
    _Traffic,
    default_warps,
    kernel_cost,
    warp_counts,
    warps_to_fit,
)
from axon.tiling.kernels import Tiling, tile_function
from axon.tools.embed import parse_mlir

MiB = 1 << 20
H200, TRN2 = load_profile("h200"), load_profile("trn2")


def cube(n: int, **params: int) -> dict[str, int]:
    return {"M": n, "N": n, "K": n, **params}


@pytest.mark.parametrize(("profile", "space", "bm", "bn", "onchip"), [
    (H200, "registers", 64, 64, 2 * 64 * 64 * 4),  # the sum takes x's registers
    (TRN2, "sbuf", 128, 512, 2 * 512 * 4),  # per partition
], ids=["h200", "trn2"])
def test_an_elementwise_add_moves_its_compulsory_bytes(
        tile_kernels: ModuleType, profile: DeviceProfile, space: str, bm: int, bn: int,
        onchip: int) -> None:
    kernel = tile_kernels.elementwise_add("f32", space)
    cost = kernel_cost(kernel, {"M": 1024, "N": 1024, "BM": bm, "BN": bn}, profile)
    assert cost.compulsory_bytes == 3 * 4 * MiB  # x and y read once, the sum written once
    assert cost.hbm_bytes == cost.compulsory_bytes  # no tile is read twice
    assert cost.programs == (1024 // bm) * (1024 // bn) and cost.fits
    assert dict(cost.onchip_bytes) == {space: onchip}
    assert cost.flops == 1024 * 1024


@pytest.mark.parametrize(("n", "block"), [(256, 32), (100, 32), (96, 64)])
def test_a_neuron_core_reloads_every_tile_each_time_a_program_needs_it(
        tile_kernels: ModuleType, n: int, block: int) -> None:
    kernel = tile_kernels.matmul("bf16", "sbuf", "psum")
    cost = kernel_cost(kernel, cube(n, BM=block, BN=block, BK=block), TRN2)
    tiles = -(-n // block)
    # x is read once per column of programs, w once per row of them (remainder tiles clipped)
    assert cost.hbm_bytes == tiles * n * n * 2 + tiles * n * n * 2 + n * n * 2
    assert cost.compulsory_bytes == 3 * n * n * 2
    assert cost.matrix_flops == 2 * (tiles * block) ** 3  # remainder tiles compute whole


def test_the_4096_cube_matmul_on_h200_is_near_compulsory_when_l2_holds_the_reused_operand(
        tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16")
    cost = kernel_cost(kernel, cube(4096, BM=128, BN=128, BK=64), H200)
    assert cost.compulsory_bytes == 96 * MiB
    assert cost.hbm_bytes <= 1.2 * cost.compulsory_bytes
    # two programs per SM (96 KiB of registers each): 1024 programs in 4 waves of 264
    assert cost.programs == 1024 and cost.waves == 4
    assert cost.onchip_bytes["registers"] == 2 * 128 * 128 * 2 + 2 * 128 * 64 * 2
    assert cost.matrix_flops == 2 * 4096 ** 3
    assert cost.seconds >= cost.matrix_flops / H200.roofline.matrix_flops.value


def test_without_room_in_l2_the_reused_operand_comes_from_hbm_once_per_wave(
        tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16")
    # w of 128 MiB is more than L2's 60 MiB: every wave reads it again
    wide = kernel_cost(kernel, {"M": 4096, "N": 16384, "K": 4096, "BM": 128, "BN": 128,
                                "BK": 64}, H200)
    assert wide.hbm_bytes > 1.2 * wide.compulsory_bytes
    # the same 4096 cube on an H200 with an 8 MiB L2: w (32 MiB) no longer stays resident
    assert H200.memory is not None
    small = replace(H200, memory=replace(H200.memory, l2_bytes=Quantity(8 * MiB, "test")))
    cost = kernel_cost(kernel, cube(4096, BM=128, BN=128, BK=64), small)
    assert cost.hbm_bytes > 1.2 * cost.compulsory_bytes
    # each of the 4 waves covers all of w's columns: 4 reads of w, x and the result once
    assert cost.hbm_bytes == pytest.approx(4 * 32 * MiB + 32 * MiB + 32 * MiB, rel=0.05)


def test_a_program_over_the_register_file_does_not_fit(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16")
    sizes = cube(4096, BM=256, BN=256, BK=64)
    cost = kernel_cost(kernel, sizes, H200)
    assert not cost.fits and cost.warps == 4  # Triton's default
    # 4 warps of 32 threads hold 255 4-byte registers each
    assert cost.why_not == "registers needs 327680 bytes per program; h200 has 130560 at 4 warps"
    # no warp count helps: a program holds at most 64K registers (256 KiB)
    widest = kernel_cost(kernel, sizes, H200, warps=32)
    assert widest.why_not == ("registers needs 327680 bytes per program; h200 has 262144 at "
                              "32 warps")
    assert warps_to_fit(327680, H200) is None


def test_a_big_tile_needs_more_warps_to_fit_its_registers(tile_kernels: ModuleType) -> None:
    # a 128 x 256 fp32 accumulator alone is 128 KiB: over 4 warps' 127.5 KiB of registers
    kernel = tile_kernels.matmul("bf16")
    sizes = cube(4096, BM=128, BN=256, BK=64)
    four = kernel_cost(kernel, sizes, H200, warps=4)
    eight = kernel_cost(kernel, sizes, H200, warps=8)
    assert not four.fits and four.why_not is not None and "at 4 warps" in four.why_not
    assert eight.fits and eight.warps == 8
    need = eight.onchip_bytes["registers"]
    assert 4 * 32 * 1020 < need <= 8 * 32 * 1020 and warps_to_fit(need, H200) == 8
    # the warps change where the tiles live, not what the launch moves or computes
    assert (four.onchip_bytes, four.flops, four.programs) == \
        (eight.onchip_bytes, eight.flops, eight.programs)


def test_a_small_tile_does_not_gain_from_more_warps(tile_kernels: ModuleType) -> None:
    # one row of 64 elements a program: 4 warps leave half their 128 lanes idle, 8 warps three
    # quarters of 256, and an SM holds 64 warps: 16 programs of 4, 8 of 8
    kernel = tile_kernels.elementwise_add("f32")
    sizes = {"M": 4096, "N": 64, "BM": 1, "BN": 64}
    by_warps = {w: kernel_cost(kernel, sizes, H200, warps=w) for w in (1, 2, 4, 8)}
    assert all(c.fits for c in by_warps.values())
    # memory-bound: the idle lanes cost no time here, and more warps never save any
    seconds = [by_warps[w].seconds for w in (1, 2, 4, 8)]
    assert seconds == sorted(seconds)
    assert by_warps[8].waves > by_warps[4].waves > by_warps[2].waves
    assert by_warps[4].waves == -(-4096 // (132 * 16))
    # the default is what a call without warps prices
    assert kernel_cost(kernel, sizes, H200) == by_warps[4]


def test_a_neuron_core_has_no_warps(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.elementwise_add("f32", "sbuf")
    cost = kernel_cost(kernel, {"M": 1024, "N": 1024, "BM": 128, "BN": 512}, TRN2)
    assert cost.warps is None and warp_counts(TRN2) == () and default_warps(TRN2) is None
    assert warp_counts(H200) == (1, 2, 4, 8, 16, 32) and default_warps(H200) == 4


def test_a_row_over_one_sbuf_partition_does_not_fit(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.row_softmax("sbuf")
    fits = kernel_cost(kernel, {"M": 1024, "N": 8192, "BM": 128}, TRN2)
    # in place: the block of rows, and one [BM, 1] column beside it
    assert fits.fits and fits.onchip_bytes["sbuf"] == 8192 * 4 + 4
    wide = kernel_cost(kernel, {"M": 1024, "N": 65536, "BM": 128}, TRN2)
    assert not wide.fits and wide.why_not is not None
    assert wide.why_not.startswith("sbuf needs ") and "per partition; trn2 has 212984" in (
        wide.why_not)
    tall = kernel_cost(kernel, {"M": 1024, "N": 512, "BM": 256}, TRN2)
    assert tall.why_not == "a tile [256, 512] f32 in sbuf spans 256 partitions; the core has 128"


def test_a_matmul_past_the_moving_free_limit_does_not_fit_on_trn2(
        tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16", "sbuf", "psum")
    cost = kernel_cost(kernel, cube(4096, BM=128, BN=1024, BK=128), TRN2)
    assert cost.why_not == "ax.matmul moving free size 1024 > 512 on trn2"
    good = kernel_cost(kernel, cube(4096, BM=128, BN=512, BK=128), TRN2)
    # PSUM holds the accumulator and the product in fp32: 2 x 512 x 4 bytes a partition
    assert good.fits and good.onchip_bytes["psum"] == 2 * 512 * 4
    assert good.onchip_bytes["sbuf"] == 128 * 2 + 512 * 2


def test_a_tile_in_a_space_the_profile_lacks_does_not_fit(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.elementwise_add("f32", "sbuf")
    cost = kernel_cost(kernel, {"M": 256, "N": 256, "BM": 64, "BN": 64}, H200)
    assert cost.why_not == ("a tile in space 'sbuf', which profile h200 does not have "
                            "(registers, shared)")


def test_a_grid_smaller_than_the_cores_leaves_them_idle(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.elementwise_add("f32")
    one = kernel_cost(kernel, {"M": 4096, "N": 4096, "BM": 4096, "BN": 16}, H200)
    many = kernel_cost(kernel, {"M": 4096, "N": 4096, "BM": 16, "BN": 16}, H200)
    assert one.programs == 256 and many.programs == 256 * 256
    # 256 programs on 132 SMs take two rounds: about 97% of the cores busy
    assert one.seconds > many.seconds


@pytest.mark.parametrize(("rows", "cols", "group"), [(5, 7, 2), (8, 3, 3), (4, 4, 8), (9, 1, 4)])
def test_a_grouped_window_counts_the_ids_the_swizzled_programs_have(
        tile_kernels: ModuleType, rows: int, cols: int, group: int) -> None:
    # Triton's GROUP_SIZE_M order, program by program, against the counts the model uses
    def ids(pid: int) -> tuple[int, int]:
        per_group = group * cols
        first_row = (pid // per_group) * group
        height = min(rows - first_row, group)
        return first_row + (pid % per_group) % height, (pid % per_group) // height

    kernel = tile_kernels.elementwise_add("f32")
    sizes = {"M": rows, "N": cols, "BM": 1, "BN": 1}
    plan = KernelPlan.of(kernel)
    traffic = _Traffic(plan, sizes, [rows, cols], {"i": rows, "j": cols}, [], 1, group)
    total = rows * cols
    for first in range(total):
        for last in range(first + 1, total + 1):
            seen = [ids(p) for p in range(first, last)]
            want = {"i": len({r for r, _ in seen}), "j": len({c for _, c in seen})}
            assert traffic.grouped_window(first, last) == want, (first, last)


def test_a_loop_of_more_iterations_costs_more_on_a_gpu(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16")
    latency = H200.roofline.loop_iteration_s
    assert latency is not None and latency.estimate
    short, long = (kernel_cost(kernel, cube(1024, BM=64, BN=128, BK=bk), H200)
                   for bk in (64, 16))
    # one wave of 128 programs, K / BK iterations each
    assert (short.waves, short.iterations, long.waves, long.iterations) == (1, 16, 1, 64)
    assert long.seconds > 1.05 * short.seconds  # outside the ranking's tie band
    # BK = 16: the 64 iterations' latency is the time; BK = 64: the roofline's is
    overhead = H200.roofline.op_overhead_s.value
    assert long.seconds == pytest.approx(overhead + 64 * latency.value)
    assert short.seconds > overhead + 16 * latency.value


def test_without_a_loop_latency_the_cost_is_the_roofline_alone(
        tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16")
    plain = replace(H200, roofline=replace(H200.roofline, loop_iteration_s=None))
    costs = [kernel_cost(kernel, cube(1024, BM=64, BN=128, BK=bk), plain) for bk in (16, 64)]
    # the iterations are still counted, but no longer priced: both tiles move and compute alike
    assert [c.iterations for c in costs] == [64, 16]
    assert costs[0].seconds == costs[1].seconds
    with_latency = kernel_cost(kernel, cube(1024, BM=64, BN=128, BK=64), H200)
    assert with_latency.seconds == costs[1].seconds  # a floor that does not bind changes nothing
    # the NeuronCores' profiles have no such term: their costs are as before it was added
    assert TRN2.roofline.loop_iteration_s is None
    assert load_profile("trn1").roofline.loop_iteration_s is None


def test_nested_loops_multiply_their_iterations_and_sequential_ones_add() -> None:
    x, w, h = ("!ax.tensor<[M, K], f32>", "!ax.tensor<[K, F], f32>",
               "!ax.tensor<[M, F], f32>")
    d, y = "!ax.tensor<[F, N], f32>", "!ax.tensor<[M, N], f32>"
    text = f"""
func.func @mlp(%x: {x}, %w1: {w}, %w3: {d}) -> {y} {{
  %0 = ax.matmul %x, %w1 : ({x}, {w}) -> {h}
  %1 = ax.matmul %0, %w3 : ({h}, {d}) -> {y}
  func.return %1 : {y}
}}
"""
    (func,) = (op for op in parse_mlir(text, "f.mlir").ops if isinstance(op, FuncOp))
    tiled = tile_function(func, Tiling("M", "N", "F", inner="K"), "registers", "registers")
    kernel = next(op for op in tiled.walk() if isinstance(op, KernelOp))
    sizes = {"M": 1024, "K": 512, "F": 2048, "N": 1024, "BM": 64, "BN": 64, "BK": 64,
             "BL": 32}
    plan = KernelPlan.of(kernel)
    assert len(plan.loops) == 2 and plan.loops[1].outer == (0,)
    # F / BK iterations of the outer loop, each running K / BL of the inner one
    assert [loop.extent.evaluate(sizes) for loop in plan.loops] == [32, 16]
    assert plan.cost(sizes, H200).iterations == 32 + 32 * 16


RMS = "!ax.tensor<[M, N], f32>"
RMSNORM = f"""
func.func @rmsnorm(%x: {RMS}) -> {RMS} {{
  %s = ax.generic %x {{form = "out[d0 < M] = add over r0 in [0, N) of in0[d0, r0] * in0[d0, r0]",
                      dtype = f32}} : ({RMS}) -> !ax.tensor<[M], f32>
  %y = ax.generic %x, %s {{dtype = f32,
      form = "out[d0 < M, d1 < N] = in0[d0, d1] * rsqrt(in1[d0] / idx(N) + 1e-06)"}}
      : ({RMS}, !ax.tensor<[M], f32>) -> {RMS}
  func.return %y : {RMS}
}}
"""


def rmsnorm_kernel(tiling: Tiling) -> KernelOp:
    (func,) = (op for op in parse_mlir(RMSNORM, "f.mlir").ops if isinstance(op, FuncOp))
    tiled = tile_function(func, tiling, "registers", "registers")
    return next(op for op in tiled.walk() if isinstance(op, KernelOp))


def test_a_loop_without_a_dot_waits_for_its_loads_on_a_gpu() -> None:
    # a two-pass row normalization over K blocks: its loops hold no contraction, so Triton does
    # not pipeline their loads and each iteration takes the memory latency
    kernel = rmsnorm_kernel(Tiling("M", None, "N", write_pass=True))
    unpipelined = H200.roofline.unpipelined_loop_iteration_s
    pipelined = H200.roofline.loop_iteration_s
    assert unpipelined is not None and pipelined is not None
    assert unpipelined.value > 2 * pipelined.value
    sizes = {"M": 4096, "N": 4096, "BM": 32, "BK": 128}
    cost = kernel_cost(kernel, sizes, H200, warps=4)
    # 128 programs in one wave, two passes of 32 blocks each
    assert (cost.programs, cost.waves, cost.iterations) == (128, 1, 64)
    overhead = H200.roofline.op_overhead_s.value
    assert cost.seconds == pytest.approx(overhead + 64 * unpipelined.value)
    # without the unpipelined figure such loops fall back to the pipelined one
    plain = replace(H200, roofline=replace(H200.roofline, unpipelined_loop_iteration_s=None))
    assert kernel_cost(kernel, sizes, plain, warps=4).seconds < cost.seconds
    # the whole-row kernel has no loop: many programs, priced at the bandwidth
    rows = kernel_cost(rmsnorm_kernel(Tiling("M")), {"M": 4096, "N": 4096, "BM": 1}, H200,
                       warps=8)
    assert rows.iterations == 0 and rows.seconds < cost.seconds / 2


def test_a_row_reduction_keeps_every_thread_busy_whatever_its_result_size() -> None:
    # a row sum over [1, 4096] reduces 4096 elements: more warps spread them, they do not
    # multiply its work by the threads idle on its [1] result
    kernel = rmsnorm_kernel(Tiling("M"))
    sizes = {"M": 4096, "N": 4096, "BM": 1}
    seconds = [kernel_cost(kernel, sizes, H200, warps=w).seconds for w in (2, 4, 8)]
    assert seconds[0] == pytest.approx(seconds[1]) == pytest.approx(seconds[2])


COLUMNS = "!ax.tensor<[M, N], bf16>"
COLUMN_SUM = f"""
func.func @colsum(%x: {COLUMNS}) -> !ax.tensor<[N], f32> {{
  %s = ax.generic %x {{form = "out[d0 < N] = add over r0 in [0, M) of in0[r0, d0]",
                      dtype = f32}} : ({COLUMNS}) -> !ax.tensor<[N], f32>
  func.return %s : !ax.tensor<[N], f32>
}}
"""


def test_a_tile_narrower_than_a_sector_loads_whole_sectors_from_l2() -> None:
    # a column sum of a row-major [4096, 4096] bf16 tiled by column blocks of BM: each of a
    # program's 4096 tile rows is BM x 2 bytes of one row, and L2 moves 32-byte sectors
    (func,) = (op for op in parse_mlir(COLUMN_SUM, "f.mlir").ops if isinstance(op, FuncOp))
    tiled = tile_function(func, Tiling("N"), "registers", "registers")
    kernel = next(op for op in tiled.walk() if isinstance(op, KernelOp))
    assert H200.memory is not None and H200.memory.sector_bytes is not None
    assert H200.memory.sector_bytes.value == 32
    loaded = {bm: kernel_cost(kernel, {"M": 4096, "N": 4096, "BM": bm}, H200, warps=8)
              for bm in (1, 2, 16, 64)}
    x = 4096 * 4096 * 2
    assert [loaded[bm].loaded_bytes for bm in (1, 2, 16, 64)] == [16 * x, 8 * x, x, x]
    # from HBM once: a wave's programs share the sectors (the sums' 4096 f32 written once)
    assert loaded[1].hbm_bytes == loaded[16].hbm_bytes == x + 4096 * 4
    assert loaded[1].seconds > 4 * loaded[16].seconds
    # without the sector the model takes the one-column tile for free (what it used to)
    flat = replace(H200, memory=replace(H200.memory, sector_bytes=None))
    assert kernel_cost(kernel, {"M": 4096, "N": 4096, "BM": 1}, flat, warps=8).loaded_bytes == x
