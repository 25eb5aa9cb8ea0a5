"""The GEMM launch sweep (`benchmarks/xe_triton_gemm_sweep.py`): its grids are launches the H200
KB admits, and the KB's NVIDIA grids start from launches the sweep timed."""

from __future__ import annotations

import pytest

from axon.benchmarks.xe_triton_gemm_sweep import MATMUL, sweep_cases
from axon.targets.xe_triton.kb import Config, KernelFacts, autotune_grid, load_device, settings_for
from axon.targets.xe_triton.kb.pattern import config_error


def facts(sizes: dict[str, int]) -> KernelFacts:
    return KernelFacts("matmul", "bf16", has_dot=True, m=sizes["M"], n=sizes["N"],
                       k=sizes["K"], grid_dims=2)


def test_every_plain_gemm_launch_of_the_sweep_is_one_the_h200_kb_admits() -> None:
    h200 = load_device("h200")
    launches = 0
    for _, _, sizes, parts in sweep_cases():
        for _, where, grid in parts:
            if where != MATMUL and "transpose" not in where:
                continue
            for launch in grid:
                config = Config(block_m=launch["BM"], block_n=launch["BN"],
                                block_k=launch["BK"], num_warps=launch["num_warps"],
                                num_stages=launch["num_stages"],
                                group_size_m=launch["GROUP_SIZE_M"])
                assert launch["block_io"] in ("host_descriptor", "tensor_descriptor",
                                              "block_ptr", "pointer")
                assert config_error(h200, facts(sizes), config) is None, launch
                launches += 1
    assert launches > 250


@pytest.mark.parametrize("case", ["matmul_1024^3", "matmul_4096^3", "matmul_2x4096x6144",
                                  "matmul_16x4096x4096"])
def test_the_kb_starts_each_measured_gemm_shape_from_a_launch_the_sweep_timed(case: str) -> None:
    h200 = load_device("h200")
    (sizes, grid), = [(sizes, grid) for name, _, sizes, parts in sweep_cases() if name == case
                      for label, _, grid in parts if label == "mm"]
    first = autotune_grid(h200, facts(sizes))[0]
    chosen = {"BM": first.block_m, "BN": first.block_n, "BK": first.block_k,
              "num_warps": first.num_warps, "num_stages": first.num_stages,
              "GROUP_SIZE_M": first.group_size_m,
              "block_io": settings_for(h200, facts(sizes)).block_io}
    assert first.block_m is not None
    if sizes["M"] <= first.block_m:
        # one row of tiles: every group size gives the same program order
        grid = [{**launch, "GROUP_SIZE_M": first.group_size_m} for launch in grid]
    assert chosen in grid
