"""Canonical sums and reductions, and substitution of loop variables in terms.

`make_sum(var, lo, hi, body)` returns the canonical polynomial of sum over var in [lo, hi) of body:

- linearity: each monomial's factors that do not mention `var` move out of the sum;
- Fubini: inner sums whose bounds do not depend on the enclosing binders are flattened, and the
  nesting order that prints smallest is chosen (factors then move as far out as they can), so
  sum_j sum_k x[i,k] w[k,j] and sum_k x[i,k] sum_j w[k,j] meet;
- triangular exchange: sum over j of a lone inner sum over k in [c, j + d) (or [j + c, d)) of
  f(k) becomes sum over k of f(k) * count(k) when the count is exact and min/max-free
  (`_exchange_triangle`), so sum(cumsum(x)) meets sum(x * (N - iota));
- telescoping: otherwise, an inner sum whose bounds move with `var` is split into prefix differences
  P(hi) - P(lo), so sum_t sum_{j in [4t, 4t+4)} x[j] becomes sums of prefixes that the z3 encoder's
  step instances close (the tiling and blocked-cumsum lemmas);
- shift: the bound variable is shifted so an affine occurrence `a*var + R` reads `a*var` (the
  smallest-printing choice), then renamed `$b<height>` (alpha-renaming, capture-free because inner
  binders are lower);
- select lifting: a select whose condition does not mention `var` leaves the sum (and max / min /
  mul reductions, and prefixes): sum_k f(sel(c, a, b)) = sel(c, sum_k f(a), sum_k f(b)), since c
  has one value for the whole range. A concat read inside a contraction (x @ concat(w1, w2)) then
  meets the concat of the contractions (concat(x @ w1, x @ w2));
- range splitting: a select on `var < m` splits the range at m (`_split_range`), so a sum or
  max over a concat is the sum or max of the parts and a masked (causal) row sum is a sum over
  the unmasked range;
- max / min order rules (`_order_reduce`): terms free of var move out (max(x + c) =
  max(x) + c, on every range: an empty one's -inf stays -inf), and on nonempty ranges positive
  scales move out and negative ones turn max into min;
- blocked partition: a reduction over the ceildiv(K, B) blocks of B of each block's
  reduction cut at K (a tiled K loop's masked partials) is the reduction over [0, K), for any
  body of the element: sums linear in the blocks' sums (`_blocked_partition`), max / min whose
  masked lanes repeat the block's first element (`_blocked_extremum`), also where the
  lanes' max is taken after the blocks' (`_exchanged_blocks`: a running max kept lane by
  lane); a max / min loop started at its own first step is the reduction of its steps
  (`fold`). Where the query
  assumes `K mod B == 0` (`indices.assuming`) every block is whole and the same rules read
  the reduction of the whole blocks (no cut block to match) as the reduction over [0, K).

Each step is an identity of finite sums over the integers, valid for every extent including empty
ranges (`count` and the guards keep empty ranges at 0); the max / min rules other than the
shift hold on nonempty ranges and are guarded by lo < hi where that is not evident.
Substitution is capture-avoiding.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction

from axon.dialects.ax.shapes import exact_quotient
from axon.dialects.form.intexpr import IntExpr
from axon.verifier import indices
from axon.verifier import terms as T
from axon.verifier.budget import nested, tick
from axon.verifier.terms import Bool, Fn, IdxAtom, Monomial, Poly, Prefix, Read, Reduce, Select, Sum

_counter = itertools.count()


def fresh(prefix: str = T.INTERNAL + "t") -> str:
    """A loop variable name never used before in this process."""
    return f"{prefix}{next(_counter)}"


# ---- structure helpers ---------------------------------------------------------------------------
#: the binder height of each term seen (`height`), keyed by the term (its canonical text); bounded:
#: cleared when full
_heights: dict[T.Term, int] = {}


def height(p: Poly) -> int:
    """Nesting depth of binders in p (0 when it has none); names canonical bound variables."""
    return max((_atom_height(a) for a in p.atoms()), default=0)


def _atom_height(root: T.Term) -> int:
    """1 + the height of a reduction's body, for other terms the largest height inside them;
    computed bottom-up on an explicit stack, each term once (terms nest as deep as programs are
    long)."""
    if len(_heights) >= _MEMO_LIMIT:
        _heights.clear()
    stack = [root]
    while stack:
        t = stack[-1]
        if t in _heights:
            stack.pop()
            continue
        inner = T.subterms(t)
        missing = [x for x in inner if x not in _heights]
        if missing:
            stack.extend(missing)
            continue
        binder = 1 if isinstance(t, (Sum, Prefix, Reduce)) else 0
        _heights[t] = binder + max((_heights[x] for x in inner), default=0)
        stack.pop()
    return _heights[root]


def int_exprs(p: Poly) -> list[IntExpr]:
    """Every integer expression in p (indices, idx atoms, bounds, prefix points), deep: each
    distinct term's once."""
    out: list[IntExpr] = []
    seen: set[T.Term] = set()
    stack = list(p.atoms())
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        out.extend(T.int_parts(t))
        stack.extend(T.subterms(t))
    return out


# ---- substitution --------------------------------------------------------------------------------
#: results of `make_sum` and `subst` by their arguments' text. Fubini tries every nesting order,
#: and renaming each candidate's binders re-normalizes its inner sums: without the memo, a sum of
#: a product of four row sums repeats the same inner normalizations factorially often. Both are
#: pure functions of their arguments (every term is keyed by its canonical text), so a hit is
#: exact. Bounded: cleared when full.
_MEMO_LIMIT = 100_000
_sum_memo: dict[tuple[str, str, str, str, bool], Poly] = {}
_subst_memo: dict[tuple[str, tuple[tuple[str, str], ...]], Poly] = {}


def reset() -> None:
    """Empty the memos of `make_sum` and `subst`, whose hits skip the steps (`budget.tick`) a
    computation takes: a query that starts with them empty takes the same steps in every run,
    whatever the process proved before it (`prove_equivalent` calls this per query)."""
    _sum_memo.clear()
    _subst_memo.clear()


def subst(p: Poly, env: Mapping[str, IntExpr]) -> Poly:
    """Replace free loop variables by integer expressions, re-normalizing everything."""
    if not env or not (p.free & env.keys()):
        return p
    tick()
    key = (str(p), tuple(sorted((k, str(v)) for k, v in env.items() if k in p.free)))
    hit = _subst_memo.get(key)
    if hit is None:
        if len(_subst_memo) >= _MEMO_LIMIT:
            _subst_memo.clear()
        hit = _subst_memo[key] = _Substitution(env).poly(p)
    return hit


