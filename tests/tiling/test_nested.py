"""Nested tilings: a loop over one reduced dim inside the loop over another (the mlp's K loop
in its F loop): what is proposed and built, what the profile then assumes, that the kernel is
proved and runs as the program does, and that wrong nests are refuted with a counterexample
the interpreter replays."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp
from axon.interpreter import run_function
from axon.targets.profiles import load_profile
from axon.tiling.kernels import NotTileable, Tiling, tile_function, tilings
from axon.tiling.profiles import kernel_constraints, tile_spaces
from axon.tiling.search import tile_program
from axon.tools.embed import parse_mlir, print_ir
from axon.verifier import ProofBudget, Proved, Refuted, prove_equivalent

X = "!ax.tensor<[M, K], f32>"
W = "!ax.tensor<[K, F], f32>"
H = "!ax.tensor<[M, F], f32>"
D = "!ax.tensor<[F, N], f32>"
Y = "!ax.tensor<[M, N], f32>"

MLP = f"""
func.func @mlp(%x: {X}, %w1: {W}, %w2: {W}, %w3: {D}) -> {Y} {{
  %0 = ax.matmul %x, %w1 : ({X}, {W}) -> {H}
  %1 = ax.silu %0 : ({H}) -> {H}
  %2 = ax.matmul %x, %w2 : ({X}, {W}) -> {H}
  %3 = ax.mul %1, %2 : ({H}, {H}) -> {H}
  %4 = ax.matmul %3, %w3 : ({H}, {D}) -> {Y}
  func.return %4 : {Y}
}}
"""

# the first contraction as a generic sum (its partial is masked, not only padded) of a body
# that is not 0 on padded lanes, then the down projection
EXP_MLP = f"""
func.func @f(%x: {X}, %w1: {W}, %w3: {D}) -> {Y} {{
  %0 = ax.generic %x, %w1 {{dtype = f32,
      form = "out[d0 < M, d1 < F] = add over r0 in [0, K) of exp(in0[d0, r0]) * in1[r0, d1]"}}
      : ({X}, {W}) -> {H}
  %1 = ax.matmul %0, %w3 : ({H}, {D}) -> {Y}
  func.return %1 : {Y}
}}
"""

# a sum over K that reads another: one loop over K cannot accumulate both
READS_SUM = "in0[d0, r0] * in1[d0, d1] * in2[r0, d1]"
CHAINED = f"""
func.func @f(%x: {X}, %w1: {W}, %w3: {D}) -> {Y} {{
  %0 = ax.matmul %x, %w1 : ({X}, {W}) -> {H}
  %1 = ax.generic %x, %0, %w1 {{dtype = f32,
      form = "out[d0 < M, d1 < F] = add over r0 in [0, K) of {READS_SUM}"}}
      : ({X}, {H}, {W}) -> {H}
  %2 = ax.matmul %1, %w3 : ({H}, {D}) -> {Y}
  func.return %2 : {Y}
}}
"""

#: sizes with remainders, sizes of 1, and tiles wider than their dims
SHAPES = [({"M": 5, "K": 7, "F": 6, "N": 3}, {"BM": 2, "BN": 2, "BK": 4, "BL": 3}),
          ({"M": 1, "K": 1, "F": 1, "N": 1}, {"BM": 1, "BN": 1, "BK": 1, "BL": 1}),
          ({"M": 3, "K": 5, "F": 7, "N": 4}, {"BM": 4, "BN": 3, "BK": 2, "BL": 8})]


def function(text: str) -> FuncOp:
    (func,) = (op for op in parse_mlir(text, "f.mlir").ops if isinstance(op, FuncOp))
    return func


def kernel_op(func: FuncOp) -> KernelOp:
    return next(op for op in func.walk() if isinstance(op, KernelOp))


def run_both(func: FuncOp, tiled: FuncOp) -> None:
    rng = np.random.default_rng(3)
    for sizes, blocks in SHAPES:
        inputs = [rng.uniform(-1.0, 1.0, tuple(d.evaluate(sizes) for d in t.shape))
                  for t in func.function_type.inputs.data if isinstance(t, TensorType)]
        (want,) = run_function(func, inputs, sizes, exact=True)
        (got,) = run_function(tiled, inputs, {**sizes, **blocks}, exact=True)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{sizes} {blocks}")


def edited(func: FuncOp, tiled: FuncOp, old: str, new: str) -> tuple[FuncOp, FuncOp]:
    """The program and its kernel with the first occurrence of `old` in the kernel's text
    replaced by `new`."""
    text = print_ir(ModuleOp([func.clone(), tiled.clone()]))
    assert old in text, old
    funcs = [op for op in parse_mlir(text.replace(old, new, 1), "f.mlir").ops
             if isinstance(op, FuncOp)]
    return funcs[0], funcs[1]


def test_the_mlp_gets_a_k_loop_nested_in_its_f_loop_and_no_other_program_shape_does() -> None:
    nested = [(t.kind, t.red, t.inner) for t in tilings(function(MLP)) if t.inner]
    assert nested == [("rows_k_nested", "F", "K"), ("blocks_k_nested", "F", "K")]
    gated = function(f"""
