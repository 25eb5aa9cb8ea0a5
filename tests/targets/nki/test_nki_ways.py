"""The other ways a lowered NKI kernel is printed (`targets/nki/narrow.py`,
`targets/nki/schedule.py`) and the selection's use of them: intermediates in the program's
16-bit dtype where every use takes them so, each block in dependence order with the tiles the
emitter writes in place read first. Each printed kernel runs on the simulator against the
reference interpreter at shapes with remainder tiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.tile import ForOp
from axon.interpreter import run_function
from axon.targets.nki.cost import estimate, load_constants
from axon.targets.nki.emit import emit_nki, written_in_place
from axon.targets.nki.fuse import lower_and_fuse
from axon.targets.nki.lower import kernel_of
from axon.targets.nki.narrow import narrowed, narrowed_past_statistics, narrowing_dtype
from axon.targets.nki.schedule import scheduled
from axon.targets.nki.select import (
    KernelRunner,
    check_close,
    choose_kernel,
    random_inputs,
    tiled_programs,
)
from axon.targets.nki.simulator.errors import KernelError
from axon.targets.profiles import load_profile
from axon.tiling.kernels import tile_function, tilings
from axon.tiling.profiles import kernel_constraints, tile_spaces
from axon.tiling.specialize import specialized

from .test_nki_fuse import TILES, source, tiled
from .test_nki_fuse import run as run_fused
from .test_nki_schedule import close, kernel, kernel_of_function, program, run

ROPE = {"BM": 128, "BN": 8}


def dtype(op: Operation) -> str:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return str(t.dtype)


def instructions(func: FuncOp) -> list[nki.NkiOp]:
    return [op for op in func.walk() if isinstance(op, nki.NkiOp)
            and not isinstance(op, nki.AccessOp)]


def matches(name: str, func: FuncOp, tiles: dict[str, int], sizes: dict[str, int],
            tmp_path: Path) -> bool:
    """The kernel of `func` at `tiles`, run on the simulator at `sizes`, matches the reference."""
    inputs = make_inputs(PROGRAMS[name], sizes)
    out, _ = run(emit_nki(func, tiles).text, tmp_path, inputs)
    return close(name, sizes, out, inputs)


def test_rope_keeps_its_products_in_bf16_and_gains_the_perf_mode(tmp_path: Path) -> None:
    func = kernel("rope", "blocks")
    result = narrowed(func)
    assert result is not None
    narrow, count = result
    # the four products: fp32 before, bf16 after; the difference and the sum were bf16 already
    products = [op for op in instructions(narrow) if op.attrs().get("op") == "multiply"]
    assert count == 4 and [dtype(op) for op in products] == ["bf16"] * 4
    assert [dtype(op) for op in instructions(func) if op.attrs().get("op") == "multiply"] \
        == ["f32"] * 4
    assert all(dtype(op) == "bf16" for op in instructions(narrow))
    sizes = {"T": 128, "H": 32, "D2": 64}
    latencies = []
    for f in (func, narrow):
        inputs = make_inputs(PROGRAMS["rope"], sizes)
        out, trace = run(emit_nki(f, ROPE).text, tmp_path, inputs)
        assert close("rope", sizes, out, inputs)
        latencies.append(estimate(trace, load_constants("trn2")).total_s)
    # VectorE's products at twice the throughput, and one more on VectorE in place of GpSimd
    assert latencies[1] < 0.9 * latencies[0], latencies


@pytest.mark.parametrize("sizes", [{"T": 5, "H": 3, "D2": 4}, {"T": 130, "H": 9, "D2": 3}])
def test_narrowed_rope_matches_the_reference_with_remainders(sizes: dict[str, int],
                                                             tmp_path: Path) -> None:
    result = narrowed(kernel("rope", "blocks"))
    assert result is not None
    assert matches("rope", result[0], ROPE, sizes, tmp_path)


def test_a_column_operand_and_an_accumulator_stay_fp32() -> None:
    # rmsnorm_matmul: the row sums accumulate across the k loop (carried), the rstd column is
    # a tensor_scalar operand (the ISA takes it in fp32); neither is narrowed
    func = kernel("rmsnorm_matmul", "blocks_k")
    result = narrowed(func)
    narrow = func if result is None else result[0]
    for op in instructions(narrow):
        for use in op.results[0].uses:
            user = use.operation
            if isinstance(user, nki.NkiOp) and user.ROLES[use.index].startswith("["):
                assert dtype(op) == "f32", op
        if written_in_place(op.results[0]):
            assert dtype(op) == "f32", op
    assert any(isinstance(op, ForOp) for op in narrow.walk())


def feeds_a_statistic(op: Operation) -> bool:
    """Does a reduction read `op`'s value directly?"""
    return any(isinstance(use.operation, (nki.ActivationReduceOp, nki.TensorReduceOp))
               for use in op.results[0].uses)