def subst_bool(b: Bool, env: Mapping[str, IntExpr]) -> Bool:
    """`subst` for a boolean term."""
    if not (b.free & env.keys()):
        return b
    return _Substitution(env).boolean(b)


def _sub_int(e: IntExpr, env: Mapping[str, IntExpr]) -> IntExpr:
    return e.substitute(env) if e.symbols() & env.keys() else e


def _bound_env(var: str, body: Poly, env: Mapping[str, IntExpr]
               ) -> tuple[str, Poly, dict[str, IntExpr]]:
    """The binder, body and environment to substitute under a binder of `var`, capture-free.

    `var` is bound here, so it is not replaced inside. When a replacement mentions a variable
    named `var` (a free variable of the surroundings that happens to share the canonical name),
    substituting as is would bind it to this binder: the binder is first renamed to a fresh
    variable (alpha-renaming, which never changes the value; the constructors canonicalize the
    name again afterwards)."""
    inner = {k: v for k, v in env.items() if k != var}
    if any(var in v.symbols() for v in inner.values()):
        renamed = fresh()
        body = subst(body, {var: IntExpr.sym(renamed)})  # fresh: nothing in body can capture it
        var = renamed
    return var, body, inner


class _Substitution:
    """One environment substituted into a term DAG: every term that mentions a replaced
    variable is rebuilt once, bottom-up on an explicit stack (terms nest as deep as programs
    are long), through the canonicalizing constructors. Below a binder the environment changes,
    so a reduction's body is substituted by `subst` (the recursion is as deep as reductions
    nest, which `budget.nested` bounds)."""

    def __init__(self, env: Mapping[str, IntExpr]) -> None:
        self.env = env
        self.atoms: dict[T.Term, Poly] = {}
        self.bools: dict[Bool, Bool] = {}

    def poly(self, p: Poly) -> Poly:
        self._run([a for a in p.atoms() if self._mentions(a)])
        return self._rebuild(p)

    def boolean(self, b: Bool) -> Bool:
        self._run([b])
        return self.bools[b]

    def _mentions(self, t: T.Term | Poly) -> bool:
        return bool(t.free & self.env.keys())

    def _done(self, t: T.Term) -> bool:
        return t in self.bools if isinstance(t, Bool) else t in self.atoms

    def _run(self, roots: list[T.Term]) -> None:
        stack = list(roots)
        while stack:
            t = stack[-1]
            if self._done(t):
                stack.pop()
                continue
            # a reduction's body is substituted under its own environment, by `subst`
            inner = [] if isinstance(t, (Sum, Prefix, Reduce)) else T.subterms(t)
            missing = [x for x in inner if self._mentions(x) and not self._done(x)]
            if missing:
                stack.extend(missing)
                continue
            tick()
            if isinstance(t, Bool):
                self.bools[t] = self._new_bool(t)
            else:
                self.atoms[t] = self._new_atom(t)
            stack.pop()

    def _rebuild(self, p: Poly) -> Poly:
        """p with every atom that mentions a replaced variable replaced by its substitute."""
        if not self._mentions(p):
            return p
        return T.substitute_atoms(p, lambda a: self.atoms[a] if self._mentions(a) else None)

    def _sub_bool(self, b: Bool) -> Bool:
        return self.bools[b] if self._mentions(b) else b

    def _int(self, e: IntExpr) -> IntExpr:
        return _sub_int(e, self.env)

    def _new_atom(self, a: T.Term) -> Poly:
        env = self.env
        if isinstance(a, Read):
            return T.atom(Read(a.tensor, tuple(self._int(i) for i in a.index)))
        if isinstance(a, IdxAtom):
            return T.idx(self._int(a.expr))
        if isinstance(a, Fn):
            return T.fn_of(a.fn, tuple(self._rebuild(x) for x in a.args))
        if isinstance(a, Select):
            return T.select(self._sub_bool(a.cond), self._rebuild(a.a), self._rebuild(a.b))
        if isinstance(a, Sum):
            var, body, inner = _bound_env(a.var, a.body, env)
            return make_sum(var, _sub_int(a.lo, env), _sub_int(a.hi, env), subst(body, inner))
        if isinstance(a, Prefix):
            var, body, inner = _bound_env(a.var, a.body, env)
            return make_prefix(var, subst(body, inner), _sub_int(a.at, env))
        if isinstance(a, Reduce):
            var, body, inner = _bound_env(a.var, a.body, env)
            return make_reduce(a.kind, var, _sub_int(a.lo, env), _sub_int(a.hi, env),
                               subst(body, inner))
        raise TypeError(f"unknown atom {a!r}")

    def _new_bool(self, b: Bool) -> Bool:
        if b.op == "cmp":
            op, diff = b.args
            return T.compare(op, self._rebuild(diff), T.ZERO)  # type: ignore[arg-type]
        if b.op == "icmp":
            op, e = b.args
            return T.icompare(op, self._int(e))  # type: ignore[arg-type]
        if b.op == "and":
            return T.band(*(self._sub_bool(x) for x in b.args))  # type: ignore[arg-type]
        if b.op == "or":
            return T.bor(*(self._sub_bool(x) for x in b.args))  # type: ignore[arg-type]
        if b.op == "not":
            return T.bnot(self._sub_bool(b.args[0]))  # type: ignore[arg-type]
        if b.op == "read":
            tensor, index = b.args
            assert isinstance(tensor, str) and isinstance(index, tuple)
            return T.bread(tensor, tuple(self._int(i) for i in index))
        return b


class _Unflattening(_Substitution):
    """`var` replaced by `n*high + low` in a term where it occurs inside no binder, each index
    then simplified under high in [0, q), low in [0, n) (`indices.simplify`): a reshape's
    `var floordiv n` is `high`, `var mod n` is `low`, `var floordiv (N*n)` is `high floordiv N`."""

    def __init__(self, var: str, n: IntExpr, high: str, q: IntExpr, low: str) -> None:
        super().__init__({var: n * IntExpr.sym(high) + IntExpr.sym(low)})
        self.ranges = {high: (IntExpr.const(0), q), low: (IntExpr.const(0), n)}

    def _int(self, e: IntExpr) -> IntExpr:
        moved = _sub_int(e, self.env)
        return moved if moved is e else indices.simplify(moved, self.ranges)


