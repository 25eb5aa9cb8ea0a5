"""The verifier's term language: canonical polynomials over atoms.

A real-valued term is a `Poly`: a sum of rational multiples of monomials, each monomial a sorted
product of atoms with integer powers (negative powers only for atoms known to be nonzero: `exp`
atoms and size symbols, which are >= 1). Atoms are tensor reads, integer expressions used as
numbers, uninterpreted scalar functions, selects, sums, prefix sums and other reductions.

Every constructor returns a canonical form, so two terms that normalize alike print alike; the z3
encoder (`encode.py`) maps equal texts to equal z3 terms. All rewrites here are sound identities of
real arithmetic (with exp > 0 and sizes >= 1): distribution, exp(a + b) = exp(a) * exp(b),
exp(-a) = 1 / exp(a), log(exp(a)) = a, log(c * prod a_i^k) = log(c) + sum k log(a_i) for c > 0
and factors known positive, trunc(n) = n for integers n, linearity of sums, reordering of
independent finite sums, shifting a bound variable, and splitting a sum whose bounds move with
an outer index into prefix differences (the telescoping that tiling and blocked cumsum need).
Sums are built in `sums.py`.

Variable naming: size symbols are the program's names, which are identifiers (checked where a
program enters the verifier, `inline.check_size_name`); the verifier's own loop variables start
with `$` (`$o0_1` output index, `$t3` fresh, `$b2` canonical bound), a character no identifier has,
so the two namespaces are disjoint by construction and a size can never capture a loop variable.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from axon.dialects.form.intexpr import Atom as IntAtom
from axon.dialects.form.intexpr import IntExpr
from axon.verifier.budget import (
    MAX_MONOMIALS,
    MAX_TERM_CHARS,
    Unsupported,
    check_coefficient,
    check_size,
    tick,
)

#: the first character of every verifier-internal variable; never part of an identifier
INTERNAL = "$"
#: the prefix of output-index variables (nonnegative, unlike shifted bound variables)
OUTPUT_INDEX = INTERNAL + "o"


def is_loop_var(name: str) -> bool:
    """Loop variables are the verifier's own names; everything else is a size symbol."""
    return name.startswith(INTERNAL)


def loop_vars(expr: IntExpr) -> frozenset[str]:
    return frozenset(s for s in expr.symbols() if is_loop_var(s))


# ---- atoms ---------------------------------------------------------------------------------------
class Term:
    """Base of atoms and boolean terms: a cached canonical text and free loop variables."""

    key: str
    free: frozenset[str]

    def __str__(self) -> str:
        return self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Term) and type(other) is type(self) and other.key == self.key

    def __lt__(self, other: Term) -> bool:
        return self.key < other.key


def _init(obj: Term, key: str, free: Iterable[str]) -> None:
    check_size(len(key), MAX_TERM_CHARS, "characters")
    object.__setattr__(obj, "key", key)
    object.__setattr__(obj, "free", frozenset(free))


@dataclass(frozen=True, eq=False)
class Read(Term):
    """Tensor `tensor` (a function parameter, by position) read at integer indices."""

    tensor: str
    index: tuple[IntExpr, ...]
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _init(self, f"{self.tensor}[{', '.join(str(i) for i in self.index)}]",
              (v for i in self.index for v in loop_vars(i)))


@dataclass(frozen=True, eq=False)
class IdxAtom(Term):
    """One atom of an integer expression (a symbol, floordiv, mod, min, max) used as a real."""

    atom: IntAtom
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        expr = IntExpr((((self.atom,), 1),))
        _init(self, f"idx({expr})", loop_vars(expr))

    @property
    def expr(self) -> IntExpr:
        return IntExpr((((self.atom,), 1),))


@dataclass(frozen=True, eq=False)
class Fn(Term):
    """An uninterpreted or exactly encoded scalar function of polys (exp, log, inv, max, ...)."""

    fn: str
    args: tuple[Poly, ...]
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _init(self, f"{self.fn}({', '.join(str(a) for a in self.args)})",
              (v for a in self.args for v in a.free))


@dataclass(frozen=True, eq=False)
class Select(Term):
    """`cond ? a : b`."""

    cond: Bool
    a: Poly
    b: Poly
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _init(self, f"sel({self.cond}, {self.a}, {self.b})",
              self.cond.free | self.a.free | self.b.free)


