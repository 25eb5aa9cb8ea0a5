"""Unit tests of the naive loop evaluator of generic forms, against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.ir import Block

from axon.dialects.ax import ConcatOp, CumsumOp, GenericOp, MatmulOp, TensorType
from axon.dialects.form.syntax import parse_form
from axon.interpreter import InterpreterError, evaluate_form, evaluate_op_naive


def test_matmul_form() -> None:
    form = parse_form("out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[d0, r0] * in1[r0, d1]",
                      2)
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4) - 5
    got = evaluate_form(form, [a, b], {"M": 2, "N": 4, "K": 3})
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, a @ b)


def test_triangular_domain() -> None:
    form = parse_form("out[d0 < N] = add over r0 in [0, d0 + 1) of in0[r0]", 1)
    assert evaluate_form(form, [np.array([1.0, 2.0, 3.0])], {"N": 3}).tolist() == [1, 3, 6]
    nested = parse_form("out[d0 < N] = add over r0 in [0, d0 + 1), r1 in [r0, d0 + 1) of 1", 0)
    # number of pairs r0 <= r1 <= d0: (d0 + 1)(d0 + 2) / 2
    assert evaluate_form(nested, [], {"N": 4}).tolist() == [1, 3, 6, 10]


def test_empty_ranges_give_identities_and_mean_of_nothing_is_nan() -> None:
    x = np.array([4.0, -1.0, 2.0])
    cases = {"add": [1.0, 2.0, 0.0], "mul": [-2.0, 2.0, 1.0], "max": [2.0, 2.0, -np.inf],
             "min": [-1.0, 2.0, np.inf]}
    for kind, want in cases.items():
        form = parse_form(f"out[d0 < N] = {kind} over r0 in [d0 + 1, N) of in0[r0]", 1)
        assert evaluate_form(form, [x], {"N": 3}).tolist() == want, kind
    mean = parse_form("out[d0 < M] = add over r0 in [0, K) of in0[d0, r0] then acc / idx(K)", 1)
    got = evaluate_form(mean, [np.zeros((2, 0))], {"M": 2, "K": 0})
    assert got.shape == (2,) and np.all(np.isnan(got))


def test_finalizer_uses_the_reduced_value() -> None:
    form = parse_form("out[d0 < M] = add over r0 in [0, K) of in0[d0, r0] * in0[d0, r0] "
                      "then sqrt(acc / idx(K))", 1)
    x = np.array([[3.0, 4.0], [1.0, 1.0]])
    got = evaluate_form(form, [x], {"M": 2, "K": 2})
    np.testing.assert_allclose(got, [np.sqrt(12.5), 1.0])


def test_unguarded_out_of_range_read_is_an_error() -> None:
    form = parse_form("out[d0 < N] = in0[d0 + 1]", 1)
    with pytest.raises(InterpreterError, match=r"outside operand #0 of shape \(3,\)"):
        evaluate_form(form, [np.zeros(3)], {"N": 3})
    # a negative index is out of range too, not numpy's wrap-around
    with pytest.raises(InterpreterError, match=r"outside operand #0"):
        evaluate_form(parse_form("out[d0 < N] = in0[d0 - 1]", 1), [np.zeros(3)], {"N": 3})


def test_select_guards_reads_lazily() -> None:
    form = parse_form("out[d0 < M + N] = select(idx(d0) < idx(M), in0[d0], in1[d0 - M])", 2)
    got = evaluate_form(form, [np.array([1.0, 2.0]), np.array([7.0])], {"M": 2, "N": 1})
    assert got.tolist() == [1.0, 2.0, 7.0]


def test_booleans_stay_booleans_and_ints_are_float64() -> None:
    form = parse_form("out[d0 < N] = in0[d0] > in1[d0]", 2)
    got = evaluate_form(form, [np.array([1, 5], np.int32), np.array([2, 2], np.int32)], {"N": 2})
    assert got.dtype == np.bool_ and got.tolist() == [False, True]
    form = parse_form("out[d0 < N] = select(in0[d0], in1[d0], in1[0])", 2)
    got = evaluate_form(form, [np.array([False, True]), np.array([3, 4], np.int32)], {"N": 2})
    assert got.dtype == np.float64 and got.tolist() == [3.0, 4.0]


def test_evaluate_op_naive_binds_sizes_from_operand_types() -> None:
    block = Block(arg_types=[TensorType(["M", "K"], "f32"), TensorType(["K"], "f32"),
                             TensorType(["P", "K"], "f32")])
    a, v, c = block.args
    x = np.arange(6.0).reshape(2, 3)
    y = np.array([1.0, 0.0, -1.0])
    np.testing.assert_array_equal(evaluate_op_naive(MatmulOp.make([a, v]), [x, y]), x @ y)
    np.testing.assert_array_equal(evaluate_op_naive(CumsumOp.make([a], axis=1), [x]),
                                  np.cumsum(x, axis=1))
    z = -np.ones((1, 3))
    np.testing.assert_array_equal(evaluate_op_naive(ConcatOp.make([a, c], axis=0), [x, z]),
                                  np.concatenate([x, z]))
    with pytest.raises(InterpreterError, match=r"operand #1 dim 0: .*'K' is 3.*bound to 4"):
        evaluate_op_naive(MatmulOp.make([a, v]), [np.zeros((2, 4)), y])


def test_strided_generic_reads_through_the_index_map() -> None:
    block = Block(arg_types=[TensorType(["2*M + 1"], "i32")])
    op = GenericOp.make(list(block.args), form="out[d0 < M] = in0[2*d0 + 1] * idx(d0)",
                        dtype="i32")
    got = evaluate_op_naive(op, [np.arange(10, 17, dtype=np.int32)])
    assert got.tolist() == [0.0, 13.0, 30.0]
