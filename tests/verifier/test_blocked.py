"""Blocked partial reductions: a loop over the blocks of K, each reducing its block masked to the
elements inside K, is the reduction over [0, K) for any body, for sums and for max / min whose
masked lanes repeat the block's first element (`sums._blocked_partition`,
`sums._blocked_extremum`); a max started at its first block's partial is the max of the blocks
(`sums.fold`). Kernels built by the tiler are proved for every size and tile size, and wrong
ones are refuted with a counterexample the interpreter replays."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from axon.dialects.ax import TensorType
from axon.dialects.tile import ForOp, FullOp
from axon.interpreter import run_function
from axon.tiling.kernels import Tiling, tile_function
from axon.tools.embed import parse_mlir, print_ir
from axon.verifier import Proved, Refuted, Unknown, prove_equivalent

X = "!ax.tensor<[M, N], f32>"
C = "!ax.tensor<[M, 1], f32>"


def function(text: str) -> FuncOp:
    (func,) = (op for op in parse_mlir(text, "f.mlir").ops if isinstance(op, FuncOp))
    return func


def reduction(op: str, body: str = "") -> FuncOp:
    """A row reduction `op` (keepdims) of x, or of exp(x - c) with body="exp"."""
    if body == "exp":
        return function(f"""
func.func @f(%x: {X}, %c: {C}) -> {C} {{
  %s = ax.sub %x, %c : ({X}, {C}) -> {X}
  %e = ax.exp %s : ({X}) -> {X}
  %r = {op} %e {{axes = array<i64: 1>, keepdims = true}} : ({X}) -> {C}
  func.return %r : {C}
}}""")
    if body == "neg":
        return function(f"""
func.func @f(%x: {X}) -> {C} {{
  %n = ax.neg %x : ({X}) -> {X}
  %r = {op} %n {{axes = array<i64: 1>, keepdims = true}} : ({X}) -> {C}
  func.return %r : {C}
}}""")
    return function(f"""
