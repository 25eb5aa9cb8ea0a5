"""Where and how the emitter places a proved lowering's instructions (`targets/nki/emit.py`):
ops that are the same in every program of the grid printed once before it, a matmul's moving
operand read once per column block and its stationary one once (SBUF buffers; the plain grid
where they would not fit or not be reused), no memset of a matmul accumulator, a row broadcast
over the partitions bank by bank (each block copied into SBUF) where no PSUM bank holds it, a
row length written rather than summed from ones, `x * rstd` on ScalarE, a rows kernel's tiles
loaded ahead of its grid.
Each changed kernel runs on the simulator (Trn2 limits, warnings as errors) against the
reference interpreter at shapes with remainder tiles, sizes of 1 and several tiles; planted
wrong schedules (an accumulator hoisted out of the grid, a load streamed across the program id
it depends on) compute wrong results, which the rules never propose."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects import nki
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.tile import ForOp, FullOp, LoadOp
from axon.interpreter import run_function
from axon.targets.nki import emit
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.fuse import fuse_kernel
from axon.targets.nki.lower import kernel_of, lower_and_prove
from axon.targets.nki.select import KernelRunner, check_close, first_kernel, tiled_programs
from axon.targets.nki.simulator import SimulationWarning, load_kernel, simulate
from axon.targets.nki.simulator.trace import Trace
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.profiles import load_profile
from axon.tiling.kernels import tile_function, tilings
from axon.tiling.profiles import kernel_constraints, tile_spaces
from axon.tools.embed import parse_source

TILES = {"BM": 128, "BN": 512, "BK": 128}


def program(name: str) -> FuncOp:
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def kernel(name: str, kind: str) -> FuncOp:
    """The `kind` tiling of suite program `name` for Trn2, lowered, proved and fused (what
    selection emits)."""
    return kernel_of_function(program(name), kind)


def kernel_of_function(func: FuncOp, kind: str) -> FuncOp:
    """The `kind` tiling of `func` for Trn2, lowered, proved and fused."""
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    profile = load_profile("trn2")
    tiled = tile_function(func, tiling, *tile_spaces(profile))
    op = kernel_of(tiled)
    op.assume_also(kernel_constraints(profile, op))
    return fuse_kernel(lower_and_prove(tiled).func).func


def run(text: str, tmp_path: Path, inputs: list[np.ndarray]) -> tuple[np.ndarray, Trace]:
    path = tmp_path / "kernel.py"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulationWarning)
        out, trace = simulate(load_kernel(path), *inputs, limits=load_limits("trn2"),
                              trace=True)
    assert isinstance(trace, Trace)
    return np.asarray(out), trace


def close(name: str, sizes: dict[str, int], out: np.ndarray, inputs: list[np.ndarray]) -> bool:
    """Within bf16's tolerance of the reference's rounded run or of its exact one
    (selection's rule: the kernel keeps fp32 intermediates)."""
    func = program(name)
    rtol, atol = DTYPES["bf16"].tolerance
    (rounded,) = run_function(func, inputs, sizes)
    (exact,) = run_function(func, inputs, sizes, exact=True)
    return any(np.allclose(out.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)
               for want in (rounded, exact))


def loads_of(trace: Trace, name: str) -> int:
    return sum(1 for inst in trace.instructions if inst.name == name)


# ---- matmul: x's blocks read once, w's once per column block --------------------------------
#: (sizes, branch): several tiles of each dim, remainders in each (x and w both streamed);
#: x's buffer too large beside w's (2 x 110 row blocks x 2 K steps x 128 x 2 bytes, with w's,
#: more than half of SBUF's 224 KiB): w's alone; one column block (x's blocks read once
#: anyway), remainders of every tile: w's alone; all ones and one row block (nothing read
#: twice), and a contraction whose w buffer (2 x 58 blocks x 512 x 2 bytes) is more than half
#: of SBUF: the plain grid
MATMUL = [({"M": 300, "N": 600, "K": 300}, "both"), ({"M": 14000, "N": 600, "K": 200}, "w"),
          ({"M": 130, "N": 77, "K": 200}, "w"), ({"M": 1, "N": 1, "K": 1}, "plain"),
          ({"M": 3, "N": 5, "K": 7300}, "plain")]


@pytest.mark.parametrize(("sizes", "branch"), MATMUL)
def test_matmul_reads_x_once_and_w_once_per_column_block(
        sizes: dict[str, int], branch: str, tmp_path: Path) -> None:
    text = emit_nki(kernel("matmul", "blocks_k"), TILES).text
    both, rest = text.split("\n    elif ")
    w_only, plain = rest.split("\n    else:\n")
    # x transposed into one buffer of every (row block, K step), then the column blocks
    # outermost, w's blocks of all of K in one buffer, then the row blocks
    assert both.index("nisa.dma_transpose(") < both.index("for j in") \
        < both.index("nisa.dma_copy(dst=s") < both.index("for i in nl.affine_range", 1500)
    assert "stationary=s0[0:BK, i * (((BK + K - 1) // BK)) + k, 0:BM]" in both
    assert w_only.index("for j in") < w_only.index("nl.ndarray((BK, ") \
        < w_only.index("for i in")
    assert plain.index("for i in") < plain.index("for j in")
    # no memset of the accumulator: the first matmul of the fresh PSUM tile overwrites it
    psum = re.findall(r"(t\d+) = nl\.ndarray\(.*buffer=nl\.psum\)", text)
    assert len(psum) == 3 and not any(f"memset(dst={t}," in text for t in psum)
    inputs = make_inputs(PROGRAMS["matmul"], sizes)
    out, trace = run(text, tmp_path, inputs)
    assert close("matmul", sizes, out, inputs), sizes
    rows, cols, steps = (-(-sizes["M"] // 128), -(-sizes["N"] // 512), -(-sizes["K"] // 128))
    # dma_copy: w's blocks and the stores; x comes in by dma_transpose
    w_loads = rows * cols * steps if branch == "plain" else cols * steps
    x_loads = rows * steps if branch == "both" else rows * cols * steps
    assert loads_of(trace, "dma_copy") == w_loads + rows * cols
    assert loads_of(trace, "dma_transpose") == x_loads


GATE = """
def gate(x: bf16[M, K], w1: bf16[K, F], w2: bf16[K, F]):
    return silu(x @ w1) * (x @ w2)
"""


def test_a_gated_product_streams_both_weights_once_per_column_block(tmp_path: Path) -> None:
    # the K loop reads w1's and w2's blocks of a column block, neither naming the row block:
    # both are streamed into buffers once per column block (each read once in all), not w2's
    # read again by every row block (mlp's gate 166.4 -> 86.5 us on trn2 at 1024^3)
    (func,) = (op for op in parse_source(GATE, "gate.py").ops if isinstance(op, FuncOp))
    text = emit_nki(kernel_of_function(func, "blocks_k"), {"BM": 128, "BN": 256, "BK": 128}).text
    sizes = {"M": 300, "K": 300, "F": 600}
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(shape).astype(DTYPES["bf16"].storage)
              for shape in ((300, 300), (300, 600), (300, 600))]
    out, trace = run(text, tmp_path, inputs)
    (want,) = run_function(func, inputs, sizes, exact=True)
    rtol, atol = DTYPES["bf16"].tolerance
    assert np.allclose(out.astype(np.float64), want, rtol=rtol, atol=atol)
    rows, cols, steps = 3, 3, 3
    # x's blocks once (each transposed for the two products), w1's and w2's once, the stores
    assert loads_of(trace, "dma_copy") == rows * steps + 2 * cols * steps + rows * cols


@pytest.mark.parametrize("sizes", [{"M": 300, "N": 200, "K": 300}, {"M": 260, "N": 256, "K": 128},
                                   {"M": 129, "N": 129, "K": 1}])
def test_w_read_over_every_column_block_comes_in_whole_rows(sizes: dict[str, int],
                                                            tmp_path: Path) -> None:
    # at BN = 128 the buffer read over every column block is w's (x's blocks are re-read per
    # row block): one DMA a K step of w's whole rows (a partition moves N elements at once,
    # not BN), the columns past N filled, each column block then read at BN*j of the step
    tiles = {"BM": 128, "BN": 128, "BK": 128}
    text = emit_nki(kernel("matmul", "blocks_k"), tiles).text
    both = text.split("\n    elif ")[0]
    assert "nisa.dma_copy(dst=s0[0:n1, k, 0:N], src=in1[BK*k:BK*k + n1, 0:N])" in both
    assert "moving=s0[0:BK, k, BN * j:BN * j + BN]" in both
    inputs = make_inputs(PROGRAMS["matmul"], sizes)
    out, trace = run(text, tmp_path, inputs)
    assert close("matmul", sizes, out, inputs), sizes
    rows, cols, steps = (-(-sizes["M"] // 128), -(-sizes["N"] // 128), -(-sizes["K"] // 128))
    assert loads_of(trace, "dma_copy") == steps + rows * cols
    # each of w's DMAs moves a partition's whole row: N * 2 bytes contiguous on both sides
    w_dmas = [inst for inst in trace.instructions if inst.name == "dma_copy"
              and inst.writes[0][1].buffer == "sbuf"]
    assert len(w_dmas) == steps
    assert all(a.contiguous_bytes == sizes["N"] * 2 for inst in w_dmas
               for _, a in (*inst.reads, *inst.writes))


def test_an_accumulator_is_never_hoisted_out_of_the_grid(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    func = kernel("matmul", "blocks_k")
    (acc,) = (op for op in kernel_of(func).body.block.ops if isinstance(op, FullOp))
    assert acc not in emit._grid_invariant(kernel_of(func))
    # planted: the PSUM accumulator taken as the same in every program and allocated once
    # before the grid, so each output block adds onto the last one's sum: wrong
    monkeypatch.setattr(emit, "written_in_place", lambda value: False)
    monkeypatch.setattr(emit, "_stream_loads", lambda *args: None)
    assert acc in emit._grid_invariant(kernel_of(func))
    text = emit_nki(func, TILES).text
    assert text.index("buffer=nl.psum)") < text.index("for i in")
    sizes = {"M": 300, "N": 600, "K": 300}
    inputs = make_inputs(PROGRAMS["matmul"], sizes)
    out, _ = run(text, tmp_path, inputs)
    assert not close("matmul", sizes, out, inputs)


def test_a_load_is_streamed_only_across_the_program_ids_it_does_not_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    func = kernel("matmul", "blocks_k")
    plans = emit._stream_loads(kernel_of(func), set(), TILES)
    assert plans is not None
    plan, whole = plans
    assert plan.uses == frozenset({"j"}) and _source_index(plan.load) == 1  # w
    assert whole is not None and whole.uses == frozenset({"i"}) \
        and _source_index(whole.load) == 0  # x, transposed on its way in
    assert whole.transpose is not None
    # planted: w's buffer filled for the first column block only (j bound to 0 while it
    # loads), every column block then multiplying by the first one's w: wrong
    wrong = emit._Stream(plan.loop, plan.load, plan.transpose, frozenset())
    monkeypatch.setattr(emit, "_stream_loads", lambda *args: (wrong, None))
    text = emit_nki(func, TILES).text.replace("    out0 = ", "    j = 0\n    out0 = ", 1)
    sizes = {"M": 130, "N": 600, "K": 200}
    inputs = make_inputs(PROGRAMS["matmul"], sizes)
    out, _ = run(text, tmp_path, inputs)
    assert not close("matmul", sizes, out, inputs)


def _source_index(load: LoadOp) -> int:
    arg = load.source
    assert hasattr(arg, "index")
    return int(arg.index)


# ---- rows kernels: every program's tiles loaded ahead of the grid ------------------------------
#: the `if` of a rows kernel's grid with its loads ahead (`emit.grid_loading_ahead`)
AHEAD = "    if (((BM + M - 1) // BM)) > 1 and "
#: (program, sizes, ahead): remainder tiles (two programs), several tiles, one program (the
#: plain grid: nothing to load ahead of), and rows too long for the buffer (16 row tiles of
#: 3500 bf16, counted twice: more than half of SBUF), the plain grid
AHEAD_CASES = [("softmax", {"M": 130, "N": 77}, True), ("cumsum", {"M": 300, "N": 512}, True),
               ("rmsnorm", {"M": 257, "N": 2000}, True), ("mul", {"M": 1, "N": 1}, False),
               ("cumsum", {"M": 2000, "N": 3500}, False)]


def hbm_transfers(trace: Trace) -> list[str]:
    """The kernel's DMAs in trace order: `load` (into the chip) or `store` (into HBM)."""
    return ["store" if inst.writes[0][1].buffer == "hbm" else "load"
            for inst in trace.instructions if inst.name == "dma_copy"
            and "hbm" in {a.buffer for _, a in (*inst.reads, *inst.writes)}]


@pytest.mark.parametrize(("name", "sizes", "ahead"), AHEAD_CASES)
def test_a_rows_kernel_loads_every_program_s_tiles_ahead_of_its_grid(
        name: str, sizes: dict[str, int], ahead: bool, tmp_path: Path) -> None:
    text = emit_nki(kernel(name, "rows"), {"BM": 128}).text
    assert AHEAD in text
    inputs = make_inputs(PROGRAMS[name], sizes)
    out, trace = run(text, tmp_path, inputs)
    assert close(name, sizes, out, inputs), sizes
    order = hbm_transfers(trace)
    tiles = -(-sizes["M"] // 128)
    assert order.count("store") == tiles
    # ahead: every load (a weight row's before the grid too) before the first store; else
    # (more than one program) the first program's store before the last program's load
    assert (order.index("store") >= order.count("load")) == (ahead or tiles == 1)


def test_a_wrong_load_ahead_reads_the_wrong_block(tmp_path: Path) -> None:
    # planted: every program reads the first block of the buffer; wrong past one row tile
    text = emit_nki(kernel("softmax", "rows"), {"BM": 128}).text
    block = re.search(r"data=(s\d+)\[0:BM, i, 0:N\]", text)
    assert block is not None
    wrong = text.replace(block.group(0), f"data={block.group(1)}[0:BM, 0, 0:N]")
    assert wrong != text
    sizes = {"M": 300, "N": 64}
    inputs = make_inputs(PROGRAMS["softmax"], sizes)
    out, _ = run(wrong, tmp_path, inputs)
    assert not close("softmax", sizes, out, inputs)
    right, _ = run(text, tmp_path, inputs)
    assert close("softmax", sizes, right, inputs)


# ---- rmsnorm: the weight row by DMA, once ------------------------------------------------------
#: remainder row tiles, all ones, several tiles, a row of one PSUM bank (512 fp32) and rows
#: longer than one (by DMA)
RMSNORM = [({"M": 130, "N": 77}, True), ({"M": 1, "N": 1}, True), ({"M": 300, "N": 512}, True),
           ({"M": 257, "N": 2000}, False), ({"M": 3, "N": 513}, False)]


@pytest.mark.parametrize(("sizes", "by_matmul"), RMSNORM)
def test_rmsnorm_broadcasts_its_weight_once_and_writes_its_row_length(
        sizes: dict[str, int], by_matmul: bool, tmp_path: Path) -> None:
    func = kernel("rmsnorm", "rows")
    text = emit_nki(func, {"BM": 128}).text
    before, grid = text.split(f"\n{AHEAD}", 1)
    # before the grid: the weight on every partition, by the ones matmul into PSUM where the
    # row fits one bank, else (a tile of more than half the partitions) by one matmul per
    # bank's width of columns, each copied into SBUF, rather than by a DMA of partition
    # stride 0 (which a tile of fewer partitions takes); and the row length
    assert "    if N <= nl.tile_size.gemm_moving_fmax:\n" in before
    assert "nisa.nc_matmul(" in before and "nc_matmul" not in grid
    banks = before.index("        if 2 * BM > nl.tile_size.pmax:\n")
    copy = before.index("nisa.tensor_copy(dst=t6[0:BM, c8 * nl.tile_size.gemm_moving_fmax:")
    assert banks < copy < before.index("src=in1.ap(pattern=[[0, BM], [1, N]], offset=0)")
    # the first half of the banks copied by VectorE, the rest by ScalarE
    copies = [ln for ln in before.splitlines() if "nisa.tensor_copy(" in ln]
    assert len(copies) == 2 and "engine=" not in copies[0]
    assert copies[1].endswith(", engine=nisa.engine.scalar)")
    # the row length written, not summed from a ones tile; `x * rstd` on ScalarE beside VectorE's
    # `x * g` (ScalarE has only the squares)
    assert "nisa.memset(dst=t1, value=float(N))" in before and "nisa.tensor_reduce(" not in text
    scales = [line for line in grid.splitlines() if "op0=nl.multiply" in line]
    assert len(scales) == 2 and all(s.endswith(", engine=nisa.engine.scalar)") for s in scales)
    inputs = make_inputs(PROGRAMS["rmsnorm"], sizes)
    out, trace = run(text, tmp_path, inputs)
    assert close("rmsnorm", sizes, out, inputs), sizes
    # the row loaded once (and broadcast once, bank by bank past one); a load and a store per
    # row tile
    tiles = -(-sizes["M"] // 128)
    assert loads_of(trace, "dma_copy") == 1 + 2 * tiles
    assert loads_of(trace, "nc_matmul") == (1 if by_matmul else -(-sizes["N"] // 512))
    assert loads_of(trace, "tensor_copy") == (0 if by_matmul else -(-sizes["N"] // 512))
    if not by_matmul and sizes["N"] > 1024:
        engines = [i.engine for i in trace.instructions if i.name == "tensor_copy"]
        assert engines.count("ACT") == len(engines) - len(engines) // 2 >= 1
        assert engines.count("DVE") == len(engines) // 2 >= 1
    assert loads_of(trace, "tensor_reduce") == 0


def test_a_wrong_broadcast_by_banks_repeats_the_first_bank(tmp_path: Path) -> None:
    # planted: every bank's block broadcast from the row's first columns; wrong past them
    text = emit_nki(kernel("rmsnorm", "rows"), {"BM": 128}).text
    # (both loops of banks: VectorE's, and ScalarE's from the middle bank on)
    pattern = (r"moving=(t\d+)\[0:1, ([^:\]]*c\d+\)? \* nl.tile_size.gemm_moving_fmax):"
               r"\2 \+ (n\d+)\]")
    assert len(re.findall(pattern, text)) == 2
    wrong = re.sub(pattern, r"moving=\1[0:1, 0:\3]", text)
    sizes = {"M": 130, "N": 1100}
    inputs = make_inputs(PROGRAMS["rmsnorm"], sizes)
    out, _ = run(wrong, tmp_path, inputs)
    assert not close("rmsnorm", sizes, out, inputs)
    right, _ = run(text, tmp_path, inputs)
    assert close("rmsnorm", sizes, right, inputs)


def test_only_a_ones_matmul_of_a_loaded_row_is_a_broadcast() -> None:
    func = kernel("rmsnorm", "rows")
    (matmul,) = (op for op in func.walk() if isinstance(op, nki.NcMatmulOp))
    assert emit._broadcast_row(matmul) is not None
    ones = matmul.operands[0].owner
    assert isinstance(ones, nki.MemsetOp)
    twos = nki.MemsetOp.make([], **{**ones.attrs(), "value": 2.0})  # type: ignore[arg-type]
    block = ones.parent_block()
    assert block is not None
    block.insert_op_before(twos, ones)
    matmul.operands[0] = twos.results[0]
    assert emit._broadcast_row(matmul) is None  # 2 * row is no broadcast


def test_only_a_row_sum_of_ones_is_a_count() -> None:
    func = kernel("rmsnorm", "rows")
    (count,) = (op for op in func.walk() if isinstance(op, nki.TensorReduceOp))
    assert emit._count_of_ones(count) is not None
    ones = count.operands[0].owner
    assert isinstance(ones, nki.MemsetOp)
    twos = nki.MemsetOp.make([], **{**ones.attrs(), "value": 2.0})  # type: ignore[arg-type]
    block = ones.parent_block()
    assert block is not None
    block.insert_op_before(twos, ones)
    count.operands[0] = twos.results[0]
    assert emit._count_of_ones(count) is None  # the sum of twos is 2 F


def test_softmax_scales_by_the_reciprocal_on_scalar_engine() -> None:
    # VectorE has the max (a pass over the row, though it writes a column) and the reciprocal
    # of the sum (a column); ScalarE the exp with its sum and the product by the reciprocal,
    # which it runs where it could not run the divide
    text = emit_nki(kernel("softmax", "rows"), {"BM": 128}).text
    lines = [ln for ln in text.splitlines() if "engine=" in ln]
    assert len(lines) == 2  # one in each of the kernel's grids (loads ahead, plain)
    assert all("op0=nl.multiply" in ln and "engine=nisa.engine.scalar" in ln for ln in lines)


def test_a_lone_product_stays_on_vector_engine() -> None:
    # mul's one tensor_tensor (two passes): moving it to GpSimd would not shorten the busier
    # engine, so it stays (rope's six split three and three: test_nki_lower_coverage)
    text = emit_nki(kernel("mul", "rows"), {"BM": 128}).text
    assert "nisa.tensor_tensor(" in text and "engine=" not in text



def test_a_product_by_a_broadcast_weight_moves_to_gpsimd_and_reads_it_in_sbuf(
        tmp_path: Path) -> None:
    # layernorm's variant: VectorE has the row sum, the centring, the product by the gain and
    # the sum with the bias; the product (its operands the centred rows and the gain's
    # broadcast) moves to GpSimd, which reads no PSUM, so the gain is broadcast into SBUF at
    # every row length (no `nc_matmul` into PSUM branch for it), the bias's as before
    variant = tiled_programs(program("layernorm"), "trn2", {"M": 128, "N": 8192}, 2)[1]
    func = kernel_of_function(variant, "rows")
    body = kernel_of(func)
    engines = emit._balance_engines(body, emit._grid_invariant(body))
    (product,) = (op for op, e in engines.items() if e == "gpsimd"
                  and isinstance(op, nki.TensorTensorOp) and not emit._column_combine(op))
    assert any(emit._broadcast_row(v.owner) is not None for v in product.operands)
    text = emit_nki(func, {"BM": 128}).text
    assert text.count("if N <= nl.tile_size.gemm_moving_fmax:") == 1
    # right where the row fits one PSUM bank (the branch GpSimd could not read) and past it
    for sizes in ({"M": 100, "N": 200}, {"M": 130, "N": 1000}):
        inputs = make_inputs(PROGRAMS["layernorm"], sizes)
        out, _ = run(text, tmp_path, inputs)
        tolerance = PROGRAMS["layernorm"].tolerance_at(sizes)  # selection's check
        assert any(check_close(out, run_function(program("layernorm"), inputs, sizes,
                                                 exact=exact)[0], tolerance) == ""
                   for exact in (False, True)), sizes


def test_engines_balanced_over_the_kernel_at_known_sizes() -> None:
    # rmsnorm_matmul's blocks_k: ScalarE has a loop of squares (an activation a K step),
    # VectorE a loop of x's transposed tiles scaled by g (a tensor_scalar a K step) and the
    # product's scale by rstd (one a program). Each block alone, both scales move to ScalarE
    # (VectorE has more in each); counted over the kernel at sizes, moving the loop's would make
    # ScalarE the busier engine, so only the product's moves
    body = kernel_of(kernel("rmsnorm_matmul", "blocks_k"))
    (by_g,) = (op for op in body.walk() if isinstance(op, nki.TensorScalarOp)
               and isinstance(op.parent_op(), ForOp))
    (by_rstd,) = (op for op in body.walk() if isinstance(op, nki.TensorScalarOp)
                  and op.parent_block() is body.body.block and op.attrs()["op0"] == "multiply")
    tiles = {"BM": 128, "BN": 256, "BK": 128}

    def moved(sizes: dict[str, int] | None) -> tuple[bool, bool]:
        engines = emit._balance_engines(body, emit._grid_invariant(body),
                                        None if sizes is None else {**tiles, **sizes})
        # (and the K loop's running sum of squares, a column, to GpSimd where VectorE is busier)
        assert all(e == "scalar" or e == "gpsimd" and emit._column_combine(op)
                   for op, e in engines.items())
        return by_g in engines, by_rstd in engines

    assert moved(None) == (True, True)  # block by block (the default)
    assert moved({}) == (True, True)  # K unknown: each block alone
    assert moved({"M": 1024, "N": 1024, "K": 1024}) == (False, True)
    # one K step: a square, a scale by g and one by rstd a program; the first move evens them
    assert moved({"M": 1024, "N": 1024, "K": 128}) == (False, True)
    sizes = {"M": 1024, "N": 1024, "K": 1024}
    func = kernel("rmsnorm_matmul", "blocks_k")
    assert emit.engines_differ(func, tiles, sizes)
    text = emit_nki(func, tiles, sizes, engines_over_kernel=True).text
    assert "operand0=h4[0:BK, k1, 0:1])" in text  # the scale by g printed on VectorE
    assert "operand0=h4[0:BK, k1, 0:1], engine=nisa.engine.scalar)" in \
        emit_nki(func, tiles, sizes).text
    # rmsnorm's one block: both balances the same, so no such twin is printed
    assert not emit.engines_differ(kernel("rmsnorm", "rows"), {"BM": 128},
                                   {"M": 1024, "N": 1024})


@pytest.mark.parametrize("sizes", [{"T": 130, "H": 9, "D2": 64}, {"T": 1, "H": 1, "D2": 3},
                                   {"T": 256, "H": 16, "D2": 32}])
def test_rope_reads_a_token_blocks_angles_once_for_its_head_blocks(
        sizes: dict[str, int], tmp_path: Path) -> None:
    # cos and sin name the token block i, not the head block j: each is loaded (one stride-0
    # DMA each, broadcast over the heads as it is read) in i's loop before j's, once per
    # token block rather than once per program
    text = emit_nki(kernel("rope", "blocks"), {"BM": 128, "BN": 8}).text
    outer, inner = text.split("for j in nl.affine_range(", 1)
    outer = outer.split("for i in nl.affine_range(", 1)[1]
    assert "src=in1.ap(" in outer and "src=in2.ap(" in outer and "src=in0[" not in outer
    assert "src=in1" not in inner and "src=in2" not in inner and "src=in0[" in inner
    inputs = make_inputs(PROGRAMS["rope"], sizes)
    out, trace = run(text, tmp_path, inputs)
    assert close("rope", sizes, out, inputs), sizes
    blocks, heads = -(-sizes["T"] // 128), -(-sizes["H"] // 8)
    assert loads_of(trace, "dma_copy") == 2 * blocks + 2 * blocks * heads


def test_a_load_naming_the_inner_program_stays_in_its_loop() -> None:
    # matmul's plain grid: x's tiles name i and w's name j; neither is the same for every
    # program of an inner loop, so the last branch prints both inside the loops
    text = emit_nki(kernel("matmul", "blocks_k"), TILES).text
    plain = text.rsplit("\n    else:\n", 1)[1]
    first_j = plain.index("for j in")
    assert "dma_copy" not in plain[:first_j] and "dma_transpose" not in plain[:first_j]

# ---- rmsnorm_matmul: each row block normalized once, not once per column block ---------------
#: (sizes, branch): remainders in every dim (one column block: x's tiles are still read once for
#: the statistics and the matmul), all ones, two and three column blocks of three row blocks:
#: every row block's values first, then each of w's column blocks read once ("all"); a
#: contraction of 55 K steps, whose w buffer beside the row block's is past half of SBUF: one
#: row block at a time, w's blocks read by each program ("one")
RMSNORM_MATMUL = [({"M": 130, "N": 77, "K": 200}, "all"), ({"M": 1, "N": 1, "K": 1}, "all"),
                  ({"M": 300, "N": 600, "K": 1100}, "all"),
                  ({"M": 300, "N": 1100, "K": 600}, "all"), ({"M": 3, "N": 700, "K": 7000}, "one")]


def branches(text: str) -> list[str]:
    """The kernel's branches on its shapes, in order (the first with the text before it)."""
    return re.split(r"\n    elif |\n    else:\n", text)


@pytest.mark.parametrize(("sizes", "branch"), RMSNORM_MATMUL)
def test_rmsnorm_matmul_normalizes_each_row_block_once(
        sizes: dict[str, int], branch: str, tmp_path: Path) -> None:
    text = emit_nki(kernel("rmsnorm_matmul", "blocks_k"), TILES).text
    every, both, w_only, one, plain = branches(text)
    # g's column of each K step transposed once; every row block's statistics and scaled,
    # transposed x tiles; then w's column blocks, each read into one buffer, then the row
    # blocks again, their matmuls reading both buffers
    first = every.index("    if ")
    assert every.index("nisa.nc_transpose(", first) < every.index("for i in", first) \
        < every.index("nisa.activation_reduce(") < every.index("for j in") \
        < every.index("nisa.dma_copy(dst=s") < every.index("for i in", every.index("for j in")) \
        < every.index("nisa.nc_matmul(")
    assert "stationary=h9[0:BK, i * (((BK + K - 1) // BK)) + k1, 0:BM]" in every
    # x's row block read as whole rows (2 KiB a partition at K=1024, not a K step's 256
    # bytes), the columns past K padded, each K step's tile a window of them
    whole = r"nisa\.dma_copy\(dst=(x\d+)\[0:n\d+, 0:K\], src=in0\[BM\*i:BM\*i \+ n\d+, 0:K\]\)"
    for part in (every, one):
        rows_of_x = re.search(whole, part)
        assert rows_of_x is not None, part
        assert f"data={rows_of_x[1]}[0:BM, BK * k:BK * k + BK]" in part
    # a row block at a time: its values, then the column blocks reading them
    assert one.index("for i in") < one.index("nisa.activation_reduce(") \
        < one.index("for j in") < one.index("nisa.nc_matmul(")
    # the streamed loads (x's statistics and tiles recomputed per column block) and the
    # plain grid are still there, after
    assert "for i in" in both and "for j in" in w_only and "for i in" in plain
    inputs = make_inputs(PROGRAMS["rmsnorm_matmul"], sizes)
    out, trace = run(text, tmp_path, inputs)
    assert close("rmsnorm_matmul", sizes, out, inputs), sizes
    rows, cols, steps = (-(-sizes["M"] // 128), -(-sizes["N"] // 512), -(-sizes["K"] // 128))
    w_loads = cols * steps if branch == "all" else rows * cols * steps
    # x's rows loaded once per row block, whole (one DMA of every column, kept for the
    # statistics and the matmul's transposes), g's once, w's once per column block (or per
    # program), a store per program
    assert loads_of(trace, "dma_copy") == rows + steps + w_loads + rows * cols
    # x's tiles transposed once per row block and g's blocks once; the squares and the rsqrt
    # once per row block; g's column copied out of PSUM once
    assert loads_of(trace, "nc_transpose") == rows * steps + steps
    assert loads_of(trace, "activation") == rows * (steps + 1)
    assert loads_of(trace, "tensor_copy") == steps
    assert loads_of(trace, "nc_matmul") == rows * cols * steps


def _w_load(plan: emit._Hoist) -> tuple[LoadOp, ForOp]:
    (loop,) = plan.partial
    (w,) = [op for op in loop.body.block.ops if isinstance(op, LoadOp)
            and _source_index(op) == 2]
    return w, loop


def test_only_values_naming_the_row_block_alone_are_hoisted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    func = kernel("rmsnorm_matmul", "blocks_k")
    once = emit._hoist_for(kernel_of(func), emit._grid_invariant(kernel_of(func)), None)
    invariant = emit._grid_invariant(kernel_of(func)) | once.ops()
    plan = emit._hoist_plan(kernel_of(func), invariant)
    assert plan is not None and plan.pid == "i"
    w, loop = _w_load(plan)
    assert w not in plan.ops() and len(plan.shared) == 1  # x's tile: read once, used twice
    # g's block of each K step is read and transposed before the grid: it names no id
    assert {type(op).__name__ for op in once.ops()} == {"LoadOp", "DmaCopyOp",
                                                       "NcTransposeOp", "TensorCopyOp"}
    # planted: w's block (it names the column block j) hoisted with the row block's values,
    # read once per row block with j = 0: every column block multiplies by the first one's w
    planted = emit._Hoist(plan.pid, plan.top, {loop: (*plan.partial[loop], w)},
                          (*plan.kept, (w.result, loop)), plan.shared)
    monkeypatch.setattr(emit, "_hoist_plan", lambda *args: planted)
    monkeypatch.setattr(emit, "_stream_loads", lambda *args: None)
    text = emit_nki(func, TILES).text.replace("    out0 = ", "    j = 0\n    out0 = ", 1)
    sizes = {"M": 130, "N": 600, "K": 200}
    inputs = make_inputs(PROGRAMS["rmsnorm_matmul"], sizes)
    out, _ = run(text, tmp_path, inputs)
    assert not close("rmsnorm_matmul", sizes, out, inputs)


def test_a_row_blocks_buffers_filled_for_the_first_row_block_only_are_wrong(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one row block's buffers at a time (the streamed loads left out); planted: the buffers
    # allocated once before the row blocks and filled for the first one only, every row block
    # then multiplying the first one's normalized rows
    monkeypatch.setattr(emit, "_stream_loads", lambda *args: None)
    text = emit_nki(kernel("rmsnorm_matmul", "blocks_k"), TILES).text
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line == "        for i in "
                 "nl.affine_range(((BM + M - 1) // BM)):")
    end = next(k for k in range(start, len(lines)) if lines[k].startswith("            for j in"))
    buffers = [line for line in lines[start + 1:end] if re.match(r" +h\d+ = nl\.ndarray", line)]
    assert len(buffers) == 2  # the row factors and the scaled x.T tiles
    hoisted = [line for line in lines[start + 1:end] if line not in buffers]
    wrong = [*lines[:start], *(line[4:] for line in buffers), lines[start],
             "            if i == 0:", *("    " + line for line in hoisted), *lines[end:]]
    sizes = {"M": 300, "N": 600, "K": 200}
    inputs = make_inputs(PROGRAMS["rmsnorm_matmul"], sizes)
    out, _ = run(text, tmp_path, inputs)
    assert close("rmsnorm_matmul", sizes, out, inputs)
    out, _ = run("\n".join(wrong) + "\n", tmp_path, inputs)
    assert not close("rmsnorm_matmul", sizes, out, inputs)


def test_a_tile_is_released_after_its_last_read(tmp_path: Path) -> None:
    # a row kernel's chain of [BM, N] fp32 tiles at N = 8192 (32 KB a partition each): the
    # simulator frees a tile no name holds, as the compiler's allocator frees it after its last
    # read; held to the end of the program, seven of them overflow SBUF (208 KB a partition)
    (func,) = (op for op in parse_source(
        "def f(x: f32[M, N]):\n"
        "    return exp(x) * tanh(x) + sigmoid(x) * (x * x) - relu(x) * x\n", "f.py").ops
        if isinstance(op, FuncOp))
    sizes = {"M": 4, "N": 8192}
    chosen = first_kernel(func, "trn2", sizes, lambda line: None)
    assert re.search(r"\n +del t\d+\n", chosen.text)
    x = np.random.default_rng(0).standard_normal((4, 8192)).astype(np.float32)
    out, _ = KernelRunner("trn2", tmp_path).run(chosen.text, [x], chosen.name)
    (want,) = run_function(func, [x], sizes)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
