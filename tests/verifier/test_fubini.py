"""Exchanging the order of a triangular double sum (sums.py `_exchange_triangle`), checked by
evaluating the normalized term against the nested loops it came from, at concrete sizes.

Sound means equal at every size and every offset, including empty and partly empty ranges; the
rule is also checked to fire (no prefix sums left) where the count is min/max-free.
"""

from __future__ import annotations

import functools
import itertools
import random
from fractions import Fraction

import pytest

from axon.dialects.form.intexpr import IntExpr
from axon.verifier import terms as T
from axon.verifier.sums import fresh, make_sum

N = IntExpr.sym("N")


@functools.cache
def _values(seed: int) -> dict[int, Fraction]:
    """x[-40..39] drawn under `seed` (made once a seed: the tests only read it)."""
    rng = random.Random(seed)
    return {i: Fraction(rng.randint(-9, 9)) for i in range(-40, 40)}


def evaluate(p: T.Poly, env: dict[str, int], x: dict[int, Fraction]) -> Fraction:
    total = Fraction(0)
    for mono, c in p.terms:
        term = Fraction(c)
        for a, k in mono:
            term *= _atom(a, env, x) ** k
        total += term
    return total


def _atom(a: T.Term, env: dict[str, int], x: dict[int, Fraction]) -> Fraction:
    if isinstance(a, T.Read):
        (i,) = a.index
        return x[i.evaluate(env)]
    if isinstance(a, T.IdxAtom):
        return Fraction(a.expr.evaluate(env))
    if isinstance(a, T.Sum):
        return sum((evaluate(a.body, {**env, a.var: i}, x)
                    for i in range(a.lo.evaluate(env), a.hi.evaluate(env))), Fraction(0))
    if isinstance(a, T.Prefix):
        at = a.at.evaluate(env)
        part = sum((evaluate(a.body, {**env, a.var: i}, x)
                    for i in range(min(at, 0), max(at, 0))), Fraction(0))
        return part if at >= 0 else -part
    if isinstance(a, T.Select):
        return evaluate(a.a if _bool(a.cond, env) else a.b, env, x)
    raise TypeError(a)


def _bool(b: T.Bool, env: dict[str, int]) -> bool:
    assert b.op == "icmp", b
    op, e = b.args
    assert isinstance(e, IntExpr)
    v = e.evaluate(env)
    return v < 0 if op == "lt" else v <= 0 if op == "le" else v == 0


def _has_prefix(p: T.Poly) -> bool:
    for a in p.atoms():
        if isinstance(a, T.Prefix):
            return True
        if isinstance(a, (T.Sum, T.Reduce)) and _has_prefix(a.body):
            return True
        if isinstance(a, T.Select) and (_has_prefix(a.a) or _has_prefix(a.b)):
            return True
    return False


def _bound(n: int, c: int) -> IntExpr:
    return N * n + c


OFFSETS = [(n, c) for n in (0, 1) for c in (-2, 0, 1, 3)]


@pytest.mark.parametrize("moving", ["upper", "lower"])
@pytest.mark.parametrize("shift", [0, 1, -1])
def test_exchange_matches_nested_loops(moving: str, shift: int) -> None:
    """Every combination of outer bounds, fixed inner end and offset (symbolic in N or not)."""
    fired = 0
    for lo_b, hi_b, fixed_b, off in itertools.product(OFFSETS, OFFSETS, OFFSETS, (-1, 0, 1, 2)):
        j, k = fresh(), fresh()
        lo, hi, fixed = _bound(*lo_b), _bound(*hi_b), _bound(*fixed_b)
        moved = IntExpr.sym(j) + off
        ilo, ihi = (fixed, moved) if moving == "upper" else (moved, fixed)
        body = T.atom(T.Read("x", (IntExpr.sym(k) + shift,)))
        term = make_sum(j, lo, hi, make_sum(k, ilo, ihi, body))
        fired += not _has_prefix(term)
        for n_val, seed in itertools.product(range(1, 6), (0, 1)):
            x = _values(seed)
            env = {"N": n_val}
            want = sum((x[kk + shift] for jj in range(lo.evaluate(env), hi.evaluate(env))
                        for kk in range(ilo.evaluate({**env, j: jj}),
                                        ihi.evaluate({**env, j: jj}))), Fraction(0))
            assert evaluate(term, env, x) == want, (str(term), n_val, lo_b, hi_b, fixed_b, off)
    assert fired > len(OFFSETS) ** 3  # the exchange applies in most of these


def test_sum_of_cumsum_exchanges() -> None:
    j, k = fresh(), fresh()
    term = make_sum(j, IntExpr.const(0), N,
                    make_sum(k, IntExpr.const(0), IntExpr.sym(j) + 1,
                             T.atom(T.Read("x", (IntExpr.sym(k),)))))
    assert str(term) == ("idx(N)*sum($b0 in [0, N): x[$b0]) + "
                         "-1*sum($b0 in [0, N): idx($b0)*x[$b0])")


def test_other_factors_of_the_outer_index_block_the_exchange() -> None:
    """sum_j y[j] sum_{k <= j} x[k]: the body depends on j outside the inner sum; not exchanged
    (telescoped into prefix differences, as before)."""
    j, k = fresh(), fresh()
    x_k = T.atom(T.Read("x", (IntExpr.sym(k),)))
    inner = make_sum(k, IntExpr.const(0), IntExpr.sym(j) + 1, x_k)
    term = make_sum(j, IntExpr.const(0), N, T.atom(T.Read("y", (IntExpr.sym(j),))) * inner)
    assert _has_prefix(term)


@pytest.mark.parametrize("block", ["B", "B*C"])
def test_stretches_of_blocks_telescope_to_the_whole_sum(block: str) -> None:
    """A loop split across programs: stretch c sums [c*B, min(c*B + B, K)), and a second kernel
    sums the stretches over c in [0, ceildiv(K, B)): the sum over [0, K)
    (`sums._blocked_prefixes`), for a block that is one size or a product of them."""
    c, r = fresh(), fresh()
    b, k = IntExpr.lift(block), IntExpr.sym("K")
    start = IntExpr.sym(c) * b
    x_r = T.atom(T.Read("x", (IntExpr.sym(r),)))
    stretches = make_sum(c, IntExpr.const(0), (k + b - 1).floordiv(b),
                         make_sum(r, start, (start + b).min(k), x_r))
    assert stretches == make_sum(r, IntExpr.const(0), k, x_r)
    assert not _has_prefix(stretches)


def test_stretches_that_overlap_do_not_telescope() -> None:
    """One element more per stretch: the stretches overlap, and no rule calls them the sum
    over [0, K) (their prefix differences stay, and evaluate to the overlapping sums)."""
    c, r = fresh(), fresh()
    b, k = IntExpr.sym("B"), IntExpr.sym("K")
    start = IntExpr.sym(c) * b
    x_r = T.atom(T.Read("x", (IntExpr.sym(r),)))
    stretches = make_sum(c, IntExpr.const(0), (k + b - 1).floordiv(b),
                         make_sum(r, start, (start + b + 1).min(k), x_r))
    assert stretches != make_sum(r, IntExpr.const(0), k, x_r)
    x = _values(0)
    for b_val, k_val in itertools.product(range(1, 4), range(1, 8)):
        env = {"B": b_val, "K": k_val}
        want = sum((x[rr] for cc in range(-(-k_val // b_val))
                    for rr in range(cc * b_val, min(cc * b_val + b_val + 1, k_val))),
                   Fraction(0))
        assert evaluate(stretches, env, x) == want
