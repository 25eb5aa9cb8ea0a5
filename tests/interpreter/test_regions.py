"""The reference interpreter runs regions: `scf.for` loops carrying tensors, `scf.if`, nested
loops and `func.call`.

Programs are MLIR text parsed with the project's context (which registers `arith`, `scf` and
`func` next to `ax`). A loop is checked against the same computation written as straight-line ax
ops and run by the same interpreter, so the comparison isolates what the regions add.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from axon.interpreter import InterpreterError, run_module
from axon.tools.embed import parse_mlir

T32 = "!ax.tensor<[M, N], i32>"
SCALAR32 = "!ax.tensor<[], i32>"


def module(text: str) -> ModuleOp:
    """Parse and verify MLIR text."""
    parsed = parse_mlir(text)
    parsed.verify()
    return parsed


def counted_loop(trips: int, body: str, t: str, init: str = "%x") -> str:
    """A `scf.for` of `trips` iterations carrying `%acc` (starting at `init`) into `%r`; `body`
    computes `%next` from `%acc`, `%x` and the index `%i`."""
    return f"""
  %lb = arith.constant 0 : index
  %ub = arith.constant {trips} : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %one iter_args(%acc = {init}) -> ({t}) {{
    {body}
    scf.yield %next : {t}
  }}"""


def ints(seed: int, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    return np.random.default_rng(seed).integers(-50, 50, size=shape, dtype=np.int32)


# ---- scf.for ------------------------------------------------------------------------------------
@pytest.mark.parametrize("trips", [0, 1, 5])
def test_loop_accumulating_a_tensor_equals_its_closed_form(trips: int) -> None:
    """`acc += x`, `trips` times from zero, is `x * trips` computed straight-line."""
    loop = counted_loop(
        trips, f"%next = ax.add %acc, %x : ({T32}, {T32}) -> {T32}", T32, init="%zero")
    prog = module(f"""
func.func @loop(%x: {T32}) -> {T32} {{
  %zero = ax.constant {{value = 0.0 : f64, shape = ["M", "N"], dtype = i32}} : {T32}
  {loop}
  func.return %r : {T32}
}}
func.func @closed(%x: {T32}) -> {T32} {{
  %n = ax.constant {{value = {trips}.0 : f64, shape = [], dtype = i32}} : {SCALAR32}
  %y = ax.mul %x, %n : ({T32}, {SCALAR32}) -> {T32}
  func.return %y : {T32}
}}""")
    x = ints(0)
    (looped,) = run_module(prog, "loop", [x])
    (closed,) = run_module(prog, "closed", [x])
    assert looped.dtype == np.int32
    np.testing.assert_array_equal(looped, closed)
    np.testing.assert_array_equal(looped, x * trips)


def _horner(dtype: str, trips: int) -> ModuleOp:
    """@loop: `acc = acc * x + x` for `trips` iterations from `x`; @unrolled: the same ops
    written out straight-line."""
    t = f"!ax.tensor<[N], {dtype}>"
    lines, prev = [], "%x"
    for k in range(trips):
        lines += [f"%p{k} = ax.mul {prev}, %x : ({t}, {t}) -> {t}",
                  f"%a{k} = ax.add %p{k}, %x : ({t}, {t}) -> {t}"]
        prev = f"%a{k}"
    unrolled = "\n  ".join(lines)
    loop = counted_loop(trips, f"""%p = ax.mul %acc, %x : ({t}, {t}) -> {t}
    %next = ax.add %p, %x : ({t}, {t}) -> {t}""", t)
    return module(f"""
