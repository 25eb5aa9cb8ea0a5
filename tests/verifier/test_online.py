"""Sequential loops whose carried state is not an accumulation, proved by induction on the
invariant the loop states (`verifier/induction.py`): the online softmax of a row tiled along N,
and flash attention for one head, remainders and dims of 1 included; wrong kernels refuted with
a counterexample the interpreter replays, wrong invariants Unknown naming the obligation that
fails. Also the max / min shift by a term free of the reduced index, on every range."""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import VerifyException

from axon.interpreter import run_function
from axon.tools.embed import parse_mlir
from axon.verifier import Proved, Refuted, Unknown, prove_equivalent
from axon.verifier.budget import Unsupported
from axon.verifier.inline import inline_function

#: the running max starts (and masked scores are) float32's lowest finite value, not -inf: the
#: verifier reasons over the reals, and in floats exp(LOWEST - m) is 0 as exp(-inf) would be,
#: while LOWEST - LOWEST is 0 where -inf - -inf is NaN
LOWEST = "-3.4028234663852886e38"


def pair(text: str, **holes: str) -> tuple[FuncOp, FuncOp]:
    for hole, value in holes.items():
        text = text.replace(hole, value)
    module = parse_mlir(text, "online.mlir")
    f, g = (op for op in module.ops if isinstance(op, FuncOp))
    return f, g


def assert_replays(f: FuncOp, g: FuncOp, verdict: object) -> None:
    """A refutation whose counterexample the interpreter reproduces."""
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(f, g)


# ---- max / min shifts ------------------------------------------------------------------------
SHIFT = """
func.func @f(%x: !ax.tensor<[M, N], f32>, %c: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %s = ax.generic %x, %c {form = "out[i < M] = RED over r in RANGE of BODY", dtype = f32}
      : (!ax.tensor<[M, N], f32>, !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}
func.func @g(%x: !ax.tensor<[M, N], f32>, %c: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %m = ax.generic %x {form = "out[i < M] = RED over r in RANGE of in0[i, r]", dtype = f32}
      : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M], f32>
  %s = SHIFT %m, %c : (!ax.tensor<[M], f32>, !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}
"""


@pytest.mark.parametrize("red", ["max", "min"])
@pytest.mark.parametrize(("body", "shift"), [("in0[i, r] + in1[i]", "ax.add"),
                                             ("in1[i] + in0[i, r]", "ax.add"),
                                             ("in0[i, r] - in1[i]", "ax.sub")])
@pytest.mark.parametrize("span", ["[0, N)", "[1, N)", "[0, N - 1)", "[M, N)"])
def test_a_shift_free_of_the_reduced_index_moves_out_on_every_range(
        red: str, body: str, shift: str, span: str) -> None:
    # on a range that may be empty both sides are the interpreter's -inf (+inf for min)
    f, g = pair(SHIFT, RED=red, BODY=body, SHIFT=shift, RANGE=span)
    assert isinstance(prove_equivalent(f, g), Proved)


@pytest.mark.parametrize(("red", "body", "shift"), [
    ("max", "in0[i, r] + in1[r mod M]", "ax.add"),  # the shift depends on r
    ("max", "in0[i, r] + in1[i]", "ax.sub"),
    ("min", "in0[i, r] - in1[i]", "ax.add"),
    ("max", "2.0 * in0[i, r] + in1[i]", "ax.add"),
])
def test_a_wrong_shift_is_refuted(red: str, body: str, shift: str) -> None:
    f, g = pair(SHIFT, RED=red, BODY=body, SHIFT=shift, RANGE="[0, N)")
    assert_replays(f, g, prove_equivalent(f, g))


