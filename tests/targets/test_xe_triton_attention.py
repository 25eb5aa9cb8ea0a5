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
from axon.dialects.form.dtypes import reciprocal_division_allowed, rescaled_exp_allowed
from axon.dialects.form.scalar import Call, Const
from axon.dialects.form.syntax import parse_form
from axon.targets.xe_triton.check import check_emitted
from axon.targets.xe_triton.emit import emit_triton
from axon.targets.xe_triton.exp2 import LN_2
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


def pointer_branch(text: str) -> str:
    """The kernel as it reads with `block_io="pointer"`: the descriptor and block-pointer
    branches (`if BLOCK_IO >= 2:` / `elif BLOCK_IO == 1:`) left out, the `else:` body kept."""
    kept: list[str] = []
    skipping: int | None = None  # the indent of a skipped branch's header
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if skipping is not None and indent > skipping:
            continue
        if stripped.startswith(("if BLOCK_IO", "elif BLOCK_IO")):
            skipping = indent
            continue
        if skipping is not None and indent == skipping and stripped == "else:":
            skipping = None
            continue
        skipping = None
        kept.append(line)
    return "\n".join(kept)


def test_a_head_s_tiles_load_as_2d_blocks_with_scalar_head_offsets() -> None:
    text = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64}).text
    kernel = pointer_branch(text.split("def _needs_int64")[0])
    assert "tl.load(in1_ptr + _wide(b0, INT64) * D * HKV * L + _wide((b1 // G), INT64)" in kernel
    # no tile reaches a dot through tl.reshape of a 4-D load
    assert "tl.arange(0, 1)" not in kernel.split("tl.store(")[0]


@pytest.mark.parametrize(("sizes", "first"), [
    (PREFILL, {"BM": 128, "BK": 64, "num_warps": 8, "num_stages": 4}),
    (DECODE, {"BM": 16, "BK": 256, "num_warps": 4, "num_stages": 3})])
def test_the_kb_grid_for_attention_on_the_h200(sizes: dict[str, int],
                                               first: dict[str, int]) -> None:
    emitted = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64}, sizes=sizes)
    assert emitted.configs[0] == first
    # 128 query rows at 4 warps spill (measured 2.7-5.3 ms against about 1 ms)
    assert not any(c.get("BM") == 128 and c.get("num_warps") == 4 for c in emitted.configs)


def test_a_head_dim_of_64_starts_from_64_rows_at_4_warps() -> None:
    """The head dim is the block q @ k^T contracts, read off the kernel at the sizes given: at
    D = 64 the KB's small-head tiles lead (measured on the Forge problem 20), at D = 128 the
    128-row tiles (above)."""
    emitted = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64},
                          sizes={**PREFILL, "D": 64})
    assert emitted.configs[0] == {"BM": 64, "BK": 64, "num_warps": 4, "num_stages": 3}
    odd = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64},
                      sizes={**PREFILL, "D": 80})  # a block of 128 lanes
    assert odd.configs[0]["BM"] == 128


def test_the_fast_kernel_computes_what_the_program_does() -> None:
    shapes = [{"B": 1, "HKV": 2, "G": 2, "S": 3, "L": 5, "D": 3},
              {"B": 2, "HKV": 1, "G": 3, "S": 2, "L": 9, "D": 5}]
    report = check_emitted(program("f32"), tiled("f32"), shapes, {"BM": 2, "BK": 4})
    assert report.passed, report.shapes


def kernel_text(dtype: str = "bf16") -> str:
    text = emit_triton(tiled(dtype), tile_sizes={"BM": 64, "BK": 64}).text
    return pointer_branch(text.split("def _needs_int64")[0])


def test_a_head_s_tiles_move_by_tma_as_2d_boxes_of_one_head() -> None:
    # q, k, v and the result are tiles of one batch and head: on the H200 the host makes a
    # TMA descriptor of each 4-D tensor with a [1, 1, rows, D] box (measured, the emitted
    # kernel: prefill 0.637 -> 0.598 ms at 128x64 w8 s4; decode 0.0245 -> 0.0210)
    emitted = emit_triton(tiled("bf16"), tile_sizes={"BM": 64, "BK": 64})
    kernel = emitted.text.split("def _needs_int64")[0]
    assert emitted.text.count("TensorDescriptor(") >= 4
    assert "block_io='host_descriptor'" in emitted.text
    loads = [line.strip() for line in kernel.splitlines() if ".load([" in line]
    # q once; k before the loop and in it; v in it: each reshaped to the 2-D block it feeds
    assert len(loads) == 4
    assert all(line.endswith(", (BM, B_D))") or line.endswith(", (BK, B_D))")
               for line in loads)
    assert sum("[b0, (b1 // G), BK * k, 0]" in line for line in loads) == 2
    (store,) = (line.strip() for line in kernel.splitlines() if ".store([" in line)
    assert store.startswith("desc3.store([b0, b1, BM * i, 0], tl.reshape(")


