"""The per-instruction costs follow nki.md section 6's formulas."""

from __future__ import annotations

import dataclasses

import pytest

from axon.targets.nki.cost import CostConstants, load_constants
from axon.targets.nki.cost.formulas import compute_cycles, dma_transfer_s

from .helpers import hbm, inst, tile


@pytest.fixture(scope="module")
def trn1() -> CostConstants:
    return load_constants("trn1")


def _matmul(stationary_free: int, moving_free: int, dtype: str = "bfloat16",
            **options: bool) -> object:
    return inst("nc_matmul", "PE",
                {"stationary": tile(1, stationary_free, dtype),
                 "moving": tile(2, moving_free, dtype)},
                {"dst": tile(3, moving_free, "float32", buffer="psum")},
                accumulate=None, transpose=False, **options)


def test_matmul_cycles_follow_the_formula(trn1: CostConstants) -> None:
    # max(min(64, N_stationary), N_moving): the moving operand streams one column per cycle
    assert compute_cycles(_matmul(128, 512), trn1) == 512  # type: ignore[arg-type]
    assert compute_cycles(_matmul(128, 200), trn1) == 200  # type: ignore[arg-type]
    # a short moving operand still pays the initiation interval, capped by the stationary size
    assert compute_cycles(_matmul(128, 16), trn1) == trn1.min_ii_cycles  # type: ignore[arg-type]
    assert compute_cycles(_matmul(32, 16), trn1) == 32  # type: ignore[arg-type]


def test_fp32_matmul_is_four_times_slower_and_onezero_gives_half_back(trn1: CostConstants
                                                                       ) -> None:
    assert compute_cycles(_matmul(128, 512, "float32"), trn1) == 4 * 512  # type: ignore[arg-type]
    onezero = _matmul(128, 512, "float32", stationary_onezero=True)
    assert compute_cycles(onezero, trn1) == 2 * 512  # type: ignore[arg-type]


def test_pe_transpose_costs_max_of_partitions_and_capped_free(trn1: CostConstants) -> None:
    transpose = inst("nc_transpose", "PE", {"data": tile(1, 128, partitions=96)},
                     {"dst": tile(2, 96, buffer="psum", partitions=128)}, transpose=True)
    assert compute_cycles(transpose, trn1) == 96


def test_vector_formulas(trn1: CostConstants) -> None:
    n = 1000
    scalar = inst("tensor_scalar", "DVE", {"data": tile(1, n)}, {"dst": tile(2, n)},
                  op0="add", op1=None)
    assert compute_cycles(scalar, trn1) == n
    small = inst("tensor_scalar", "DVE", {"data": tile(1, 8)}, {"dst": tile(2, 8)}, op0="add")
    assert compute_cycles(small, trn1) == trn1.min_ii_cycles
    two_inputs = inst("tensor_tensor", "DVE", {"data1": tile(1, n), "data2": tile(2, n)},
                      {"dst": tile(3, n)}, op="multiply")
    assert compute_cycles(two_inputs, trn1) == 2 * n
    one_in_psum = inst("tensor_tensor", "DVE",
                       {"data1": tile(1, n), "data2": tile(2, n, buffer="psum")},
                       {"dst": tile(3, n)}, op="multiply")
    assert compute_cycles(one_in_psum, trn1) == n
    bf16_add = inst("tensor_tensor", "DVE",
                    {"data1": tile(1, n, "bfloat16"), "data2": tile(2, n, "bfloat16")},
                    {"dst": tile(3, n, "bfloat16")}, op="add")
    assert compute_cycles(bf16_add, trn1) == n
    scan = inst("tensor_tensor_scan", "DVE", {"data0": tile(1, n), "data1": tile(2, n)},
                {"dst": tile(3, n)}, op0="multiply", op1="add")
    assert compute_cycles(scan, trn1) == 2 * n
    stats = inst("bn_stats", "DVE", {"data": tile(1, 512)}, {"dst": tile(2, 6)})
    assert compute_cycles(stats, trn1) == 512
    aggregate = inst("bn_aggr", "DVE", {"data": tile(1, 96)}, {"dst": tile(2, 2)})
    assert compute_cycles(aggregate, trn1) == 13 * 96 / 3
    small = inst("bn_aggr", "DVE", {"data": tile(1, 6)}, {"dst": tile(2, 2)})
    assert compute_cycles(small, trn1) == trn1.min_ii_cycles