def test_layernorm_narrows_past_its_statistics_only(tmp_path: Path) -> None:
    # all three narrowable intermediates: the centred rows (whose squares are summed), their
    # product by the gain and its scaling by rstd; past the statistics, only the last two
    sizes = {"M": 128, "N": 8192}
    # the nu-graph's variant selection takes: `x - mean` times the gain before the variance
    variant = tiled_programs(program("layernorm"), "trn2", sizes, 2)[1]
    func = kernel_of_function(variant, "rows")
    every, past = narrowed(func), narrowed_past_statistics(func)
    assert every is not None and past is not None
    assert (every[1], past[1]) == (3, 2)
    centred = [op for op in instructions(past[0]) if feeds_a_statistic(op)
               and isinstance(op, nki.TensorScalarOp)]
    assert [dtype(op) for op in centred] == ["f32"]
    assert [dtype(op) for op in instructions(every[0]) if feeds_a_statistic(op)
            and isinstance(op, nki.TensorScalarOp)] == ["bf16"]
    # checked as selection checks: the program's tolerance, against the interpreter's rounded
    # or exact run; remainder shapes and the benchmark's, where the two products at 16 bits
    # take VectorE's perf mode
    latencies = []
    for shape in ({"M": 130, "N": 200}, {"M": 3, "N": 1000}, sizes):
        inputs = make_inputs(PROGRAMS["layernorm"], shape)
        tolerance = PROGRAMS["layernorm"].tolerance_at(shape)
        expected = [run_function(program("layernorm"), inputs, shape, exact=exact)[0]
                    for exact in (False, True)]
        for f in (func, past[0]):
            out, trace = run(emit_nki(f, {"BM": 128}).text, tmp_path, inputs)
            assert any(check_close(out, want, tolerance) == "" for want in expected), shape
            latencies.append(estimate(trace, load_constants("trn2")).total_s)
    assert latencies[-1] < 0.9 * latencies[-2], latencies


def test_a_kernel_with_nothing_before_a_statistic_has_no_way_past_the_statistics() -> None:
    # rope has no statistic: every narrowable intermediate is past one, the same kernel
    assert narrowed(kernel("rope", "blocks")) is not None
    assert narrowed_past_statistics(kernel("rope", "blocks")) is None


def test_a_program_in_fp32_is_not_narrowed() -> None:
    assert narrowing_dtype(program("cumsum_f32")) is None
    assert narrowing_dtype(program("rope")) == "bf16"


def _signature(func: FuncOp) -> list[tuple[str, tuple[str, ...]]]:
    """Each op as its name and the names of the ops it reads (block arguments: `arg`), sorted:
    the dataflow graph up to the order of the ops."""
    kinds: dict[SSAValue, str] = {v: op.name for op in func.walk() for v in op.results}
    return sorted((op.name, tuple(kinds.get(v, "arg") for v in op.operands))
                  for op in func.walk())


def test_dependence_order_keeps_the_dataflow() -> None:
    func = kernel("rmsnorm_matmul", "blocks_k")
    result = scheduled(func)
    assert result is not None
    ordered, changed = result
    assert changed >= 1
    assert _signature(ordered) == _signature(func)
    assert [op.name for op in ordered.walk()] != [op.name for op in func.walk()]