def _unflattened(var: str, lo: IntExpr, hi: IntExpr, body: Poly
                 ) -> tuple[str, IntExpr, str, IntExpr, Poly] | None:
    """A reduction over a flattened index as two: where `var` runs over [0, n*q) and the body
    reads it through `var floordiv m` and `var mod m` (a reshape's reads; it may also read
    `var` itself, a weight by position), each m a multiple of one of them, n, a divisor (a
    positive monomial of sizes, so n >= 1), and inside no inner binder: the body at
    var = n*h + l for h in [0, q), l in [0, n) (a bijection onto [0, n*q), and both empty
    where q <= 0), each index simplified under those ranges. Returns (h, q, l, n, body there);
    None where the body does not have that shape (the reduction is then left as it is)."""
    if lo.terms:
        return None
    divisors: set[IntExpr] = set()
    stack, seen = list(body.atoms()), set()
    while stack:
        t = stack.pop()
        if t in seen or var not in t.free:
            continue
        seen.add(t)
        if isinstance(t, (Sum, Prefix, Reduce)):
            return None  # inside a binder: left as it is
        ints = list(T.int_parts(t))
        while ints:
            for mono, _ in ints.pop().terms:
                for atom in mono:
                    if atom.kind == "sym":
                        continue  # the flat index itself reads n*h + l
                    x, m = atom.args
                    if atom.kind in ("floordiv", "mod") and x.as_symbol == var \
                            and var not in m.symbols():
                        divisors.add(m)
                    else:
                        ints.extend(atom.args)
        stack.extend(T.subterms(t))
    # the divisor every other one is a multiple of
    n = next((m for m in sorted(divisors, key=str) if indices.is_divisor(m)
              and all(exact_quotient(k, m) is not None for k in divisors)), None)
    quotient = None if n is None else exact_quotient(hi, n)
    if n is None or quotient is None:
        return None
    high, low = fresh(), fresh()
    return high, quotient, low, n, _Unflattening(var, n, high, quotient, low).poly(body)


# ---- sums ----------------------------------------------------------------------------------------
def count(lo: IntExpr, hi: IntExpr) -> Poly:
    """The number of integers in [lo, hi): hi - lo, or 0 when the range is empty."""
    n = hi - lo
    if T.nonneg(n):
        return T.idx(n)
    return T.select(T.icompare("lt", lo - hi), T.idx(n), T.ZERO)


def independent_select(p: Poly, var: str) -> Select | None:
    """A select atom of p (outside any binder) whose condition does not mention `var`: the
    smallest by text, so both sides of an obligation lift their selects in the same order."""
    found = [a for a in p.atoms() if isinstance(a, Select) and var not in a.cond.free]
    return min(found, key=lambda a: a.key) if found else None


def replace_atom(p: Poly, old: T.Term, new: Poly) -> Poly:
    """p with every top-level occurrence of the atom `old` replaced by `new` (a negative power
    becomes a power of 1/new, which equals 1/old wherever old = new)."""
    return T.substitute_atoms(p, lambda a: new if a == old else None)


def _lift_select(var: str, body: Poly, build: Callable[[Poly], Poly]) -> Poly | None:
    """build(body) as sel(c, build(body[s := a]), build(body[s := b])) for the first select s
    of body whose condition c does not mention var; None when there is none.

    Sound for every reduction over var: c has one value on the whole range, so the reduction of
    body equals the reduction of whichever branch c picks. Each step removes one select atom from
    the body, so repeated lifting ends."""
    s = independent_select(body, var)
    if s is not None:
        return T.select(s.cond, build(replace_atom(body, s, s.a)),
                        build(replace_atom(body, s, s.b)))
    cond = nested_condition(body, var)
    if cond is None:
        return None
    taken, other = T.assume(body, cond, True), T.assume(body, cond, False)
    if taken == body or other == body:  # not decided where it occurs: no progress
        return None
    return T.select(cond, build(taken), build(other))


def nested_condition(p: Poly, var: str) -> Bool | None:
    """The condition of a select nested in a branch of a select atom of p (down to
    `terms.DECIDE_DEPTH` selects, outside any binder) that does not mention `var`: the
    smallest by text. A tile loaded in a loop nested in another is guarded in both loops' dims,
    so its partial over one inner block reads `sel(inner cut, ..., sel(outer guard, x, 0))`:
    the outer guard is one value over the inner loop's whole range and leaves its sum."""
    found: list[Bool] = []
    level = [a for a in p.atoms() if isinstance(a, Select)]
    for _ in range(T.DECIDE_DEPTH):
        inner = [x for s in level for branch in (s.a, s.b) for x in branch.atoms()
                 if isinstance(x, Select)]
        found += [x.cond for x in inner if var not in x.cond.free]
        level = inner
    return min(found, key=str) if found else None


def make_sum(var: str, lo: IntExpr, hi: IntExpr, body: Poly, flatten: bool = True) -> Poly:
    """Canonical sum over var in [lo, hi) of body (see the module docstring)."""
    tick()
    key = (var, str(lo), str(hi), str(body), flatten)
    hit = _sum_memo.get(key)
    if hit is None:
        if len(_sum_memo) >= _MEMO_LIMIT:
            _sum_memo.clear()
        with nested():
            hit = _sum_memo[key] = _make_sum(var, lo, hi, body, flatten)
    return hit