@dataclass(frozen=True, eq=False)
class Sum(Term):
    """sum over `var` in [lo, hi) of `body` (a monomial with coefficient 1, mentioning var)."""

    var: str
    lo: IntExpr
    hi: IntExpr
    body: Poly
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _init(self, f"sum({self.var} in [{self.lo}, {self.hi}): {self.body})",
              ((self.body.free - {self.var}) | loop_vars(self.lo) | loop_vars(self.hi)))

    @property
    def body_key(self) -> str:
        return f"{self.var}: {self.body}"


@dataclass(frozen=True, eq=False)
class Prefix(Term):
    """sum over `var` in [0, at) of `body` (negated sum over [at, 0) when at < 0).

    Appears when a sum whose bounds move with an outer index is split into prefix differences;
    it shares its z3 function with every `Sum` of the same body.
    """

    var: str
    body: Poly
    at: IntExpr
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _init(self, f"pre({self.var}: {self.body})({self.at})",
              (self.body.free - {self.var}) | loop_vars(self.at))

    @property
    def body_key(self) -> str:
        return f"{self.var}: {self.body}"


@dataclass(frozen=True, eq=False)
class Reduce(Term):
    """max / min / mul over `var` in [lo, hi) of `body`: uninterpreted per canonical body."""

    kind: str
    var: str
    lo: IntExpr
    hi: IntExpr
    body: Poly
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _init(self, f"{self.kind}({self.var} in [{self.lo}, {self.hi}): {self.body})",
              ((self.body.free - {self.var}) | loop_vars(self.lo) | loop_vars(self.hi)))


# ---- boolean terms -------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Bool(Term):
    """A boolean: `const`, `cmp` (lt/le/eq of a poly against 0), `icmp` (lt/le/eq of an integer
    expression against 0), `and`/`or`/`not`, or `read` of an i1 tensor."""

    op: str
    args: tuple[object, ...]
    key: str = field(init=False, repr=False)
    free: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        free: set[str] = set()
        for a in self.args:
            if isinstance(a, (Term, Poly)):
                free |= a.free
            elif isinstance(a, IntExpr):
                free |= loop_vars(a)
            elif isinstance(a, tuple):
                free |= {v for i in a if isinstance(i, IntExpr) for v in loop_vars(i)}
        text = ", ".join(
            (f"[{', '.join(str(i) for i in a)}]" if isinstance(a, tuple) else str(a))
            for a in self.args)
        _init(self, f"{self.op}({text})", free)


# ---- structure -----------------------------------------------------------------------------------
# Terms are DAGs: a chain of statements shares each step's term among the later ones, and its
# nesting grows with the program. Traversals go through these two functions with explicit stacks
# and memos on terms (never by recursion on the nesting), so their cost is linear in the number of
# distinct terms, not in the size of the tree they unfold to.
def subterms(t: Term) -> list[Term]:
    """The terms directly inside `t`: its boolean parts (a select's condition, the operands of
    and / or / not) and the atoms of the polynomials it holds (function arguments, compared
    differences, select branches, a reduction's body)."""
    polys: list[Poly] = []
    bools: list[Bool] = []
    if isinstance(t, Fn):
        polys.extend(t.args)
    elif isinstance(t, Select):
        bools.append(t.cond)
        polys.extend((t.a, t.b))
    elif isinstance(t, (Sum, Prefix, Reduce)):
        polys.append(t.body)
    elif isinstance(t, Bool):
        for x in t.args:
            if isinstance(x, Poly):
                polys.append(x)
            elif isinstance(x, Bool):
                bools.append(x)
    return [*bools, *(a for p in polys for mono, _ in p.terms for a, _ in mono)]


def int_parts(t: Term) -> list[IntExpr]:
    """The integer expressions `t` holds itself (not those of its subterms): a read's indices,
    an integer atom, a reduction's bounds, a prefix's point, an integer comparison."""
    if isinstance(t, Read):
        return list(t.index)
    if isinstance(t, IdxAtom):
        return [t.expr]
    if isinstance(t, (Sum, Reduce)):
        return [t.lo, t.hi]
    if isinstance(t, Prefix):
        return [t.at]
    if isinstance(t, Bool):
        out: list[IntExpr] = []
        for x in t.args:
            if isinstance(x, IntExpr):
                out.append(x)
            elif isinstance(x, tuple):
                out.extend(i for i in x if isinstance(i, IntExpr))
        return out
    return []


