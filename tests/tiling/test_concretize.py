"""Concretization: the tile sizes a profile admits, checked against the kernel's assumptions and
capacities, ranked by the tiled cost model, the best few kept."""

from __future__ import annotations

from types import ModuleType

import pytest

from axon.targets.profiles import load_profile
from axon.tiling import concretize as concretize_module
from axon.tiling.concretize import concretize, parameter_values
from axon.tiling.cost import KernelCost, KernelPlan, kernel_cost, warps_to_fit

H200, TRN2 = load_profile("h200"), load_profile("trn2")
CUBE = {"M": 4096, "N": 4096, "K": 4096}


def test_h200_candidates_are_powers_of_two_from_16_ranked_by_time(
        tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16")
    found = concretize(kernel, CUBE, H200, top_k=5)
    assert len(found) == 5
    for c in found:
        assert c.cost.fits
        assert c.params["GROUP_M"] in (1, 4, 8, 16)  # the launch order, priced too
        assert c.params["num_warps"] in (1, 2, 4, 8, 16, 32)  # and the warps
        for name, value in c.params.items():
            assert name in ("GROUP_M", "num_warps") or (value >= 16 and value & (value - 1) == 0)
    seconds = [c.cost.seconds for c in found]
    assert seconds == sorted(seconds)
    best = found[0].cost
    assert best.hbm_bytes <= 1.2 * best.compulsory_bytes
    assert parameter_values(KernelPlan.of(kernel), "BM", CUBE, H200) == [
        16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


def test_only_candidates_meeting_the_assumptions_are_kept(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16", assume='"BM >= 1", "BN >= 1", "BK >= 1", '
                                                 '"BK <= 32", "BM mod BN == 0"')
    found = concretize(kernel, CUBE, H200, top_k=20)
    assert found
    assert all(c.params["BK"] <= 32 and c.params["BM"] % c.params["BN"] == 0 for c in found)
    impossible = tile_kernels.matmul("bf16", assume='"BM >= 1", "BM >= 100000"')
    assert concretize(impossible, CUBE, H200) == []


def test_top_k_is_respected(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16")
    one = concretize(kernel, CUBE, H200, top_k=1)
    three = concretize(kernel, CUBE, H200)
    assert len(one) == 1 and len(three) == 3
    assert one[0] == three[0]


def test_trn2_candidates_meet_the_partition_and_matmul_limits(tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.matmul("bf16", "sbuf", "psum")
    sizes = {"M": 96, "N": 4096, "K": 4096}
    plan = KernelPlan.of(kernel)
    # BM is a tile's partition dim: at most 128, and 96 (the whole of M) is tried
    assert parameter_values(plan, "BM", sizes, TRN2) == [1, 2, 4, 8, 16, 32, 64, 96, 128]
    found = concretize(kernel, sizes, TRN2, top_k=10)
    assert found
    for c in found:
        assert c.params["BM"] <= 128 and c.params["BK"] <= 128 and c.params["BN"] <= 512
    best = found[0]
    # one program for all 96 rows, the widest moving tile: w read once, x once per column
    assert best.params["BM"] in (96, 128) and best.params["BN"] == 512
    assert best.cost.hbm_bytes == 8 * 96 * 4096 * 2 + 4096 * 4096 * 2 + 96 * 4096 * 2


def test_the_enumeration_is_bounded(tile_kernels: ModuleType,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    priced: list[dict[str, int]] = []
    orders: list[int] = []
    original = KernelPlan.cost

    def counting(self: KernelPlan, sizes: dict[str, int], profile: object,
                 group: int = 1, warps: int | None = None) -> KernelCost:
        priced.append(dict(sizes))
        orders.append(group)
        return original(self, sizes, profile, group, warps)  # type: ignore[arg-type]

    monkeypatch.setattr(KernelPlan, "cost", counting)
    monkeypatch.setattr(concretize_module, "MAX_COMBINATIONS", 40)
    found = concretize(tile_kernels.matmul("bf16"), CUBE, H200)
    # 40 tile-size combinations, then for each of the best 16 the 6 warp counts in row-major
    # order and the 3 other launch orders at its best count
    assert 0 < len(priced) <= 40 + 16 * (6 + 3) and found
    assert set(orders) == {1, 4, 8, 16}
    # the thinned lists keep their ends: the smallest and the largest block are still tried
    assert {p["BM"] for p in priced} >= {16, 4096}


def test_a_gpu_elementwise_block_may_be_small_but_the_best_fills_a_program(
        tile_kernels: ModuleType) -> None:
    kernel = tile_kernels.elementwise_add("bf16")
    sizes = {"M": 4096, "N": 4096}
    # no dot: a block may be one row; the dims of a dot's operands start at 16 (above)
    assert parameter_values(KernelPlan.of(kernel), "BM", sizes, H200)[0] == 1
    best = concretize(kernel, sizes, H200, top_k=1)[0]
    # 128 threads work in lock step, and equal times go to fewer programs: never a sliver
    assert best.params["BM"] * best.params["BN"] >= 128
    assert best.cost.programs <= 4096 * 4096 // 128


def test_a_grouped_launch_order_keeps_the_reused_operand_in_l2(tile_kernels: ModuleType) -> None:
    # x @ w with w (128 MiB) beyond L2: row-major order re-reads it from HBM every wave;
    # programs in groups of 8 rows share a few of w's columns at a time
    kernel = tile_kernels.matmul("bf16")
    sizes = {"M": 4096, "N": 16384, "K": 4096, "BM": 128, "BN": 128, "BK": 64}
    row_major = kernel_cost(kernel, sizes, H200, group=1)
    grouped = kernel_cost(kernel, sizes, H200, group=8)
    assert row_major.hbm_bytes > 5 * row_major.compulsory_bytes
    assert grouped.hbm_bytes <= 1.2 * grouped.compulsory_bytes
    assert row_major.flops == grouped.flops  # the order changes no work
    best = concretize(kernel, {"M": 4096, "N": 16384, "K": 4096}, H200, top_k=1)[0]
    assert best.params["GROUP_M"] > 1
    assert best.cost.hbm_bytes <= 1.2 * best.cost.compulsory_bytes


def test_a_size_named_like_the_launch_order_stays_a_size(tile_kernels: ModuleType) -> None:
    # the launch order is an argument of the cost, never read from the sizes
    kernel = tile_kernels.matmul("bf16")
    sizes = {"M": 4096, "N": 16384, "K": 4096, "BM": 128, "BN": 128, "BK": 64}
    assert kernel_cost(kernel, {**sizes, "GROUP_M": 8}, H200) == kernel_cost(kernel, sizes, H200)


def test_a_big_tile_gets_the_warps_its_registers_need(tile_kernels: ModuleType) -> None:
    # the 4096 cube's best tile, 128 x 256 with a bf16 K tile of 128, holds 224 KiB of tiles:
    # over 4 warps' 127.5 KiB of registers (Triton's default), within 8 warps'
    found = concretize(tile_kernels.matmul("bf16"), CUBE, H200, top_k=10)
    assert found
    for c in found:
        need = c.cost.onchip_bytes["registers"]
        assert c.params["num_warps"] >= warps_to_fit(need, H200)  # type: ignore[operator]
        assert c.cost.warps == c.params["num_warps"] and c.cost.fits
    best = found[0]
    assert best.params["BM"] * best.params["BN"] >= 128 * 256
    assert best.params["num_warps"] == 8
    at_default = kernel_cost(tile_kernels.matmul("bf16"), {**CUBE, **best.params}, H200)
    assert not at_default.fits  # so the best is out of reach at the default count
    # each tile size and launch order is listed once, at its best warp count
    configs = [tuple((k, v) for k, v in c.params.items() if k != "num_warps") for c in found]
    assert len(configs) == len(set(configs))


def test_a_small_tile_keeps_the_default_warps(tile_kernels: ModuleType) -> None:
    # rows of 64: more warps leave more lanes idle and hold fewer programs an SM, fewer gain
    # nothing the model sees: the default stays
    found = concretize(tile_kernels.row_softmax("registers"), {"M": 4096, "N": 64}, H200,
                       top_k=3)
    assert found and all(c.params["num_warps"] == 4 for c in found)


def test_a_neuron_core_candidate_has_no_warps(tile_kernels: ModuleType) -> None:
    found = concretize(tile_kernels.matmul("bf16", "sbuf", "psum"), CUBE, TRN2)
    assert found and all("num_warps" not in c.params and c.cost.warps is None for c in found)


def test_a_small_gpu_matmul_takes_k_blocks_whose_loop_latency_hides(
        tile_kernels: ModuleType) -> None:
    # 1024^3 on the H200: BK = 16 runs 64 iterations of one small MMA, past the profile's
    # loop latency floor (measured 0.0198 ms against 0.0054 ms at BK = 64)
    found = concretize(tile_kernels.matmul("bf16"), {"M": 1024, "N": 1024, "K": 1024}, H200,
                       top_k=3)
    assert found and all(c.params["BK"] >= 64 for c in found)
    assert (found[0].params["BM"], found[0].params["BN"]) == (64, 128)  # 128 programs, 1 wave
