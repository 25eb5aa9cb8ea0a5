"""Loops nested in loops: a loop of accumulations inside another is read as its fold at each
iteration of the outer loop (`kernels.check_readable`, `inline._loop_plan`), and a block's
guard from the outer loop leaves the inner loop's blocked sum (`sums.nested_condition`). A
kernel whose loops are not read is never proved; a wrong one is still refuted with a
counterexample the interpreter replays (`prove._not_read`)."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

from axon.dialects.form.intexpr import IntExpr
from axon.tools.embed import parse_mlir
from axon.verifier import Proved, Refuted, Unknown, prove_equivalent
from axon.verifier import terms as T
from axon.verifier.sums import fresh, make_sum

X = "!ax.tensor<[M, K], f32>"
W = "!ax.tensor<[K, F], f32>"
H = "!ax.tensor<[M, F], f32>"
D = "!ax.tensor<[F, N], f32>"
Y = "!ax.tensor<[BM, N], f32>"
P = "!ax.tensor<[BM, BK], f32>"

# (x @ w1) @ w3 in blocks of BM rows: a loop over the blocks of F accumulating the down
# projection, and nested in it a loop over the blocks of K accumulating x @ w1's block of F.
# INIT is where the inner accumulator starts; with HELD the outer loop also carries a tile of
# the inner accumulator's type (starting at 0), yielding CARRY for it.
NEST = f"""
func.func @f(%x: {X}, %w1: {W}, %w3: {D}) -> !ax.tensor<[M, N], f32> {{
  %0 = ax.matmul %x, %w1 : ({X}, {W}) -> {H}
  %1 = ax.silu %0 : ({H}) -> {H}
  %2 = ax.matmul %1, %w3 : ({H}, {D}) -> !ax.tensor<[M, N], f32>
  func.return %2 : !ax.tensor<[M, N], f32>
}}
func.func @g(%x: {X}, %w1: {W}, %w3: {D}) -> !ax.tensor<[M, N], f32> {{
  %r = tile.kernel %x, %w1, %w3 {{program_ids = ["i"], grid = ["ceildiv(M, BM)"],
                                 params = ["BM", "BK", "BL"]}}
      : ({X}, {W}, {D}) -> !ax.tensor<[M, N], f32> {{
  ^bb0(%xg: {X}, %w1g: {W}, %w3g: {D}):
    %z = tile.full {{value = 0.0 : f64, shape = ["BM", "N"], dtype = f32, space = "psum"}} : {Y}
    %z1 = tile.full {{value = 0.0 : f64, shape = ["BM", "BK"], dtype = f32, space = "psum"}} : {P}
    %acc HELD_RESULT = tile.for %z HELD_INIT {{iv = "k", extent = "ceildiv(F, BK)"}}
        : ({Y} HELD_TYPE) -> ({Y} HELD_TYPE) {{
    ^bb1(%a: {Y} HELD_ARG):
      %z2 = tile.full {{value = 0.0 : f64, shape = ["BM", "BK"], dtype = f32, space = "psum"}} : {P}
      %h = tile.for INIT {{iv = "l", extent = "EXTENT"}} : ({P}) -> {P} {{
      ^bb2(%b: {P}):
        %xt = tile.load %xg {{offsets = ["i*BM", "l*BL"], shape = ["BM", "BL"], pad = 0.0 : f64,
                             space = "sbuf"}} : ({X}) -> !ax.tensor<[BM, BL], f32>
        %wt = tile.load %w1g {{offsets = ["l*BL", "k*BK"], shape = ["BL", "BK"], pad = 0.0 : f64,
                              space = "sbuf"}} : ({W}) -> !ax.tensor<[BL, BK], f32>
        %p = ax.matmul %xt, %wt : (!ax.tensor<[BM, BL], f32>, !ax.tensor<[BL, BK], f32>) -> {P}
        %s = ax.add %b, %p : ({P}, {P}) -> {P}
        tile.yield %s : {P}
      }}
      %e = ax.silu %h : ({P}) -> {P}
      %dt = tile.load %w3g {{offsets = ["k*BK", "0"], shape = ["BK", "N"], pad = 0.0 : f64,
                            space = "sbuf"}} : ({D}) -> !ax.tensor<[BK, N], f32>
      %q = ax.matmul %e, %dt : ({P}, !ax.tensor<[BK, N], f32>) -> {Y}
      %t = ax.add %a, %q : ({Y}, {Y}) -> {Y}
      tile.yield %t HELD_YIELD : {Y} HELD_TYPE
    }}
    tile.store %acc {{result = 0, offsets = ["i*BM", "0"]}} : {Y}
    tile.yield
  }}
  func.return %r : !ax.tensor<[M, N], f32>
}}
"""


def nest(init: str = "%z2", carry: str = "", extent: str = "ceildiv(K, BL)"
         ) -> tuple[FuncOp, FuncOp]:
    held = {"HELD_RESULT": ", %held", "HELD_INIT": ", %z1", "HELD_TYPE": f", {P}",
            "HELD_ARG": f", %c: {P}", "HELD_YIELD": f", {carry}"}
    text = NEST
    for hole, value in held.items():
        text = text.replace(hole, value if carry else "")
    text = text.replace("INIT", init).replace("EXTENT", extent)
    f, g = (op for op in parse_mlir(text, "nest.mlir").ops if isinstance(op, FuncOp))
    return f, g


def test_a_k_loop_nested_in_an_f_loop_is_proved_remainders_included() -> None:
    verdict = prove_equivalent(*nest())
    assert isinstance(verdict, Proved), verdict


@pytest.mark.parametrize(("what", "holes"), [
    # the inner accumulator carried through the outer loop: never restarted at 0
    ("not reset", {"init": "%c", "carry": "%h"}),
    ("inner loop one block short", {"extent": "ceildiv(K, BL) - 1"}),
])
def test_a_wrong_nest_is_refuted_and_the_counterexample_replays(
        what: str, holes: dict[str, str]) -> None:
    f, g = nest(**holes)
    verdict = prove_equivalent(f, g)
    assert isinstance(verdict, Refuted), (what, verdict)
    assert verdict.counterexample.shows_in(f, g)
    assert not verdict.counterexample.shows_in(*nest())  # the right nest agrees there


def test_a_right_nest_the_verifier_does_not_read_is_unknown_with_the_reason() -> None:
    # the outer loop carries the inner accumulator's start, always 0: right, but not an
    # accumulation, so not read and never proved
    verdict = prove_equivalent(*nest(init="%c", carry="%z2"))
    assert isinstance(verdict, Unknown), verdict
    assert "something other than an accumulation" in verdict.reason


def test_an_outer_guard_leaves_a_blocked_inner_sum() -> None:
    # sum over the ceildiv(K, B) blocks of each block's sum cut at K, every block's sum under
    # a guard g free of the block (the outer loop's column inside F): g ? sum over [0, K) : 0
    k, b, f = IntExpr.sym("K"), IntExpr.sym("B"), IntExpr.sym("F")
    block, r = fresh(), fresh()
    col = IntExpr.sym(T.OUTPUT_INDEX + "0_0")  # an element index, as a tile's column is
    guard = T.icompare("lt", col - f)

    def block_sum(hi: IntExpr) -> T.Poly:
        start = IntExpr.sym(block) * b
        return make_sum(r, start, hi, T.atom(T.Read("a0", (IntExpr.sym(r),))))

    start = IntExpr.sym(block) * b
    body = T.select(T.icompare("le", k - start), T.ZERO,
                    T.select(T.icompare("le", start + b - k),
                             T.select(guard, block_sum(start + b), T.ZERO),
                             T.select(guard, block_sum(k), T.ZERO)))
    blocks = (k + b - 1).floordiv(b)
    total = make_sum(block, IntExpr.const(0), blocks, body)
    whole = make_sum(r, IntExpr.const(0), k, T.atom(T.Read("a0", (IntExpr.sym(r),))))
    assert total == T.select(guard, whole, T.ZERO)
