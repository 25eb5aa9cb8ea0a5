"""Index expressions simplified by the ranges of the loop variables they read.

Reshapes read through flat offsets: a reshape of a reshape of `k` reads
`k[((D*L*d1 + D*d3 + r0) floordiv (D*L)) floordiv G, ...]`, and propagation composes such
chains into one generic form. Where the ranges of the loop variables (`d1 < G*HKV`,
`d3 < L`, `r0 < D`) bound the remainder, the chain is the plain index it stands for
(`d1 floordiv G`). Every rule here holds for all integers the ranges admit, with every size
symbol (a symbol that is no loop variable) at least 1:

- `(q*n + r) floordiv n = q + r floordiv n` and `(q*n + r) mod n = r mod n` (always);
- `r floordiv n = 0` and `r mod n = r` when `0 <= r < n`, and `r floordiv n = -1` when
  `-n <= r < 0` (the bounds come from the ranges, `index_bounds`);
- `x floordiv (n1*n2) = (x floordiv n1) floordiv n2` and
  `x mod (n1*n2) = ((x floordiv n1) mod n2)*n1 + x mod n1` for n1, n2 >= 1, used when the
  inner division by n1 comes out exact;
- `min`/`max` of two expressions the bounds order.

`simplify_form` applies them to every index of a generic form, a loop variable ranging over
its loop's bounds, narrowed under a `select` on a comparison of a loop variable (`select(d3 <
1, a, b)` reads `a` with `d3 < 1` and `b` with `d3 >= 1`, a concatenation's two halves); a
variable whose range holds one value is that value. The rewritten form computes the same
values; the verifier still proves whatever uses it. A comparison of indices the ranges settle
is decided (`idx(t1) < idx(N)` with `t1 < N` holds), so a `select` on it is its branch and an
`and` drops it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from itertools import combinations

from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import Atom, IntExpr
from axon.dialects.form.scalar import Call, Index, ScalarExpr

#: loop variable -> its range [lo, hi); every other symbol is a size (>= 1)
Ranges = Mapping[str, tuple[IntExpr, IntExpr]]
#: symbols that are neither sizes nor ranged (None: every symbol out of the ranges is a size)
Opaque = Callable[[str], bool] | None
#: loop variables whose bounds read other loop variables, followed at most this deep
_MAX_NESTING = 8
_ZERO = IntExpr.const(0)


def simplify_index(e: IntExpr, ranges: Ranges, opaque: Opaque = None) -> IntExpr:
    """`e` with its floordiv, mod, min and max atoms rewritten by the rules above, innermost
    first. A symbol neither in `ranges` nor `opaque` is a size (>= 1); an opaque one (a loop
    variable whose range is not known here) is never bounded."""
    if not any(kind != "sym" for kind in _atom_kinds(e)):
        return e
    scope = _Scope(ranges, opaque)
    return e.fold(IntExpr.const, IntExpr.sym, lambda kind, x, n: _atom(kind, x, n, scope))


def simplify_form(form: GenericForm, opaque: Opaque = None) -> GenericForm:
    """`form` with every index expression of its body and finalizer simplified under its loop
    ranges (see the module docstring); the loops themselves are unchanged. `opaque` as for
    `simplify_index` (a tiled kernel's program ids and iterations)."""
    ranges: dict[str, tuple[IntExpr, IntExpr]] = {
        d.name: (d.lower, d.upper) for d in (*form.parallel, *form.reduced)}
    body = _simplify_scalar(form.body, ranges, opaque)
    finalize = (None if form.finalize is None
                else _simplify_scalar(form.finalize, ranges, opaque))
    if body == form.body and finalize == form.finalize:
        return form
    return replace(form, body=body, finalize=finalize)


def index_bounds(e: IntExpr, ranges: Ranges, opaque: Opaque = None
                 ) -> tuple[IntExpr, IntExpr] | None:
    """Symbolic (lower, upper), inclusive, free of loop variables, with lower <= e <= upper
    wherever the loop variables lie in their ranges; None when a part cannot be bounded."""
    return _bounds(e, _Scope(ranges, opaque), 0)


def at_least(a: IntExpr, b: IntExpr) -> bool:
    """a >= b for every value of the sizes (every symbol of a and b is one, each >= 1): a
    sufficient test (each size shifted to `S + 1` with `S >= 0`, then every coefficient of the
    difference is nonnegative)."""
    diff = a - b
    shift = {s: IntExpr.sym(s) + 1 for s in diff.symbols()}
    shifted = diff.substitute(shift) if shift else diff
    for mono, c in shifted.terms:
        if not mono:
            continue
        if c < 0 or not all(_nonneg_atom(atom) for atom in mono):
            return False
    return _constant(shifted) >= 0


# ---- rules -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Scope:
    ranges: Ranges
    opaque: Opaque

    def is_size(self, name: str) -> bool:
        return name not in self.ranges and (self.opaque is None or not self.opaque(name))


_SIZES = _Scope({}, None)


def _atom(kind: str, x: IntExpr, n: IntExpr, scope: _Scope) -> IntExpr:
    if kind in ("floordiv", "mod") and _positive_monomial(n, scope):
        return _divide(kind, x, n, scope)
    if kind in ("min", "max"):
        bx, bn = _bounds(x, scope, 0), _bounds(n, scope, 0)
        if bx is not None and bn is not None:
            if at_least(bn[0], bx[1]):  # x <= n everywhere
                return x if kind == "min" else n
            if at_least(bx[0], bn[1]):
                return n if kind == "min" else x
    return getattr(x, kind)(n)


def _divide(kind: str, x: IntExpr, n: IntExpr, scope: _Scope) -> IntExpr:
    """`x floordiv n` or `x mod n` for a positive monomial n."""
    q, r = split_monomial(x, n)
    small = _remainder_class(r, n, scope)
    if small == 0:
        return q if kind == "floordiv" else r
    if small == -1:
        return q - 1 if kind == "floordiv" else r + n
    for n1, n2 in _factorings(n):
        q1, r1 = split_monomial(r, n1)
        if _remainder_class(r1, n1, scope) != 0:
            continue
        if kind == "floordiv":  # r floordiv (n1*n2) == (r floordiv n1) floordiv n2
            return q + _divide("floordiv", q1, n2, scope)
        return _divide("mod", q1, n2, scope) * n1 + r1
    return q + r.floordiv(n) if kind == "floordiv" else r.mod(n)


def _remainder_class(r: IntExpr, n: IntExpr, scope: _Scope) -> int | None:
    """0 when 0 <= r < n, -1 when -n <= r < 0, None when the bounds do not show either."""
    found = _bounds(r, scope, 0)
    if found is None:
        return None
    low, high = found
    if at_least(low, IntExpr.const(0)) and at_least(n - 1, high):
        return 0
    if at_least(low, -n) and at_least(IntExpr.const(-1), high):
        return -1
    return None


def split_monomial(x: IntExpr, n: IntExpr) -> tuple[IntExpr, IntExpr]:
    """x = q*n + r where q collects the terms of x divisible by the monomial n (the verifier's
    index rules use it too)."""
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


def _factorings(n: IntExpr) -> list[tuple[IntExpr, IntExpr]]:
    """The ways to write the monomial n as n1*n2 with neither factor 1, the larger n1 first
    (size symbols only; a constant coefficient stays with n2)."""
    (mono, coeff), = n.terms
    found = []
    for count in range(len(mono) - 1, 0, -1):
        for chosen in combinations(range(len(mono)), count):
            n1 = IntExpr(((tuple(mono[i] for i in chosen), 1),))
            n2 = IntExpr(((tuple(a for i, a in enumerate(mono) if i not in chosen), coeff),))
            found.append((n1, n2))
    return found


def _positive_monomial(n: IntExpr, scope: _Scope) -> bool:
    """n is `c * S1 * ... * Sk` with c >= 1 and sizes S (each >= 1)."""
    if len(n.terms) != 1:
        return False
    (mono, c), = n.terms
    return c >= 1 and all(a.kind == "sym" and scope.is_size(a.name) for a in mono)


# ---- bounds ------------------------------------------------------------------------------------
def _bounds(e: IntExpr, scope: _Scope, depth: int) -> tuple[IntExpr, IntExpr] | None:
    low, high = IntExpr.const(0), IntExpr.const(0)
    for mono, c in e.terms:
        lo_t, hi_t = IntExpr.const(1), IntExpr.const(1)
        for atom in mono:
            found = _atom_bounds(atom, scope, depth)
            if found is None or not at_least(found[0], IntExpr.const(0)):
                return None  # products are bounded factor by factor only when nonnegative
            lo_t, hi_t = lo_t * found[0], hi_t * found[1]
        if c >= 0:
            low, high = low + lo_t * c, high + hi_t * c
        else:
            low, high = low + hi_t * c, high + lo_t * c
    return low, high


def _atom_bounds(atom: Atom, scope: _Scope, depth: int) -> tuple[IntExpr, IntExpr] | None:
    if atom.kind == "sym":
        if atom.name not in scope.ranges:
            if not scope.is_size(atom.name):
                return None
            return IntExpr.sym(atom.name), IntExpr.sym(atom.name)
        lo, hi = scope.ranges[atom.name]
        if not all(scope.is_size(v) for v in (lo.symbols() | hi.symbols())):
            if depth >= _MAX_NESTING:
                return None
            lo_b, hi_b = _bounds(lo, scope, depth + 1), _bounds(hi - 1, scope, depth + 1)
            if lo_b is None or hi_b is None:
                return None
            return lo_b[0], hi_b[1]
        return lo, hi - 1
    x, n = atom.args
    if atom.kind == "mod" and _positive_monomial(n, scope):
        return IntExpr.const(0), n - 1
    if atom.kind == "floordiv" and _positive_monomial(n, scope):
        found = _bounds(x, scope, depth)
        if found is None:
            return None
        # floor division by a positive divisor is monotone
        return (_divide("floordiv", found[0], n, _SIZES), _divide("floordiv", found[1], n, _SIZES))
    if atom.kind in ("min", "max"):
        bx, bn = _bounds(x, scope, depth), _bounds(n, scope, depth)
        if bx is None or bn is None:
            return None
        if atom.kind == "min":
            return bx[0].min(bn[0]), bx[1].min(bn[1])
        return bx[0].max(bn[0]), bx[1].max(bn[1])
    return None


def _nonneg_atom(atom: Atom) -> bool:
    """An atom of sizes (each >= 1 after the shift, >= 0 before) that is never negative."""
    if atom.kind == "sym":
        return True
    x, n = atom.args
    if atom.kind in ("floordiv", "mod"):
        return at_least(n, IntExpr.const(1)) and (atom.kind == "mod" or at_least(x, _ZERO))
    return at_least(x, _ZERO) and at_least(n, _ZERO)


def _constant(e: IntExpr) -> int:
    return sum(c for mono, c in e.terms if not mono)


def _atom_kinds(e: IntExpr) -> set[str]:
    return {atom.kind for mono, _ in e.terms for atom in mono}


# ---- forms ---------------------------------------------------------------------------------------
def _simplify_scalar(expr: ScalarExpr, ranges: dict[str, tuple[IntExpr, IntExpr]],
                     opaque: Opaque) -> ScalarExpr:
    """Every index of `expr` simplified; a `select` on `idx(v) < idx(e)` (v a loop variable,
    e free of loop variables) narrows v's range in each branch."""
    if isinstance(expr, Call) and expr.fn == "select":
        cond, yes, no = expr.args
        narrowed = _narrow(cond, ranges, opaque)
        cond = _simplify_scalar(cond, ranges, opaque)
        if narrowed is not None:
            inside, outside = narrowed
            return Call("select", (cond, _simplify_scalar(yes, inside, opaque),
                                   _simplify_scalar(no, outside, opaque)))
    fixed = {v: lo for v, (lo, hi) in ranges.items() if (hi - lo) == IntExpr.const(1)}
    node = expr.map_ints(lambda e: simplify_index(
        e.substitute(fixed) if fixed and e.symbols() & fixed.keys() else e, ranges, opaque))
    kids = node.children()
    if not kids:
        return node
    node = node.with_children(tuple(_simplify_scalar(k, ranges, opaque) for k in kids))
    if isinstance(node, Call) and node.fn in ("and", "select"):
        first = _decided(node.args[0], ranges, opaque)
        if node.fn == "select" and first is not None:
            return node.args[1] if first else node.args[2]
        if node.fn == "and":
            second = _decided(node.args[1], ranges, opaque)
            if first is True or second is True:
                return node.args[1] if first is True else node.args[0]
    return node


def _decided(cond: ScalarExpr, ranges: Ranges, opaque: Opaque) -> bool | None:
    """The value of `idx(a) < idx(b)` or `idx(a) <= idx(b)` where the ranges settle it (a
    guard of a read inside the tensor: `idx(t1) < idx(N)` with `t1 < N`), else None."""
    if not (isinstance(cond, Call) and cond.fn in ("lt", "le")):
        return None
    left, right = cond.args
    if not (isinstance(left, Index) and isinstance(right, Index)):
        return None
    found = index_bounds(left.expr - right.expr, ranges, opaque)
    if found is None:
        return None
    low, high = found
    below = IntExpr.const(-1 if cond.fn == "lt" else 0)  # a - b <= below holds the comparison
    if at_least(below, high):
        return True
    if at_least(low, below + 1):
        return False
    return None


def _narrow(cond: ScalarExpr, ranges: dict[str, tuple[IntExpr, IntExpr]], opaque: Opaque
            ) -> tuple[dict[str, tuple[IntExpr, IntExpr]],
                       dict[str, tuple[IntExpr, IntExpr]]] | None:
    """The ranges where `cond` (`idx(v) < idx(e)`) holds and where it does not."""
    if not (isinstance(cond, Call) and cond.fn == "lt"):
        return None
    left, right = cond.args
    if not (isinstance(left, Index) and isinstance(right, Index)):
        return None
    v = left.expr.as_symbol
    bound = right.expr
    if v is None or v not in ranges:
        return None
    lo, hi = ranges[v]
    scope = _Scope(ranges, opaque)
    if not all(scope.is_size(s) for s in (lo.symbols() | hi.symbols() | bound.symbols())):
        return None
    if not (at_least(bound, lo) and at_least(hi, bound)):
        return None  # the cut is not inside the range: leave both branches their whole range
    return {**ranges, v: (lo, bound)}, {**ranges, v: (bound, hi)}