def test_a_tile_written_in_place_is_read_before_the_writer() -> None:
    # planted: before the matmul loop, a read of the zero tile the loop accumulates onto, over
    # the rstd column (deep: after the sum loop and its activations); by depth alone it would
    # follow the loop (which depends on the zero tile only), and read the accumulated sums
    func = kernel("rmsnorm_matmul", "blocks_k")
    body = kernel_of(func).body.block
    loops = [op for op in body.ops if isinstance(op, ForOp)]
    acc_loop = loops[-1]
    zero = acc_loop.operands[0]
    column = next(op for op in body.ops if isinstance(op, nki.ActivationOp)).results[0]
    reader = nki.TensorScalarOp.make([zero, column], op0="multiply", buffer="sbuf",
                                     dtype="f32")
    body.insert_op_before(reader, acc_loop)
    result = scheduled(func)
    assert result is not None
    order = [op.name for op in kernel_of(result[0]).body.block.ops]
    position = {op: k for k, op in enumerate(kernel_of(result[0]).body.block.ops)}
    (moved_reader,) = (op for op in position if isinstance(op, nki.TensorScalarOp)
                       and op.operands[0].owner is not None and written_in_place(op.operands[0]))
    (moved_loop,) = (op for op in position if isinstance(op, ForOp)
                     and op.operands[0] is moved_reader.operands[0])
    assert position[moved_reader] < position[moved_loop], order
    assert written_in_place(zero)


@pytest.mark.parametrize("sizes", [{"M": 130, "N": 200, "K": 300}, {"M": 1, "N": 1, "K": 1}])
def test_rmsnorm_matmul_in_dependence_order_matches_the_reference(sizes: dict[str, int],
                                                                  tmp_path: Path) -> None:
    result = scheduled(kernel("rmsnorm_matmul", "blocks_k"))
    assert result is not None
    assert matches("rmsnorm_matmul", result[0], {"BM": 128, "BN": 256, "BK": 128}, sizes,
                   tmp_path)


def test_rope_a_product_ahead_of_the_difference_waiting_on_gpsimd() -> None:
    # in the lowering's order the difference of the first two products sits in VectorE's
    # queue ahead of the two products VectorE can start at once; in dependence order the four
    # products come first
    result = scheduled(kernel("rope", "blocks"))
    assert result is not None
    ops = [op.attrs().get("op") for op in instructions(result[0])
           if isinstance(op, nki.TensorTensorOp)]
    assert ops == ["multiply"] * 4 + ["subtract", "add"]


def test_the_selection_prices_the_other_ways_and_takes_the_cheapest(tmp_path: Path) -> None:
    said: list[str] = []
    chosen = choose_kernel(program("rope"), "trn2", {"T": 128, "H": 32, "D2": 64},
                           said.append, max_candidates=3)
    others = [c for c in chosen.candidates if c.ways]
    assert {c.ways for c in others} == {"16-bit intermediates", "dependence order",
                                         "16-bit intermediates, dependence order"}
    best = min(c.latency_s for c in chosen.candidates if c.latency_s is not None)
    assert chosen.latency_s == best
    # rope at the table's size, of the first three candidates: one program of all heads (30.4
    # us) is the best; its products in bf16 alone or in dependence order alone cost more (31.3
    # each: VectorE then waits on GpSimd's products or on the slower fp32 ones), both 27.0
    assert chosen.kind == "rows" and chosen.ways == "16-bit intermediates, dependence order"
    assert chosen.chosen == "BM=128 (16-bit intermediates, dependence order)"
    (plain,) = (c for c in chosen.candidates if not c.ways and c.params == chosen.params)
    assert plain.latency_s is not None and chosen.latency_s < 0.9 * plain.latency_s
    assert "and the best printed 3 other ways" in said[-1]
    assert np.isfinite(chosen.output.astype(np.float64)).all()


def _tiled(name: str, kind: str) -> FuncOp:
    """The `kind` tiling of suite program `name` for Trn2, with the profile's limits assumed."""
    (tiling,) = [t for t in tilings(program(name)) if t.kind == kind]
    profile = load_profile("trn2")
    tiled = tile_function(program(name), tiling, *tile_spaces(profile))
    kernel_of(tiled).assume_also(kernel_constraints(profile, kernel_of(tiled)))
    return tiled


