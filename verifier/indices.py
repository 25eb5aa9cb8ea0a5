"""Range-aware simplification of integer index expressions.

Reshapes produce reads such as `x[(d0*N + d1) floordiv N, (d0*N + d1) mod N]`; z3 handles them only
through nonlinear integer arithmetic. When the loop variables' ranges show that the remainder part
lies in [0, n), `(q*n + r) floordiv n = q` and `(q*n + r) mod n = r` are exact, so we rewrite them
before encoding. Sizes are >= 1; a loop variable's range comes from its loop.
"""

from __future__ import annotations

from collections.abc import Mapping

from axon.dialects.form.intexpr import Atom, IntExpr
from axon.verifier.terms import is_loop_var, nonneg

Ranges = Mapping[str, tuple[IntExpr, IntExpr]]  # var -> [lo, hi)


def simplify(e: IntExpr, ranges: Ranges) -> IntExpr:
    """Rewrite floordiv/mod atoms whose remainder is provably in range; bottom-up."""
    out = IntExpr.const(0)
    for mono, c in e.terms:
        term = IntExpr.const(c)
        for a in mono:
            term = term * _atom(a, ranges)
        out = out + term
    return out


def _atom(a: Atom, ranges: Ranges) -> IntExpr:
    if a.kind == "sym":
        return IntExpr.sym(a.name)
    x, n = (simplify(arg, ranges) for arg in a.args)
    if a.kind in ("floordiv", "mod") and len(n.terms) == 1 and n.terms[0][1] > 0:
        split = _split(x, n)
        if split is not None:
            q, r = split
            if _in_range(r, n, ranges):
                return q if a.kind == "floordiv" else r
    return getattr(x, a.kind)(n)


def _split(x: IntExpr, n: IntExpr) -> tuple[IntExpr, IntExpr] | None:
    """x = q*n + r where q collects the terms divisible by the monomial n."""
    (nmono, ncoeff), = n.terms
    q, r = IntExpr.const(0), IntExpr.const(0)
    for mono, c in x.terms:
        rest = list(mono)
        ok = c % ncoeff == 0
        for atom in nmono:
            if ok and atom in rest:
                rest.remove(atom)
            else:
                ok = False
        if ok:
            q = q + IntExpr(((tuple(rest), c // ncoeff),))
        else:
            r = r + IntExpr(((mono, c),))
    return q, r


def _in_range(r: IntExpr, n: IntExpr, ranges: Ranges) -> bool:
    """0 <= r <= n - 1, by bounding each term with its variables' ranges."""
    lower, upper = IntExpr.const(0), IntExpr.const(0)
    for mono, c in r.terms:
        if c < 0:
            return False
        lo_t, hi_t = IntExpr.const(c), IntExpr.const(c)
        for a in mono:
            if a.kind != "sym":
                return False
            if is_loop_var(a.name):
                if a.name not in ranges:
                    return False
                lo, hi = ranges[a.name]
                if not nonneg(lo):
                    return False
                lo_t, hi_t = lo_t * lo, hi_t * (hi - 1)
            else:
                lo_t, hi_t = lo_t * IntExpr.sym(a.name), hi_t * IntExpr.sym(a.name)
        lower, upper = lower + lo_t, upper + hi_t
    return nonneg(lower) and nonneg(n - 1 - upper)