def test_the_batched_kernel_holds_2d_blocks() -> None:
    # the [1, 1, BM, ..] blocks of one batch and head are printed without their unit dims:
    # no reshape to rank 4 and back between a dot and the softmax on its result
    kernel = kernel_text()
    assert "tl.reshape(" not in kernel.replace("tl.reshape(v", "", 1)  # one: [BM, 1] -> [BM]
    assert "(1, 1, " not in kernel and "None, None" not in kernel
    # the result is stored with scalar batch and head offsets, like the loads
    (store,) = (line for line in kernel.splitlines() if "tl.store(" in line)
    assert "tl.store(out0_ptr + _wide(b0, INT64) * D * G * HKV * S + _wide(b1, INT64)" in store


def test_the_rescaled_accumulator_is_the_second_dot_s_accumulator() -> None:
    # `acc * alpha + p @ v`: tl.dot(p, v, acc * alpha), no dot from zeros and add after
    ops = lowered_ops("bf16")
    (loop,) = (op for op in ops if isinstance(op, xt.ForOp))
    qk, pv = (op for op in loop.body.walk() if isinstance(op, xt.DotOp))
    assert isinstance(qk.acc.owner, xt.FullOp)
    reshape = pv.acc.owner  # [1, 1, BM, B_D] as [BM, B_D]: the same block when printed
    assert isinstance(reshape, xt.ReshapeOp)
    rescaled = reshape.source.owner
    assert isinstance(rescaled, xt.MapOp)
    assert "*" in rescaled.form.data and loop.body.block.args[1] in rescaled.inputs


def test_scores_are_in_base_2_with_the_scale_folded_into_one_multiply() -> None:
    kernel = kernel_text()
    assert kernel.count("tl.exp2(") == 2 and "tl.exp(" not in kernel
    assert kernel.count("* (1.4426950408889634 / v") == 2  # the first block's and the loop's
    bodies = [parse_form(op.form.data, len(op.inputs)).body for op in lowered_ops("bf16")
              if isinstance(op, xt.MapOp)]
    exps = [b for b in bodies if isinstance(b, Call) and b.fn == "exp"]
    # exp(ln(2) * y), printed tl.exp2(y): the form keeps its meaning in the scalar language
    assert len(exps) == 2
    for e in exps:
        (product,) = e.args
        assert isinstance(product, Call) and product.fn == "mul"
        assert product.args[0] == Const(LN_2)


def test_the_numerics_of_the_rewrites_are_within_every_float_tolerance() -> None:
    assert all(rescaled_exp_allowed(d) and reciprocal_division_allowed(d)
               for d in ("f32", "f16", "bf16"))
    assert not rescaled_exp_allowed("i32")


def test_a_scaled_score_read_elsewhere_keeps_exp() -> None:
    # `s` also reaches the result outside exp(s - max): no rescaling (it would change s)
    source = ("def f(x: f32[M, N]):\n"
              "    s = x / sqrt(N)\n"
              "    m = max(s, axis=-1, keepdims=True)\n"
              "    e = exp(s - m)\n"
              "    return e / sum(e, axis=-1, keepdims=True) + s\n")
    kept = _rows_text(source)
    assert "tl.exp(" in kept and "tl.exp2(" not in kept
    assert "* (1.0 / v" in kept  # the division by the scalar is still a multiply
    rescaled = _rows_text(source.replace(" + s\n", "\n"))
    assert "tl.exp2(" in rescaled and "tl.exp(" not in rescaled


def _rows_text(source: str) -> str:
    (func,) = (op for op in parse_source(source, "f.py").ops if isinstance(op, FuncOp))
    (tiling,) = (t for t in tilings(func) if t.kind == "rows")
    kernel = tile_function(func, tiling, "registers", "registers")
    shapes = [{"M": 3, "N": 5}, {"M": 1, "N": 1}]
    assert check_emitted(func, kernel, shapes, {"BM": 2}).passed
    return emit_triton(kernel, tile_sizes={"BM": 2}).text


@functools.cache
def qknorm(dtype: str) -> FuncOp:
    """qknorm_gqa as propagation's top program: k normalized whole, then read at `b1 floordiv G`."""
    entry = PROGRAMS["qknorm_gqa"]
    module = parse_source(entry.retyped_source(dtype), "qknorm_gqa.py")
    sizes = ",".join(f"{k}={v}" for k, v in entry.default_sizes[-1].items())
    run_pipeline(module, f'propagate{{emit="top-k" top_k=1 device=h200 sizes="{sizes}"}}')
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func


def test_qknorm_loads_and_normalizes_only_the_kv_head_it_reads() -> None:
    (tiling,) = (t for t in tilings(qknorm("f32")) if t.kind == "batched_rows_k_online")
    tiled_f32 = tile_function(qknorm("f32"), tiling, "registers", "registers")
    kernel = emit_triton(tiled_f32, tile_sizes={"BM": 64, "BK": 64}).text
    kernel = pointer_branch(kernel.split("def _needs_int64")[0])
    # every k load reads the program's kv head alone: no block over the heads, no lane pick
    assert "tl.arange(0, B_HKV)" not in kernel and "== (b1 // G)" not in kernel
    # k before the loop and in it, v in it
    assert kernel.count("_wide((b1 // G), INT64) * D * L") == 3
    shapes = [{"B": 1, "HKV": 2, "G": 2, "S": 3, "L": 5, "D": 3},
              {"B": 2, "HKV": 3, "G": 1, "S": 2, "L": 9, "D": 5}]
    report = check_emitted(qknorm("f32"), tiled_f32, shapes, {"BM": 2, "BK": 4})
    assert report.passed, report.shapes
