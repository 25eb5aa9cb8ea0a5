"""A one-block row kernel printed by stages of column chunks (`targets/nki/chunk.py`): each
stage's loads, instructions, row sums and stores chunk by chunk, so engines and DMA queues
overlap. Each printed kernel runs on the simulator against the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.targets.nki.chunk import COLUMN_CHUNKS, chunk_count, emit_chunked
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.lower import Refused
from axon.targets.nki.narrow import narrowed_past_statistics
from axon.targets.nki.select import choose_kernel, tiled_programs

from .test_nki_fold import right
from .test_nki_schedule import kernel, kernel_of_function, program

LAYERNORM = {"M": 128, "N": 8192}


def layernorm_kernel() -> tuple[FuncOp, FuncOp]:
    """The layernorm kernel selection prints (the nu-graph's variant, rows, its intermediates
    past the statistics in 16 bits)."""
    variant = tiled_programs(program("layernorm"), "trn2", LAYERNORM, 2)[1]
    func = kernel_of_function(variant, "rows")
    past = narrowed_past_statistics(func)
    assert past is not None
    return func, past[0]


@pytest.mark.parametrize("name", ["ntrans", "rmsnorm", "layernorm"])
def test_a_chunked_row_kernel_matches_the_reference(name: str, tmp_path: Path) -> None:
    # one block of 100 rows (28 padded), and two blocks, the second of 2 rows
    text = emit_chunked(kernel(name, "rows"), {"BM": 128}).text
    assert "for c" in text and "chunk_w" in text
    for sizes in ({"M": 100, "N": 2048}, {"M": 130, "N": 1024}):
        right(name, sizes, text, tmp_path)


def test_layernorm_in_chunks_overlaps_its_loads_passes_and_stores(tmp_path: Path) -> None:
    # one block of 128 rows of 8192: the plain kernel loads 2 MiB, makes its passes, stores;
    # in chunks the first chunk's sum starts when its DMA arrives (74.5 -> 61.8 us on trn2)
    _, func = layernorm_kernel()
    plain = right("layernorm", LAYERNORM, emit_nki(func, {"BM": 128}).text, tmp_path)
    chunked = right("layernorm", LAYERNORM, emit_chunked(func, {"BM": 128}).text, tmp_path)
    assert chunked < 0.9 * plain, (plain, chunked)


def test_chunks_where_there_is_one_block_of_long_rows() -> None:
    func = kernel("layernorm", "rows")
    assert chunk_count(func, {"BM": 128}, LAYERNORM) == 8
    assert chunk_count(func, {"BM": 128}, {"M": 256, "N": 8192}) == 0  # two blocks pipeline
    assert chunk_count(func, {"BM": 128}, {"M": 128, "N": 1024}) == 0  # chunks of 128
    assert chunk_count(func, {"BM": 128}, {"M": 128, "N": 8196}) == 0  # 8196 % 8
    with pytest.raises(Refused, match="not printed in column chunks: a loop"):
        emit_chunked(kernel("rmsnorm", "rows_multipass"), {"BM": 128, "BK": 128})


def test_selection_takes_the_chunked_kernel_for_one_block_of_long_rows() -> None:
    chosen = choose_kernel(program("layernorm"), "trn2", LAYERNORM, lambda line: None,
                           inputs=make_inputs(PROGRAMS["layernorm"], LAYERNORM),
                           tolerance=PROGRAMS["layernorm"].tolerance_at(LAYERNORM))
    assert COLUMN_CHUNKS in chosen.chosen, chosen.chosen
    plain = [c.latency_s for c in chosen.candidates if c.latency_s is not None
             and COLUMN_CHUNKS not in c.label]
    assert chosen.latency_s is not None and chosen.latency_s < 0.9 * min(plain)
