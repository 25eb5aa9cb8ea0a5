"""Unit tests of the reference interpreter: dtype faithfulness, size binding, multi-op programs."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.arith import ConstantOp as ArithConstantOp
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

from axon.dialects.ax import (
    ALL_OPS,
    AddOp,
    CastOp,
    ConstantOp,
    DivOp,
    ExpOp,
    GenericOp,
    MatmulOp,
    MeanOp,
    MulOp,
    ProdOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReshapeOp,
    RsqrtOp,
    SubOp,
    SumOp,
    TensorType,
)
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.form.dtypes import DTYPES, dtype_attr
from axon.interpreter import InterpreterError, find_kernel, run_function, run_module

BF16 = ml_dtypes.bfloat16

Builder = Callable[[Sequence[SSAValue]], Sequence[Any]]


def function(types: Sequence[TensorType], build: Builder, name: str = "f") -> FuncOp:
    """A func.func whose body is the ops `build` returns; it returns their last result(s).

    `build` returns a list of ops; the function returns the results of the ops listed in the
    final element when it is a tuple, else the last op's result.
    """
    block = Block(arg_types=list(types))
    items = list(build(block.args))
    returned = items.pop() if isinstance(items[-1], tuple) else (items[-1].results[0],)
    block.add_ops(items)
    block.add_op(ReturnOp(*returned))
    func = FuncOp(name, (list(types), [v.type for v in returned]), Region(block))
    func.verify()
    return func


def t(shape: Sequence[Any], dtype: str) -> TensorType:
    return TensorType(list(shape), dtype)


# ---- dtype faithfulness -------------------------------------------------------------------------
def test_every_op_class_has_a_kernel() -> None:
    missing = [cls.name for cls in ALL_OPS if find_kernel(cls) is None]
    assert not missing


def test_bf16_op_is_one_rounding_of_the_f32_computation() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(8, 16)).astype(BF16)
    b = rng.normal(size=(16, 8)).astype(BF16)
    func = function([t([8, 16], "bf16"), t([16, 8], "bf16")],
                    lambda args: [MatmulOp.make(args)])
    (got,) = run_function(func, [a, b])
    assert got.dtype == BF16
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    # the result is exactly a bf16 value: widening and rounding again changes nothing
    np.testing.assert_array_equal(got.astype(np.float32).astype(BF16).astype(np.float32),
                                  got.astype(np.float32))


def test_bf16_sum_accumulates_in_f32() -> None:
    # 1 + 4 * 2^-9: each 2^-9 is below half a bf16 ulp of 1, so a bf16 accumulator stays at 1;
    # the f32 accumulator reaches 1 + 2^-7, which bf16 represents exactly
    x = np.array([1.0, 2**-9, 2**-9, 2**-9, 2**-9]).astype(BF16)
    func = function([t([5], "bf16")], lambda args: [SumOp.make(args, axes=(0,))])
    (got,) = run_function(func, [x])
    assert float(got) == 1.0 + 2**-7


def test_bf16_rounds_after_every_op_like_an_eager_framework() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=2000).astype(BF16)
    y = rng.normal(size=2000).astype(BF16)

    def build(args: Sequence[SSAValue]) -> list[Any]:
        e = ExpOp.make([args[0]])
        return [e, AddOp.make([e.results[0], args[1]])]

    (got,) = run_function(function([t(["N"], "bf16")] * 2, build), [x, y])
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    stepwise = (np.exp(x32).astype(BF16).astype(np.float32) + y32).astype(BF16)
    fused = (np.exp(x32) + y32).astype(BF16)
    np.testing.assert_array_equal(got.astype(np.float32), stepwise.astype(np.float32))
    # the inputs are rich enough to tell the two roundings apart
    assert np.any(stepwise.astype(np.float32) != fused.astype(np.float32))


def test_f16_overflows_to_inf() -> None:
    x = np.array([60000.0, -60000.0, 1.0], dtype=np.float16)
    func = function([t([3], "f16")] * 2, lambda args: [AddOp.make(args)])
    (got,) = run_function(func, [x, x])
    assert got.dtype == np.float16
    assert got[0] == np.inf and got[1] == -np.inf and got[2] == 2.0


def test_i32_wraps() -> None:
    big = np.iinfo(np.int32).max
    a = np.array([big, 65536, -big - 1], dtype=np.int32)
    b = np.array([1, 65536, -1], dtype=np.int32)
    func = function([t([3], "i32")] * 2, lambda args: [AddOp.make(args)])
    (got,) = run_function(func, [a, b])
    assert got.dtype == np.int32
    assert got.tolist() == [-big - 1, 65536 * 2, big]
    (prod,) = run_function(function([t([3], "i32")] * 2, lambda args: [MulOp.make(args)]), [a, b])
    assert prod.tolist()[1] == 0  # 2^32 wraps to 0
    (total,) = run_function(function([t([2], "i32")], lambda args: [SumOp.make(args, axes=(0,))]),
                            [np.array([big, 1], dtype=np.int32)])
    assert int(total) == -big - 1


def test_cast_truncates_toward_zero_and_rounds_to_nearest_even() -> None:
    func = function([t([4], "f32")], lambda args: [CastOp.make(args, dtype="i32")])
    (got,) = run_function(func, [np.array([-1.7, 1.7, -0.5, 2.0], dtype=np.float32)])
    assert got.dtype == np.int32 and got.tolist() == [-1, 1, 0, 2]
    # 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one, 1
    func = function([t([2], "f32")], lambda args: [CastOp.make(args, dtype="bf16")])
    (got,) = run_function(func, [np.array([1 + 2**-8, 1 + 3 * 2**-8], dtype=np.float32)])
    assert got.astype(np.float32).tolist() == [1.0, 1 + 2**-6]


def test_inputs_are_converted_to_the_parameter_storage_dtype() -> None:
    func = function([t([2], "bf16")], lambda args: [MulOp.make([args[0], args[0]])])
    x = np.array([1 + 2**-10, 3.0])  # float64; 1 + 2^-10 rounds to 1 in bf16
    (got,) = run_function(func, [x])
    assert got.dtype == BF16 and got.astype(np.float32).tolist() == [1.0, 9.0]


# ---- empty reductions ---------------------------------------------------------------------------
@pytest.mark.parametrize(("cls", "dtype", "expected"), [
    (SumOp, "f32", 0.0), (ProdOp, "f32", 1.0), (ReduceMaxOp, "f32", -np.inf),
    (ReduceMinOp, "bf16", np.inf), (SumOp, "i32", 0),
    (ReduceMaxOp, "i32", np.iinfo(np.int32).min), (ReduceMinOp, "i32", np.iinfo(np.int32).max),
])
def test_empty_reductions_give_identities(cls: type[TensorOp], dtype: str,
                                          expected: float) -> None:
    func = function([t([2, "K"], dtype)], lambda args: [cls.make(args, axes=(1,))])
    (got,) = run_function(func, [np.zeros((2, 0), dtype=DTYPES[dtype].storage)])
    assert got.shape == (2,) and got.dtype == DTYPES[dtype].storage
    assert got.astype(np.float64).tolist() == [float(expected)] * 2


def test_mean_of_nothing_is_nan() -> None:
    func = function([t(["M", "K"], "f32")], lambda args: [MeanOp.make(args, axes=(1,))])
    (got,) = run_function(func, [np.zeros((3, 0), dtype=np.float32)])
    assert got.shape == (3,) and np.all(np.isnan(got))


# ---- size binding -------------------------------------------------------------------------------
def _identity(types: Sequence[TensorType]) -> FuncOp:
    return function(types, lambda args: [(*args,)])


def test_symbol_bound_twice_with_different_values() -> None:
    func = function([t(["M", "M"], "f32")], lambda args: [ExpOp.make(args)])
    with pytest.raises(InterpreterError, match=r"argument #0 dim 1.*'M' is 3.*bound to 2"):
        run_function(func, [np.zeros((2, 3), np.float32)])


def test_symbol_across_parameters_must_agree() -> None:
    func = function([t(["M"], "f32"), t(["M"], "f32")], lambda args: [AddOp.make(args)])
    with pytest.raises(InterpreterError, match=r"argument #1 dim 0.*'M' is 4.*bound to 3"):
        run_function(func, [np.zeros(3, np.float32), np.zeros(4, np.float32)])


def test_constant_dim_mismatch_names_values() -> None:
    func = function([t([3, "N"], "f32")], lambda args: [ExpOp.make(args)])
    with pytest.raises(InterpreterError, match=r"argument #0 dim 0: expected 3 = 3, got 4"):
        run_function(func, [np.zeros((4, 2), np.float32)])


def test_expression_dim_checked_after_binding() -> None:
    func = _identity([t(["M"], "f32"), t(["2*M"], "f32")])
    with pytest.raises(InterpreterError, match=r"argument #1 dim 0: expected 2\*M = 6, got 7"):
        run_function(func, [np.zeros(3, np.float32), np.zeros(7, np.float32)])
    out = run_function(func, [np.zeros(3, np.float32), np.ones(6, np.float32)])
    assert [o.shape for o in out] == [(3,), (6,)]


def test_affine_dim_with_one_unknown_is_solved() -> None:
    # only `2*M + 1` mentions M: binding solves it, and the result type [M] evaluates with M = 3
    func = function([t(["2*M + 1"], "f32")], lambda args: [GenericOp.make(
        args, form="out[d0 < M] = in0[2*d0 + 1]", dtype="f32")])
    (got,) = run_function(func, [np.arange(7, dtype=np.float32)])
    assert got.tolist() == [1.0, 3.0, 5.0]
    with pytest.raises(InterpreterError, match=r"argument #0 dim 0"):
        run_function(func, [np.arange(6, dtype=np.float32)])


def test_rank_and_count_mismatches() -> None:
    func = function([t(["M", "N"], "f32")], lambda args: [ExpOp.make(args)])
    with pytest.raises(InterpreterError, match=r"argument #0: expected rank 2"):
        run_function(func, [np.zeros(3, np.float32)])
    with pytest.raises(InterpreterError, match=r"takes 1 input\(s\), got 2"):
        run_function(func, [np.zeros((1, 1), np.float32)] * 2)


def test_sizes_the_inputs_cannot_bind() -> None:
    func = function([], lambda args: [ConstantOp.make([], value=2.5, shape=["N"], dtype="f32")])
    with pytest.raises(InterpreterError, match=r"'N'"):
        run_function(func, [])
    (got,) = run_function(func, [], sizes={"N": 3})
    assert got.tolist() == [2.5, 2.5, 2.5]


def test_symbolic_reshape_binds_through_products() -> None:
    func = function([t(["M", "N"], "i32")],
                    lambda args: [ReshapeOp.make(args, shape=["N", "M"])])
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    (got,) = run_function(func, [x])
    np.testing.assert_array_equal(got, x.reshape(3, 2))


# ---- programs -----------------------------------------------------------------------------------
def test_multi_result_function() -> None:
    def build(args: Sequence[SSAValue]) -> list[Any]:
        s = AddOp.make(args)
        d = SubOp.make(args)
        return [s, d, (d.results[0], s.results[0], args[0])]

    func = function([t(["N"], "i32")] * 2, build)
    a = np.array([5, 7, -2], dtype=np.int32)
    b = np.array([1, 10, 3], dtype=np.int32)
    diff, total, passed = run_function(func, [a, b])
    assert diff.tolist() == [4, -3, -5]
    assert total.tolist() == [6, 17, 1]
    assert passed.tolist() == a.tolist() and passed.dtype == np.int32


def _softmax_rmsnorm(args: Sequence[SSAValue]) -> list[Any]:
    x, w = args
    mx = ReduceMaxOp.make([x], axes=(1,), keepdims=True)
    shifted = SubOp.make([x, mx.results[0]])
    e = ExpOp.make([shifted.results[0]])
    s = SumOp.make([e.results[0]], axes=(1,), keepdims=True)
    p = DivOp.make([e.results[0], s.results[0]])
    h = MatmulOp.make([p.results[0], w])
    sq = MulOp.make([h.results[0], h.results[0]])
    ms = MeanOp.make([sq.results[0]], axes=(1,), keepdims=True)
    eps = ConstantOp.make([], value=1e-6, shape=[], dtype="f32")
    r = RsqrtOp.make([AddOp.make([ms.results[0], eps.results[0]]).results[0]])
    add = r.operands[0].owner
    y = MulOp.make([h.results[0], r.results[0]])
    return [mx, shifted, e, s, p, h, sq, ms, eps, add, r, y]


def test_program_against_hand_written_numpy() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(5, 6)).astype(np.float32)
    w = rng.normal(size=(6, 4)).astype(np.float32)
    func = function([t(["M", "K"], "f32"), t(["K", "N"], "f32")], _softmax_rmsnorm)
    (got,) = run_function(func, [x, w])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    h = (e / e.sum(axis=1, keepdims=True)) @ w
    want = h / np.sqrt((h * h).mean(axis=1, keepdims=True) + 1e-6)
    assert got.shape == (5, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_run_module_by_name() -> None:
    f = function([t(["N"], "f32")], lambda args: [ExpOp.make(args)], name="f")
    g = function([t(["N"], "f32")], lambda args: [MulOp.make([args[0], args[0]])], name="g")
    module = ModuleOp([f, g])
    (got,) = run_module(module, "g", [np.array([3.0], np.float32)])
    assert got.tolist() == [9.0]
    with pytest.raises(InterpreterError, match=r"no function 'h'.*f, g"):
        run_module(module, "h", [])


def test_unsupported_op_is_named() -> None:
    block = Block(arg_types=[])
    c = ArithConstantOp(IntegerAttr(1, i32))
    block.add_ops([c, ReturnOp(c.result)])
    func = FuncOp("f", ([], [i32]), Region(block))
    with pytest.raises(InterpreterError, match=r"unsupported op 'arith.constant'"):
        run_function(func, [])


# ---- reads outside an operand -------------------------------------------------------------------
def unverified_generic(form: str, operand: TensorType, result: TensorType) -> FuncOp:
    """A function of one `ax.generic` built without verification (the op verifier rejects the
    stray reads these tests run)."""
    block = Block(arg_types=[operand])
    op = GenericOp.create(operands=[block.args[0]], result_types=[result],
                          properties={"form": StringAttr(form), "dtype": dtype_attr(result.dtype)})
    block.add_ops([op, ReturnOp(op.results[0])])
    return FuncOp("f", ([operand], [result]), Region(block))


@pytest.mark.parametrize("exact", [False, True])
def test_a_read_outside_its_operand_is_an_error_never_a_clamped_value(exact: bool) -> None:
    func = unverified_generic("out[d0 < M] = in0[d0, d0 + 5]", t([4, 3], "f32"), t(["M"], "f32"))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    with pytest.raises(InterpreterError, match=re.escape(
            "'ax.generic' reads in0[d0, d0 + 5] outside operand #0 of shape (4, 3): at d0 = 0 "
            "the index is (0, 5)")):
        run_function(func, [x], {"M": 4}, exact=exact)


def test_a_stray_read_in_a_reduction_is_named_with_its_point() -> None:
    func = unverified_generic("out[d0 < 2] = add over r0 in [0, 4) of in0[d0, r0]",
                              t([2, 3], "f32"), t([2], "f32"))
    with pytest.raises(InterpreterError, match=re.escape(
            "reads in0[d0, r0] outside operand #0 of shape (2, 3): at d0 = 0, r0 = 3")):
        run_function(func, [np.ones((2, 3), np.float32)])


def test_reads_a_select_discards_may_leave_their_operand() -> None:
    # a concat reads in1 at d0 - 2 everywhere, and uses it only where d0 >= 2; a triangular
    # reduction's bounding box reaches past the operand only outside its domain
    concat = unverified_generic("out[d0 < 5] = select(idx(d0) < 2, in0[d0], in0[d0 - 2] * 10.0)",
                                t([3], "f32"), t([5], "f32"))
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(run_function(concat, [x])[0], [1.0, 2.0, 10.0, 20.0, 30.0])
    tri = unverified_generic("out[d0 < 3] = add over r0 in [d0, d0 + 1) of in0[r0]",
                             t([3], "f32"), t([3], "f32"))
    np.testing.assert_array_equal(run_function(tri, [x])[0], x)
    used = unverified_generic("out[d0 < 5] = select(idx(d0) < 3, in0[d0], in0[d0 - 1])",
                              t([3], "f32"), t([5], "f32"))
    with pytest.raises(InterpreterError,
                       match=r"reads in0\[d0 - 1\] .* at d0 = 4 the index is \(3,\)"):
        run_function(used, [x])