# ---- the online softmax of a row, tiled along N ----------------------------------------------
T2 = "!ax.tensor<[M, N], f32>"
COL = "!ax.tensor<[BM, 1], f32>"
TILE = "!ax.tensor<[BM, BN], f32>"
SOFTMAX_SOURCE = f"""
func.func @f(%x: {T2}) -> {T2} {{
  %m = ax.reduce_max %x {{axes = array<i64: 1>, keepdims = true}}
      : ({T2}) -> !ax.tensor<[M, 1], f32>
  %s = ax.sub %x, %m : ({T2}, !ax.tensor<[M, 1], f32>) -> {T2}
  %e = ax.exp %s : ({T2}) -> {T2}
  %z = ax.sum %e {{axes = array<i64: 1>, keepdims = true}} : ({T2}) -> !ax.tensor<[M, 1], f32>
  %y = ax.div %e, %z : ({T2}, !ax.tensor<[M, 1], f32>) -> {T2}
  func.return %y : {T2}
}}
"""
#: l after k column blocks: the sum of exp(x - m_k) over the columns seen, rows past M reading
#: the load's pad as the loop does; m_k has no claim (any value: it cancels in exp(x - m) / l)
ROW_L = ("out[t0 < BM, t1 < 1] = add over r in [0, min(k*BN, N)) of "
         "exp(select(idx(i*BM + t0) < idx(M), in0[i*BM + t0, r], 0.0) - in1[t0, 0])")
ONLINE_SOFTMAX = SOFTMAX_SOURCE + f"""
func.func @g(%x: {T2}) -> {T2} {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "BN"]}}
      : ({T2}) -> {T2} {{
  ^bb0(%xg: {T2}):
    %m0 = tile.full {{value = MSTART : f64, shape = ["BM", "1"], dtype = f32, space = "sbuf"}}
        : {COL}
    %l0 = tile.full {{value = LSTART : f64, shape = ["BM", "1"], dtype = f32, space = "sbuf"}}
        : {COL}
    %m, %l = tile.for %m0, %l0 {{iv = "k", extent = "ceildiv(N, BN)",
                                invariant = ["", "INVARIANT"]}}
        : ({COL}, {COL}) -> ({COL}, {COL}) {{
    ^bb1(%mi: {COL}, %li: {COL}):
      %t = tile.load %xg {{offsets = ["i*BM", "k*BN"], shape = ["BM", "BN"], pad = 0.0 : f64,
                          space = "sbuf"}} : ({T2}) -> {TILE}
      %tm = ax.generic %t {{form = "out[t0 < BM, t1 < BN] = select(idx(k*BN + t1) < idx(N), \
in0[t0, t1], {LOWEST})", dtype = f32}} : ({TILE}) -> {TILE}
      %bm = ax.reduce_max %tm {{axes = array<i64: 1>, keepdims = true}} : ({TILE}) -> {COL}
      %mn = ax.max %mi, %bm : ({COL}, {COL}) -> {COL}
      %d = ax.sub %mi, %mn : ({COL}, {COL}) -> {COL}
      %a = ax.exp %d : ({COL}) -> {COL}
      %la = ax.mul %li, %a : ({COL}, {COL}) -> {COL}
      %s = ax.sub %t, %mn : ({TILE}, {COL}) -> {TILE}
      %e = ax.generic %s {{form = "out[t0 < BM, t1 < BN] = select(idx(k*BN + t1) < idx(N), \
exp(in0[t0, t1]), 0.0)", dtype = f32}} : ({TILE}) -> {TILE}
      %bs = ax.sum %e {{axes = array<i64: 1>, keepdims = true}} : ({TILE}) -> {COL}
      %ln = ax.add RESCALED, %bs : ({COL}, {COL}) -> {COL}
      tile.yield %mn, %ln : {COL}, {COL}
    }}
    tile.for {{iv = "s", extent = "ceildiv(N, BN)", kind = "parallel"}} : () -> () {{
      %t = tile.load %xg {{offsets = ["i*BM", "s*BN"], shape = ["BM", "BN"], pad = 0.0 : f64,
                          space = "sbuf"}} : ({T2}) -> {TILE}
      %s = ax.sub %t, %m : ({TILE}, {COL}) -> {TILE}
      %e = ax.exp %s : ({TILE}) -> {TILE}
      %y = ax.div %e, %l : ({TILE}, {COL}) -> {TILE}
      tile.store %y {{result = 0, offsets = ["i*BM", "s*BN"]}} : {TILE}
      tile.yield
    }}
    tile.yield
  }}
  func.return %c : {T2}
}}
""".replace("\\\n", "")


def online_softmax(mstart: str = LOWEST, lstart: str = "0.0", rescaled: str = "%la",
                   invariant: str = ROW_L) -> tuple[FuncOp, FuncOp]:
    return pair(ONLINE_SOFTMAX, MSTART=mstart, LSTART=lstart, RESCALED=rescaled,
                INVARIANT=invariant)