def _make_sum(var: str, lo: IntExpr, hi: IntExpr, body: Poly, flatten: bool) -> Poly:
    out = T.ZERO
    for mono, c in body.terms:
        indep = tuple((a, k) for a, k in mono if var not in a.free)
        dep = tuple((a, k) for a, k in mono if var in a.free)
        outside = T.monomial_poly(indep, c)
        if not dep:
            out = out + outside * count(lo, hi)
            continue
        flat = _unflattened(var, lo, hi, T.monomial_poly(dep))
        if flat is not None:
            high, q, low, n, moved = flat
            # the high part innermost: it may be a flattened index again (a reshape of three
            # dims), split the same way while it reads no inner binder
            out = out + outside * make_sum(low, lo, n, make_sum(high, lo, q, moved, flatten),
                                           flatten)
            continue
        lifted = _lift_select(var, T.monomial_poly(dep),
                              lambda b: make_sum(var, lo, hi, b, flatten))
        if lifted is not None:
            out = out + outside * lifted
            continue
        blocks = _blocked_partition(var, lo, hi, dep)
        if blocks is None:
            blocks = _blocked_prefixes(var, lo, hi, dep)
        if blocks is not None:
            out = out + outside * blocks
            continue
        split = _split_range(var, lo, hi, T.monomial_poly(dep),
                             lambda a, b, p: make_sum(var, a, b, p, flatten), operator.add)
        if split is not None:
            out = out + outside * split
            continue
        exchanged = _exchange_triangle(var, lo, hi, dep)
        if exchanged is not None:
            out = out + outside * exchanged
            continue
        tele = next((i for i, (a, k) in enumerate(dep) if k == 1 and isinstance(a, Sum)
                     and var not in a.body.free - {a.var}
                     and var in (T.loop_vars(a.lo) | T.loop_vars(a.hi))), None)
        if tele is not None:
            s = dep[tele][0]
            assert isinstance(s, Sum)
            rest = T.monomial_poly(dep[:tele] + dep[tele + 1:])
            out = out + outside * make_sum(var, lo, hi, prefix_difference(s) * rest, flatten)
            continue
        if flatten and any(_flattenable(a, k, {var}) for a, k in dep):
            out = out + outside * _multisum(var, lo, hi, dep)
            continue
        out = out + outside * T.atom(_canonical_sum(var, lo, hi, dep))
    return out


def _blocked_partition(var: str, lo: IntExpr, hi: IntExpr, dep: Monomial) -> Poly | None:
    """Blocks of B over [0, K), each cut at K, summed over the ceildiv(K, B) blocks: the sum
    over [0, K). A tiled reduction (a loop over K in steps of BK, each step summing its masked
    tile, of any body g of the element) normalizes, through range splitting, to

        sum over var in [0, ceildiv(K, B)) of
            sel(K <= var*B, 0, sel(var*B + B <= K, F(sum over [var*B, var*B + B) of g),
                                                    F(sum over [var*B, K) of g)))

    with F linear and its coefficients free of var (`_block_split` reads the selects). The
    blocks [var*B, min(var*B + B, K)) partition [0, K) when B >= 1 and K >= 0, so each
    monomial c * sum over the block of g_i sums to c * sum over [0, K) of g_i, and the terms
    free of var, Q * B (the sum over a block of a term Q free of the element: Q times the
    block's count), sum to Q * K. The cut block's must be the full block's cut at K, term by
    term (Q * (K - var*B) for Q * B), or the rule does not apply."""
    split = _block_split(var, lo, hi, T.monomial_poly(dep))
    if split is None:
        return None
    start, block, total, full, cut = split
    counted = Poly(tuple((m, c) for m, c in full.terms if var not in _mono_free(m)))
    per_element = counted * T.inv(T.idx(block))
    if per_element * T.idx(block) != counted:
        return None
    expected = per_element * T.idx(total - start)
    whole = per_element * T.idx(total)
    for mono, c in full.terms:
        if var not in _mono_free(mono):
            continue
        inner = [f for f in mono if var in f[0].free]
        if len(inner) != 1 or inner[0][1] != 1 or not isinstance(inner[0][0], Sum):
            return None
        found = _block_body(inner[0][0], var, start, block)
        if found is None:
            return None
        u, g = found
        rest = T.monomial_poly(tuple(f for f in mono if f is not inner[0]), c)
        expected = expected + rest * make_sum(u, start, total, g)
        whole = whole + rest * make_sum(u, IntExpr.const(0), total, g)
    return whole if cut is None or expected == cut else None


def _blocked_prefixes(var: str, lo: IntExpr, hi: IntExpr, dep: Monomial) -> Poly | None:
    """The sums over the ceildiv(K, B) blocks [var*B, min(var*B + B, K)) of [0, K), each as a
    difference of prefix sums, summed over the blocks: the prefix sums at K. A loop split
    across programs (each walking one stretch of B elements of a reduced dim, a second kernel
    summing their partial results) normalizes, through `prefix_difference`, to

        sum over var in [0, ceildiv(K, B)) of
            sel(var*B < min(var*B + B, K), sum_i c_i * (P_i(min(var*B + B, K)) - P_i(var*B)), 0)

    with P_i prefix sums of bodies free of var and c_i free of var. The guard holds on every
    block (var*B <= (ceildiv(K, B) - 1)*B < K and B >= 1), and the sum telescopes: block
    var's end is block var + 1's start but for the last, which ends at K; so the total is
    sum_i c_i * P_i(K), the sums over [0, K). Anything else in the body, or a prefix at
    another point, and the rule does not apply."""
    blocks = _blocks(lo, hi)
    if blocks is None or len(dep) != 1 or dep[0][1] != 1:
        return None
    total, block = blocks
    start = IntExpr.sym(var) * block
    end = (start + block).min(total)
    guard = dep[0][0]
    if not isinstance(guard, Select) or guard.b != T.ZERO \
            or guard.cond != T.icompare("lt", start - end):
        return None
    whole = T.ZERO
    unmatched: dict[str, Fraction] = {}  # per prefix body and factor: end's minus start's
    for mono, c in guard.a.terms:
        found = [i for i, (a, k) in enumerate(mono) if var in a.free]
        if len(found) != 1:
            return None
        pre, power = mono[found[0]]
        if not isinstance(pre, Prefix) or power != 1 or var in pre.body.free - {pre.var}:
            return None
        factor = T.monomial_poly(mono[:found[0]] + mono[found[0] + 1:])
        if pre.at not in (start, end):
            return None
        if pre.at == end:  # the start's prefix at 0 is the empty sum
            whole = whole + factor * make_sum(pre.var, IntExpr.const(0), total, pre.body) \
                * T.const(c)
        key = f"{pre.body_key} * {factor}"
        unmatched[key] = unmatched.get(key, Fraction(0)) + c
    return whole if not any(unmatched.values()) else None


