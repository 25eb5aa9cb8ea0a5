"""Range-aware simplification of integer index expressions.

Reshapes produce reads such as `x[(d0*N + d1) floordiv N, (d0*N + d1) mod N]`; z3 handles them only
through nonlinear integer arithmetic. When the loop variables' ranges show that the remainder part
lies in [0, n), `(q*n + r) floordiv n = q` and `(q*n + r) mod n = r` are exact, so we rewrite them
before encoding. Sizes are >= 1; a loop variable's range comes from its loop.

The same ranges decide integer comparisons (`decide`): a concat reads `select(d1 < N, ...)`, and
under a slice that keeps columns [0, N) (or [N, N + P)) the condition is constant, so only one
branch is left to compare.
"""

from __future__ import annotations

from collections.abc import Mapping

from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.ranges import index_bounds, simplify_index
from axon.verifier import terms as T
from axon.verifier.terms import is_loop_var, nonneg

Ranges = Mapping[str, tuple[IntExpr, IntExpr]]  # var -> [lo, hi)


def simplify(e: IntExpr, ranges: Ranges) -> IntExpr:
    """Rewrite floordiv/mod atoms whose remainder is provably in range, bottom-up; then put
    split indices back together (`recombine`). Chains of them (composed reshapes) go on to the
    form level's rules (`axon.dialects.form.ranges`: divisors taken a factor at a time, bounds
    of nested atoms), loop variables out of `ranges` left opaque."""
    out = recombine(e.fold(IntExpr.const, IntExpr.sym,
                           lambda kind, x, n: _atom(kind, x, n, ranges)))
    if any(a.kind in ("floordiv", "mod") for mono, _ in out.terms for a in mono):
        out = recombine(simplify_index(out, ranges, opaque=is_loop_var))
    return out


def recombine(e: IntExpr) -> IntExpr:
    """`c*n*(x floordiv n) + c*(x mod n)` is `c*x` for n >= 1 (the definition of floor division
    and its remainder; n is a size or a positive constant here). A tiled kernel's index is
    split into a program's tile and the place in it (`i = o floordiv BM`, `t = o mod BM`); its
    load at `i*BM + t` reads `o`."""
    changed = True
    while changed:
        changed = False
        terms = dict(e.terms)
        for mono, c in e.terms:
            if len(mono) != 1 or mono[0].kind != "mod":
                continue
            x, n = mono[0].args
            if not nonneg(n - 1):  # a divisor that may be 0 has no quotient to put back
                continue
            whole = n * x.floordiv(n)
            if len(whole.terms) != 1:
                continue
            (wmono, wcoeff), = whole.terms
            if terms.get(wmono) == c * wcoeff:
                e = e - IntExpr(((mono, c),)) - IntExpr(((wmono, c * wcoeff),)) + x * c
                changed = True
                break
    return e


def _atom(kind: str, x: IntExpr, n: IntExpr, ranges: Ranges) -> IntExpr:
    """`x kind n` with both already simplified; exact when the remainder is in range."""
    if kind in ("floordiv", "mod") and len(n.terms) == 1 and n.terms[0][1] > 0:
        split = _split(x, n)
        if split is not None:
            q, r = split
            if _in_range(r, n, ranges):
                return q if kind == "floordiv" else r
    if kind in ("min", "max") and (_at_least(x, n) or _at_least(n, x)):
        low, high = (n, x) if _at_least(x, n) else (x, n)
        return low if kind == "min" else high
    return getattr(x, kind)(n)


def _at_least(a: IntExpr, b: IntExpr) -> bool:
    """a >= b where sizes >= 1 show it, each `c*B*(X floordiv B)` of a (c > 0, B >= 1) taken at
    its least, `c*(X - B + 1)`: the blocks of a loop over ceildiv(N, B) reach past N, so
    `min(ceildiv(N, B)*B, N)` is N (a prefix invariant at the loop's end)."""
    low = IntExpr.const(0)
    for mono, c in a.terms:
        term = IntExpr(((mono, c),))
        for atom in mono:
            if c <= 0 or atom.kind != "floordiv":
                continue
            whole, block = atom.args
            rest = list(mono)
            rest.remove(atom)
            if len(block.terms) == 1 and block.terms[0] == (tuple(rest), 1) and nonneg(block - 1):
                term = (whole - block + 1) * c
                break
            if not rest and block.is_const and block.value >= 1 and c % block.value == 0:
                term = (whole - block + 1) * (c // block.value)
                break
        low = low + term
    return nonneg(low - b)


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


def bounds(e: IntExpr, ranges: Ranges) -> tuple[IntExpr, IntExpr] | None:
    """Symbolic (lower, upper) with lower <= e <= upper wherever every loop variable of e lies in
    its range; None unless e is affine in loop variables (c * v terms, the rest free of them).

    Each `c * v` is bounded by v's range ends (lo and hi - 1, by the sign of c); the terms free of
    loop variables stand for themselves. The bounds may mention outer loop variables (triangular
    ranges); `nonneg` only counts output indices as nonnegative there.
    """
    lower, upper = IntExpr.const(0), IntExpr.const(0)
    for mono, c in e.terms:
        term = IntExpr(((mono, c),))
        if not T.loop_vars(term):
            lower, upper = lower + term, upper + term
            continue
        if len(mono) != 1 or mono[0].kind != "sym" or mono[0].name not in ranges:
            return None
        lo, hi = ranges[mono[0].name]
        small, large = lo * c, (hi - 1) * c
        if c < 0:
            small, large = large, small
        lower, upper = lower + small, upper + large
    return lower, upper


def decide(b: T.Bool, ranges: Ranges) -> T.Bool:
    """An integer comparison `e <= 0` / `e == 0` made constant when the loop ranges settle it.

    Sound only where the ranges hold, which is wherever the term is evaluated: an output index
    within its extent, a bound variable within its sum's range (an empty range evaluates nothing).
    """
    if b.op != "icmp":
        return b
    op, e = b.args
    assert isinstance(e, IntExpr)
    found = bounds(e, ranges) or index_bounds(e, ranges, opaque=is_loop_var)
    if found is None:
        return b
    lower, upper = found
    positive = nonneg(lower - 1)  # e >= 1
    if op == "le":
        return T.TRUE if nonneg(-upper) else T.FALSE if positive else b
    if op == "eq":
        if positive or nonneg(-upper - 1):  # e >= 1 or e <= -1
            return T.FALSE
        if lower.is_const and upper.is_const and lower.value == upper.value == 0:
            return T.TRUE
    return b
