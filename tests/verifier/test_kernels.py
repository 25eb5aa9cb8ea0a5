"""Tiled kernels through the verifier: the grid read as an index split, proved for every size
and every tile size the kernel's assumptions admit; a wrong tiling refuted with a counterexample
the interpreter replays, or reported Unknown with the reason when its store pattern is not one
the verifier reads (never admitted)."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

from axon.dialects.form.intexpr import parse_int_expr
from axon.tools.embed import parse_mlir
from axon.verifier import Proved, Refuted, Unknown, prove_equivalent
from axon.verifier.indices import recombine

T2 = "!ax.tensor<[M, N], f32>"

ADD = f"""
func.func @f(%x: {T2}) -> {T2} {{
  %y = ax.add %x, %x : ({T2}, {T2}) -> {T2}
  func.return %y : {T2}
}}
func.func @g(%x: {T2}) -> {T2} {{
  %c = tile.kernel %x {{program_ids = ["i", "j"], grid = [GRID, "ceildiv(N, BN)"],
                       params = ["BM", "BN"]}} : ({T2}) -> {T2} {{
  ^bb0(%xg: {T2}):
    %t = tile.load %xg {{offsets = [LOAD, "j*BN"], shape = ["BM", "BN"], pad = 0.0 : f64,
                        space = "sbuf"}} : ({T2}) -> !ax.tensor<[BM, BN], f32>
    %u = ax.add %t, %t : (!ax.tensor<[BM, BN], f32>, !ax.tensor<[BM, BN], f32>)
        -> !ax.tensor<[BM, BN], f32>
    tile.store %u {{result = 0, offsets = [STORE, "j*BN"]}} : !ax.tensor<[BM, BN], f32>
    tile.yield
  }}
  func.return %c : {T2}
}}
"""

SOFTMAX = f"""
func.func @f(%x: {T2}) -> {T2} {{
  %m = ax.reduce_max %x {{axes = array<i64: 1>, keepdims = true}}
      : ({T2}) -> !ax.tensor<[M, 1], f32>
  %s = ax.sub %x, %m : ({T2}, !ax.tensor<[M, 1], f32>) -> {T2}
  %e = ax.exp %s : ({T2}) -> {T2}
  %z = ax.sum %e {{axes = array<i64: 1>, keepdims = true}} : ({T2}) -> !ax.tensor<[M, 1], f32>
  %y = ax.div %e, %z : ({T2}, !ax.tensor<[M, 1], f32>) -> {T2}
  func.return %y : {T2}
}}
func.func @g(%x: {T2}) -> {T2} {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]}}
      : ({T2}) -> {T2} {{
  ^bb0(%xg: {T2}):
    %t = tile.load %xg {{offsets = ["i*BM", "0"], shape = ["BM", "N"], pad = 0.0 : f64,
                        space = "sbuf"}} : ({T2}) -> !ax.tensor<[BM, N], f32>
    %m = ax.reduce_max %t {{axes = array<i64: 1>, keepdims = true}}
        : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %s = ax.sub %t, %m : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, 1], f32>)
        -> !ax.tensor<[BM, N], f32>
    %e = ax.exp %s : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32>
    %z = ax.sum %e {{axes = array<i64: 1>, keepdims = true}}
        : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %y = ax.div %e, %z : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, 1], f32>)
        -> !ax.tensor<[BM, N], f32>
    tile.store %y {{result = 0, offsets = ["i*BM", "0"]}} : !ax.tensor<[BM, N], f32>
    tile.yield
  }}
  func.return %c : {T2}
}}
"""

ROW_SUM = f"""
func.func @f(%x: {T2}) -> !ax.tensor<[M], f32> {{
  %s = ax.sum %x {{axes = array<i64: 1>, keepdims = false}} : ({T2}) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}}
