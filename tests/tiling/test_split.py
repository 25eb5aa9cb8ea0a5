"""Programs cut in two: where a program is cut, and that the producer and the consumer compose to
the program (the substitution the staged candidates rest on), run by the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.interpreter import run_function
from axon.nugraph.stored import functions_from_texts
from axon.tiling.split import cut_points, split_function
from axon.tools.embed import parse_source

#: gemm_sum_scale as propagation rewrites it: the row sums of w, then a matrix-vector product
ROWSUM = """
func.func @gss(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>,
               %s: !ax.tensor<[], f32>) -> !ax.tensor<[M], f32> {
  %0 = ax.sum %w {axes = array<i64: 1>, keepdims = false}
      : (!ax.tensor<[K, N], f32>) -> !ax.tensor<[K], f32>
  %1 = ax.matmul %x, %0 : (!ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M], f32>
  %2 = ax.mul %1, %s : (!ax.tensor<[M], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[M], f32>
  func.return %2 : !ax.tensor<[M], f32>
}
"""


def program(name: str) -> FuncOp:
    (func,) = [op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp)]
    return func


def signature(func: FuncOp) -> list[str]:
    return [str(t) for t in func.function_type.inputs.data]


def test_the_row_sums_of_w_are_cut_off_from_the_matrix_vector_product() -> None:
    (func,) = functions_from_texts([ROWSUM])
    (value,) = cut_points(func)  # the product's operand; the mul by s alone is no stage
    split = split_function(func, value)
    assert split.value == "ax.sum#0"
    assert (split.producer_args, split.consumer_args) == ((1,), (0, 2))
    assert [op.name for op in split.producer.body.block.ops] == ["ax.sum", "func.return"]
    assert [op.name for op in split.consumer.body.block.ops] == ["ax.matmul", "ax.mul",
                                                                 "func.return"]
    assert signature(split.consumer)[-1] == "f32[K]"


def test_a_computed_operand_of_a_matmul_is_cut_before_its_reductions() -> None:
    func = program("rmsnorm_matmul")
    cuts = [split_function(func, v) for v in cut_points(func, limit=4)]
    assert [c.value for c in cuts] == ["ax.mul#2", "ax.mean#0"]
    # the normalization kernel, then a plain GEMM: the plan eager torch runs
    assert [op.name for op in cuts[0].consumer.body.block.ops] == ["ax.matmul", "func.return"]


def test_programs_without_a_reduction_on_both_sides_have_no_cut() -> None:
    assert cut_points(program("matmul")) == []
    assert cut_points(program("silu_matmul")) == []  # a prologue of maps: the emitter's split
    # rmsnorm's one reduction: either side of any cut is maps alone
    assert cut_points(program("rmsnorm")) == []
    # softmax's max, then its sum: the row statistics are a stage, the sum and the writes one
    softmax = program("softmax")
    assert [split_function(softmax, v).value
            for v in cut_points(softmax)] == ["ax.reduce_max#0", "ax.sum#0"]


@pytest.mark.parametrize("name", ["rmsnorm_matmul", "softmax_matmul", "matmul_red_div",
                                  "lora", "linear_attention", "gated_mlp"])
def test_the_stages_compose_to_the_program(name: str) -> None:
    func = program(name)
    cuts = cut_points(func, limit=4)
    assert cuts, f"{name} has a cut"
    rng = np.random.default_rng(1)
    sizes = {s: 3 + 2 * k for k, s in enumerate(sorted(
        {s for t in func.function_type.inputs.data if isinstance(t, TensorType)
         for d in t.shape for s in d.symbols()}))}
    inputs = [rng.uniform(0.5, 1.5, tuple(d.evaluate(sizes) for d in t.shape))
              for t in func.function_type.inputs.data if isinstance(t, TensorType)]
    (want,) = run_function(func, inputs, sizes, exact=True)
    for value in cuts:
        split = split_function(func, value)
        (middle,) = run_function(split.producer, [inputs[n] for n in split.producer_args],
                                 sizes, exact=True)
        (got,) = run_function(split.consumer,
                              [*(inputs[n] for n in split.consumer_args), middle], sizes,
                              exact=True)
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-12, err_msg=f"{name} cut at {split.value}")