def _blocked_extremum(kind: str, var: str, lo: IntExpr, hi: IntExpr, body: Poly
                      ) -> Poly | None:
    """max (min) over the ceildiv(K, B) blocks of B of each block's max (min) cut at K: the max
    (min) over [0, K). A tiled max masks the lanes past K by repeating the block's first
    element, so the body reads (`_block_split`)

        sel(var*B + B <= K, S * red(u in [var*B, var*B + B): g) + D,
                            S * red(u in [var*B, K): g) + D  (max'd with S * g(var*B) + D))

    for a scale S (a rational times factors known positive) and a shift D free of var, red
    being max for S > 0 and min for S < 0 (the order rules put the body so). The repeated lane
    g(var*B) is an element of the cut block (var*B < K inside the loop), so it leaves its
    max as it is; the cut blocks partition [0, K), and the max of a union of nonempty parts is
    the max of their maxes. The result is guarded by K >= 1: with no blocks (K = 0) the two
    maxes over empty ranges keep their own atoms."""
    split = _block_split(var, lo, hi, body)
    if split is None:
        return None
    start, block, total, full, cut = split
    found = _scaled_reduction(var, full)
    if found is None:
        return None
    scale, r, shift = found
    inner = kind if scale.terms[0][1] > 0 else {"max": "min", "min": "max"}[kind]
    block_body = _block_body(r, var, start, block) if r.kind == inner else None
    if block_body is None:
        return None
    u, g = block_body
    part = scale * make_reduce(inner, u, start, total, g) + shift
    lane = scale * subst(g, {u: start}) + shift
    if cut is not None and cut != part and cut != T.apply(kind, part, lane):
        return None
    whole = scale * make_reduce(inner, u, IntExpr.const(0), total, g) + shift
    return _nonempty_or(IntExpr.const(0), total, whole,
                        lambda: _reduce_atom(kind, var, lo, hi, body))


def _exchanged_blocks(kind: str, var: str, lo: IntExpr, hi: IntExpr, body: Poly
                      ) -> Poly | None:
    """max (min) over var of a lone max (min) over u of f, rectangular (u's range free of
    var), exchanged into max over u of max over var of f where that is a blocked extremum
    (`_blocked_extremum`): a running max kept lane by lane over a loop's blocks and then taken
    over the lanes (`running = max(running, block)`, `tl.max(running)`) is the max over the
    blocks of each block's max. Both orders are the max of f over the product of the two
    ranges when both are nonempty; the lanes' range is guarded here, the blocks' by
    `_blocked_extremum` (K >= 1). Else None (no exchange is kept that does not close)."""
    atom = _single_atom(body)
    if not isinstance(atom, Reduce) or atom.kind != kind \
            or var in atom.lo.symbols() or var in atom.hi.symbols():
        return None
    u = fresh()
    inner = make_reduce(kind, var, lo, hi, subst(atom.body, {atom.var: IntExpr.sym(u)}))
    blocks = _blocked_extremum(kind, u, atom.lo, atom.hi, inner)
    if blocks is None:
        return None
    return _nonempty_or(lo, hi, blocks, lambda: _reduce_atom(kind, var, lo, hi, body))


def _scaled_reduction(var: str, p: Poly) -> tuple[Poly, Reduce, Poly] | None:
    """(S, r, D) with p = S * r + D, r the only atom of p mentioning var (a max / min, power
    1), S a rational times factors known positive and D free of var; else None."""
    found = [a for a in p.atoms() if var in a.free]
    if len(found) != 1 or not isinstance(found[0], Reduce):
        return None
    r = found[0]
    scale, shift = T.ZERO, T.ZERO
    for mono, c in p.terms:
        if not any(a == r for a, _ in mono):
            shift = shift + T.monomial_poly(mono, c)
            continue
        rest = tuple(f for f in mono if f[0] != r)
        if scale.terms or (r, 1) not in mono or not all(T.known_positive(a) for a, _ in rest):
            return None
        scale = T.monomial_poly(rest, c)
    return scale, r, shift


def _blocks(lo: IntExpr, hi: IntExpr) -> tuple[IntExpr, IntExpr] | None:
    """(K, B) when [lo, hi) is [0, ceildiv(K, B)) (hi spelled (K + B - 1) floordiv B, or
    ((K - 1) floordiv B) + 1 where B divides the first spelling's other terms) with B >= 1 and
    K >= 0 evident; else None."""
    if lo != IntExpr.const(0):
        return None
    one = 0
    if len(hi.terms) == 2 and hi - IntExpr.const(1) != hi:  # ((K - 1) floordiv B) + 1
        hi, one = hi - IntExpr.const(1), 1
    if len(hi.terms) != 1:
        return None
    (mono, coeff), = hi.terms
    if coeff != 1 or len(mono) != 1 or mono[0].kind != "floordiv":
        return None
    top, block = mono[0].args
    total = top + 1 if one else top - block + 1
    if not (T.nonneg(block - 1) and T.nonneg(total)):
        return None
    return total, block


def _block_split(var: str, lo: IntExpr, hi: IntExpr, body: Poly
                 ) -> tuple[IntExpr, IntExpr, IntExpr, Poly, Poly | None] | None:
    """(start, B, K, full, cut) when var ranges over the ceildiv(K, B) blocks of B (`_blocks`)
    and body, with its block's start var*B inside [0, K) (every block of the range starts
    there: var*B <= (ceildiv(K, B) - 1)*B < K), is sel(start + B <= K, full, cut): full is
    the body of a whole block, cut the body of the block cut at K, in which start + B > K is
    decided; else None. Where the query assumes `K mod B == 0` (`indices.facts`) every block
    is whole: full is the body with start + B <= K decided, and cut is None."""
    blocks = _blocks(lo, hi)
    if blocks is None:
        return None
    total, block = blocks
    start = IntExpr.sym(var) * block
    inside = _decide_int(body, start - total + 1, True)  # start < K
    whole = start + block - total  # start + B <= K
    if blocks in indices.facts().divides:
        # B divides K: every block is whole (var*B + B <= ceildiv(K, B)*B = K); no cut block
        return start, block, total, _decide_int(inside, whole, True), None
    s = _single_atom(inside)
    if not isinstance(s, Select) or s.cond != T.icompare("le", whole):
        return None
    return start, block, total, s.a, _decide_int(s.b, whole, False)


def _decide_int(p: Poly, e: IntExpr, value: bool) -> Poly:
    """p with the integer comparison e <= 0 decided as `value` wherever it occurs, in both its
    spellings (e <= 0, and its negation -e < 0)."""
    for cond, v in ((T.icompare("le", e), value), (T.icompare("lt", -e), not value)):
        if cond.op != "const":
            p = T.assume(p, cond, v)
    return p


def _block_body(r: Sum | Reduce, var: str, start: IntExpr, block: IntExpr
                ) -> tuple[str, Poly] | None:
    """(u, g) with r the reduction over u in [start, start + block) of g, g free of var (the
    reduction over one block of a body of the element alone), shifting r's bound variable when
    its range is spelled elsewhere; else None."""
    if r.hi - r.lo != block:
        return None
    shift = start - r.lo
    body = r.body
    if shift.terms:
        body = subst(body, {r.var: IntExpr.sym(r.var) - shift})
    return None if var in body.free else (r.var, body)