def test_activation_reduce_and_accumulator_read_add_fixed_costs(trn1: CostConstants) -> None:
    n = 2048
    plain = inst("activation", "ACT", {"data": tile(1, n)}, {"dst": tile(2, n)},
                 function="exp", reduce=False)
    reducing = inst("activation", "ACT", {"data": tile(1, n)},
                    {"dst": tile(2, n), "reduce_res": tile(3, 1)}, function="exp", reduce=True)
    assert compute_cycles(plain, trn1) == n
    assert compute_cycles(reducing, trn1) == n + trn1.min_ii_cycles \
        + trn1.act_read_accumulator_cycles


def test_gpsimd_memset_and_reduce_formulas(trn1: CostConstants) -> None:
    iota = inst("iota", "POOL", {}, {"dst": tile(1, 300)})
    assert compute_cycles(iota, trn1) == trn1.gpsimd_start_cycles + 300
    zero16 = inst("memset", "DVE", {}, {"dst": tile(1, 1024, "bfloat16")}, value=0.0)
    assert compute_cycles(zero16, trn1) == 512
    ones32 = inst("memset", "DVE", {}, {"dst": tile(1, 1024)}, value=1.0)
    assert compute_cycles(ones32, trn1) == 1024
    reduce16 = inst("tensor_reduce", "DVE", {"data": tile(1, 1024, "bfloat16")},
                    {"dst": tile(2, 1, "bfloat16")}, op="add")
    assert compute_cycles(reduce16, trn1) == 512


def test_trn2_perf_mode_speeds_up_16_bit_vector_copies() -> None:
    trn2 = load_constants("trn2")
    n = 4096
    copy16 = inst("tensor_copy", "DVE", {"src": tile(1, n, "bfloat16")},
                  {"dst": tile(2, n, "bfloat16")})
    copy32 = inst("tensor_copy", "DVE", {"src": tile(1, n)}, {"dst": tile(2, n)})
    from_psum = inst("tensor_copy", "DVE", {"src": tile(1, n, "bfloat16", buffer="psum")},
                     {"dst": tile(2, n, "bfloat16")})
    assert compute_cycles(copy16, trn2) == n / trn2.dve_perf_mode_copy_speedup
    assert compute_cycles(from_psum, trn2) == n / trn2.dve_perf_mode_speedup
    assert compute_cycles(copy32, trn2) == n
    # NC-v2 has no perf mode
    assert compute_cycles(copy16, load_constants("trn1")) == n


def test_dma_transfer_is_bytes_over_bandwidth_with_a_small_row_penalty(trn1: CostConstants
                                                                        ) -> None:
    wide = inst("dma_copy", "SP-DMA", {"src": hbm(1, 128, 1024, 1024)},
                {"dst": tile(2, 1024)}, dge_mode="unknown")
    nbytes = 128 * 1024 * 4
    assert dma_transfer_s(wide, trn1) == pytest.approx(
        nbytes / (trn1.dma_bytes_per_s * trn1.dma_efficiency))
    narrow = inst("dma_copy", "SP-DMA", {"src": hbm(1, 128, 64, 1024)}, {"dst": tile(2, 64)},
                  dge_mode="unknown")
    assert dma_transfer_s(narrow, trn1) == pytest.approx(
        128 * 64 * 4 / (trn1.dma_bytes_per_s * trn1.dma_small_row_efficiency))
    # the threshold is the profile's: at full efficiency, both cost bytes / bandwidth
    ideal = dataclasses.replace(trn1, dma_efficiency=1.0, dma_small_row_efficiency=1.0)
    assert dma_transfer_s(narrow, ideal) == pytest.approx(128 * 64 * 4 / trn1.dma_bytes_per_s)
