"""Integer expressions: canonical form, evaluation, parsing and printing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon.dialects.form.intexpr import IntExpr, IntExprSyntaxError, parse_int_expr

M, N, K = IntExpr.sym("M"), IntExpr.sym("N"), IntExpr.sym("K")


def test_polynomials_compare_by_value_not_spelling() -> None:
    assert M * N == N * M
    assert (K + 1) - 1 == K
    assert (M + N) * 2 == 2 * N + M + M
    assert M * (N + 1) - M == M * N


def test_exact_division_and_modulo_fold() -> None:
    assert (2 * M + 4).floordiv(2) == M + 2
    assert (6 * M).mod(3) == IntExpr.const(0)
    assert M.floordiv(M) == IntExpr.const(1)
    assert (M + 1).floordiv(2) != M.floordiv(2)


def test_min_max_fold_constants_and_are_symmetric() -> None:
    assert IntExpr.const(3).min(5) == IntExpr.const(3)
    assert M.max(N) == N.max(M)


def test_symbols_include_those_inside_atoms() -> None:
    assert ((M + K).floordiv(N) * 2).symbols() == {"M", "N", "K"}


def test_affinity() -> None:
    assert (2 * M + K).is_affine_in(["M"])
    assert not (M * M).is_affine_in(["M"])
    assert not M.floordiv(2).is_affine_in(["M"])


def test_substitute_then_evaluate() -> None:
    e = (M * N + K).floordiv(N) - K.mod(3)
    assert e.substitute({"N": 4}).evaluate({"M": 5, "K": 7}) == (5 * 4 + 7) // 4 - 7 % 3
    assert e.substitute({"M": 2, "N": 3, "K": 4}).is_const


def test_unbound_symbol_names_it() -> None:
    with pytest.raises(KeyError, match="'Q'"):
        IntExpr.sym("Q").evaluate({})


@pytest.mark.parametrize("text", ["M +", "(M", "M ** 2", "3 floordiv", "min(M)", "M $ N",
                                  "ceildiv(M)"])
def test_malformed_text_is_reported(text: str) -> None:
    with pytest.raises(IntExprSyntaxError, match="size expression"):
        parse_int_expr(text)


_atoms = st.sampled_from([M, N, K, IntExpr.const(2), IntExpr.const(-3), IntExpr.const(1)])


@st.composite
def _exprs(draw: st.DrawFn, depth: int = 3) -> IntExpr:
    if depth == 0 or draw(st.booleans()):
        return draw(_atoms)
    a, b = draw(_exprs(depth - 1)), draw(_exprs(depth - 1))
    op = draw(st.sampled_from(["add", "sub", "mul", "floordiv", "mod", "min", "max"]))
    if op in ("floordiv", "mod"):
        b = draw(st.sampled_from([M, N, IntExpr.const(2), IntExpr.const(3)]))
    return {"add": a + b, "sub": a - b, "mul": a * b}.get(op) or getattr(a, op)(b)


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.integers(1, 9), st.integers(1, 9), st.integers(1, 9))
def test_print_parse_round_trip_preserves_value(e: IntExpr, m: int, n: int, k: int) -> None:
    env = {"M": m, "N": n, "K": k}
    parsed = parse_int_expr(str(e))
    assert parsed == e
    assert parsed.evaluate(env) == e.evaluate(env)


@settings(max_examples=50, deadline=None)
@given(a=st.integers(0, 50), b=st.integers(1, 9))
def test_ceildiv_reads_as_the_floordiv_it_means(a: int, b: int) -> None:
    # `ceildiv(M, BM)` is how a launch grid is written; it is (M + BM - 1) floordiv BM
    expr = parse_int_expr("ceildiv(M, BM)")
    assert expr == IntExpr.sym("M").ceildiv("BM")
    assert expr.evaluate({"M": a, "BM": b}) == -(-a // b)
    assert parse_int_expr(str(expr)) == expr
