"""Range-aware index simplification (`axon.dialects.form.ranges`): each rewrite gives the
expression it stands for, and agrees with the original at every in-range point of many sizes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon.dialects.form.intexpr import IntExpr, parse_int_expr
from axon.dialects.form.ranges import at_least, simplify_form, simplify_index
from axon.dialects.form.syntax import parse_form

#: gqa's read of k after propagation composed reshape, broadcast_to and reshape
GQA_FLAT = "D*G*HKV*L*d0 + D*L*d1 + D*d3 + r0"
GQA_K = [
    f"((((({GQA_FLAT}) floordiv (D*G*L)) mod HKV)*D*L + ((({GQA_FLAT}) floordiv D) mod L)*D"
    f" + (({GQA_FLAT}) floordiv (D*G*HKV*L))*D*HKV*L + (({GQA_FLAT}) mod D)) floordiv (D*HKV*L))",
    f"(((((({GQA_FLAT}) floordiv (D*G*L)) mod HKV)*D*L + ((({GQA_FLAT}) floordiv D) mod L)*D"
    f" + (({GQA_FLAT}) floordiv (D*G*HKV*L))*D*HKV*L + (({GQA_FLAT}) mod D)) floordiv (D*L))"
    " mod HKV)",
]
GQA_RANGES = {"d0": "B", "d1": "G*HKV", "d3": "L", "r0": "D"}


def _ranges(upper: dict[str, str]) -> dict[str, tuple[IntExpr, IntExpr]]:
    return {v: (IntExpr.const(0), parse_int_expr(u)) for v, u in upper.items()}


def _agree(original: IntExpr, simplified: IntExpr, upper: dict[str, str],
           sizes: dict[str, int]) -> None:
    """The two expressions are equal at every point of the ranges at `sizes`."""
    names = list(upper)
    extents = [parse_int_expr(upper[v]).evaluate(sizes) for v in names]
    for point in itertools.product(*(range(e) for e in extents)):
        env = {**sizes, **dict(zip(names, point, strict=True))}
        assert original.evaluate(env) == simplified.evaluate(env), (env, original, simplified)


def test_gqa_chain_is_the_kv_head() -> None:
    ranges = _ranges(GQA_RANGES)
    assert simplify_index(parse_int_expr(GQA_K[0]), ranges) == IntExpr.sym("d0")
    assert str(simplify_index(parse_int_expr(GQA_K[1]), ranges)) == "d1 floordiv G"


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 2))
def test_gqa_chain_agrees_everywhere(b: int, g: int, hkv: int, l_: int, d: int) -> None:
    sizes = {"B": b, "G": g, "HKV": hkv, "L": l_, "D": d}
    ranges = _ranges(GQA_RANGES)
    for text in GQA_K:
        e = parse_int_expr(text)
        _agree(e, simplify_index(e, ranges), GQA_RANGES, sizes)


@pytest.mark.parametrize("text, upper, expected", [
    ("(N*d0 + d1) floordiv N", {"d0": "M", "d1": "N"}, "d0"),
    ("(N*d0 + d1) mod N", {"d0": "M", "d1": "N"}, "d1"),
    # the remainder may reach N: only the exact part comes out
    ("(N*d0 + d1 + 1) floordiv N", {"d0": "M", "d1": "N"}, "d0 + (d1 + 1) floordiv N"),
    ("(N*d0 + d1 - 1) floordiv N", {"d0": "M", "d1": "N"}, "d0 + (d1 - 1) floordiv N"),
    ("(d1 - N) floordiv N", {"d1": "N"}, "-1"),
    ("(d1 - N) mod N", {"d1": "N"}, "d1"),
    ("min(d0, M)", {"d0": "M"}, "d0"),
    ("max(d0 + 1, 0)", {"d0": "M"}, "d0 + 1"),
    ("(2*d0 + 1) floordiv 2", {"d0": "M"}, "d0"),
    ("(2*d0 + 1) mod 2", {"d0": "M"}, "1"),
    ("d0 mod N", {"d0": "2*N"}, "d0 mod N"),
])
def test_rules(text: str, upper: dict[str, str], expected: str) -> None:
    e = parse_int_expr(text)
    got = simplify_index(e, _ranges(upper))
    assert got == parse_int_expr(expected)
    for n, m in itertools.product(range(1, 4), repeat=2):
        _agree(e, got, upper, {"N": n, "M": m})


def test_select_narrows_the_concatenated_halves() -> None:
    form = parse_form(
        "out[d0 < T, d1 < H, d2 < D2, d3 < 2] = select((idx(d3) < idx(1)), "
        "in0[(D2*H*d0 + D2*d1 + d2 + d3) floordiv (D2*H), "
        "((D2*H*d0 + D2*d1 + d2 + d3) floordiv D2) mod H, (D2*H*d0 + D2*d1 + d2 + d3) mod D2], "
        "in1[(D2*H*d0 + D2*d1 + d2 + d3 - 1) floordiv (D2*H), "
        "((D2*H*d0 + D2*d1 + d2 + d3 - 1) floordiv D2) mod H, "
        "(D2*H*d0 + D2*d1 + d2 + d3 - 1) mod D2])", 2)
    assert str(simplify_form(form)) == (
        "out[d0 < T, d1 < H, d2 < D2, d3 < 2] = "
        "select((idx(d3) < idx(1)), in0[d0, d1, d2], in1[d0, d1, d2])")


def test_a_form_without_chains_is_kept() -> None:
    form = parse_form("out[d0 < M] = add over r0 in [0, d0 + 1) of in0[r0]", 1)
    assert simplify_form(form) is form


def test_at_least_uses_sizes_at_least_one() -> None:
    n, m = IntExpr.sym("N"), IntExpr.sym("M")
    assert at_least(n * m, n)
    assert at_least(n - 1, IntExpr.const(0))
    assert not at_least(n - 2, IntExpr.const(0))
    assert not at_least(n, n * m + 1)