# ---- polynomials ---------------------------------------------------------------------------------
Monomial = tuple[tuple[Term, int], ...]


@dataclass(frozen=True)
class Poly:
    """sum of coeff * monomial, sorted by monomial text; the empty monomial is the constant."""

    terms: tuple[tuple[Monomial, Fraction], ...]

    @property
    def free(self) -> frozenset[str]:
        out: set[str] = set()
        for mono, _ in self.terms:
            for atom, _ in mono:
                out |= atom.free
        return frozenset(out)

    @property
    def is_const(self) -> bool:
        return all(not m for m, _ in self.terms)

    @property
    def const_value(self) -> Fraction:
        return sum((c for m, c in self.terms if not m), Fraction(0))

    def atoms(self) -> set[Term]:
        return {a for m, _ in self.terms for a, _ in m}

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for mono, c in self.terms:
            body = "*".join(a.key if p == 1 else f"{a.key}^{p}" for a, p in mono)
            parts.append(str(c) if not mono else body if c == 1 else f"{c}*{body}")
        return " + ".join(parts)

    def __add__(self, other: Poly) -> Poly:
        tick()
        big, small = (self, other) if len(self.terms) >= len(other.terms) else (other, self)
        if len(small.terms) <= _FEW_TERMS:
            return big._insert(small)
        acc = dict(self.terms)
        for m, c in other.terms:
            acc[m] = total = acc.get(m, Fraction(0)) + c
            check_coefficient(total)
        return _poly(acc)

    def _insert(self, few: Poly) -> Poly:
        """self + few for a short `few`, its monomials placed into self's sorted ones by binary
        search (a sum of n terms built one term at a time is then not n full re-sorts)."""
        terms = list(self.terms)
        for m, c in few.terms:
            i = bisect.bisect_left(terms, _mono_sort_key((m, c)), key=_mono_sort_key)
            if i < len(terms) and terms[i][0] == m:
                total = terms[i][1] + c
                check_coefficient(total)
                if total:
                    terms[i] = (m, total)
                else:
                    del terms[i]
            else:
                terms.insert(i, (m, c))
        check_size(len(terms), MAX_MONOMIALS, "monomials")
        return Poly(tuple(terms))

    def __neg__(self) -> Poly:
        return Poly(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        acc: dict[Monomial, Fraction] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                tick()
                m = mono_mul(m1, m2)
                acc[m] = acc.get(m, Fraction(0)) + c1 * c2
        for total in acc.values():
            check_coefficient(total)
        return _poly(acc)

    def scale(self, c: Fraction) -> Poly:
        acc = {m: k * c for m, k in self.terms}
        for total in acc.values():
            check_coefficient(total)
        return _poly(acc)


#: at most this many terms are added into a polynomial by insertion rather than a re-sort
_FEW_TERMS = 16


def _poly(acc: Mapping[Monomial, Fraction]) -> Poly:
    """The canonical polynomial of `acc` (whose coefficients the caller has checked against
    `MAX_COEFFICIENT_BITS`: sums and products are where coefficients grow)."""
    check_size(len(acc), MAX_MONOMIALS, "monomials")
    return Poly(tuple(sorted(((m, c) for m, c in acc.items() if c), key=_mono_sort_key)))


#: the sort key of each monomial seen: a sum of n terms built one term at a time re-sorts its
#: monomials n times (Timsort finds the already sorted runs), and spelling the keys out again
#: each time would dominate; bounded, cleared when full
_MONO_KEYS: dict[Monomial, str] = {}
_MONO_KEYS_LIMIT = 100_000


def _mono_sort_key(item: tuple[Monomial, Fraction]) -> str:
    mono = item[0]
    key = _MONO_KEYS.get(mono)
    if key is None:
        if len(_MONO_KEYS) >= _MONO_KEYS_LIMIT:
            _MONO_KEYS.clear()
        key = _MONO_KEYS[mono] = "*".join(f"{a.key}^{p}" for a, p in mono)
    return key


def mono_mul(m1: Monomial, m2: Monomial) -> Monomial:
    acc: dict[Term, int] = dict(m1)
    for a, p in m2:
        acc[a] = acc.get(a, 0) + p
    return tuple(sorted(((a, p) for a, p in acc.items() if p), key=lambda t: t[0].key))


def const(value: Fraction | float | int) -> Poly:
    if isinstance(value, float) and not math.isfinite(value):
        raise Unsupported(f"a constant {value}: the verifier reasons over the reals")
    v = Fraction(value)
    return Poly((((), v),)) if v else Poly(())


ZERO = const(0)
ONE = const(1)


def atom(a: Term, power: int = 1) -> Poly:
    return Poly(((((a, power),), Fraction(1)),))


def monomial_poly(mono: Monomial, coeff: Fraction = Fraction(1)) -> Poly:
    return _poly({mono: coeff})


def product(polys: Iterable[Poly]) -> Poly:
    out = ONE
    for p in polys:
        out = out * p
    return out


# ---- integers as reals ---------------------------------------------------------------------------
def idx(expr: IntExpr) -> Poly:
    """An integer expression as a real polynomial over its atoms."""
    out = ZERO
    for mono, coeff in expr.terms:
        term = const(coeff)
        for a in mono:
            term = term * atom(IdxAtom(a))
        out = out + term
    return out


def nonneg(expr: IntExpr) -> bool:
    """True when `expr >= 0` follows from sizes >= 1 and output indices >= 0 alone.

    Only those variables (not bound variables, which may range over negatives after a shift)
    count as nonnegative; floordiv/mod/min/max of nonnegatives are nonnegative. A monomial of
    size symbols alone is >= 1, so it may pay for a negative constant (`N - 1`, `M*N - 1`).
    """
    low = Fraction(0)
    for mono, c in expr.terms:
        if not mono:
            low += c
        elif c < 0 or not all(_nonneg_atom(a) for a in mono):
            return False
        elif all(a.kind == "sym" and not is_loop_var(a.name) for a in mono):
            low += c
    return low >= 0


def _nonneg_atom(a: IntAtom) -> bool:
    if a.kind == "sym":
        return not is_loop_var(a.name) or a.name.startswith(OUTPUT_INDEX)
    return all(nonneg(x) for x in a.args)


def known_nonzero(a: Term) -> bool:
    """Atoms that may carry negative powers: exp (> 0) and size symbols (>= 1)."""
    if isinstance(a, Fn) and a.fn == "exp":
        return True
    return isinstance(a, IdxAtom) and a.atom.kind == "sym" and not is_loop_var(a.atom.name)


# ---- scalar functions ----------------------------------------------------------------------------
def inv(p: Poly) -> Poly:
    """1 / p: exact for constants and for factors known nonzero, else an `inv` atom of the rest."""
    if p.is_const:
        v = p.const_value
        if v != 0:
            return const(1 / v)
        return atom(Fn("inv", (p,)))
    if len(p.terms) == 1:
        (mono, c), = p.terms
        known = tuple((a, -k) for a, k in mono if known_nonzero(a))
        rest = tuple((a, k) for a, k in mono if not known_nonzero(a))
        out = monomial_poly(tuple(sorted(known, key=lambda t: t[0].key)), 1 / c)
        if rest:
            out = out * atom(Fn("inv", (monomial_poly(rest),)))
        return out
    return atom(Fn("inv", (p,)))


def exp(p: Poly) -> Poly:
    """exp(sum c_i m_i) = prod exp(m_i)^c_i for integer c_i (exp(c m) stays an atom otherwise)."""
    out = ONE
    for mono, c in p.terms:
        if not mono:
            out = out * atom(Fn("exp", (const(c),)))
        elif c.denominator == 1:
            out = out * atom(Fn("exp", (monomial_poly(mono),)), int(c))
        else:
            out = out * atom(Fn("exp", (monomial_poly(mono, c),)))
    return out


def known_positive(a: Term) -> bool:
    """Atoms that are > 0 wherever they are evaluated: exp, size symbols (>= 1), a sum of a
    monomial of such atoms (with its positive coefficient) over a range evidently nonempty, and
    the reciprocal, square root and reciprocal square root of such a monomial (`1 / sqrt(D)`,
    attention's score scale; checked with a worklist: such atoms nest as deep as the program
    is long)."""
    pending, seen = [a], set()
    while pending:
        t = pending.pop()
        if t in seen or known_nonzero(t):
            continue
        seen.add(t)
        if isinstance(t, Sum) and nonneg(t.hi - t.lo - 1):
            factors = _positive_factors(t.body)
        elif isinstance(t, Fn) and t.fn in ("inv", "sqrt", "rsqrt"):  # each > 0 for p > 0
            factors = _positive_factors(t.args[0])
        else:
            return False
        if factors is None:
            return False
        pending.extend(factors)
    return True


def _positive_factors(p: Poly) -> list[Term] | None:
    """The factors of p when p is one monomial with a positive coefficient (p > 0 when they all
    are), else None."""
    if len(p.terms) != 1:
        return None
    (mono, c), = p.terms
    return [x for x, _ in mono] if c > 0 else None


def log(p: Poly) -> Poly:
    """log(c * prod a_i^k_i) = log(c) + sum k_i log(a_i) when c > 0 and every a_i is known
    positive (the product rule of log holds for positive factors only), with log(exp(m)) = m
    and log(1/q) = -log(q) (q split the same way, with a worklist); any other argument stays
    uninterpreted."""
    out = ZERO
    work = [(p, Fraction(1))]
    while work:
        q, scale = work.pop()
        split = _log_factors(q)
        if split is None:
            out = out + atom(Fn("log", (q,))).scale(scale)
            continue
        c, mono = split
        if c != 1:
            out = out + atom(Fn("log", (const(c),))).scale(scale)
        for a, k in mono:
            if isinstance(a, Fn) and a.fn == "exp":
                out = out + a.args[0].scale(scale * k)
            elif isinstance(a, Fn) and a.fn == "inv":  # log(1/q) = -log(q) for q > 0
                work.append((a.args[0], -scale * k))
            else:
                out = out + atom(Fn("log", (atom(a),))).scale(scale * k)
    return out


def _log_factors(p: Poly) -> tuple[Fraction, Monomial] | None:
    """(c, monomial) when p = c * monomial with c > 0 and every factor known positive."""
    if len(p.terms) == 1:
        (mono, c), = p.terms
        if c > 0 and mono and all(known_positive(a) for a, _ in mono):
            return c, mono
    return None


def power(p: Poly, exponent: float) -> Poly:
    """p ** e: repeated product for small integer e, 1/p^-e for negative, else uninterpreted."""
    if float(exponent).is_integer() and abs(exponent) <= 8:
        n = int(exponent)
        out = ONE
        for _ in range(abs(n)):
            out = out * p
        return out if n >= 0 else inv(out)
    if exponent == 0.5:
        return apply("sqrt", p)
    if exponent == -0.5:
        return apply("rsqrt", p)
    return atom(Fn(f"pow[{exponent!r}]", (p,)))


def apply(fn: str, *args: Poly) -> Poly:
    """A scalar function other than + - * / exp log: uninterpreted or exactly encoded atoms."""
    if all(a.is_const for a in args) and fn in ("max", "min", "abs", "trunc"):
        vals = [a.const_value for a in args]
        if fn == "trunc":
            return const(int(vals[0]))  # int() of a Fraction rounds toward zero, as trunc does
        return const(max(vals) if fn == "max" else min(vals) if fn == "min" else abs(vals[0]))
    if fn == "trunc" and _as_int(args[0]) is not None:
        return args[0]  # an integer (an i32 iota, say) truncates to itself
    if fn in ("max", "min"):
        a, b = args
        if a == b:
            return a
        args = tuple(sorted(args, key=str))
    return atom(Fn(fn, tuple(args)))


def fn_of(fn: str, args: tuple[Poly, ...]) -> Poly:
    """The canonical term of the scalar function `fn` at `args`, through the constructor its kind
    has (exp, log and inv normalize; the rest are `apply`'s)."""
    if fn == "exp":
        return exp(args[0])
    if fn == "log":
        return log(args[0])
    if fn == "inv":
        return inv(args[0])
    return apply(fn, *args)


def assume(p: Poly, cond: Bool, value: bool) -> Poly:
    """p where `cond` is known to have `value`: `cond` is decided wherever it occurs, inside
    function arguments, select branches and other conditions (`c and cond` becomes `c` for
    True), not only where a select on it is an atom of p. A sum split at `var < m` decides a
    tile's mask on each side, and the mask also guards the tile's load inside an exp (a
    remainder tile of an online softmax). Reductions inside are left as they are (deciding there
    is only more simplification). Each distinct term is rebuilt once, on an explicit stack."""
    return _Assumption(cond, value).poly(p)


class _Assumption:
    """One condition decided through a term DAG (see `assume`)."""

    def __init__(self, cond: Bool, value: bool) -> None:
        self.cond, self.value = cond, value
        self.atoms: dict[Term, Poly | None] = {}  # None: unchanged
        self.bools: dict[Bool, Bool] = {}

    def poly(self, p: Poly) -> Poly:
        self._run(list(p.atoms()))
        return self._rebuild(p)

    def _rebuild(self, p: Poly) -> Poly:
        if all(self.atoms.get(a) is None for a in p.atoms()):
            return p
        return substitute_atoms(p, lambda a: self.atoms.get(a))

    def _skipped(self, t: Term) -> bool:
        """Terms the condition cannot occur in: reductions, leaves, and terms lacking one of
        its loop variables."""
        return (isinstance(t, (Sum, Prefix, Reduce, Read, IdxAtom))
                or not self.cond.free <= t.free)

    def _done(self, t: Term) -> bool:
        return t in self.bools if isinstance(t, Bool) else t in self.atoms

    def _run(self, roots: list[Term]) -> None:
        stack = list(roots)
        while stack:
            t = stack[-1]
            if self._done(t):
                stack.pop()
                continue
            if self._skipped(t) and t != self.cond:
                if isinstance(t, Bool):
                    self.bools[t] = t
                else:
                    self.atoms[t] = None
                stack.pop()
                continue
            missing = [x for x in subterms(t) if not self._done(x)]
            if missing:
                stack.extend(missing)
                continue
            if isinstance(t, Bool):
                self.bools[t] = self._bool(t)
            else:
                self.atoms[t] = self._atom(t)
            stack.pop()

    def _bool(self, b: Bool) -> Bool:
        if b == self.cond:
            return bconst(self.value)
        if b.op in ("and", "or", "not"):
            args = [self.bools[x] for x in b.args]  # type: ignore[index]
            if b.op == "not":
                return bnot(args[0])
            return band(*args) if b.op == "and" else bor(*args)
        if b.op == "cmp":
            op, diff = b.args
            assert isinstance(diff, Poly) and isinstance(op, str)
            new = self._rebuild(diff)
            return b if new is diff else compare(op, new, ZERO)
        return b

    def _atom(self, a: Term) -> Poly | None:
        if isinstance(a, Fn):
            args = tuple(self._rebuild(x) for x in a.args)
            return None if args == a.args else fn_of(a.fn, args)
        if isinstance(a, Select):
            cond, x, y = self.bools[a.cond], self._rebuild(a.a), self._rebuild(a.b)
            if cond is a.cond and x is a.a and y is a.b:
                return None
            return select(cond, x, y)
        return None


def select(cond: Bool, a: Poly, b: Poly) -> Poly:
    """cond ? a : b; a select on `cond` nested in a branch (`DECIDE_DEPTH` selects deep at
    most) is decided there: two masked loads of one tile each split a sum's range, and their
    selects repeat each other's conditions."""
    if cond.op == "const":
        return a if cond.args[0] else b
    if cond.op == "not":
        return select(cond.args[0], b, a)  # type: ignore[arg-type]
    return _select_node(cond, _decided(a, cond, True, DECIDE_DEPTH),
                        _decided(b, cond, False, DECIDE_DEPTH))


#: how many selects deep `select` looks into its branches for its own condition (a tile's masks
#: nest two deep); deeper ones stay as they are, which is only less simplified, and the cost of
#: a select stays bounded however deep selects nest
DECIDE_DEPTH = 4


def _select_node(cond: Bool, a: Poly, b: Poly) -> Poly:
    """cond ? a : b with the branches taken as they are."""
    if cond.op == "const":
        return a if cond.args[0] else b
    if cond.op == "not":
        return _select_node(cond.args[0], b, a)  # type: ignore[arg-type]
    if a == b:
        return a
    return atom(Select(cond, a, b))


def _decided(p: Poly, cond: Bool, value: bool, depth: int) -> Poly:
    """p with each select on `cond` among its atoms, and in their selects' branches down to
    `depth` selects (not below any other kind of atom), replaced by the branch `value` picks."""
    if depth == 0 or not any(isinstance(x, Select) for mono, _ in p.terms for x, _ in mono):
        return p

    def decide(x: Term) -> Poly | None:
        if not isinstance(x, Select):
            return None
        if x.cond == cond:
            return _decided(x.a if value else x.b, cond, value, depth - 1)
        return _select_node(x.cond, _decided(x.a, cond, value, depth - 1),
                            _decided(x.b, cond, value, depth - 1))

    return substitute_atoms(p, decide)


def substitute_atoms(p: Poly, substitute: Callable[[Term], Poly | None]) -> Poly:
    """p with each top-level atom `a` for which `substitute(a)` gives a polynomial replaced by
    it (a negative power by a power of its inverse); atoms it gives None for are kept."""
    out = ZERO
    for mono, c in p.terms:
        term = const(c)
        for a, k in mono:
            sub = substitute(a)
            if sub is None:
                term = term * atom(a, k)
                continue
            for _ in range(abs(k)):
                term = term * (sub if k > 0 else inv(sub))
        out = out + term
    return out


# ---- booleans ------------------------------------------------------------------------------------
TRUE = Bool("const", (True,))
FALSE = Bool("const", (False,))


def bconst(v: bool) -> Bool:
    return TRUE if v else FALSE


def compare(op: str, a: Poly, b: Poly) -> Bool:
    """a op b for op in eq ne lt le gt ge, as a comparison of one difference against 0."""
    if op == "ne":
        return bnot(compare("eq", a, b))
    if op in ("gt", "ge"):
        a, b, op = b, a, {"gt": "lt", "ge": "le"}[op]
    diff = a - b
    if op == "eq" and str(-diff) < str(diff):
        diff = -diff
    if diff.is_const:
        v = diff.const_value
        return bconst(v < 0 if op == "lt" else v <= 0 if op == "le" else v == 0)
    ints = _as_int(diff)
    if ints is not None:
        return icompare(op, ints)
    return Bool("cmp", (op, diff))


def icompare(op: str, e: IntExpr) -> Bool:
    """e op 0 on integers (lt, le, eq); constant where sizes >= 1 and output indices >= 0
    settle it (`nonneg`, as `count` and the range rules of `sums.py` take them), so a
    comparison built after a substitution (a loop's step at iteration 0: `N <= 0*BK`) is
    spelled as the one built with the value in place."""
    if e.is_const:
        v = e.value
        return bconst(v < 0 if op == "lt" else v <= 0 if op == "le" else v == 0)
    if op == "lt":  # e < 0  <=>  e + 1 <= 0 on integers: one spelling
        op, e = "le", e + 1
    if nonneg(e - 1) or (op == "eq" and nonneg(-e - 1)):
        return FALSE
    if op == "le" and nonneg(-e):
        return TRUE
    if op == "eq" and str(-e) < str(e):
        e = -e
    return Bool("icmp", (op, e))


def _as_int(p: Poly) -> IntExpr | None:
    """The integer expression a poly of integer atoms with integer coefficients spells, if any."""
    out = IntExpr.const(0)
    for mono, c in p.terms:
        if c.denominator != 1:
            return None
        term = IntExpr.const(int(c))
        for a, k in mono:
            if not isinstance(a, IdxAtom) or k < 0:
                return None
            for _ in range(k):
                term = term * a.expr
        out = out + term
    return out


def band(a: Bool, b: Bool) -> Bool:
    if a.op == "const":
        return b if a.args[0] else FALSE
    if b.op == "const":
        return a if b.args[0] else FALSE
    x, y = sorted((a, b), key=str)
    return Bool("and", (x, y))


def bor(a: Bool, b: Bool) -> Bool:
    if a.op == "const":
        return TRUE if a.args[0] else b
    if b.op == "const":
        return TRUE if b.args[0] else a
    x, y = sorted((a, b), key=str)
    return Bool("or", (x, y))


def bnot(a: Bool) -> Bool:
    if a.op == "const":
        return bconst(not a.args[0])
    if a.op == "not":
        return a.args[0]  # type: ignore[return-value]
    return Bool("not", (a,))


def bread(tensor: str, index: tuple[IntExpr, ...]) -> Bool:
    return Bool("read", (tensor, index))
