"""Programs cut in two: where a program is cut, and that the producer and the consumer compose to
the program (the substitution the staged candidates rest on), run by the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.interpreter import run_function
from axon.nugraph.stored import function_text, functions_from_texts
from axon.tiling.split import cut_points, intermediate_dtype, split_function
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


#: gemm_sum_scale in bf16 as propagation rewrites it, and a chain of two GEMMs
ROWSUM_BF16 = ROWSUM.replace("f32", "bf16")
TWO_GEMMS = """
func.func @two(%x: !ax.tensor<[M, K], bf16>, %a: !ax.tensor<[K, R], bf16>,
               %b: !ax.tensor<[R, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %0 = ax.matmul %x, %a : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, R], bf16>)
      -> !ax.tensor<[M, R], bf16>
  %1 = ax.matmul %0, %b : (!ax.tensor<[M, R], bf16>, !ax.tensor<[R, N], bf16>)
      -> !ax.tensor<[M, N], bf16>
  func.return %1 : !ax.tensor<[M, N], bf16>
}
"""


def test_a_bf16_row_sum_stays_float32_between_the_stages() -> None:
    """The row sums of a bf16 w feed the mat-vec: the producer writes them in f32 (its sum an
    `ax.generic` of the sum's form), the consumer reads f32 and rounds only its own results;
    the stages compose to the program within one bf16 rounding of the result, nearer the exact
    value than the program (which rounds the row sums)."""
    (func,) = functions_from_texts([ROWSUM_BF16])
    (value,) = cut_points(func)
    assert intermediate_dtype(value) == "f32"
    split = split_function(func, value)
    assert (split.dtype, split.widened) == ("f32", "a bf16 ax.sum result that feeds arithmetic")
    assert signature(split.producer)[-1] == "bf16[K, N]"
    assert [str(t) for t in split.producer.function_type.outputs.data] == ["f32[K]"]
    assert [op.name for op in split.producer.body.block.ops] == ["ax.generic", "func.return"]
    assert signature(split.consumer)[-1] == "f32[K]"
    assert [op.name for op in split.consumer.body.block.ops] == ["ax.generic", "ax.mul",
                                                                 "func.return"]
    assert [str(t) for t in split.consumer.function_type.outputs.data] == ["bf16[M]"]
    rng = np.random.default_rng(0)
    sizes = {"M": 4, "K": 64, "N": 512}
    x, w = rng.normal(size=(4, 64)), rng.uniform(-1, 1, size=(64, 512)) / 16
    inputs = [x, w, np.asarray(0.5)]
    (want,) = run_function(func, inputs, sizes)
    (middle,) = run_function(split.producer, [w], sizes)
    assert np.asarray(middle).dtype == np.float32
    (got,) = run_function(split.consumer, [x, np.asarray(0.5), middle], sizes)
    bf16 = [np.asarray(a, np.float32).astype("bfloat16").astype(np.float64)
            for a in (x, w)]
    exact = 0.5 * bf16[0] @ bf16[1].sum(axis=1)
    assert np.abs(np.asarray(got, np.float64) - exact).max() <= \
        np.abs(np.asarray(want, np.float64) - exact).max()
    np.testing.assert_allclose(np.asarray(got, np.float64), exact, rtol=2 ** -8, atol=1e-6)


def test_a_dot_operand_and_a_max_keep_the_programs_dtype() -> None:
    """A GEMM's result that the next GEMM reads as a matrix stays bf16 (the dot takes it in
    bf16); so does a row max (one of the row's own elements)."""
    (two,) = functions_from_texts([TWO_GEMMS])
    (cut,) = cut_points(two)
    assert intermediate_dtype(cut) == "bf16"
    assert split_function(two, cut).widened == ""
    (softmax,) = functions_from_texts([function_text(program("softmax")).replace("f32",
                                                                                "bf16")])
    found = {split_function(softmax, v).value: intermediate_dtype(v) for v in cut_points(softmax)}
    assert found == {"ax.reduce_max#0": "bf16", "ax.sum#0": "f32"}