def fold(kind: str, var: str, extent: IntExpr, start: Poly, step: Poly) -> Poly:
    """start (+) step(0) (+) ... (+) step(extent - 1): a sequential loop's accumulation, the
    step a term of the iteration `var`. A max / min started at its own first step (the tiler
    starts a blocked max at the first block's partial: no infinities) is the reduction of the
    steps alone when there is at least one step (max is idempotent, step(0) is one of them)."""
    if kind == "add":
        return start + make_sum(var, IntExpr.const(0), extent, step)
    folded = make_reduce(kind, var, IntExpr.const(0), extent, step)
    if _at_least_one(extent) and start == subst(step, {var: IntExpr.const(0)}):
        return folded
    return T.apply(kind, start, folded)


def _at_least_one(e: IntExpr) -> bool:
    """e >= 1 where sizes >= 1 show it; ceildiv(K, B) = (K + B - 1) floordiv B is when K >= 1."""
    if T.nonneg(e - 1):
        return True
    blocks = _blocks(IntExpr.const(0), e)
    return blocks is not None and T.nonneg(blocks[0] - 1)


def _single_atom(p: Poly) -> T.Term | None:
    """The atom p is (coefficient 1, power 1), if it is one."""
    if len(p.terms) != 1:
        return None
    (mono, coeff), = p.terms
    return mono[0][0] if coeff == 1 and len(mono) == 1 and mono[0][1] == 1 else None


def _unit_offset(e: IntExpr, var: str) -> IntExpr | None:
    """d with e == var + d exactly (d free of var), else None."""
    d = e - IntExpr.sym(var)
    return None if var in d.symbols() else d


def _when_nonempty(lo: IntExpr, hi: IntExpr, p: Poly) -> Poly:
    """p where lo < hi, 0 otherwise (no guard when lo < hi is evident)."""
    if T.nonneg(hi - lo - 1):
        return p
    return T.select(T.icompare("lt", lo - hi), p, T.ZERO)


def _exchange_triangle(var: str, lo: IntExpr, hi: IntExpr, dep: Monomial) -> Poly | None:
    """sum over j in [lo, hi) of sum over k in a range with one end j + d, body f(k) free of j,
    as sum over k of f(k) * #{j : k in range(j)}, when that count is min/max-free; else None.

    Upper end moving, k in [c, j + d): the pairs are lo <= j < hi, c <= k < j + d, so for each k
    the j are [max(lo, k - d + 1), hi). With m = lo + d - 1:
      - c >= m: count hi + d - 1 - k on k in [c, hi + d - 1) (>= 1 there; no k outside; when
        hi <= lo the k range is empty too, since c >= lo + d - 1 >= hi + d - 1);
      - c <= m: where lo < hi, count hi - lo on [c, m) and hi + d - 1 - k on [m, hi + d - 1)
        (m < hi + d - 1); 0 where hi <= lo.
    Lower end moving, k in [j + c, d): the j are [lo, min(hi, k - c + 1)). With m = hi + c:
      - d <= m: count k - c + 1 - lo on k in [lo + c, d) (k - c + 1 <= hi there; empty when
        hi <= lo, since d <= hi + c <= lo + c);
      - d >= m: where lo < hi, count k - c + 1 - lo on [lo + c, m) and hi - lo on [m, d).
    Neither relation evident (by `nonneg`): no rewrite. Only a lone sum factor (the rest of the
    monomial free of j) with the moving end exactly j + offset is exchanged."""
    if len(dep) != 1:
        return None
    (s, power), = dep
    if power != 1 or not isinstance(s, Sum) or var in s.body.free - {s.var}:
        return None
    name = fresh()
    k = IntExpr.sym(name)
    f = subst(s.body, {s.var: k})
    upper = _unit_offset(s.hi, var) if var not in s.lo.symbols() else None
    if upper is not None:
        c, d = s.lo, upper
        m, top = lo + d - 1, hi + d - 1
        if T.nonneg(c - m):
            return make_sum(name, c, top, f * T.idx(top - k))
        if T.nonneg(m - c):
            head = make_sum(name, c, m, f * T.idx(hi - lo))
            tail = make_sum(name, m, top, f * T.idx(top - k))
            return _when_nonempty(lo, hi, head + tail)
        return None
    lower = _unit_offset(s.lo, var) if var not in s.hi.symbols() else None
    if lower is not None:
        c, d = lower, s.hi
        m = hi + c
        if T.nonneg(m - d):
            return make_sum(name, lo + c, d, f * T.idx(k - c + 1 - lo))
        if T.nonneg(d - m):
            head = make_sum(name, lo + c, m, f * T.idx(k - c + 1 - lo))
            return _when_nonempty(lo, hi, head + make_sum(name, m, d, f * T.idx(hi - lo)))
    return None


def prefix_difference(s: Sum) -> Poly:
    """sum over [lo, hi) as P(hi) - P(lo), guarded unless hi >= lo is evident."""
    diff = make_prefix(s.var, s.body, s.hi) - make_prefix(s.var, s.body, s.lo)
    if T.nonneg(s.hi - s.lo):
        return diff
    return T.select(T.icompare("lt", s.lo - s.hi), diff, T.ZERO)


def make_prefix(var: str, body: Poly, at: IntExpr) -> Poly:
    """sum over var in [0, at) of body (signed for at < 0), linear in body."""
    with nested():
        return _make_prefix(var, body, at)


def _make_prefix(var: str, body: Poly, at: IntExpr) -> Poly:
    out = T.ZERO
    for mono, c in body.terms:
        indep = tuple((a, k) for a, k in mono if var not in a.free)
        dep = tuple((a, k) for a, k in mono if var in a.free)
        outside = T.monomial_poly(indep, c)
        if not dep:
            out = out + outside * T.idx(at)  # the signed count of [0, at)
            continue
        # lifted like sums, so a prefix of a split sum keeps the body the sum would have
        lifted = _lift_select(var, T.monomial_poly(dep), lambda b: make_prefix(var, b, at))
        if lifted is not None:
            out = out + outside * lifted
        else:
            dep_body = T.monomial_poly(dep)
            # the canonical binder name, so the prefix shares its z3 function with the sums of
            # the same body (alpha-renaming: the name is not free in the body)
            name = _binder_name(var, dep_body)
            if name != var:
                dep_body = subst(dep_body, {var: IntExpr.sym(name)})
            out = out + outside * T.atom(Prefix(name, dep_body, at))
    return out