def test_an_online_row_softmax_with_a_second_pass_is_proved() -> None:
    # (m, l) over column blocks of BN, then exp(x - m) / l block by block: every size and
    # tile size, the last partial block and the padded rows of the last program included
    assert isinstance(prove_equivalent(*online_softmax()), Proved)


def test_the_running_max_may_start_anywhere() -> None:
    # over the reals m only needs to be the same in l and in exp(x - m): any start is right
    assert isinstance(prove_equivalent(*online_softmax(mstart="0.0")), Proved)


def test_a_sum_that_is_not_rescaled_is_refuted() -> None:
    f, g = online_softmax(rescaled="%li")
    verdict = prove_equivalent(f, g)
    assert_replays(f, g, verdict)
    assert isinstance(verdict, Refuted)
    # the difference needs a second block whose max is larger
    assert verdict.counterexample.sizes["N"] > verdict.counterexample.sizes["BN"]


def test_a_sum_that_starts_at_one_is_refuted() -> None:
    f, g = online_softmax(mstart="0.0", lstart="1.0")
    assert_replays(f, g, prove_equivalent(f, g))


def test_a_wrong_start_the_floats_cannot_see_is_unknown_with_the_obligation() -> None:
    # l starting at 1 adds 1 * exp(LOWEST - m): a positive real, but 0 in every float format,
    # so no replay can show it; the start obligation is what fails
    verdict = prove_equivalent(*online_softmax(lstart="1.0"))
    assert isinstance(verdict, Unknown), verdict
    assert 'tile.for {iv = "k"}: the start establishes invariant #1 is not proved' \
        in verdict.reason


@pytest.mark.parametrize(("invariant", "obligation"), [
    (ROW_L.replace("min(k*BN, N)", "k*BN"), "an iteration preserves invariant #1"),
    (ROW_L.replace("min(k*BN, N)", "min(k*BN, N - 1)"), "an iteration preserves invariant #1"),
    (ROW_L.replace("- in1[t0, 0]", ""), "an iteration preserves invariant #1"),
    (ROW_L.replace("[0, min(k*BN, N))", "[0, min(k*BN + 1, N))"),
     "the start establishes invariant #1"),
])
def test_a_wrong_invariant_of_a_right_kernel_is_unknown_naming_the_obligation(
        invariant: str, obligation: str) -> None:
    verdict = prove_equivalent(*online_softmax(invariant=invariant))
    assert isinstance(verdict, Unknown), verdict
    assert f"{obligation} is not proved" in verdict.reason


def test_a_loop_is_read_through_its_invariant_only_once_it_is_proved() -> None:
    _, g = online_softmax()
    with pytest.raises(Unsupported, match="induction obligations are not proved"):
        inline_function(g)


# ---- flash attention for one head ------------------------------------------------------------
Q, K, V, OUT = ("!ax.tensor<[M, D], f32>", "!ax.tensor<[N, D], f32>",
              "!ax.tensor<[N, E], f32>", "!ax.tensor<[M, E], f32>")
ACC = "!ax.tensor<[BM, E], f32>"
#: the scores of the program's rows against every key (rows past M: the load's zero pad)
SCORES = ("out[t0 < BM, r < N] = add over d in [0, D) of "
          "select(idx(i*BM + t0) < idx(M), in0[i*BM + t0, d], 0.0) * in1[r, d]")
FLASH_L = ("out[t0 < BM, t1 < 1] = add over r in [0, min(k*BN, N)) of "
           "exp(in3[t0, r] - in4[t0, 0])")
FLASH_ACC = ("out[t0 < BM, e < E] = add over r in [0, min(k*BN, N)) of "
             "exp(in3[t0, r] - in4[t0, 0]) * in2[r, e]")