func.func @gated(%x: {X}, %w1: {W}, %w2: {W}) -> {H} {{
  %0 = ax.matmul %x, %w1 : ({X}, {W}) -> {H}
  %1 = ax.silu %0 : ({H}) -> {H}
  %2 = ax.matmul %x, %w2 : ({X}, {W}) -> {H}
  %3 = ax.mul %1, %2 : ({H}, {H}) -> {H}
  func.return %3 : {H}
}}
""")
    assert not [t for t in tilings(gated) if t.inner]  # a K loop alone fits: nothing to nest


def test_the_nested_kernel_loads_no_whole_k_and_restarts_its_accumulators() -> None:
    func = function(MLP)
    tiled = tile_function(func, Tiling("M", "N", "F", inner="K"), "sbuf", "psum")
    assert tiled.sym_name.data == "mlp_blocks_k_nested"
    kernel = kernel_op(tiled)
    assert kernel.param_names() == ["BM", "BN", "BK", "BL"]
    (outer,) = (op for op in kernel.body.block.ops if isinstance(op, ForOp))
    (inner,) = (op for op in outer.body.block.ops if isinstance(op, ForOp))
    assert (outer.iv.data, inner.iv.data) == ("k", "l")
    assert str(inner.extent_expr()) == "(BL + K - 1) floordiv BL"
    # x @ w1 and x @ w2 share the inner loop, their accumulators start at 0 in each outer
    # iteration (in PSUM), and x is loaded there only, a K block at a time
    assert len(inner.results) == 2
    starts = [v.owner for v in inner.inits if isinstance(v.owner, FullOp)]
    assert len(starts) == 2 and all(op.parent_op() is outer for op in starts)
    assert all(op.space.data == "psum" for op in starts)
    loads = [op for op in kernel.walk() if isinstance(op, LoadOp)]
    assert [op.parent_op() is inner for op in loads] == [False, True, True, True]
    assert all("K" not in d.symbols() for op in loads
               for d in op.results[0].type.shape)  # type: ignore[attr-defined]
    verdict = prove_equivalent(tiled, func)
    assert isinstance(verdict, Proved), verdict
    run_both(func, tiled)


def test_the_nested_kernel_fits_a_neuroncore_where_no_single_loop_does() -> None:
    trn2 = load_profile("trn2")
    func = function(MLP)
    single = tile_function(func, Tiling("M", "N", "F"), *tile_spaces(trn2))
    assert "K <= 128" in kernel_constraints(trn2, kernel_op(single))
    tiled = tile_function(func, Tiling("M", "N", "F", inner="K"), *tile_spaces(trn2))
    limits = kernel_constraints(trn2, kernel_op(tiled))
    assert "BL <= 128" in limits and "BK <= 128" in limits
    assert not any("K" in text.split() or text.startswith("K ") for text in limits)


def test_a_masked_generic_sum_nested_in_the_f_loop_is_proved_and_runs() -> None:
    func = function(EXP_MLP)
    tiled = tile_function(func, Tiling("M", None, "F", inner="K"), "sbuf", "psum")
    assert "idx(BL*l + r0) < idx(K)" in print_ir(ModuleOp([tiled.clone()]))
    verdict = prove_equivalent(tiled, func)
    assert isinstance(verdict, Proved), verdict
    run_both(func, tiled)


@pytest.mark.parametrize("what, old, new", [
    ("the inner loop one block short", 'extent = "(BL + K - 1) floordiv BL"',
     'extent = "(K - 1) floordiv BL"'),
    ("x loaded one column off", 'offsets = ["BM*i", "BL*l"]', 'offsets = ["BM*i", "BL*l + 1"]'),
    ("w1 (loaded first) read at the inner block for its column",
     'offsets = ["BL*l", "BK*k"]', 'offsets = ["BL*l", "BK*l"]'),
])
def test_a_wrong_nest_of_the_mlp_is_refuted_and_the_counterexample_replays(
        what: str, old: str, new: str) -> None:
    func = function(MLP)
    tiled = tile_function(func, Tiling("M", None, "F", inner="K"), "sbuf", "psum")
    func, wrong = edited(func, tiled, old, new)
    verdict = prove_equivalent(func, wrong)
    assert isinstance(verdict, Refuted), (what, verdict)
    assert verdict.counterexample.shows_in(func, wrong)


def test_an_off_by_one_inner_mask_is_refuted_and_the_counterexample_replays() -> None:
    func = function(EXP_MLP)
    tiled = tile_function(func, Tiling("M", None, "F", inner="K"), "sbuf", "psum")
    func, wrong = edited(func, tiled, "idx(BL*l + r0) < idx(K)", "idx(BL*l + r0) < idx(K - 1)")
    verdict = prove_equivalent(func, wrong)
    assert isinstance(verdict, Refuted), verdict
    assert verdict.counterexample.shows_in(func, wrong)


def test_what_a_nested_loop_cannot_accumulate_is_not_tileable() -> None:
    with pytest.raises(NotTileable, match="reads another"):
        tile_function(function(CHAINED), Tiling("M", None, "F", inner="K"), "sbuf", "psum")
    with pytest.raises(NotTileable, match="nests only in the loops"):
        tile_function(function(MLP), Tiling("M", None, None, inner="K"), "sbuf", "psum")
    lora = function(f"""
