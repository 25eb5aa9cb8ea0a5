"""A K loop over ceildiv(K, BK) whole (unmasked) blocks is the reduction over [0, K) where the
query assumes `K mod BK == 0` (`indices.assuming`): its loads read no pad, and the normal forms
read the whole blocks as a partition of [0, K). Without the fact the same kernel reads the pad
past K in its last block: refuted, with a counterexample the interpreter replays."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

from axon.tools.embed import parse_mlir
from axon.verifier import Proved, Refuted, prove_equivalent

X = "!ax.tensor<[M, K], f32>"
ROW = "!ax.tensor<[M, 1], f32>"
TILE = "!ax.tensor<[BM, BK], f32>"
PART = "!ax.tensor<[BM, 1], f32>"

#: row sums over whole K blocks, padded with 1.0 (a read past K shows in the sum)
BLOCKED_SUM = f"""
func.func @f(%x: {X}) -> {ROW} {{
  %s = ax.sum %x {{axes = array<i64: 1>, keepdims = true}} : ({X}) -> {ROW}
  func.return %s : {ROW}
}}
func.func @g(%x: {X}) -> {ROW} {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "BK"]}}
      : ({X}) -> {ROW} {{
  ^bb0(%xg: {X}):
    %zero = tile.full {{value = 0.0 : f64, shape = ["BM", "1"], dtype = f32, space = "sbuf"}}
        : {PART}
    %acc = tile.for %zero {{iv = "k", extent = "ceildiv(K, BK)"}} : ({PART}) -> {PART} {{
    ^bb1(%in: {PART}):
      %t = tile.load %xg {{offsets = ["i*BM", "k*BK"], shape = ["BM", "BK"], pad = 1.0 : f64,
                          space = "sbuf"}} : ({X}) -> {TILE}
      %p = ax.sum %t {{axes = array<i64: 1>, keepdims = true}} : ({TILE}) -> {PART}
      %s = ax.add %in, %p : ({PART}, {PART}) -> {PART}
      tile.yield %s : {PART}
    }}
    tile.store %acc {{result = 0, offsets = ["i*BM", "0"]}} : {PART}
    tile.yield
  }}
  func.return %c : {ROW}
}}
"""

#: row maxes over whole K blocks started at the first block (read before the loop), padded
#: with 0.0 (a read past K shows where every element is negative)
BLOCKED_MAX = f"""
func.func @f(%x: {X}) -> {ROW} {{
  %s = ax.reduce_max %x {{axes = array<i64: 1>, keepdims = true}} : ({X}) -> {ROW}
  func.return %s : {ROW}
}}
func.func @g(%x: {X}) -> {ROW} {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "BK"]}}
      : ({X}) -> {ROW} {{
  ^bb0(%xg: {X}):
    %t0 = tile.load %xg {{offsets = ["i*BM", "0"], shape = ["BM", "BK"], pad = 0.0 : f64,
                         space = "sbuf"}} : ({X}) -> {TILE}
    %first = ax.reduce_max %t0 {{axes = array<i64: 1>, keepdims = true}} : ({TILE}) -> {PART}
    %acc = tile.for %first {{iv = "k", extent = "ceildiv(K, BK)"}} : ({PART}) -> {PART} {{
    ^bb1(%in: {PART}):
      %t = tile.load %xg {{offsets = ["i*BM", "k*BK"], shape = ["BM", "BK"], pad = 0.0 : f64,
                          space = "sbuf"}} : ({X}) -> {TILE}
      %p = ax.reduce_max %t {{axes = array<i64: 1>, keepdims = true}} : ({TILE}) -> {PART}
      %s = ax.max %in, %p : ({PART}, {PART}) -> {PART}
      tile.yield %s : {PART}
    }}
    tile.store %acc {{result = 0, offsets = ["i*BM", "0"]}} : {PART}
    tile.yield
  }}
  func.return %c : {ROW}
}}
"""

WHOLE = ["K mod BK == 0", "BK <= K"]


def pair(text: str) -> tuple[FuncOp, FuncOp]:
    f, g = (op for op in parse_mlir(text, "kernel.mlir").ops if isinstance(op, FuncOp))
    return f, g


@pytest.mark.parametrize("text", [BLOCKED_SUM, BLOCKED_MAX], ids=["sum", "max"])
def test_whole_blocks_are_the_reduction_where_the_block_divides_k(text: str) -> None:
    verdict = prove_equivalent(*pair(text), assumptions=WHOLE)
    assert isinstance(verdict, Proved), verdict


NOT_DIVIDING = [[], ["BK <= K"], ["K mod 2 == 0", "BK <= K"]]
NOT_DIVIDING_IDS = ["none", "order only", "another divisor"]


@pytest.mark.parametrize("assumptions", NOT_DIVIDING[:2], ids=NOT_DIVIDING_IDS[:2])
def test_a_whole_block_sum_without_the_divisibility_is_refuted(assumptions: list[str]) -> None:
    f, g = pair(BLOCKED_SUM)
    verdict = prove_equivalent(f, g, assumptions=assumptions)
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(f, g)


@pytest.mark.parametrize("assumptions", [NOT_DIVIDING[2], ["K == 6", "BK == 2"]],
                         ids=["another divisor", "sizes that divide, no divisibility fact"])
def test_a_whole_block_sum_is_never_proved_without_the_divisibility_fact(
        assumptions: list[str]) -> None:
    """Only `K mod BK == 0` itself is read; other facts leave the blocks unread (Unknown
    where the replay finds no difference), never Proved."""
    verdict = prove_equivalent(*pair(BLOCKED_SUM), assumptions=assumptions)
    assert not isinstance(verdict, Proved), verdict


@pytest.mark.parametrize("assumptions", NOT_DIVIDING, ids=NOT_DIVIDING_IDS)
def test_a_whole_block_max_without_the_divisibility_is_not_proved(assumptions: list[str]
                                                                  ) -> None:
    """The pad (0.0) shows only where a row is all negative: the replay's random inputs may
    miss it, so the verdict may be Unknown; it is never Proved."""
    verdict = prove_equivalent(*pair(BLOCKED_MAX), assumptions=assumptions)
    assert not isinstance(verdict, Proved), verdict


def test_a_counterexample_at_k_5_and_bk_2_replays() -> None:
    """K = 5 in blocks of 2: the third block reads the pad at column 5."""
    f, g = pair(BLOCKED_SUM)
    verdict = prove_equivalent(f, g, assumptions=["K == 5", "BK == 2"])
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(f, g)


def test_the_first_block_before_the_loop_needs_bk_at_most_k() -> None:
    f, g = pair(BLOCKED_MAX)
    verdict = prove_equivalent(f, g, assumptions=["K mod BK == 0"])
    # K mod BK == 0 with K >= 1 implies BK <= K: z3 may prove it, it must never be refuted
    assert not isinstance(verdict, Refuted), verdict