FLASH = f"""
func.func @f(%q: {Q}, %k: {K}, %v: {V}) -> {OUT} {{
  %kt = ax.transpose %k {{perm = array<i64: 1, 0>}} : ({K}) -> !ax.tensor<[D, N], f32>
  %s = ax.matmul %q, %kt : ({Q}, !ax.tensor<[D, N], f32>) -> !ax.tensor<[M, N], f32>
  %m = ax.reduce_max %s {{axes = array<i64: 1>, keepdims = true}}
      : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, 1], f32>
  %d = ax.sub %s, %m : (!ax.tensor<[M, N], f32>, !ax.tensor<[M, 1], f32>)
      -> !ax.tensor<[M, N], f32>
  %e = ax.exp %d : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32>
  %z = ax.sum %e {{axes = array<i64: 1>, keepdims = true}}
      : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, 1], f32>
  %p = ax.div %e, %z : (!ax.tensor<[M, N], f32>, !ax.tensor<[M, 1], f32>)
      -> !ax.tensor<[M, N], f32>
  %o = ax.matmul %p, %v : (!ax.tensor<[M, N], f32>, {V}) -> {OUT}
  func.return %o : {OUT}
}}
func.func @g(%q: {Q}, %k: {K}, %v: {V}) -> {OUT} {{
  %c = tile.kernel %q, %k, %v {{program_ids = ["i"], grid = ["ceildiv(M, BM)"],
                               params = ["BM", "BN"]}} : ({Q}, {K}, {V}) -> {OUT} {{
  ^bb0(%qg: {Q}, %kg: {K}, %vg: {V}):
    %qt = tile.load %qg {{offsets = ["i*BM", "0"], shape = ["BM", "D"], pad = 0.0 : f64,
                         space = "sbuf"}} : ({Q}) -> !ax.tensor<[BM, D], f32>
    %m0 = tile.full {{value = {LOWEST} : f64, shape = ["BM", "1"], dtype = f32,
                     space = "sbuf"}} : {COL}
    %l0 = tile.full {{value = 0.0 : f64, shape = ["BM", "1"], dtype = f32, space = "sbuf"}}
        : {COL}
    %a0 = tile.full {{value = 0.0 : f64, shape = ["BM", "E"], dtype = f32, space = "psum"}}
        : {ACC}
    %m, %l, %acc = tile.for %m0, %l0, %a0 {{iv = "k", extent = "ceildiv(N, BN)",
                                           defs = ["{SCORES}"],
                                           invariant = ["", "{FLASH_L}", "INVARIANT"]}}
        : ({COL}, {COL}, {ACC}) -> ({COL}, {COL}, {ACC}) {{
    ^bb1(%mi: {COL}, %li: {COL}, %ai: {ACC}):
      %kt = tile.load %kg {{offsets = ["k*BN", "0"], shape = ["BN", "D"], pad = 0.0 : f64,
                           space = "sbuf"}} : ({K}) -> !ax.tensor<[BN, D], f32>
      %vt = tile.load %vg {{offsets = ["k*BN", "0"], shape = ["BN", "E"], pad = 0.0 : f64,
                           space = "sbuf"}} : ({V}) -> !ax.tensor<[BN, E], f32>
      %s = ax.generic %qt, %kt {{form = "out[t0 < BM, t1 < BN] = add over d in [0, D) of \
in0[t0, d] * in1[t1, d]", dtype = f32}}
          : (!ax.tensor<[BM, D], f32>, !ax.tensor<[BN, D], f32>) -> {TILE}
      %sm = ax.generic %s {{form = "out[t0 < BM, t1 < BN] = select(idx(k*BN + t1) < idx(N), \
in0[t0, t1], {LOWEST})", dtype = f32}} : ({TILE}) -> {TILE}
      %bm = ax.reduce_max %sm {{axes = array<i64: 1>, keepdims = true}} : ({TILE}) -> {COL}
      %mn = ax.max %mi, %bm : ({COL}, {COL}) -> {COL}
      %dm = ax.sub %mi, %mn : ({COL}, {COL}) -> {COL}
      %al = ax.exp %dm : ({COL}) -> {COL}
      %p = ax.generic %s, %mn {{form = "out[t0 < BM, t1 < BN] = select(idx(k*BN + t1) < idx(N), \
exp(in0[t0, t1] - in1[t0, 0]), 0.0)", dtype = f32}} : ({TILE}, {COL}) -> {TILE}
      %bs = ax.sum %p {{axes = array<i64: 1>, keepdims = true}} : ({TILE}) -> {COL}
      %la = ax.mul %li, %al : ({COL}, {COL}) -> {COL}
      %ln = ax.add %la, %bs : ({COL}, {COL}) -> {COL}
      %pv = ax.matmul %p, %vt : ({TILE}, !ax.tensor<[BN, E], f32>) -> {ACC}
      %aa = ax.mul %ai, SCALE : ({ACC}, {COL}) -> {ACC}
      %an = ax.add %aa, %pv : ({ACC}, {ACC}) -> {ACC}
      tile.yield %mn, %ln, %an : {COL}, {COL}, {ACC}
    }}
    %o = ax.div %acc, %l : ({ACC}, {COL}) -> {ACC}
    tile.store %o {{result = 0, offsets = ["i*BM", "0"]}} : {ACC}
    tile.yield
  }}
  func.return %c : {OUT}
}}
""".replace("\\\n", "")