@pytest.mark.parametrize("sizes", [{"M": 256, "N": 512}, {"M": 128, "N": 128}])
def test_sizes_that_divide_the_tiles_drop_the_remainder_masks(sizes: dict[str, int],
                                                              tmp_path: Path) -> None:
    # softmax's two passes over N in blocks of BK mask the columns past N in every block (five
    # affine_selects on GpSimd a row block); where BK divides N the masks go, proved under the
    # facts the kernel then asserts when traced
    tiled = _tiled("softmax", "rows_multipass")
    params = {"BM": 128, "BK": 128}
    special = specialized(tiled, program("softmax"), sizes, params)
    assert special is not None and special.dropped == 3 and special.proof_id
    assert special.facts == ("M mod BM == 0", "BM <= M", "N mod BK == 0", "BK <= N")
    plain = emit_nki(lower_and_fuse(tiled)[0].func, params).text
    text = emit_nki(lower_and_fuse(special.func)[0].func, params).text
    assert plain.count("affine_select") == 5 and text.count("affine_select") == 0
    assert 'assumes N mod BK == 0"' in text and 'assumes BK <= N"' in text
    assert matches("softmax", lower_and_fuse(special.func)[0].func, params, sizes, tmp_path)
    # traced at an N the tiles do not divide, the kernel refuses (its assertion), never computes
    other = {"M": sizes["M"], "N": sizes["N"] + 1}
    with pytest.raises(KernelError, match="N mod BK == 0"):
        KernelRunner("trn2", tmp_path).run(text, make_inputs(PROGRAMS["softmax"], other))
    # where they do not divide, nothing is specialized
    assert specialized(tiled, program("softmax"), other, params) is None


def test_the_selection_prices_the_kernel_without_masks() -> None:
    # gqa at sizes its key blocks divide: the best candidate without its masks, and that
    # printed the other ways, all priced; one of them wins
    said: list[str] = []
    chosen = choose_kernel(program("gqa"), "trn2",
                           {"B": 1, "HKV": 1, "G": 2, "S": 128, "L": 256, "D": 16},
                           said.append, max_candidates=2)
    divided = [c for c in chosen.candidates if c.ways.startswith("sizes divide the tiles")
               and "programs at a time" not in c.ways]
    assert len(divided) == 4 and all(c.latency_s is not None for c in divided)
    assert chosen.ways.startswith("sizes divide the tiles")
    plain = min(c.latency_s for c in chosen.candidates if c.latency_s is not None
                and not c.ways)
    assert chosen.latency_s < 0.95 * plain


def test_a_cast_to_the_narrowed_dtype_is_dropped(tmp_path: Path) -> None:
    # exp(x) @ w: the lowering casts the fp32 exponentials to bf16 for TensorE (a tensor_copy);
    # narrowed, the activation writes bf16 already, and the copy would copy a tile into its
    # own dtype: the transpose reads the activation's tile instead
    func = source("def f(x: bf16[M, K], w: bf16[K, N]):\n    return exp(x) @ w\n")
    lowered = lower_and_fuse(tiled(func, "blocks_k"))[0].func
    (act,) = [op for op in instructions(lowered) if isinstance(op, nki.ActivationOp)]
    assert [type(u.operation) for u in act.results[0].uses] == [nki.TensorCopyOp]
    result = narrowed(lowered)
    assert result is not None
    narrow, _ = result
    (act,) = [op for op in instructions(narrow) if isinstance(op, nki.ActivationOp)]
    assert dtype(act) == "bf16"
    assert [type(u.operation) for u in act.results[0].uses] == [nki.NcTransposeOp]
    assert not [op for op in instructions(narrow) if isinstance(op, nki.TensorCopyOp)
                and op.operands[0].type == op.results[0].type
                and isinstance(op.operands[0].owner, nki.ActivationOp)]
    for sizes in ({"M": 130, "K": 200, "N": 77}, {"M": 1, "K": 1, "N": 1}):
        inputs = random_inputs(func, sizes)
        out = run_fused(narrow, tmp_path, inputs).astype(np.float64)
        want = run_function(func, inputs, sizes)[0].astype(np.float64)
        assert np.allclose(out, want, rtol=2e-2, atol=2e-2), (sizes, TILES)
