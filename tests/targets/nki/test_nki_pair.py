"""Two programs of a grid at a time (`targets/nki/pair.py`): the second program's statements
after the first's, a loop both open opened once, the tiles that name no program of the pair
(gqa's blocks of k and v) loaded once for both; the paired kernel computes the program at an
even and an odd number of query blocks, and the cost model prices it below the kernel it
pairs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.interpreter import run_function
from axon.targets.nki.cost import estimate, load_constants
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.fuse import lower_and_fuse
from axon.targets.nki.pair import paired, paired_text
from axon.targets.nki.select import KernelRunner, random_inputs, tiled_programs
from axon.targets.nki.simulator import load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.profiles import load_profile
from axon.tiling.search import tile_program

from .test_nki_batched import GQA, source

SIZES = {"B": 1, "HKV": 2, "G": 2, "S": 256, "L": 256, "D": 64}


@pytest.fixture(scope="module")
def gqa_text() -> str:
    """gqa's variant (kv head `h floordiv G`) in its two-pass k-loop tiling, lowered, fused
    and printed."""
    (variant,) = tiled_programs(source(GQA), "trn2", SIZES, 2)[1:]
    result = tile_program([variant], load_profile("trn2"), SIZES)
    (proposal,) = (p for p in result.proved if p.tiling.kind == "batched_rows_k")
    assert proposal.kernel is not None
    params = dict(proposal.candidates[0].params)
    return emit_nki(lower_and_fuse(proposal.kernel)[0].func, params).text


def _branches(text: str) -> tuple[str, str]:
    """The paired grid's body and the plain grid's (its `else`)."""
    start = text.index("for i_pair in nl.affine_range(")
    end = text.index("\n" + " " * (len(text[:start]) - len(text[:start].rstrip(" ")) - 4)
                     + "else:", start)
    return text[start:end], text[end:]


def test_gqa_pairs_its_query_blocks_and_loads_each_kv_block_once_for_both(
        gqa_text: str) -> None:
    text = paired_text(gqa_text, "i")
    assert text is not None
    assert "i = 2 * i_pair" in text and "i_b = 2 * i_pair + 1" in text
    pair, plain = _branches(text)
    # q's block is each program's own; k's (transposed on the way in) and v's blocks name no
    # query block: one DMA each for the two programs
    assert pair.count("src=in0[") == 2 * plain.count("src=in0[") == 2
    for kv in ("src=in1[", "src=in2["):
        assert pair.count(kv) == plain.count(kv) > 0
    # each loop opened once, the second program's instruction right after the first's
    assert pair.count("nl.sequential_range(") == plain.count("nl.sequential_range(")
    products = re.findall(r"nisa\.nc_matmul\(dst=(t\d+(?:_b)?)", pair)
    assert products[:2] == [products[0], products[0] + "_b"]


@pytest.mark.parametrize("queries", [200, 300])  # two query blocks (paired), three (plain)
def test_the_paired_gqa_computes_the_program(gqa_text: str, queries: int,
                                             tmp_path: Path) -> None:
    text = paired_text(gqa_text, "i")
    assert text is not None
    func = source(GQA)
    sizes = {**SIZES, "S": queries, "L": 70}
    inputs = random_inputs(func, sizes)
    out, _ = KernelRunner("trn2", tmp_path).run(text, inputs, "gqa")
    (want,) = run_function(func, inputs, sizes, exact=True)
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=3e-2, atol=3e-2)


def test_the_cost_model_prices_the_pair_below_one_program_at_a_time(
        gqa_text: str, tmp_path: Path) -> None:
    func: FuncOp = source(GQA)
    inputs = random_inputs(func, SIZES)
    latencies = []
    for k, text in enumerate((gqa_text, paired_text(gqa_text, "i"))):
        assert text is not None
        path = tmp_path / f"k{k}.py"
        path.write_text(text)
        _, trace = simulate(load_kernel(path), *inputs, limits=load_limits("trn2"), trace=True)
        latencies.append(estimate(trace, load_constants("trn2")).total_s)
    assert latencies[1] < 0.9 * latencies[0], latencies


#: two programs of `j`, a block of `x` naming only `b` (shared) and a row statistic of each
#: program's own block written through `reduce_res=` (not shared, though the statement that
#: makes its tile is the same in both)
TOY = """\
    for b in nl.affine_range(B):
        for j in nl.affine_range(J):
            t1 = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.dma_copy(dst=t1, src=x[b, 0:128, 0:64])
            t2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=t2, value=0.0)
            for k in nl.sequential_range(4):
                t3 = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
                nisa.dma_copy(dst=t3, src=y[b, j, k, 0:128, 0:64])
                t4 = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
                t5 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation_reduce(dst=t4, op=nl.exp, data=t3, reduce_op=nl.add, reduce_res=t5)
                nisa.tensor_tensor(dst=t2, data1=t2, data2=t5, op=nl.add)
            nisa.dma_copy(dst=out0[b, j, 0:128, 0:1], src=t2)
    return out0"""


def test_a_tile_naming_no_program_is_shared_and_one_written_by_a_reduction_is_not() -> None:
    lines = paired(TOY.split("\n"), "j")
    assert lines is not None
    text = "\n".join(lines)
    pair = text[text.index("for j_pair"):text.index("else:")]
    assert pair.count("src=x[b, 0:128, 0:64]") == 1  # t1: read by neither program's writes
    assert "dst=t1_b" not in pair
    # t5 and t5_b: each program's own row sums (written by `reduce_res=`), so t2_b too
    assert "reduce_res=t5_b" in pair and "dst=t2_b, data1=t2_b, data2=t5_b" in pair
    assert "src=y[b, j_b, k, 0:128, 0:64]" in pair


def test_a_grid_body_without_a_sequential_loop_is_not_paired() -> None:
    flat = [line for line in TOY.split("\n") if "sequential_range" not in line]
    assert paired(flat, "j") is None
    assert paired(TOY.split("\n"), "other") is None


def test_four_programs_at_a_time_compute_the_program_and_load_kv_once(
        gqa_text: str, tmp_path: Path) -> None:
    text = paired_text(gqa_text, "i", 4)
    assert text is not None
    assert "i_d = 4 * i_pair + 3" in text and "% 4 == 0:" in text
    pair, plain = _branches(text)
    assert pair.count("src=in0[") == 4 * plain.count("src=in0[")
    assert pair.count("src=in2[") == plain.count("src=in2[")
    func = source(GQA)
    for queries in (512, 300):  # four query blocks (four at a time), three (the plain grid)
        sizes = {**SIZES, "S": queries, "L": 70}
        inputs = random_inputs(func, sizes)
        out, _ = KernelRunner("trn2", tmp_path).run(text, inputs, "gqa")
        (want,) = run_function(func, inputs, sizes, exact=True)
        np.testing.assert_allclose(out.astype(np.float64), want, rtol=3e-2, atol=3e-2)
    with pytest.raises(ValueError, match="5 programs at a time"):
        paired_text(gqa_text, "i", 5)


def test_a_grid_writing_a_tile_made_before_it_is_not_paired() -> None:
    # a buffer allocated before the grid and filled by each program: two programs at a time
    # would both fill it before either read it
    lines = TOY.split("\n")
    lines.insert(0, "    s9 = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)")
    body = lines.index("            nisa.dma_copy(dst=t1, src=x[b, 0:128, 0:64])")
    lines.insert(body + 1, "            nisa.dma_copy(dst=s9, src=y[b, j, 0, 0:128, 0:64])")
    assert paired(lines, "j") is None
    assert paired(TOY.split("\n"), "j") is not None