func.func @g(%x: {T2}) -> !ax.tensor<[M], f32> {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "BN"],
                       assume = ["BN >= N"]}} : ({T2}) -> !ax.tensor<[M], f32> {{
  ^bb0(%xg: {T2}):
    %t = tile.load %xg {{offsets = ["i*BM", "0"], shape = ["BM", "BN"], pad = PAD : f64,
                        space = "sbuf"}} : ({T2}) -> !ax.tensor<[BM, BN], f32>
    %s = ax.sum %t {{axes = array<i64: 1>, keepdims = false}}
        : (!ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM], f32>
    tile.store %s {{result = 0, offsets = ["i*BM"]}} : !ax.tensor<[BM], f32>
    tile.yield
  }}
  func.return %c : !ax.tensor<[M], f32>
}}
"""


def pair(text: str, **holes: str) -> tuple[FuncOp, FuncOp]:
    for hole, value in holes.items():
        text = text.replace(hole, value)
    module = parse_mlir(text, "kernel.mlir")
    f, g = (op for op in module.ops if isinstance(op, FuncOp))
    return f, g


def add_pair(grid: str = '"ceildiv(M, BM)"', load: str = '"i*BM"',
             store: str = '"i*BM"') -> tuple[FuncOp, FuncOp]:
    return pair(ADD, GRID=grid, LOAD=load, STORE=store)


def test_an_elementwise_kernel_is_proved_for_every_size_and_tile_size() -> None:
    assert isinstance(prove_equivalent(*add_pair()), Proved)


def test_a_row_softmax_kernel_is_proved() -> None:
    assert isinstance(prove_equivalent(*pair(SOFTMAX)), Proved)


def test_a_padded_tile_is_proved_with_pad_zero_and_refuted_with_pad_one() -> None:
    assert isinstance(prove_equivalent(*pair(ROW_SUM, PAD="0.0")), Proved)
    f, g = pair(ROW_SUM, PAD="1.0")
    verdict = prove_equivalent(f, g)
    assert isinstance(verdict, Refuted)
    cex = verdict.counterexample
    # the difference needs a tile wider than the row, and replays in the interpreter
    assert cex.sizes["BN"] > cex.sizes["N"]
    assert cex.shows_in(f, g)


def test_a_load_off_by_one_is_refuted() -> None:
    verdict = prove_equivalent(*add_pair(load='"i*BM + 1"'))
    assert isinstance(verdict, Refuted)
    assert "BM" in verdict.counterexample.sizes


@pytest.mark.parametrize(("mistake", "reason"), [
    ({"store": '"i*BM + 1"'}, "the verifier reads p*B (+ s*S for a parallel loop's iv s)"),
    ({"grid": '"ceildiv(M, BM) - 1"'}, "dim 0: i ranges over ((BM + M - 1) floordiv BM) - 1, not"),
])
def test_a_store_pattern_the_verifier_does_not_read_is_unknown_with_its_reason(
        mistake: dict[str, str], reason: str) -> None:
    verdict = prove_equivalent(*add_pair(**mistake))
    assert isinstance(verdict, Unknown)
    assert reason in verdict.reason


ROW_HELD = f"""
func.func @f(%x: {T2}) -> {T2} {{
  %y = ax.add %x, %x : ({T2}, {T2}) -> {T2}
  func.return %y : {T2}
}}
func.func @g(%x: {T2}) -> {T2} {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["M"], params = ["B"], assume = [ASSUME]}}
      : ({T2}) -> {T2} {{
  ^bb0(%xg: {T2}):
    %t = tile.load %xg {{offsets = ["i", "0"], shape = ["1", "B"], pad = 0.0 : f64,
                        space = "registers"}} : ({T2}) -> !ax.tensor<[1, B], f32>
    %u = ax.add %t, %t : (!ax.tensor<[1, B], f32>, !ax.tensor<[1, B], f32>)
        -> !ax.tensor<[1, B], f32>
    tile.store %u {{result = 0, offsets = ["i", "0"]}} : !ax.tensor<[1, B], f32>
    tile.yield
  }}
  func.return %c : {T2}
}}
"""


def test_a_row_held_whole_by_a_wider_block_is_read_where_the_block_covers_it() -> None:
    """A Triton row kernel's block of `B = next_power_of_2(N)` lanes at offset 0: its store
    writes lane o for every o < N where `B >= N` (the lanes past the row are not written), so
    the verifier reads it under that assumption, and only under it."""
    for assume in ('"B >= N"', '"N <= B"'):
        assert isinstance(prove_equivalent(*pair(ROW_HELD, ASSUME=assume)), Proved)
    for assume in ('"B >= 1"', '"B <= N"'):
        verdict = prove_equivalent(*pair(ROW_HELD, ASSUME=assume))
        assert isinstance(verdict, Unknown) and "tile extent of B" in verdict.reason


def test_a_sequential_loop_that_does_not_accumulate_is_unknown() -> None:
    text = ADD.replace(
        "    tile.store %u",
        '    %v = tile.for %u {iv = "k", extent = "1"} : (!ax.tensor<[BM, BN], f32>)\n'
        "        -> !ax.tensor<[BM, BN], f32> {\n"
        "    ^bb1(%in: !ax.tensor<[BM, BN], f32>):\n"
        "      tile.yield %in : !ax.tensor<[BM, BN], f32>\n    }\n    tile.store %u")
    verdict = prove_equivalent(*pair(text, GRID='"ceildiv(M, BM)"', LOAD='"i*BM"',
                                     STORE='"i*BM"'))
    assert isinstance(verdict, Unknown)
    assert "carries value #0 as something other than an accumulation" in verdict.reason


@pytest.mark.parametrize(("text", "expected"), [
    ("(o floordiv BM)*BM + o mod BM", "o"),
    ("3*(o floordiv 4)*4 + 3*(o mod 4) + K", "3*o + K"),
    ("2*((a + b) floordiv BM)*BM + 2*((a + b) mod BM)", "2*a + 2*b"),
    ("(o floordiv BM)*BM + o mod BN", "(o floordiv BM)*BM + o mod BN"),
    ("(o floordiv BM)*BM + 2*(o mod BM)", "(o floordiv BM)*BM + 2*(o mod BM)"),
    # a divisor that may be 0 (or negative) is left alone
    ("(o floordiv (K - M))*(K - M) + o mod (K - M)",
     "(o floordiv (K - M))*(K - M) + o mod (K - M)"),
])
def test_split_indices_recombine(text: str, expected: str) -> None:
    assert recombine(parse_int_expr(text)) == parse_int_expr(expected)
    # and the recombined value is the same integer
    env = {"o": 11, "a": 5, "b": 6, "BM": 3, "BN": 4, "K": 2, "M": 7}
    assert recombine(parse_int_expr(text)).evaluate(env) == parse_int_expr(text).evaluate(env)


SUB_TILES = f"""
func.func @f(%x: {T2}) -> {T2} {{
  %y = ax.add %x, %x : ({T2}, {T2}) -> {T2}
  func.return %y : {T2}
}}
func.func @g(%x: {T2}) -> {T2} {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "SB"],
                       assume = ASSUME}} : ({T2}) -> {T2} {{
  ^bb0(%xg: {T2}):
    tile.for {{iv = "s", extent = "ceildiv(BM, SB)", kind = "parallel"}} : () -> () {{
      %t = tile.load %xg {{offsets = ["i*BM + s*SB", "0"], shape = ["SB", "N"], pad = 0.0 : f64,
                          space = "sbuf"}} : ({T2}) -> !ax.tensor<[SB, N], f32>
      %u = ax.add %t, %t : (!ax.tensor<[SB, N], f32>, !ax.tensor<[SB, N], f32>)
          -> !ax.tensor<[SB, N], f32>
      tile.store %u {{result = 0, offsets = ["i*BM + s*SB", "0"]}} : !ax.tensor<[SB, N], f32>
      tile.yield
    }}
    tile.yield
  }}
  func.return %c : {T2}
}}
"""


def test_a_parallel_loop_over_sub_tiles_is_one_more_index_split() -> None:
    assert isinstance(prove_equivalent(*pair(SUB_TILES, ASSUME='["BM mod SB == 0"]')), Proved)


def test_sub_tiles_without_the_divisibility_assumption_are_not_read() -> None:
    # without it the last sub-tile of a block reaches into the next block's rows
    verdict = prove_equivalent(*pair(SUB_TILES, ASSUME='["SB >= 1"]'))
    assert isinstance(verdict, Unknown)
    assert "need the assumption 'BM mod SB == 0'" in verdict.reason


MATMUL = """
func.func @f(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
  %c = ax.matmul %a, %b : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>)
      -> !ax.tensor<[M, N], f32>
  func.return %c : !ax.tensor<[M, N], f32>
}
func.func @g(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
  %c = tile.kernel %a, %b {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"],
                           params = ["BM", "BN", "BK"]}
      : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[K, N], f32>):
    %zero = tile.full {value = START : f64, shape = ["BM", "BN"], dtype = f32, space = "psum"}
        : !ax.tensor<[BM, BN], f32>
    %acc = tile.for %zero {iv = "k", extent = EXTENT}
        : (!ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32> {
    ^bb1(%in: !ax.tensor<[BM, BN], f32>):
      %p = tile.load %x {offsets = ["i*BM", "k*BK"], shape = ["BM", "BK"], pad = 0.0 : f64,
                         space = "sbuf"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, BK], f32>
      %q = tile.load %y {offsets = ["k*BK", "j*BN"], shape = ["BK", "BN"], pad = 0.0 : f64,
                         space = "sbuf"} : (!ax.tensor<[K, N], f32>) -> !ax.tensor<[BK, BN], f32>
      %r = ax.matmul %p, %q : (!ax.tensor<[BM, BK], f32>, !ax.tensor<[BK, BN], f32>)
          -> !ax.tensor<[BM, BN], f32>
      %s = ax.add %in, %r : (!ax.tensor<[BM, BN], f32>, !ax.tensor<[BM, BN], f32>)
          -> !ax.tensor<[BM, BN], f32>
      tile.yield %s : !ax.tensor<[BM, BN], f32>
    }
    tile.store %acc {result = 0, offsets = ["i*BM", "j*BN"]} : !ax.tensor<[BM, BN], f32>
    tile.yield
  }
  func.return %c : !ax.tensor<[M, N], f32>
}
"""


def matmul_pair(start: str = "0.0", extent: str = '"ceildiv(K, BK)"') -> tuple[FuncOp, FuncOp]:
    return pair(MATMUL, START=start, EXTENT=extent)


def test_a_tiled_matmul_with_a_k_loop_is_proved_remainders_included() -> None:
    # the loop's accumulator is read as a sum over the iterations; the masked K tiles meet
    # the untiled contraction through the blocked-partition rule
    assert isinstance(prove_equivalent(*matmul_pair()), Proved)


@pytest.mark.parametrize(("start", "extent"), [("1.0", '"ceildiv(K, BK)"'),
                                               ("0.0", '"ceildiv(K, BK) - 1"'),
                                               ("0.0", '"K floordiv BK"')])
def test_a_wrong_start_or_a_short_k_loop_is_refuted(start: str, extent: str) -> None:
    f, g = matmul_pair(start, extent)
    verdict = prove_equivalent(f, g)
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(f, g)


BLOCKED = """
func.func @f(%x: !ax.tensor<[K], f32>) -> !ax.tensor<[], f32> {
  %s = ax.sum %x {axes = array<i64: 0>, keepdims = false}
      : (!ax.tensor<[K], f32>) -> !ax.tensor<[], f32>
  func.return %s : !ax.tensor<[], f32>
}
func.func @g(%x: !ax.tensor<[K], f32>) -> !ax.tensor<[], f32> {
  %s = ax.generic %x {form = "out[] = add over r0 in [0, BLOCKS), r1 in [0, WIDTH) of \
select(idx(r0*B + r1) < idx(LIMIT), in0[r0*B + r1], 0.0)", dtype = f32}
      : (!ax.tensor<[K], f32>) -> !ax.tensor<[], f32>
  func.return %s : !ax.tensor<[], f32>
}
"""


@pytest.mark.parametrize(("holes", "proved"), [
    ({"BLOCKS": "(K + B - 1) floordiv B", "WIDTH": "B", "LIMIT": "K"}, True),
    ({"BLOCKS": "(K + 3) floordiv 4", "WIDTH": "4", "LIMIT": "K", "B": "4"}, True),
    ({"BLOCKS": "((K + B - 1) floordiv B) - 1", "WIDTH": "B", "LIMIT": "K"}, False),
    ({"BLOCKS": "(K + B - 1) floordiv B", "WIDTH": "B + 1", "LIMIT": "K"}, False),
    ({"BLOCKS": "(K + B - 1) floordiv B", "WIDTH": "B", "LIMIT": "K - 1"}, False),
])
def test_blocks_cut_at_the_end_partition_the_range(holes: dict[str, str], proved: bool) -> None:
    text = BLOCKED.replace(" \\\n", " ")  # one line of form text
    for hole in ("BLOCKS", "WIDTH", "LIMIT"):
        text = text.replace(hole, holes[hole])
    if "B" in holes:
        text = text.replace("r0*B", f"r0*{holes['B']}")
    f, g = pair(text)
    verdict = prove_equivalent(f, g, assumptions=["B >= 1"] if "B" not in holes else [])
    assert isinstance(verdict, Proved if proved else Refuted), verdict


NKI_STEP = """      %s = nki.tensor_tensor %in, %r {op = "OP", buffer = "psum"}
          : (!ax.tensor<[BM, BN], f32>, !ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32>"""


def test_an_instruction_whose_form_adds_its_operands_is_an_accumulation_step() -> None:
    """`nki.tensor_tensor` add of the carried value is read as `ax.add` is; subtract is not."""
    # the NKI lowering's `acc + product` is `nki.tensor_tensor` add: read by its form
    step = """      %s = ax.add %in, %r : (!ax.tensor<[BM, BN], f32>, !ax.tensor<[BM, BN], f32>)
          -> !ax.tensor<[BM, BN], f32>"""
    assert step in MATMUL
    proved = MATMUL.replace(step, NKI_STEP.replace("OP", "add"))
    assert isinstance(prove_equivalent(*pair(proved, START="0.0",
                                             EXTENT='"ceildiv(K, BK)"')), Proved)
    subtracts = MATMUL.replace(step, NKI_STEP.replace("OP", "subtract"))
    f, g = pair(subtracts, START="0.0", EXTENT='"ceildiv(K, BK)"')
    verdict = prove_equivalent(f, g)  # not read as an accumulation; replayed, it differs
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(f, g)