func.func @loop(%x: {t}) -> {t} {{
  {loop}
  func.return %r : {t}
}}
func.func @unrolled(%x: {t}) -> {t} {{
  {unrolled}
  func.return {prev} : {t}
}}""")


def test_loop_rounds_every_op_of_every_iteration() -> None:
    """In bf16 the loop equals its unrolled form bit for bit: each op inside the body rounds once,
    as in straight-line code, and differs from the same recurrence carried in f32."""
    prog = _horner("bf16", 4)
    x = np.random.default_rng(1).uniform(0.5, 1.5, size=64).astype(ml_dtypes.bfloat16)
    (looped,) = run_module(prog, "loop", [x])
    (unrolled,) = run_module(prog, "unrolled", [x])
    assert looped.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(looped.astype(np.float32), unrolled.astype(np.float32))
    acc = x32 = x.astype(np.float32)
    for _ in range(4):
        acc = acc * x32 + x32
    assert np.any(looped.astype(np.float32) != acc.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_loop_in_exact_arithmetic() -> None:
    """`exact=True` reaches the ops inside a loop: float64 throughout, equal to numpy's float64."""
    prog = _horner("bf16", 3)
    x = np.random.default_rng(2).uniform(0.5, 1.5, size=16)
    (looped,) = run_module(prog, "loop", [x], exact=True)
    (unrolled,) = run_module(prog, "unrolled", [x], exact=True)
    assert looped.dtype == np.float64
    acc = x
    for _ in range(3):
        acc = acc * x + x
    np.testing.assert_array_equal(looped, unrolled)
    np.testing.assert_array_equal(looped, acc)


def test_nested_loops_with_a_triangular_inner_bound() -> None:
    """for i < 4: for j < i: acc += x, i.e. 0 + 1 + 2 + 3 = 6 additions: `x * 6`."""
    prog = module(f"""
func.func @nested(%x: {T32}) -> {T32} {{
  %zero = ax.constant {{value = 0.0 : f64, shape = ["M", "N"], dtype = i32}} : {T32}
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %one = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %one iter_args(%outer = %zero) -> ({T32}) {{
    %s = scf.for %j = %lb to %i step %one iter_args(%inner = %outer) -> ({T32}) {{
      %y = ax.add %inner, %x : ({T32}, {T32}) -> {T32}
      scf.yield %y : {T32}
    }}
    scf.yield %s : {T32}
  }}
  func.return %r : {T32}
}}""")
    x = ints(3)
    (got,) = run_module(prog, "nested", [x])
    np.testing.assert_array_equal(got, x * 6)


# ---- scf.if -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cond", "want"), [("true", np.exp), ("false", np.negative)])
def test_if_runs_the_branch_its_condition_picks(cond: str, want: np.ufunc) -> None:
    t = "!ax.tensor<[N], f32>"
    prog = module(f"""
func.func @pick(%x: {t}) -> {t} {{
  %c = arith.constant {cond}
  %r = scf.if %c -> ({t}) {{
    %e = ax.exp %x : ({t}) -> {t}
    scf.yield %e : {t}
  }} else {{
    %n = ax.neg %x : ({t}) -> {t}
    scf.yield %n : {t}
  }}
  func.return %r : {t}
}}""")
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    (got,) = run_module(prog, "pick", [x])
    np.testing.assert_array_equal(got, want(x))


def test_if_on_the_loop_index() -> None:
    """Even iterations add x, odd ones double: x -> 2x -> 4x -> 5x -> 10x."""
    body = f"""%two = arith.constant 2 : index
    %zero_i = arith.constant 0 : index
    %rem = arith.remsi %i, %two : index
    %even = arith.cmpi eq, %rem, %zero_i : index
    %next = scf.if %even -> ({T32}) {{
      %y = ax.add %acc, %x : ({T32}, {T32}) -> {T32}
      scf.yield %y : {T32}
    }} else {{
      %y = ax.add %acc, %acc : ({T32}, {T32}) -> {T32}
      scf.yield %y : {T32}
    }}"""
    prog = module(f"""
func.func @alternate(%x: {T32}) -> {T32} {{
  {counted_loop(4, body, T32)}
  func.return %r : {T32}
}}""")
    x = ints(4)
    (got,) = run_module(prog, "alternate", [x])
    np.testing.assert_array_equal(got, x * 10)