def _flattenable(a: T.Term, k: int, binders: set[str]) -> bool:
    return (k == 1 and isinstance(a, Sum)
            and not ((T.loop_vars(a.lo) | T.loop_vars(a.hi)) & binders))


def _local_names(avoid: set[str]) -> Iterator[str]:
    """`$f0`, `$f1`, ... skipping the names in `avoid`.

    Names for flattened binders that depend only on the term (unlike `fresh`), so normalizing
    the same term twice does the same work and `make_sum`'s memo hits; `avoid` holds every loop
    variable the term mentions, so no name can capture or be captured."""
    for i in itertools.count():
        name = f"{T.INTERNAL}f{i}"
        if name not in avoid:
            yield name


def _multisum(var: str, lo: IntExpr, hi: IntExpr, dep: Monomial) -> Poly:
    binders = [(var, lo, hi)]
    factors = list(dep)
    mentioned = [lo, hi, *int_exprs(T.monomial_poly(dep))]
    names = _local_names({var} | {v for e in mentioned for v in T.loop_vars(e)})
    changed = True
    while changed:
        changed = False
        for i, (a, k) in enumerate(factors):
            if _flattenable(a, k, {b[0] for b in binders}):
                assert isinstance(a, Sum)
                name = next(names)
                body = subst(a.body, {a.var: IntExpr.sym(name)})
                binders.append((name, a.lo, a.hi))
                (mono, _), = body.terms
                factors = factors[:i] + factors[i + 1:] + list(mono)
                changed = True
                break
    best: Poly | None = None
    for order in itertools.permutations(binders):
        candidate = _nested(list(order), factors)
        if best is None or str(candidate) < str(best):
            best = candidate
    assert best is not None
    return best


def _nested(order: list[tuple[str, IntExpr, IntExpr]], factors: list[tuple[T.Term, int]]) -> Poly:
    if not order:
        return T.monomial_poly(tuple(sorted(factors, key=lambda f: f[0].key)))
    var, lo, hi = order[-1]
    mine = tuple(sorted(((a, k) for a, k in factors if var in a.free), key=lambda f: f[0].key))
    rest = [(a, k) for a, k in factors if var not in a.free]
    inner = make_sum(var, lo, hi, T.monomial_poly(mine), flatten=False)
    out = T.ZERO
    for mono, c in inner.terms:
        out = out + _nested(order[:-1], rest + list(mono)).scale(c)
    return out


