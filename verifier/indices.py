"""Range-aware simplification of integer index expressions.

Reshapes produce reads such as `x[(d0*N + d1) floordiv N, (d0*N + d1) mod N]`; z3 handles them only
through nonlinear integer arithmetic, so they are rewritten before encoding. For a divisor n >= 1
(a positive monomial of sizes), `(q*n + r) floordiv n = q + r floordiv n` and
`(q*n + r) mod n = r mod n` hold for every integer r; when the loop variables' ranges put r in
[0, n) the quotient is q and the remainder r. A chain of reshapes (flatten, then unflatten into
other dims) and a tile's `i*BM + t` then fall apart into their parts on both sides of a proof
alike. Ranges bound the atoms too (`bounds`): `x mod n` lies in [0, n), `x floordiv n` between
its ends' quotients, so a strided slice's `(o floordiv 2) mod D2` is `o floordiv 2` for o < 2*D2.
Sizes are >= 1; a loop variable's range comes from its loop.

The same ranges decide integer comparisons (`decide`): a concat reads `select(d1 < N, ...)`, and
under a slice that keeps columns [0, N) (or [N, N + P)) the condition is constant, so only one
branch is left to compare. Inside a branch, its conditions may fix an atom to one value (`pin`):
a concat of `[..., 1]` pieces (an interleave) reads each piece at 0.

Integer facts of the query's assumptions (`assuming`) settle more comparisons: where `K mod B
== 0` is assumed, `B*((K + B - 1) floordiv B)` (the blocks of a loop over ceildiv(K, B)) is
`K`, so a block's lanes `B*k + r` (k < ceildiv(K, B), r < B) are < K and a tile's load reads no
pad; an assumed `B <= S` pays for `S - B` in a comparison (a first block read before its loop,
`r < B`, lies below S). Outside `assuming` there are no facts and nothing else is decided.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from axon.dialects.form.intexpr import Atom as IntAtom
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.ranges import split_monomial
from axon.dialects.tile import parse_assumption
from axon.verifier import terms as T
from axon.verifier.terms import is_loop_var, nonneg

Ranges = Mapping[str, tuple[IntExpr, IntExpr]]  # var -> [lo, hi)


def simplify(e: IntExpr, ranges: Ranges) -> IntExpr:
    """Rewrite floordiv/mod atoms whose remainder is provably in range, bottom-up; then put
    split indices back together (`recombine`).

    Memoized on e and the ranges of its own loop variables (all that the rewrite reads: a
    range's ends are taken as they are), since the inliner asks for the same indices often."""
    key = (e, tuple(sorted((v, ranges[v]) for v in T.loop_vars(e) if v in ranges)))
    found = _SIMPLIFIED.get(key)
    if found is None:
        if len(_SIMPLIFIED) >= _SIMPLIFIED_LIMIT:
            _SIMPLIFIED.clear()
        found = _SIMPLIFIED[key] = recombine(
            e.fold(IntExpr.const, IntExpr.sym, lambda kind, x, n: _atom(kind, x, n, ranges)))
    return found


#: memo of `simplify`; bounded, cleared when full
_SIMPLIFIED: dict[tuple[IntExpr, tuple[tuple[str, tuple[IntExpr, IntExpr]], ...]], IntExpr] = {}
_SIMPLIFIED_LIMIT = 100_000


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


def _atom(kind: str, x: IntExpr, n: IntExpr, ranges: Ranges, depth: int = 0) -> IntExpr:
    """`x kind n` with both already simplified. For a divisor n >= 1 (a positive monomial of
    sizes) x is split into `q*n + r` (q the terms divisible by n): `x floordiv n` is
    `q + r floordiv n` and `x mod n` is `r mod n` whatever r is (floor division by a positive
    divisor), and `r floordiv n` is 0 (-1) when the ranges put r in [0, n) ([-n, 0)); else r
    may split by a part of n (`_mixed_radix`)."""
    if kind in ("floordiv", "mod") and is_divisor(n):
        q, r = split_monomial(x, n)
        for whole, shift in ((0, IntExpr.const(0)), (-1, n)):
            if _in_range(r + shift, n, ranges, depth):
                return q + whole if kind == "floordiv" else r + shift
        inner = _mixed_radix(kind, r, n, ranges, depth)
        if inner is None:
            inner = r.floordiv(n) if kind == "floordiv" else r.mod(n)
        return q + inner if kind == "floordiv" else inner
    if kind in ("min", "max") and (_at_least(x, n) or _at_least(n, x)):
        low, high = (n, x) if _at_least(x, n) else (x, n)
        return low if kind == "min" else high
    return getattr(x, kind)(n)


def _mixed_radix(kind: str, r: IntExpr, n: IntExpr, ranges: Ranges, depth: int
                 ) -> IntExpr | None:
    """`r kind n` through a part m of the divisor n = k*m (m a product of some of n's sizes, k
    the rest with n's coefficient): where r = q*m + s with s in [0, m), `r floordiv n` is
    `q floordiv k` and `r mod n` is `(q mod k)*m + s` (with q = a*k + b, 0 <= b < k:
    0 <= b*m + s < k*m = n). A head repeated G times and flattened with the rows below it,
    `(h*L*D + s) floordiv (G*L*D)`, is `h floordiv G`. The largest m that fits is taken."""
    (atoms, coeff), = n.terms
    for size in range(len(atoms), 0, -1):
        for chosen in itertools.combinations(range(len(atoms)), size):
            if size == len(atoms) and coeff == 1:
                continue  # m = n: the plain split, already tried
            m = IntExpr(((tuple(atoms[i] for i in chosen), 1),))
            k = IntExpr(((tuple(a for i, a in enumerate(atoms) if i not in chosen), coeff),))
            q, s = split_monomial(r, m)
            if q == IntExpr.const(0) or not _in_range(s, m, ranges, depth):
                continue
            if kind == "floordiv":
                return _atom("floordiv", q, k, ranges, depth)
            return _atom("mod", q, k, ranges, depth) * m + s
    return None


def is_divisor(n: IntExpr) -> bool:
    """n is one monomial with a positive coefficient and n >= 1 (sizes are >= 1)."""
    return len(n.terms) == 1 and n.terms[0][1] > 0 and nonneg(n - 1)


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


def _in_range(r: IntExpr, n: IntExpr, ranges: Ranges, depth: int = 0) -> bool:
    """0 <= r <= n - 1 where every loop variable lies in its range."""
    found = _bounds(r, ranges, depth)
    return found is not None and nonneg(found[0]) and nonneg(n - 1 - found[1])


#: how many floordiv atoms deep `bounds` looks into an index (each level a reshape's flatten)
BOUNDS_DEPTH = 4


def _bounds(e: IntExpr, ranges: Ranges, depth: int) -> tuple[IntExpr, IntExpr] | None:
    """(lower, upper) with lower <= e <= upper wherever each loop variable lies in its range;
    None where a monomial is not bounded so (see `bounds`)."""
    lower, upper = IntExpr.const(0), IntExpr.const(0)
    for mono, c in e.terms:
        term = IntExpr(((mono, c),))
        if not T.loop_vars(term):
            lower, upper = lower + term, upper + term
            continue
        factors = [_factor_bounds(a, ranges, depth) for a in mono]
        if any(f is None for f in factors):
            return None
        known = [f for f in factors if f is not None]
        if len(known) > 1 and not all(nonneg(lo) for lo, _ in known):
            return None  # a product is bounded by its factors' ends only where they are >= 0
        small, large = IntExpr.const(c), IntExpr.const(c)
        for lo, hi in known:
            small, large = small * lo, large * hi
        if c < 0:
            small, large = large, small
        lower, upper = lower + small, upper + large
    return lower, upper


def _factor_bounds(a: IntAtom, ranges: Ranges, depth: int) -> tuple[IntExpr, IntExpr] | None:
    """The ends of one factor: a size is itself, a loop variable its range; `x mod n` lies in
    [0, n - 1] and `x floordiv n` between its ends' quotients (floor is monotone) for n >= 1."""
    if a.kind == "sym":
        if not is_loop_var(a.name):
            return IntExpr.sym(a.name), IntExpr.sym(a.name)
        if a.name not in ranges:
            return None
        lo, hi = ranges[a.name]
        return lo, hi - 1
    x, n = a.args
    if a.kind not in ("floordiv", "mod") or not is_divisor(n) or depth >= BOUNDS_DEPTH:
        return None
    if a.kind == "mod":
        return IntExpr.const(0), n - 1
    found = _bounds(x, ranges, depth + 1)
    if found is None:
        return None
    lo, hi = found
    return (_atom("floordiv", lo, n, {}, depth + 1), _atom("floordiv", hi, n, {}, depth + 1))


def bounds(e: IntExpr, ranges: Ranges) -> tuple[IntExpr, IntExpr] | None:
    """Symbolic (lower, upper) with lower <= e <= upper wherever every loop variable of e lies in
    its range; None unless each term of e with a loop variable is `c * m`, m a product of
    factors bounded alone (loop variables by their ranges, sizes by themselves, `x mod n` and
    `x floordiv n` for a divisor n >= 1, `BOUNDS_DEPTH` deep), all >= 0 where there are several.

    The terms free of loop variables stand for themselves. The bounds may mention outer loop
    variables (triangular ranges); `nonneg` only counts output indices as nonnegative there.
    """
    return _bounds(e, ranges, 0)


@dataclass(frozen=True)
class Facts:
    """Integer facts of a query's assumptions: `divides` the pairs (K, B) of `K mod B == 0`
    (B a size or a positive constant, so B >= 1), `nonneg` expressions assumed >= 0."""

    divides: frozenset[tuple[IntExpr, IntExpr]] = frozenset()
    nonneg: tuple[IntExpr, ...] = ()


#: the facts of the query under way (`assuming`); none outside one
_facts = Facts()


def facts() -> Facts:
    """The facts of the query under way."""
    return _facts


def facts_of(assumptions: Sequence[str]) -> Facts:
    """The divisibility and order facts among `assumptions` (others are left to z3)."""
    divides, order = set(), []
    for text in assumptions:
        lhs, op, rhs = parse_assumption(text)
        if op == "==" and rhs == IntExpr.const(0) and len(lhs.terms) == 1:
            (mono, coeff), = lhs.terms
            if coeff == 1 and len(mono) == 1 and mono[0].kind == "mod" \
                    and is_divisor(mono[0].args[1]):
                divides.add((mono[0].args[0], mono[0].args[1]))
        elif op in ("<=", "<", ">=", ">"):
            low, high = (lhs, rhs) if op in ("<=", "<") else (rhs, lhs)
            order.append(high - low - (1 if op in ("<", ">") else 0))
    return Facts(frozenset(divides), tuple(order))


@contextmanager
def assuming(assumptions: Sequence[str]) -> Iterator[None]:
    """Decide comparisons under the facts of `assumptions` (module docstring) while inside.
    The normal forms' memos depend on the facts: they are emptied on the way in and out."""
    global _facts
    from axon.verifier import sums  # sums reads the facts too
    previous, _facts = _facts, facts_of(assumptions)
    sums.reset()
    try:
        yield
    finally:
        _facts = previous
        sums.reset()


def divided(e: IntExpr) -> IntExpr:
    """`e` with each `B*((K + B - 1) floordiv B)` (or `B*(K floordiv B)`) of an assumed
    `K mod B == 0` as `K`: the quotient is exact, K/B, for B >= 1."""
    if not _facts.divides:
        return e
    out = IntExpr.const(0)
    for mono, c in e.terms:
        term = IntExpr(((mono, c),))
        for atom in mono:
            found = _exact(atom)
            if found is None:
                continue
            whole, block = found
            rest = list(mono)
            rest.remove(atom)
            name = block.as_symbol
            if name is not None and IntExpr.sym(name).terms[0][0][0] in rest:
                rest.remove(IntExpr.sym(name).terms[0][0][0])
                term = IntExpr(((tuple(rest), c),)) * whole
                break
            if block.is_const and c % block.value == 0:
                term = IntExpr(((tuple(rest), c // block.value),)) * whole
                break
        out = out + term
    return out


def _exact(atom: IntAtom) -> tuple[IntExpr, IntExpr] | None:
    """(K, B) when `atom` is `(K + B - 1) floordiv B` or `K floordiv B` of an assumed
    `K mod B == 0`."""
    if atom.kind != "floordiv":
        return None
    x, block = atom.args
    for whole in (x - block + 1, x):
        if (whole, block) in _facts.divides:
            return whole, block
    return None


def holds_nonneg(e: IntExpr) -> bool:
    """e >= 0 where sizes >= 1 show it, or the facts (`divided`, then one assumed `f >= 0`
    paying for part of e)."""
    if nonneg(e):
        return True
    if not (_facts.divides or _facts.nonneg):
        return False
    e = divided(e)
    return nonneg(e) or any(nonneg(e - f) for f in _facts.nonneg)


def decide(b: T.Bool, ranges: Ranges) -> T.Bool:
    """An integer comparison `e <= 0` / `e == 0` made constant when the loop ranges settle it.

    Sound only where the ranges hold, which is wherever the term is evaluated: an output index
    within its extent, a bound variable within its sum's range (an empty range evaluates nothing).
    """
    if b.op != "icmp":
        return b
    op, e = b.args
    assert isinstance(e, IntExpr)
    found = bounds(e, ranges)
    if found is None:
        return b
    lower, upper = found
    positive = holds_nonneg(lower - 1)  # e >= 1
    if op == "le":
        return T.TRUE if holds_nonneg(-upper) else T.FALSE if positive else b
    if op == "eq":
        if positive or holds_nonneg(-upper - 1):  # e >= 1 or e <= -1
            return T.FALSE
        if lower.is_const and upper.is_const and lower.value == upper.value == 0:
            return T.TRUE
    return b


def pin(index: tuple[IntExpr, ...], facts: list[IntExpr], ranges: Ranges
        ) -> tuple[IntExpr, ...]:
    """`index` where each fact `f <= 0` holds, with every atom the facts pin to one value
    replaced by it.

    A fact `X + R <= 0` (or `-X + R <= 0`), X a loop variable or a floordiv / mod atom of one,
    bounds X from above by -R (from below by R); where that bound meets X's other end from the
    ranges (`bounds`), X has one value. A concat of `[..., 1]` pieces reads piece k at
    `d - k` under `k <= d < k + 1`: the index is 0 there, and the reshape that made the piece
    flattens it away. Sound wherever the facts and the ranges hold: the branch of a select
    whose conditions they are."""
    for fact in facts:
        for mono, c in fact.terms:
            if len(mono) != 1 or c not in (1, -1) or not T.loop_vars(IntExpr(((mono, 1),))):
                continue
            (x,) = mono
            found = _factor_bounds(x, ranges, 0)
            if found is None:
                continue
            rest = fact - IntExpr(((mono, c),))
            low, high = found
            if c == 1 and nonneg(low + rest):  # x <= -rest <= low
                value = low
            elif c == -1 and nonneg(rest - high):  # x >= rest >= high
                value = high
            else:
                continue
            index = tuple(_replaced(i, x, value) for i in index)
    return index


def _replaced(e: IntExpr, x: IntAtom, value: IntExpr) -> IntExpr:
    """e with the atom x replaced by `value` wherever it occurs (inside other atoms too)."""
    target = IntExpr((((x,), 1),))

    def sym(name: str) -> IntExpr:
        return value if x.kind == "sym" and x.name == name else IntExpr.sym(name)

    def apply(kind: str, a: IntExpr, b: IntExpr) -> IntExpr:
        built: IntExpr = getattr(a, kind)(b)
        return value if built == target else built

    return e.fold(IntExpr.const, sym, apply)
