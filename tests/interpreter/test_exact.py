"""The reference interpreter's exact mode: the program's real-arithmetic meaning in float64/int64,
next to the default dtype-faithful mode, which it must leave unchanged."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, BlockArgument

from axon.dialects.ax import AddOp, MatmulOp, TensorType
from axon.frontend.numpy_subset import parse_source
from axon.interpreter import evaluate_form, run_function, run_module, run_op

BF16 = ml_dtypes.bfloat16


def module(source: str) -> ModuleOp:
    return parse_source(source, "<test>")


def function(source: str) -> FuncOp:
    return next(op for op in module(source).walk() if isinstance(op, FuncOp))


def test_cancellation_is_exact_on_the_reals() -> None:
    f = function("def f(x: f32[M]):\n    return (x + 1e8) - 1e8\n")
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    (exact,) = run_function(f, [x], exact=True)
    (faithful,) = run_function(f, [x])
    assert exact.dtype == np.float64 and faithful.dtype == np.float32
    # float64 rounds x + 1e8 to its ulp there, 2^-26: within half of it, 7.5e-9
    np.testing.assert_allclose(exact, x.astype(np.float64), rtol=0, atol=7.5e-9)
    # float32 keeps multiples of 8 near 1e8: every |x| < 4 comes back as 0 or +-8
    assert np.all(np.isin(faithful, [-8.0, 0.0, 8.0]))


def test_bf16_program_differs_from_its_faithful_run() -> None:
    f = function("def f(x: bf16[M, K], w: bf16[K, N], g: bf16[K]):\n"
                 "    return (x * g) @ w\n")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((8, 32)).astype(BF16), rng.standard_normal((32, 6)).astype(BF16)
    g = rng.uniform(0.5, 1.5, 32).astype(BF16)
    (exact,) = run_function(f, [x, w, g], exact=True)
    (faithful,) = run_function(f, [x, w, g])
    assert exact.dtype == np.float64 and faithful.dtype == BF16
    want = (x.astype(np.float64) * g.astype(np.float64)) @ w.astype(np.float64)
    np.testing.assert_allclose(exact, want, rtol=1e-12, atol=1e-12)
    # faithful rounds x * g and the product to bf16; exact rounds neither
    assert not np.array_equal(exact, faithful.astype(np.float64))
    np.testing.assert_allclose(faithful.astype(np.float64), exact, rtol=3e-2, atol=0.2)


def test_default_mode_is_unchanged_by_the_keyword() -> None:
    f = function("def f(x: bf16[M, K], w: bf16[K, N]):\n    return exp(x) @ w - 1.5\n")
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((4, 16)).astype(BF16), rng.standard_normal((16, 3)).astype(BF16)
    (default,) = run_function(f, [x, w])
    (explicit,) = run_function(f, [x, w], exact=False)
    assert default.dtype == explicit.dtype == BF16
    np.testing.assert_array_equal(default.view(np.uint16), explicit.view(np.uint16))
    # one bf16 rounding of the f32 computation per op, as before
    e = np.exp(x.astype(np.float32)).astype(BF16).astype(np.float32)
    want = ((e @ w.astype(np.float32)).astype(BF16).astype(np.float32) - 1.5).astype(BF16)
    np.testing.assert_array_equal(default.view(np.uint16), want.view(np.uint16))


def test_inputs_are_taken_as_given() -> None:
    # exact mode does not round a float64 input to the parameter's bf16
    f = function("def f(x: bf16[M]):\n    return x * 1.0\n")
    x = np.array([1.0 + 2.0 ** -20, 3.0])
    (exact,) = run_function(f, [x], exact=True)
    np.testing.assert_array_equal(exact, x)
    (faithful,) = run_function(f, [x])
    assert float(faithful[0]) == 1.0


def test_f16_constants_and_means_keep_full_precision() -> None:
    f = function("def f(x: f16[M]):\n    return x - mean(x) + 1e-4\n")
    x = np.random.default_rng(3).standard_normal(48).astype(np.float16)
    (exact,) = run_function(f, [x], exact=True)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(exact, x64 - x64.mean() + 1e-4, rtol=1e-13, atol=1e-15)


def test_float_casts_are_the_identity() -> None:
    f = function("def f(x: f32[M]):\n    return x.astype(bf16).astype(f32) * 3.0\n")
    x = np.array([1.0 + 2.0 ** -12, -2.5], np.float32)
    (exact,) = run_function(f, [x], exact=True)
    np.testing.assert_array_equal(exact, x.astype(np.float64) * 3.0)
    (faithful,) = run_function(f, [x])
    assert float(faithful[0]) == 3.0  # bf16 has 8 significant bits


def test_i32_does_not_wrap() -> None:
    f = function("def f(a: i32[M], b: i32[M]):\n    return a * b + a\n")
    a = np.array([70000, -3, 2 ** 30], np.int32)
    b = np.array([70000, 5, 4], np.int32)
    (exact,) = run_function(f, [a, b], exact=True)
    (faithful,) = run_function(f, [a, b])
    assert exact.dtype == np.int64 and faithful.dtype == np.int32
    want = a.astype(np.int64) * b.astype(np.int64) + a.astype(np.int64)
    np.testing.assert_array_equal(exact, want)
    np.testing.assert_array_equal(faithful, want.astype(np.int32))  # wrapped
    assert not np.array_equal(exact, faithful.astype(np.int64))


def test_i1_is_unchanged() -> None:
    f = function("def f(x: f32[M], y: f32[M]):\n    return where(x < y, x, y * 2.0)\n")
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal(32).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    (exact,) = run_function(f, [x, y], exact=True)
    np.testing.assert_array_equal(exact, np.where(x < y, x, y * 2.0).astype(np.float64))
    g = function("def g(x: f32[M], y: f32[M]):\n    return x < y\n")
    (mask,) = run_function(g, [x, y], exact=True)
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask, x < y)


def test_exact_agrees_with_the_naive_float64_evaluator_on_a_generic_form() -> None:
    m = module("def f(x: bf16[M, K]):\n    return cumsum(x, axis=1) / 3.0\n")
    f = next(op for op in m.walk() if isinstance(op, FuncOp))
    x = np.random.default_rng(5).standard_normal((5, 40)).astype(BF16)
    (exact,) = run_module(m, "f", [x], exact=True)
    cumsum = next(iter(f.body.ops))
    naive = evaluate_form(cumsum.generic_form(), [x], {"M": 5, "K": 40})
    np.testing.assert_allclose(exact, naive / 3.0, rtol=1e-12, atol=1e-12)


def test_run_op_in_exact_mode() -> None:
    t = TensorType([2, 2], "bf16")
    big = np.array([[256.0, 1.0], [1.0, 256.0]])
    add = AddOp.make([_value(t), _value(t)])
    got = run_op(add, [big, np.ones((2, 2))], {}, exact=True)
    np.testing.assert_array_equal(got, big + 1.0)  # 257 is not a bf16 value
    faithful = run_op(add, [big.astype(BF16), np.ones((2, 2), BF16)], {})
    assert float(faithful[0, 0]) == 256.0
    mm = MatmulOp.make([_value(t), _value(t)])
    np.testing.assert_array_equal(run_op(mm, [big, big], {}, exact=True), big @ big)


def _value(t: TensorType) -> BlockArgument:
    """A free SSA value of type `t` to build a lone op on."""
    return Block(arg_types=[t]).args[0]