func.func @lora(%x: {X}, %w: !ax.tensor<[K, N], f32>, %a: !ax.tensor<[K, R], f32>,
                %b: !ax.tensor<[R, N], f32>) -> {Y} {{
  %0 = ax.matmul %x, %w : ({X}, !ax.tensor<[K, N], f32>) -> {Y}
  %1 = ax.matmul %x, %a : ({X}, !ax.tensor<[K, R], f32>) -> !ax.tensor<[M, R], f32>
  %2 = ax.matmul %1, %b : (!ax.tensor<[M, R], f32>, !ax.tensor<[R, N], f32>) -> {Y}
  %3 = ax.add %0, %2 : ({Y}, {Y}) -> {Y}
  func.return %3 : {Y}
}}
""")
    assert not [t for t in tilings(lora) if t.inner]  # x @ w contracts K outside the R loop
    with pytest.raises(NotTileable, match="built only nested in a loop over R"):
        tile_function(lora, Tiling("M", None, "R", inner="K"), "sbuf", "psum")


def test_trn2_picks_the_nested_mlp_kernel_and_h200_skips_what_fits_without_it() -> None:
    sizes = {"M": 1024, "K": 1024, "F": 1024, "N": 1024}
    budget = ProofBudget.nominal(30)
    trn2 = tile_program([function(MLP)], load_profile("trn2"), sizes, budget=budget)
    best = trn2.proved[0]
    assert best.tiling == Tiling("M", "N", "F", inner="K") and best.candidates
    cost = best.candidates[0].cost
    assert cost.fits and cost.hbm_bytes > cost.compulsory_bytes
    assert not any(p.candidates for p in trn2.proved if p.tiling.inner is None)
    h200 = tile_program([function(MLP)], load_profile("h200"), sizes, budget=budget)
    fitting = {p.tiling for p in h200.proposals if p.candidates}
    nested = [p for p in h200.proposals if p.tiling.inner is not None]
    assert nested and Tiling("M", "N", "F") in fitting
    for proposal in nested:
        fits = replace(proposal.tiling, inner=None) in fitting
        assert (proposal.verdict == "skipped") == fits, proposal
        assert not fits or "fits without the loop over K nested in it" in proposal.reason
    assert h200.proved[0].candidates
