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
from axon.dialects.tile import FullOp, LoadOp
from axon.interpreter import run_function
from axon.targets.nki import emit
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.fuse import fuse_kernel
from axon.targets.nki.lower import kernel_of, lower_and_prove
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
    (tiling,) = [t for t in tilings(program(name)) if t.kind == kind]
    profile = load_profile("trn2")
    tiled = tile_function(program(name), tiling, *tile_spaces(profile))
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


def test_an_accumulator_is_never_hoisted_out_of_the_grid(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    func = kernel("matmul", "blocks_k")
    (acc,) = (op for op in kernel_of(func).body.block.ops if isinstance(op, FullOp))
    assert acc not in emit._grid_invariant(kernel_of(func))
    # planted: the PSUM accumulator taken as the same in every program and allocated once
    # before the grid, so each output block adds onto the last one's sum: wrong
    monkeypatch.setattr(emit, "_written_in_place", lambda value: False)
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
    copy = before.index("nisa.tensor_copy(dst=t6[0:BM, c7 * nl.tile_size.gemm_moving_fmax:")
    assert banks < copy < before.index("src=in1.ap(pattern=[[0, BM], [1, N]], offset=0)")
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
    assert loads_of(trace, "tensor_reduce") == 0


def test_a_wrong_broadcast_by_banks_repeats_the_first_bank(tmp_path: Path) -> None:
    # planted: every bank's block broadcast from the row's first columns; wrong past them
    text = emit_nki(kernel("rmsnorm", "rows"), {"BM": 128}).text
    pattern = (r"moving=(t\d+)\[0:1, (c\d+) \* nl.tile_size.gemm_moving_fmax:"
               r"\2 \* nl.tile_size.gemm_moving_fmax \+ (n\d+)\]")
    assert re.search(pattern, text) is not None
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