func.func @f(%x: {X}) -> {C} {{
  %r = {op} %x {{axes = array<i64: 1>, keepdims = true}} : ({X}) -> {C}
  func.return %r : {C}
}}""")


def k_loop(func: FuncOp) -> FuncOp:
    """The kernel of rows in blocks of BM with one loop over the blocks of N (BK wide)."""
    return tile_function(func, Tiling("M", None, "N"), "sbuf", "psum")


def runs_equal(func: FuncOp, tiled: FuncOp) -> None:
    rng = np.random.default_rng(3)
    for sizes, blocks in [({"M": 3, "N": 7}, {"BM": 2, "BK": 3}),
                          ({"M": 2, "N": 1}, {"BM": 4, "BK": 2}),
                          ({"M": 1, "N": 8}, {"BM": 1, "BK": 4})]:
        inputs = [rng.normal(size=tuple(d.evaluate(sizes) for d in t.shape))
                  for t in func.function_type.inputs.data if isinstance(t, TensorType)]
        (want,) = run_function(func, inputs, sizes, exact=True)
        (got,) = run_function(tiled, inputs, {**sizes, **blocks}, exact=True)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("op", "body"), [
    ("ax.sum", "exp"),  # the sum of exponentials of a softmax, its shift an input
    ("ax.reduce_max", ""),
    ("ax.reduce_min", ""),
    ("ax.reduce_max", "exp"),  # a positive factor exp(-c) leaves the max
    ("ax.reduce_max", "neg"),  # a negative scale turns the blocks' maxes into mins
    ("ax.mean", "exp"),  # the finalizer after the loop divides by the whole N
])
def test_a_k_loop_of_masked_partial_reductions_is_proved(op: str, body: str) -> None:
    func = reduction(op, body)
    tiled = k_loop(func)
    (loop,) = (op for op in tiled.walk() if isinstance(op, ForOp))
    assert loop.loop_kind == "sequential"
    verdict = prove_equivalent(tiled, func)
    assert isinstance(verdict, Proved), verdict
    runs_equal(func, tiled)


def with_text(func: FuncOp, old: str, new: str) -> FuncOp:
    text = print_ir(ModuleOp([func.clone()]))
    assert old in text
    return function(text.replace(old, new))


MASK = "(idx(BK*k + r0) < idx(N))"


def test_a_mask_one_short_is_refuted_and_the_counterexample_replays() -> None:
    func = reduction("ax.sum", "exp")
    wrong = with_text(k_loop(func), MASK, "(idx(BK*k + r0) < idx(N - 1))")
    verdict = prove_equivalent(func, wrong)
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(func, wrong)
    assert not verdict.counterexample.shows_in(func, k_loop(func))  # the check can say no


def test_a_mask_one_long_is_never_proved() -> None:
    # it adds the padded lane at N, exp(0 - c), whenever BK does not divide N
    func = reduction("ax.sum", "exp")
    wrong = with_text(k_loop(func), MASK, "(idx(BK*k + r0) <= idx(N))")
    verdict = prove_equivalent(func, wrong)
    assert isinstance(verdict, (Refuted, Unknown)), verdict
    if isinstance(verdict, Refuted):
        assert verdict.counterexample.shows_in(func, wrong)


@pytest.mark.parametrize("op", ["ax.reduce_max", "ax.reduce_min"])
def test_an_extremum_started_at_zero_is_refuted_and_the_counterexample_replays(op: str) -> None:
    func = reduction(op)
    wrong = k_loop(func)
    (loop,) = (op for op in wrong.walk() if isinstance(op, ForOp))
    first = loop.inits[0].owner
    assert isinstance(first, Operation)
    tile = first.results[0].type
    assert isinstance(tile, TensorType)
    zero = FullOp.make([], value=0.0, shape=tile.shape, dtype=tile.dtype, space="sbuf")
    block = first.parent_block()
    assert block is not None
    block.insert_op_before(zero, first)
    first.results[0].replace_all_uses_with(zero.results[0])
    first.detach()
    first.erase()
    verdict = prove_equivalent(func, wrong)
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(func, wrong)


# ---- the rules on forms: any body, blocks of a symbolic or constant width ----------------------
BLOCKED = """
func.func @f(%x: !ax.tensor<[K], f32>, %y: !ax.tensor<[K], f32>) -> !ax.tensor<[], f32> {
  %s = ax.generic %x, %y {form = "out[] = RED over r in [0, LIMIT) of BODY(r)", dtype = f32}
      : (!ax.tensor<[K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[], f32>
  func.return %s : !ax.tensor<[], f32>
}
func.func @g(%x: !ax.tensor<[K], f32>, %y: !ax.tensor<[K], f32>) -> !ax.tensor<[], f32> {
  %s = ax.generic %x, %y {form = "out[] = RED over r0 in [0, BLOCKS), r1 in [0, WIDTH) of \
select(idx(r0*B + r1) < idx(LIMIT), BODY(r0*B + r1), LANE)", dtype = f32}
      : (!ax.tensor<[K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[], f32>
  func.return %s : !ax.tensor<[], f32>
}
"""

BODIES = {
    "read": "in0[{}]",
    "exp": "exp(in0[{}] - in1[0]) * in1[{}]",
    "affine": "3.0 * in0[{}] * in1[{}] - in1[0]",
    "negative": "0.0 - 2.0 * exp(in0[{}])",
}


def blocked(red: str, body: str, lane: str = "", blocks: str = "(LIMIT + B - 1) floordiv B",
            limit: str = "K", width: str = "B") -> tuple[FuncOp, FuncOp]:
    def at(i: str) -> str:
        return BODIES[body].replace("{}", i)

    text = BLOCKED.replace(" \\\n", " ").replace("BLOCKS", blocks).replace("LIMIT", limit)
    text = text.replace("WIDTH", width).replace("RED", red)
    text = text.replace("LANE", lane or ("0.0" if red == "add" else at("r0*B")))
    text = text.replace("BODY(r0*B + r1)", at("r0*B + r1")).replace("BODY(r)", at("r"))
    module = parse_mlir(text, "blocked.mlir")
    f, g = (op for op in module.ops if isinstance(op, FuncOp))
    return f, g


@pytest.mark.parametrize("red", ["add", "max", "min"])
@pytest.mark.parametrize("body", list(BODIES))
def test_blocks_cut_at_the_end_reduce_like_the_range_for_any_body(red: str, body: str) -> None:
    f, g = blocked(red, body)
    verdict = prove_equivalent(f, g, assumptions=["B >= 1"])
    assert isinstance(verdict, Proved), verdict


def test_a_range_that_may_be_empty_is_partitioned_too() -> None:
    # K - 1 is 0 at K = 1: no blocks, and both sums are 0
    f, g = blocked("add", "exp", limit="K - 1")
    assert isinstance(prove_equivalent(f, g, assumptions=["B >= 1"]), Proved)


@pytest.mark.parametrize("red", ["max", "min"])
def test_blocked_extrema_over_a_range_that_may_be_empty_keep_their_guard(red: str) -> None:
    # at K = 1 both are over empty ranges, which the verifier leaves unspecified (the
    # interpreter's -inf is no real): the rule holds where K - 1 >= 1 only, so no proof, and
    # no refutation either (the two agree at every size)
    f, g = blocked(red, "read", limit="K - 1")
    verdict = prove_equivalent(f, g, assumptions=["B >= 1"])
    assert isinstance(verdict, Unknown), verdict
    assert isinstance(prove_equivalent(f, g, assumptions=["B >= 1", "K >= 2"]), Proved)


@pytest.mark.parametrize(("red", "holes"), [
    ("add", {"blocks": "((K + B - 1) floordiv B) - 1"}),  # the last block missing
    ("add", {"width": "B + 1"}),  # blocks overlapping
    ("max", {"limit": "K - 1", "blocks": "(K + B - 1) floordiv B"}),  # the last element cut
    ("max", {"lane": "0.0"}),  # a max padded with 0 rather than an element of the block
    ("min", {"lane": "0.0"}),
])
def test_wrong_blocks_are_refuted(red: str, holes: dict[str, str]) -> None:
    f, g = blocked(red, "read", **holes)
    verdict = prove_equivalent(f, g, assumptions=["B >= 1"])
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(f, g)


XG = "!ax.tensor<[G0, N], f32>"
XB = "!ax.tensor<[B], f32>"
X1B = "!ax.tensor<[1, B], f32>"
LOAD = 'shape = ["1", "B"], pad = 0.0 : f64, space = "registers"}'
RUNNING_TILE = f"""
func.func @f(%in0: {XG}) -> ({"!ax.tensor<[G0], f32>"}) {{
  %r0 = tile.kernel %in0 {{program_ids = ["pid0"], grid = ["G0"], params = ["B"]}}
      : ({XG}) -> (!ax.tensor<[G0], f32>) {{
  ^bb0(%g0: {XG}):
    %f1 = tile.load %g0 {{offsets = ["pid0", "0"], {LOAD} : ({XG}) -> {X1B}
    %f2 = ax.reshape %f1 {{shape = ["B"]}} : ({X1B}) -> {XB}
    %f3 = ax.generic %f2 {{form = "out[d0 < B] = select((idx(d0) < idx(N)), in0[d0], LANE)",
                          dtype = f32}} : ({XB}) -> {XB}
    %t3 = tile.for %f3 {{iv = "it", extent = "(B + N - 1) floordiv B"}} : ({XB}) -> ({XB}) {{
    ^bb0(%c2: {XB}):
      %t4 = tile.load %g0 {{offsets = ["pid0", "B*it"], {LOAD} : ({XG}) -> {X1B}
      %t5 = ax.reshape %t4 {{shape = ["B"]}} : ({X1B}) -> {XB}
      %s5 = ax.generic %t5 {{form =
          "out[d0 < B] = select((idx(B*it + d0) < idx(N)), in0[d0], LANE)", dtype = f32}}
          : ({XB}) -> {XB}
      %t6 = ax.generic %c2, %s5 {{form = "out[d0 < B] = KIND(in0[d0], in1[d0])", dtype = f32}}
          : ({XB}, {XB}) -> {XB}
      tile.yield %t6 : {XB}
    }}
    %t7 = ax.reduce_KIND %t3 {{axes = array<i64: 0>, keepdims = true}}
        : ({XB}) -> !ax.tensor<[1], f32>
    tile.store %t7 {{result = 0, offsets = ["pid0"]}} : !ax.tensor<[1], f32>
    tile.yield
  }}
  func.return %r0 : !ax.tensor<[G0], f32>
}}
"""

RUNNING_AX = f"""
func.func @f(%in0: {XG}) -> (!ax.tensor<[G0], f32>) {{
  %a = ax.reduce_KIND %in0 {{axes = array<i64: 1>, keepdims = true}}
      : ({XG}) -> !ax.tensor<[G0, 1], f32>
  %b = ax.reshape %a {{shape = ["G0"]}} : (!ax.tensor<[G0, 1], f32>) -> !ax.tensor<[G0], f32>
  func.return %b : !ax.tensor<[G0], f32>
}}
"""


@pytest.mark.parametrize("red", ["max", "min"])
def test_a_running_extremum_kept_lane_by_lane_then_over_the_lanes(red: str) -> None:
    """A loop keeping max(running, block) lane by lane, started at its first step, its lanes
    past N the block's first; then the max over the lanes (a Triton kernel's running max,
    as the Triton frontend raises it): the max over [0, N) for every N, B >= 1
    (`sums._exchanged_blocks`). Lanes past N as 0 are refuted; the other extremum lane by
    lane is never proved."""
    tile = RUNNING_TILE.replace("KIND", red)
    want = function(RUNNING_AX.replace("KIND", red))
    assert isinstance(prove_equivalent(function(tile.replace("LANE", "in0[0]")), want), Proved)
    zero = prove_equivalent(function(tile.replace("LANE", "0.0")), want)
    assert isinstance(zero, Refuted)
    other = {"max": "min", "min": "max"}[red]
    wrong = tile.replace("LANE", "in0[0]").replace(f"= {red}(in0", f"= {other}(in0")
    assert not isinstance(prove_equivalent(function(wrong), want), Proved)
