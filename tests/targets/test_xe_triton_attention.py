"""The emitted flash-attention kernel (gqa, `batched_rows_k_online`, as propagation leaves it):
what makes it fast on a GPU is checked on its `xt` form and its text, and the kernel still
computes what the program does on the CPU interpreter (bf16 inputs are not interpreted: the
check runs the float32 twin, as the coverage tests do)."""

from __future__ import annotations

import functools

import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from axon.benchmarks.suite import PROGRAMS
from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.targets.xe_triton.check import check_emitted
from axon.targets.xe_triton.emit import emit_triton
from axon.targets.xe_triton.lower import lower_function
from axon.tiling.kernels import tile_function, tilings
from axon.tools.embed import parse_source, run_pipeline

PREFILL = {"B": 1, "HKV": 8, "G": 4, "S": 4096, "L": 4096, "D": 128}
DECODE = {"B": 2, "HKV": 2, "G": 4, "S": 1, "L": 4096, "D": 64}


@functools.cache
def program(dtype: str) -> FuncOp:
    """gqa as propagation's top program (the kv head read as `b1 floordiv G`)."""
    entry = PROGRAMS["gqa"]
    module = parse_source(entry.retyped_source(dtype), "gqa.py")
    sizes = ",".join(f"{k}={v}" for k, v in entry.default_sizes[-1].items())
    run_pipeline(module, f'propagate{{emit="top-k" top_k=1 device=h200 sizes="{sizes}"}}')
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func


def tiled(dtype: str) -> FuncOp:
    (tiling,) = (t for t in tilings(program(dtype)) if t.kind == "batched_rows_k_online")
    return tile_function(program(dtype), tiling, "registers", "registers")


def lowered_ops(dtype: str) -> list[Operation]:
    return list(lower_function(tiled(dtype)).walk())


def test_the_online_max_masks_with_minus_infinity_not_a_first_lane_reduction() -> None:
    # the tiling's `select(inside, s[r], s[0])` (lane 0 is always inside) reduces as
    # tl.max over the lanes inside, the rest -inf: no tl.sum that extracts lane 0
    text = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64}).text
    assert "== 0, " not in text
    assert text.count('float("-inf")') == 2  # the first block's max and the loop's
    reduces = [op for op in lowered_ops("bf16") if isinstance(op, xt.ReduceOp)]
    assert [r.extent.data for r in reduces if r.kind.data == "max"] == [
        "min(BK, L)", "min(BK, L - BK*k)"]


def test_the_dot_operands_are_the_loaded_tiles_in_bf16() -> None:
    ops = lowered_ops("bf16")
    (loop,) = (op for op in ops if isinstance(op, xt.ForOp))
    dots = [op for op in loop.body.walk() if isinstance(op, xt.DotOp)]
    assert len(dots) == 2
    qk, pv = dots
    # q's tile is reshaped once, before the loop, not in every iteration
    q = qk.lhs.owner
    assert isinstance(q, xt.ReshapeOp) and isinstance(q.source.owner, xt.LoadOp)
    assert q.parent_op() is not loop
    # v goes to the dot as loaded (bf16, no masking map: the load pads with 0 past L)
    v = pv.rhs.owner
    assert isinstance(v, xt.ReshapeOp) and isinstance(v.source.owner, xt.LoadOp)
    types = [v.type for v in (qk.lhs, qk.rhs, pv.lhs, pv.rhs)]
    assert all(isinstance(t, TensorType) and t.dtype == "bf16" for t in types)


def test_a_head_s_tiles_load_as_2d_blocks_with_scalar_head_offsets() -> None:
    text = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64}).text
    kernel = text.split("def _needs_int64")[0]
    assert "tl.load(in1_ptr + _wide(b0, INT64) * D * HKV * L + _wide((b1 // G), INT64)" in kernel
    # no tile reaches a dot through tl.reshape of a 4-D load
    assert "tl.arange(0, 1)" not in kernel.split("tl.store(")[0]


@pytest.mark.parametrize(("sizes", "first"), [
    (PREFILL, {"BM": 64, "BK": 64, "num_warps": 4, "num_stages": 3}),
    (DECODE, {"BM": 16, "BK": 256, "num_warps": 8, "num_stages": 3})])
def test_the_kb_grid_for_attention_on_the_h200(sizes: dict[str, int],
                                               first: dict[str, int]) -> None:
    emitted = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64}, sizes=sizes)
    assert emitted.configs[0] == first
    # 128 query rows at 4 warps spill (measured 2.7-5.3 ms against about 1 ms)
    assert not any(c.get("BM") == 128 and c.get("num_warps") == 4 for c in emitted.configs)


def test_the_fast_kernel_computes_what_the_program_does() -> None:
    shapes = [{"B": 1, "HKV": 2, "G": 2, "S": 3, "L": 5, "D": 3},
              {"B": 2, "HKV": 1, "G": 3, "S": 2, "L": 9, "D": 5}]
    report = check_emitted(program("f32"), tiled("f32"), shapes, {"BM": 2, "BK": 4})
    assert report.passed, report.shapes
