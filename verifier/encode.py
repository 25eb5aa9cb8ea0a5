"""z3 encoding of canonical terms.

- sizes and loop variables are z3 Ints; tensors are uninterpreted functions Int^rank -> Real
  (Bool for i1);
- exp, log, sqrt, rsqrt, tanh, sigmoid, erf, pow, trunc are uninterpreted Real -> Real with sound
  ground axioms: exp(t) > 0; t >= 0 -> sqrt(t) >= 0 and sqrt(t)^2 = t; t > 0 -> rsqrt(t) > 0 and
  rsqrt(t)^2 * t = 1; max, min, abs and 1/x are exact;
- a sum over [lo, hi) of body B is ite(lo < hi, P_B(hi) - P_B(lo), 0), with one uninterpreted
  prefix function P_B per canonical body (arguments: the point and B's free loop variables).
  Every P_B with P_B(n) = sum over [0, n) of B exists (signed below 0), so this holds for every
  extent. Ground instances of P_B(0) = 0 and P_B(e) = P_B(e - 1) + B(e - 1) at the points that
  occur close telescoping sums (and every point of a range of constant length <= 8, which spells
  such a sum out); a sum of positive terms over a nonempty range is positive. The step
  instances, with the facts of the terms they bring in (each sum's body at a point), are built
  apart and on demand (`Encoder.step_instances`): a query whose sums meet at the same points
  needs none of them, and a body holding a normalization chain (rsqrt of a sum of squares inside
  an exp) makes them nonlinear arithmetic z3 may not finish; the prover asks without them first;
- max / min / mul reductions are uninterpreted per canonical body, applied to (lo, hi, free...).

No quantifiers are asserted, so every axiom is a ground instance of a true fact.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import z3

from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import FUNCTIONS
from axon.verifier import terms as T

#: sums over ranges of constant length up to this get the step instances of every point of the
#: range, so a sum over 3 columns meets x[:, 0] + x[:, 1] + x[:, 2]
UNROLL = 8


@dataclass
class _Pending:
    """A prefix-function application whose step instance is still to be asserted."""

    fn: z3.FuncDeclRef
    var: str
    body: T.Poly
    free: tuple[str, ...]
    env: dict[str, z3.ArithRef]
    at: z3.ArithRef


@dataclass
class Encoder:
    """Encodes terms into one z3 context; collects the axioms their atoms need."""

    ctx: z3.Context = field(default_factory=z3.Context)
    sizes: dict[str, z3.ArithRef] = field(default_factory=dict)
    loops: dict[str, z3.ArithRef] = field(default_factory=dict)
    tensors: dict[str, z3.FuncDeclRef] = field(default_factory=dict)
    axioms: list[z3.BoolRef] = field(default_factory=list)
    _funcs: dict[str, z3.FuncDeclRef] = field(default_factory=dict)
    _pending: list[_Pending] = field(default_factory=list)
    _axiom_keys: set[str] = field(default_factory=set)
    _ranks: dict[str, int] = field(default_factory=dict)
    #: encoded atoms and booleans, per environment of bound variables (the empty one first):
    #: terms are DAGs, and each distinct term is encoded once per environment
    _memos: dict[tuple[tuple[str, int], ...], dict[T.Term, z3.ExprRef]] = field(
        default_factory=dict)
    #: the powers of each base met in a high power (`_power`), by the base's z3 id
    _powers: dict[int, list[z3.ArithRef]] = field(default_factory=dict)

    # ---- declarations -----------------------------------------------------------------------
    def int_var(self, name: str) -> z3.ArithRef:
        table = self.loops if T.is_loop_var(name) else self.sizes
        if name not in table:
            table[name] = z3.Int(name, self.ctx)
        return table[name]

    def declare_tensor(self, name: str, rank: int, boolean: bool) -> None:
        if name not in self.tensors:
            dom = [z3.IntSort(self.ctx)] * rank
            rng = z3.BoolSort(self.ctx) if boolean else z3.RealSort(self.ctx)
            self.tensors[name] = z3.Function(name, *dom, rng)

    def _func(self, key: str, arity_ints: int, arity_reals: int = 0) -> z3.FuncDeclRef:
        if key not in self._funcs:
            dom = [z3.IntSort(self.ctx)] * arity_ints + [z3.RealSort(self.ctx)] * arity_reals
            self._funcs[key] = z3.Function(f"f{len(self._funcs)}", *dom, z3.RealSort(self.ctx))
        return self._funcs[key]

    def _axiom(self, key: str, fact: z3.BoolRef) -> None:
        if key not in self._axiom_keys:
            self._axiom_keys.add(key)
            self.axioms.append(fact)

    # ---- integers -----------------------------------------------------------------------------
    def int_expr(self, e: IntExpr, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
        def sym(name: str) -> z3.ArithRef:
            return env[name] if name in env else self.int_var(name)

        return z3.simplify(e.fold(lambda c: z3.IntVal(c, self.ctx), sym, _int_atom))

    # ---- reals --------------------------------------------------------------------------------
    def _memo(self, env: Mapping[str, z3.ArithRef]) -> dict[T.Term, z3.ExprRef]:
        """The encodings made under `env` (z3 hash-conses terms: equal ids, equal terms)."""
        key = tuple(sorted((name, value.get_id()) for name, value in env.items()))
        return self._memos.setdefault(key, {})

    def poly(self, p: T.Poly, env: Mapping[str, z3.ArithRef] | None = None) -> z3.ArithRef:
        env = env or {}
        memo = self._memo(env)
        self._encode_nested(p, env, memo)
        total: z3.ArithRef = z3.RealVal(0, self.ctx)
        for mono, c in p.terms:
            term: z3.ArithRef = z3.RealVal(f"{c.numerator}/{c.denominator}", self.ctx)
            for a, k in mono:
                base = memo[a]
                if abs(k) > UNROLL:
                    # a high power (a polynomial of high degree): one product per power of this
                    # base over the whole query, not one per occurrence
                    power = self._power(base, abs(k))
                    term = term * power if k > 0 else term / power
                    continue
                for _ in range(abs(k)):
                    term = term * base if k > 0 else term / base
            total = total + term
        return total

    def _power(self, base: z3.ExprRef, k: int) -> z3.ArithRef:
        """base ** k as a product, each power built from the one below it once."""
        powers = self._powers.setdefault(base.get_id(), [base])
        while len(powers) < k:
            powers.append(powers[-1] * base)
        return powers[k - 1]

    def _encode_nested(self, p: T.Poly, env: Mapping[str, z3.ArithRef],
                       memo: dict[T.Term, z3.ExprRef]) -> None:
        """Encode every atom of p into `memo`, nested atoms first, with an explicit stack: a
        term nested thousands deep (a long chain of activations) never recurses in Python, since
        encoding an atom then finds its arguments' atoms already encoded (in the memo of the
        same environment)."""
        stack = [a for mono, _ in p.terms for a, _ in mono if a not in memo]
        while stack:
            a = stack[-1]
            if a in memo:
                stack.pop()
                continue
            missing = [x for x in _nested_atoms(a) if x not in memo]
            if missing:
                stack.extend(missing)
                continue
            memo[a] = self.atom(a, env)
            stack.pop()

    def atom(self, a: T.Term, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
        if isinstance(a, T.Read):
            self.declare_tensor(a.tensor, len(a.index), False)
            return self.tensors[a.tensor](*(self.int_expr(i, env) for i in a.index))
        if isinstance(a, T.IdxAtom):
            return z3.ToReal(self.int_expr(a.expr, env))
        if isinstance(a, T.Fn):
            return self._fn(a, env)
        if isinstance(a, T.Select):
            return z3.If(self.bool(a.cond, env), self.poly(a.a, env), self.poly(a.b, env))
        if isinstance(a, T.Sum):
            lo, hi = self.int_expr(a.lo, env), self.int_expr(a.hi, env)
            diff = self._prefix(a.var, a.body, hi, env) - self._prefix(a.var, a.body, lo, env)
            extent = a.hi - a.lo
            if extent.is_const and 1 < extent.value <= UNROLL:
                # a short range of constant length: applications at the points between lo and
                # hi, whose step instances (`close`) spell the sum out term by term
                for k in range(1, extent.value):
                    self._prefix(a.var, a.body, z3.simplify(lo + k), env)
            if _positive(a.body):
                self._axiom(f"pos {_ids(lo, hi, diff)}", z3.Implies(lo < hi, diff > 0))
            elif _nonnegative(a.body):
                self._axiom(f"nonneg {_ids(lo, hi, diff)}", z3.Implies(lo < hi, diff >= 0))
            return z3.If(lo < hi, diff, z3.RealVal(0, self.ctx))
        if isinstance(a, T.Prefix):
            return self._prefix(a.var, a.body, self.int_expr(a.at, env), env)
        if isinstance(a, T.Reduce):
            free = tuple(sorted(a.body.free - {a.var}))
            fn = self._func(f"{a.kind} {a.var}: {a.body} / {free}", 2 + len(free))
            return fn(self.int_expr(a.lo, env), self.int_expr(a.hi, env),
                      *(self._loop(v, env) for v in free))
        raise TypeError(f"unknown atom {a!r}")

    def _loop(self, name: str, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
        return env[name] if name in env else self.int_var(name)

    def _prefix(self, var: str, body: T.Poly, at: z3.ArithRef,
                env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
        free = tuple(sorted(body.free - {var}))
        fn = self._func(f"pre {var}: {body} / {free}", 1 + len(free))
        args = [self._loop(v, env) for v in free]
        self._pending.append(_Pending(fn, var, body, free, dict(zip(free, args, strict=True)), at))
        return fn(at, *args)

    def _fn(self, a: T.Fn, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
        args = [self.poly(x, env) for x in a.args]
        zero = z3.RealVal(0, self.ctx)
        if a.fn == "inv":
            return z3.RealVal(1, self.ctx) / args[0]
        if a.fn == "max":
            return z3.If(args[0] >= args[1], args[0], args[1])
        if a.fn == "min":
            return z3.If(args[0] <= args[1], args[0], args[1])
        if a.fn == "abs":
            return z3.If(args[0] >= zero, args[0], -args[0])
        fn = self._func(f"uf {a.fn}", 0, 1)
        value = fn(args[0])
        x = args[0]
        spec = FUNCTIONS.get(a.fn)
        if spec is not None and spec.facts is not None:
            # the function's own facts (dialects/form/scalar.py), as ground instances at x
            for k, (premise, conclusion) in enumerate(spec.facts(value, x)):
                self._axiom(f"{a.fn} {k} {_ids(value)}",
                            conclusion if premise is None else z3.Implies(premise, conclusion))
        if spec is not None and spec.reciprocal is not None:
            # f(x) * g(x) = 1 for x > 0: a product z3's nonlinear arithmetic does not find from
            # the squares alone (x / sqrt(t) = x * rsqrt(t))
            other = self._func(f"uf {spec.reciprocal}", 0, 1)(x)
            self._axiom(f"reciprocal {_ids(x)}", z3.Implies(x > zero, value * other == 1))
        return value

    # ---- booleans -----------------------------------------------------------------------------
    def bool(self, b: T.Bool, env: Mapping[str, z3.ArithRef] | None = None) -> z3.BoolRef:
        """A boolean term in z3, its and / or / not operands first, on an explicit stack."""
        env = env or {}
        memo = self._memo(env)
        stack = [b]
        while stack:
            t = stack[-1]
            if t in memo:
                stack.pop()
                continue
            missing = [x for x in t.args if isinstance(x, T.Bool) and x not in memo]
            if missing:
                stack.extend(missing)
                continue
            memo[t] = self._bool_node(t, env, memo)
            stack.pop()
        return memo[b]  # type: ignore[return-value]

    def _bool_node(self, b: T.Bool, env: Mapping[str, z3.ArithRef],
                   memo: Mapping[T.Term, z3.ExprRef]) -> z3.BoolRef:
        """One boolean, its boolean operands already in `memo`."""
        if b.op == "const":
            return z3.BoolVal(bool(b.args[0]), self.ctx)
        if b.op == "cmp":
            op, diff = b.args
            x = self.poly(diff, env)  # type: ignore[arg-type]
            zero = z3.RealVal(0, self.ctx)
            return x < zero if op == "lt" else x <= zero if op == "le" else x == zero
        if b.op == "icmp":
            op, e = b.args
            x = self.int_expr(e, env)  # type: ignore[arg-type]
            return x < 0 if op == "lt" else x <= 0 if op == "le" else x == 0
        if b.op == "and":
            return z3.And(*(memo[x] for x in b.args))  # type: ignore[index]
        if b.op == "or":
            return z3.Or(*(memo[x] for x in b.args))  # type: ignore[index]
        if b.op == "not":
            return z3.Not(memo[b.args[0]])  # type: ignore[index]
        if b.op == "read":
            tensor, index = b.args
            self.declare_tensor(tensor, len(index), True)  # type: ignore[arg-type]
            return self.tensors[tensor](*(self.int_expr(i, env) for i in index))  # type: ignore
        raise TypeError(f"unknown boolean {b.op}")

    # ---- prefix-sum step instances ------------------------------------------------------------
    def close(self) -> None:
        """Assert P(0) = 0 for the prefix-function applications seen so far (linear, and what a
        sum from 0 cancels against); their step instances wait for `step_instances`."""
        for p in self._pending:
            args = [p.env[v] for v in p.free]
            zero = z3.IntVal(0, self.ctx)
            self._axiom(f"zero {_ids(p.fn(zero, *args))}", p.fn(zero, *args) == 0)

    @property
    def pending_steps(self) -> int:
        """How many prefix-function applications wait for `step_instances`."""
        return len(self._pending)

    def step_instances(self, rounds: int = 2) -> list[z3.BoolRef]:
        """P(0) = 0 and P(e) = P(e - 1) + B(e - 1) for the applications seen so far, with every
        fact the terms of B(e - 1) need: true facts like `axioms`, returned (not in `axioms`)
        for a solver to add after a first check without them.

        Instances introduce new applications (inside B); `rounds` bounds how often we follow them.
        """
        core = len(self.axioms)
        for _ in range(rounds):
            pending, self._pending = self._pending, []
            for p in pending:
                args = [p.env[v] for v in p.free]
                key = f"step {_ids(p.fn(p.at, *args))}"
                if key in self._axiom_keys:
                    continue
                zero = z3.IntVal(0, self.ctx)
                self._axiom(f"zero {_ids(p.fn(zero, *args))}", p.fn(zero, *args) == 0)
                prev = z3.simplify(p.at - 1)
                env = dict(p.env)
                env[p.var] = prev
                step = self.poly(p.body, env)
                self._axiom(key, p.fn(p.at, *args) == p.fn(prev, *args) + step)
        found = self.axioms[core:]
        del self.axioms[core:]
        return found


def _int_atom(kind: str, x: z3.ArithRef, y: z3.ArithRef) -> z3.ArithRef:
    if kind == "floordiv":
        return x / y  # SMT-LIB div rounds down for positive divisors (sizes are >= 1)
    if kind == "mod":
        return x % y
    if kind == "min":
        return z3.If(x <= y, x, y)
    return z3.If(x >= y, x, y)


def _ids(*exprs: z3.ExprRef) -> str:
    """A cheap key for z3 terms: z3 hash-conses terms, so equal terms share an id (printing
    them instead costs time quadratic in their depth)."""
    return " ".join(str(e.get_id()) for e in exprs)


def _nested_atoms(a: T.Term) -> list[T.Term]:
    """The atoms that encoding `a` encodes first: arguments of functions, branches and the
    compared polynomials of selects (sum bodies are encoded later, under their own binding)."""
    polys: list[T.Poly] = []
    if isinstance(a, T.Fn):
        polys.extend(a.args)
    elif isinstance(a, T.Select):
        polys.extend((a.a, a.b))
        conds = [a.cond]
        while conds:
            b = conds.pop()
            if b.op == "cmp":
                polys.append(b.args[1])  # type: ignore[arg-type]
            elif b.op in ("and", "or", "not"):
                conds.extend(b.args)  # type: ignore[arg-type]
    return [x for p in polys for mono, _ in p.terms for x, _ in mono]


def _nonnegative(body: T.Poly) -> bool:
    """A monomial with a positive coefficient whose factors are exp atoms or even powers (a sum
    of squares, as in rmsnorm's mean(x * x)) is nonnegative."""
    return (len(body.terms) == 1 and body.terms[0][1] > 0
            and all((isinstance(a, T.Fn) and a.fn == "exp") or k % 2 == 0
                    for a, k in body.terms[0][0]))


def _positive(body: T.Poly) -> bool:
    """A monomial of exp atoms with a positive coefficient is positive."""
    return (len(body.terms) == 1 and body.terms[0][1] > 0
            and all(isinstance(a, T.Fn) and a.fn == "exp" for a, _ in body.terms[0][0]))