def flash(scale: str = "%al", invariant: str = FLASH_ACC) -> tuple[FuncOp, FuncOp]:
    return pair(FLASH, SCALE=scale, INVARIANT=invariant)


def test_flash_attention_for_one_head_is_proved() -> None:
    # O = softmax(Q K^T) V with state (m, l, acc) over key blocks of BN
    assert isinstance(prove_equivalent(*flash()), Proved)


def test_flash_attention_without_the_rescale_of_acc_is_refuted() -> None:
    f, g = flash(scale="%li")  # acc * l instead of acc * exp(m - m')
    assert_replays(f, g, prove_equivalent(f, g))


def test_a_wrong_invariant_of_acc_is_unknown_naming_the_obligation() -> None:
    verdict = prove_equivalent(*flash(invariant=FLASH_ACC.replace(" * in2[r, e]", "")))
    assert isinstance(verdict, Unknown), verdict
    assert "invariant #2 is not proved" in verdict.reason


# ---- the interpreter runs the kernels --------------------------------------------------------
@pytest.mark.parametrize(("m", "n", "bm", "bn"), [(5, 7, 2, 3), (1, 1, 1, 1), (3, 4, 4, 8),
                                                  (4, 9, 3, 2), (1, 5, 2, 2), (6, 1, 4, 3)])
def test_the_interpreter_runs_the_online_softmax_like_the_untiled_one(
        m: int, n: int, bm: int, bn: int) -> None:
    f, g = online_softmax()
    x = np.random.default_rng(m * 10 + n).normal(size=(m, n)).astype(np.float32)
    (want,) = run_function(f, [x], {"M": m, "N": n})
    (got,) = run_function(g, [x], {"M": m, "N": n, "BM": bm, "BN": bn})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("m", "n", "d", "e", "bm", "bn"), [
    (5, 7, 3, 2, 2, 3), (1, 1, 1, 1, 1, 1), (3, 4, 2, 1, 4, 8), (4, 9, 1, 3, 3, 2)])
def test_the_interpreter_runs_flash_attention_like_the_untiled_one(
        m: int, n: int, d: int, e: int, bm: int, bn: int) -> None:
    f, g = flash()
    rng = np.random.default_rng(m + n + d + e)
    inputs = [rng.normal(size=s).astype(np.float32) for s in ((m, d), (n, d), (n, e))]
    sizes = {"M": m, "N": n, "D": d, "E": e}
    (want,) = run_function(f, inputs, sizes)
    (got,) = run_function(g, inputs, {**sizes, "BM": bm, "BN": bn})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- the attribute ---------------------------------------------------------------------------
@pytest.mark.parametrize(("invariant", "message"), [
    ('""', "1 invariant form(s) for 2 carried value(s)"),
    (f'"", "{ROW_L.replace("t1 < 1", "t1 < 2")}"', "invariant #1 has shape [BM, 2]"),
    (f'"", "{ROW_L.replace("k*BN", "j*BN")}"', "invariant #1 uses j, which nothing binds"),
    (f'"", "{ROW_L.replace("in1[t0, 0]", "in3[t0, 0]")}"', "body reads in3"),
    (f'"", "{ROW_L.replace("in1[t0, 0]", "in2[t0, 0]")}"',
     "invariant #1 reads carried value #1, whose invariant is not before it"),
    (f'"", "{ROW_L.replace("in1[t0, 0]", "in1[t0]")}"', "reads in1 with 1 indices"),
])
def test_a_malformed_invariant_is_reported_at_the_loop(invariant: str, message: str) -> None:
    text = ONLINE_SOFTMAX.replace('invariant = ["", "INVARIANT"]', f"invariant = [{invariant}]")
    with pytest.raises(VerifyException, match=re.escape(message)):
        pair(text, MSTART=LOWEST, LSTART="0.0", RESCALED="%la")