def _shift_candidates(var: str, body: Poly) -> list[IntExpr]:
    """Shifts s such that substituting var := var - s makes an occurrence a*var + R read a*var.

    s may mention only variables free in the body (outer ones, fixed over the whole range): an
    occurrence inside an inner reduction may read var + k with k bound there, and shifting by k
    would move k out of its binder (a capture that leaves k dangling in the bounds)."""
    seen: dict[str, IntExpr] = {}
    v = IntExpr.sym(var)
    outer = body.free - {var}
    for e in int_exprs(body):
        if var not in e.symbols() or not e.is_affine_in([var]):
            continue
        a = next((c for mono, c in e.terms if len(mono) == 1 and mono[0].kind == "sym"
                  and mono[0].name == var), None)
        if a is None:
            continue
        rest = e - v * a
        if var in rest.symbols() or any(c % a for _, c in rest.terms):
            continue
        s = IntExpr(tuple((m, c // a) for m, c in rest.terms))
        if T.loop_vars(s) <= outer:
            seen.setdefault(str(s), s)
    return list(seen.values()) or [IntExpr.const(0)]


def _binder_name(var: str, body: Poly) -> str:
    """The canonical name of a binder of `var` over `body`: `$b<height>`, inner binders being
    lower. If a free variable of the body already has that name (an outer binder whose height
    went stale after a rewrite), the next free height is taken: renaming the binder to a name
    the body uses freely would capture that variable."""
    h = height(body)
    taken = body.free - {var}
    while f"{T.INTERNAL}b{h}" in taken:
        h += 1
    return f"{T.INTERNAL}b{h}"


def _canonical_sum(var: str, lo: IntExpr, hi: IntExpr, dep: Monomial) -> Sum:
    body = T.monomial_poly(tuple(sorted(dep, key=lambda f: f[0].key)))
    name = _binder_name(var, body)
    best: Sum | None = None
    for s in _shift_candidates(var, body):
        moved = subst(body, {var: IntExpr.sym(name) - s}) if (var != name or s.terms) else body
        if len(moved.terms) != 1 or moved.terms[0][1] != 1:
            continue  # the shift broke the monomial (idx atoms combined); not canonical, skip
        cand = Sum(name, lo + s, hi + s, moved)
        if best is None or cand.key < best.key:
            best = cand
    if best is None:
        best = Sum(name, lo, hi, subst(body, {var: IntExpr.sym(name)}) if var != name else body)
    return best


def make_reduce(kind: str, var: str, lo: IntExpr, hi: IntExpr, body: Poly) -> Poly:
    """max / min / mul over var in [lo, hi) of body: selects lifted, shifted and renamed like
    sums; max / min also move terms and positive factors free of var out and split their range
    at a select on var (`_order_reduce`)."""
    with nested():
        return _make_reduce(kind, var, lo, hi, body)


def _make_reduce(kind: str, var: str, lo: IntExpr, hi: IntExpr, body: Poly) -> Poly:
    lifted = _lift_select(var, body, lambda b: make_reduce(kind, var, lo, hi, b))
    if lifted is not None:
        return lifted
    flat = _unflattened(var, lo, hi, body)
    if flat is not None:
        high, q, low, n, moved = flat
        # the rows outer, as `max(max(x, axis=1))` nests them (no exchange rule orders a
        # max of maxes; a flattened index of three dims stays as it is here)
        return make_reduce(kind, high, lo, q, make_reduce(kind, low, lo, n, moved))
    if kind in ("max", "min"):
        indep = Poly(tuple((m, c) for m, c in body.terms if var not in _mono_free(m)))
        if indep.terms and len(indep.terms) < len(body.terms):
            # the shift holds on an empty range too: the interpreter's max over one is -inf
            # (min: +inf), which a finite shift leaves as it is; so no guard, and a max over a
            # range that may be empty still meets its shifted self
            return indep + make_reduce(kind, var, lo, hi, body - indep)
        blocks = _blocked_extremum(kind, var, lo, hi, body)
        if blocks is None:
            blocks = _exchanged_blocks(kind, var, lo, hi, body)
        if blocks is not None:
            return blocks
        rewritten = _order_reduce(kind, var, lo, hi, body)
        if rewritten is not None:
            return _nonempty_or(lo, hi, rewritten, lambda: _reduce_atom(kind, var, lo, hi, body))
    return _reduce_atom(kind, var, lo, hi, body)


def _reduce_atom(kind: str, var: str, lo: IntExpr, hi: IntExpr, body: Poly) -> Poly:
    name = _binder_name(var, body)
    best: Reduce | None = None
    for s in _shift_candidates(var, body):
        moved = subst(body, {var: IntExpr.sym(name) - s}) if (var != name or s.terms) else body
        cand = Reduce(kind, name, lo + s, hi + s, moved)
        if best is None or cand.key < best.key:
            best = cand
    assert best is not None
    return T.atom(best)


def _nonempty_or(lo: IntExpr, hi: IntExpr, p: Poly, empty: Callable[[], Poly]) -> Poly:
    """p where lo < hi, `empty()` otherwise (no guard when lo < hi is evident).

    The max / min rules below are identities of nonempty ranges only: the verifier leaves the
    max of an empty range unspecified (the interpreter's -inf is not a real), so there the
    reduction keeps its own atom."""
    if T.nonneg(hi - lo - 1):
        return p
    return T.select(T.icompare("lt", lo - hi), p, empty())


def _le(x: IntExpr, y: IntExpr) -> Bool:
    """x <= y, constant where sizes >= 1 and output indices >= 0 settle it."""
    if T.nonneg(y - x):
        return T.TRUE
    if T.nonneg(x - y - 1):
        return T.FALSE
    return T.icompare("le", x - y)


def _order_reduce(kind: str, var: str, lo: IntExpr, hi: IntExpr, body: Poly) -> Poly | None:
    """max / min over a nonempty range [lo, hi), rewritten by one order identity, or None:

    - a body free of var is its own max / min (the shift, red(D + I) = red(D) + I for the
      terms I free of var, is `_make_reduce`'s: it holds on empty ranges too);
    - scale: red(g P D) = g P red'(D) for the leading coefficient g of D (and, for a single
      monomial, its factors P free of var and known positive): multiplying by g P > 0 preserves
      order, by g P < 0 reverses it, so red' is red for g > 0 and the other one for g < 0;
    - split: for a select s on `var < m` (an integer comparison with var's coefficient +-1, m
      free of var), red over [lo, hi) is red over [lo, m) of body[s := below] combined (max or
      min) with red over [m, hi) of body[s := above] when lo < m < hi (the max of a union of
      nonempty sets is the max of their maxes), and the reduction of one side over all of
      [lo, hi) when m <= lo or hi <= m, where the select has one value on the whole range.

    The caller guards the result with lo < hi."""
    indep = Poly(tuple((m, c) for m, c in body.terms if var not in _mono_free(m)))
    dep = body - indep
    if not dep.terms:
        return indep
    lead = dep.terms[0][1]
    positive: list[tuple[T.Term, int]] = []
    if len(dep.terms) == 1:
        positive = [(a, k) for a, k in dep.terms[0][0]
                    if var not in a.free and T.known_positive(a)]
    if lead != 1 or positive:
        scale = T.monomial_poly(tuple(positive), lead)
        other = kind if lead > 0 else {"max": "min", "min": "max"}[kind]
        rest = Poly(tuple((tuple(f for f in m if f not in positive), c / lead)
                          for m, c in dep.terms))
        return scale * make_reduce(other, var, lo, hi, rest)
    return _split_range(var, lo, hi, body, lambda a, b, p: make_reduce(kind, var, a, b, p),
                        lambda x, y: T.apply(kind, x, y))


def _split_range(var: str, lo: IntExpr, hi: IntExpr, body: Poly,
                 reduce: Callable[[IntExpr, IntExpr, Poly], Poly],
                 combine: Callable[[Poly, Poly], Poly]) -> Poly | None:
    """The reduction of body over [lo, hi) split at a select s of body on `var < m`:
    sel(m <= lo, R(lo, hi, above), sel(hi <= m, R(lo, hi, below),
    combine(R(lo, m, below), R(m, hi, above)))), where below / above are body with s replaced
    by the branch that holds for var < m / var >= m; None when body has no such select.

    On [lo, hi) with m <= lo (or hi <= m) the select has one value throughout; otherwise
    lo < m < hi and the range is the union of two nonempty ranges, on each of which the select
    has one value (and so has every occurrence of its condition, `T.assume`). For sums every
    case also holds on empty ranges (all are 0); max / min callers guard with lo < hi. Each split
    removes one select atom, so repeated splitting ends."""
    for a in sorted(body.atoms(), key=lambda t: t.key):
        if not isinstance(a, Select):
            continue
        point = _split_point(a.cond, var)
        if point is None:
            continue
        m, below_true = point
        # the condition is decided everywhere in the body, not only in this select: a tile's
        # mask repeats its load's guard inside an exp
        below = T.assume(body, a.cond, below_true)
        above = T.assume(body, a.cond, not below_true)
        both = combine(reduce(lo, m, below), reduce(m, hi, above))
        return T.select(_le(m, lo), reduce(lo, hi, above),
                        T.select(_le(hi, m), reduce(lo, hi, below), both))
    return None


def _mono_free(mono: Monomial) -> frozenset[str]:
    return frozenset(v for a, _ in mono for v in a.free)


def _split_point(cond: Bool, var: str) -> tuple[IntExpr, bool] | None:
    """(m, t) when `cond` is an integer comparison that holds exactly for var < m (t = True)
    or exactly for var >= m (t = False), m free of var; else None."""
    if cond.op != "icmp" or cond.args[0] != "le":
        return None
    e = cond.args[1]
    assert isinstance(e, IntExpr)
    v = IntExpr.sym(var)
    for a in (1, -1):
        rest = e - v * a
        if var in rest.symbols():
            continue
        if a == 1:  # var + rest <= 0  <=>  var < 1 - rest
            return IntExpr.const(1) - rest, True
        return rest, False  # -var + rest <= 0  <=>  var >= rest
    return None


__all__ = ["Fraction", "count", "fold", "fresh", "make_prefix", "make_reduce", "make_sum", "subst",
           "subst_bool"]