# ---- func.call ----------------------------------------------------------------------------------
CALLS = f"""
func.func @axpy(%a: {T32}, %b: {T32}) -> {T32} {{
  %two = ax.constant {{value = 2.0 : f64, shape = ["M", "N"], dtype = i32}} : {T32}
  %p = ax.mul %a, %two : ({T32}, {T32}) -> {T32}
  %s = ax.add %p, %b : ({T32}, {T32}) -> {T32}
  func.return %s : {T32}
}}
func.func @twice(%x: {T32}, %y: {T32}) -> ({T32}, {T32}) {{
  %u = func.call @axpy(%x, %y) : ({T32}, {T32}) -> {T32}
  %v = func.call @axpy(%u, %x) : ({T32}, {T32}) -> {T32}
  func.return %u, %v : {T32}, {T32}
}}
func.func @looped(%x: {T32}) -> {T32} {{
  {counted_loop(3, f"%next = func.call @axpy(%acc, %x) : ({T32}, {T32}) -> {T32}", T32)}
  func.return %r : {T32}
}}"""


def test_call_runs_the_callee_with_the_caller_sizes() -> None:
    """The callee's `ax.constant` of shape [M, N] takes M and N from the run's bindings."""
    x, y = ints(5), ints(6)
    u, v = run_module(module(CALLS), "twice", [x, y])
    np.testing.assert_array_equal(u, 2 * x + y)
    np.testing.assert_array_equal(v, 2 * (2 * x + y) + x)


def test_call_inside_a_loop() -> None:
    """acc = 2 * acc + x three times from x: 3x, 7x, 15x."""
    x = ints(7, (2, 5))
    (got,) = run_module(module(CALLS), "looped", [x])
    np.testing.assert_array_equal(got, 15 * x)


# ---- errors -------------------------------------------------------------------------------------
def test_error_inside_a_loop_body_names_the_op() -> None:
    """A size only the loop body uses, left unbound, fails at the op that needs it."""
    t, k, s = "!ax.tensor<[N], f32>", "!ax.tensor<[K], f32>", "!ax.tensor<[], f32>"
    body = f"""%k = ax.constant {{value = 1.0 : f64, shape = ["K"], dtype = f32}} : {k}
    %s = ax.sum %k {{axes = array<i64: 0>, keepdims = false}} : ({k}) -> {s}
    %next = ax.add %acc, %s : ({t}, {s}) -> {t}"""
    prog = module(f"""
func.func @f(%x: {t}) -> {t} {{
  {counted_loop(2, body, t)}
  func.return %r : {t}
}}""")
    x = np.ones(3, np.float32)
    with pytest.raises(InterpreterError, match=r"'ax\.constant'.*'K'"):
        run_module(prog, "f", [x])
    (got,) = run_module(prog, "f", [x], sizes={"K": 4})
    np.testing.assert_array_equal(got, x + 8)


def test_float_scalar_in_a_loop_is_unsupported() -> None:
    """Only index and i1 scalars run; data is tensors."""
    t = "!ax.tensor<[N], f32>"
    body = "%f = arith.constant 1.5 : f32\n    %next = ax.neg %acc : (" + t + ") -> " + t
    prog = module(f"""
func.func @f(%x: {t}) -> {t} {{
  {counted_loop(2, body, t)}
  func.return %r : {t}
}}""")
    with pytest.raises(InterpreterError, match=r"unsupported op 'arith.constant' of type f32"):
        run_module(prog, "f", [np.ones(3, np.float32)])


def test_call_of_a_missing_function() -> None:
    """An unknown callee is an InterpreterError (xDSL's own complaint, passed on)."""
    prog = module(CALLS)
    looped = next(op for op in prog.ops if op.sym_name.data == "looped")  # type: ignore[attr-defined]
    prog.body.block.detach_op(looped)
    with pytest.raises(InterpreterError, match=r"axpy"):
        run_module(ModuleOp([looped]), "looped", [ints(8)])
