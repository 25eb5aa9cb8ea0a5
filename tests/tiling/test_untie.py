"""A size symbol in two parts of a program (square scores' rows and columns) split into two, the
program left as it is where a dim is read through an index expression; the untied program runs
equal to the program where the split symbols are equal, and tiles where the program did not."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.interpreter import run_function
from axon.tiling.kernels import NotTileable, Tiling, tile_function
from axon.tiling.untie import untie
from axon.tools.embed import parse_mlir
from axon.verifier import Proved, prove_equivalent

S = "!ax.tensor<[B, S, S], f32>"
M = "!ax.tensor<[S, S], i1>"
#: a causal softmax over square scores, its mask `triu(ones(S, S))` as torch.export gives it
SQUARE = f"""
func.func @f(%x: {S}) -> {S} {{
  %ones = ax.constant {{value = 1.0 : f64, shape = ["S", "S"], dtype = i1}} : {M}
  %r = ax.iota {{shape = ["S", "S"], axis = 0 : i64, dtype = i32}} : !ax.tensor<[S, S], i32>
  %c = ax.iota {{shape = ["S", "S"], axis = 1 : i64, dtype = i32}} : !ax.tensor<[S, S], i32>
  %future = ax.gt %c, %r : (!ax.tensor<[S, S], i32>, !ax.tensor<[S, S], i32>) -> {M}
  %no = ax.constant {{value = 0.0 : f64, shape = [], dtype = i1}} : !ax.tensor<[], i1>
  %mask = ax.select %future, %ones, %no : ({M}, {M}, !ax.tensor<[], i1>) -> {M}
  %low = ax.constant {{value = -3.0e+38 : f64, shape = [], dtype = f32}} : !ax.tensor<[], f32>
  %s = ax.select %mask, %low, %x : ({M}, !ax.tensor<[], f32>, {S}) -> {S}
  %m = ax.reduce_max %s {{axes = array<i64: 2>, keepdims = true}} : ({S})
      -> !ax.tensor<[B, S, 1], f32>
  %d = ax.sub %s, %m : ({S}, !ax.tensor<[B, S, 1], f32>) -> {S}
  %e = ax.exp %d : ({S}) -> {S}
  %z = ax.sum %e {{axes = array<i64: 2>, keepdims = true}} : ({S}) -> !ax.tensor<[B, S, 1], f32>
  %y = ax.div %e, %z : ({S}, !ax.tensor<[B, S, 1], f32>) -> {S}
  func.return %y : {S}
}}
"""
#: a square matrix transposed and added to itself: its two dims must stay one symbol
TRANSPOSE_ADD = """
func.func @f(%x: !ax.tensor<[S, S], f32>) -> !ax.tensor<[S, S], f32> {
  %t = ax.transpose %x {perm = array<i64: 1, 0>}
      : (!ax.tensor<[S, S], f32>) -> !ax.tensor<[S, S], f32>
  %y = ax.add %x, %t : (!ax.tensor<[S, S], f32>, !ax.tensor<[S, S], f32>)
      -> !ax.tensor<[S, S], f32>
  func.return %y : !ax.tensor<[S, S], f32>
}
"""


def function(text: str) -> FuncOp:
    (func,) = (op for op in parse_mlir(text, "f.mlir").ops if isinstance(op, FuncOp))
    return func


def test_square_scores_are_untied_into_rows_and_columns_and_tile() -> None:
    func = function(SQUARE)
    with pytest.raises(NotTileable, match="a tiling needs distinct dims"):
        tile_function(func, Tiling("S", None, "S", write_pass=True, lead=1), "sbuf", "psum")
    untied, parts = untie(func)
    assert parts == {"S_2": "S"}
    assert [str(t) for t in untied.function_type.inputs.data] == ["f32[B, S, S_2]"]
    assert [str(op.results[0].type) for op in untied.body.block.ops
            if op.name == "ax.iota"] == ["i32[S, S_2]", "i32[S, S_2]"]
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 5))
    (want,) = run_function(func, [x], {"B": 2, "S": 5}, exact=True)
    (got,) = run_function(untied, [x], {"B": 2, "S": 5, "S_2": 5}, exact=True)
    np.testing.assert_array_equal(got, want)
    tiled = tile_function(untied, Tiling("S", None, "S_2", write_pass=True, lead=1), "sbuf",
                          "psum")
    assert isinstance(prove_equivalent(tiled, untied), Proved)
    for s, blocks in [(5, {"BM": 2, "BK": 2}), (7, {"BM": 4, "BK": 3})]:
        x = rng.normal(size=(2, s, s))
        (want,) = run_function(func, [x], {"B": 2, "S": s}, exact=True)
        (got,) = run_function(tiled, [x], {"B": 2, "S": s, "S_2": s, **blocks}, exact=True)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_dims_a_transpose_crosses_stay_one_symbol() -> None:
    func = function(TRANSPOSE_ADD)
    untied, parts = untie(func)
    assert parts == {} and untied is func
    types = [t for t in untied.function_type.inputs.data if isinstance(t, TensorType)]
    assert [str(t) for t in types] == ["f32[S, S]"]
