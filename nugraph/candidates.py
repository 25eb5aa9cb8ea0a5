"""Generic candidate generation: reorderings of a consumer over its producers, from generic forms.

Nothing here names an op. A consumer e-node and producer e-nodes of its operand classes are
composed into one index expression (`index_expr.compose`); the expression is reshaped by moves that
only look at which loop variables each part depends on; each reshaped expression is materialized
back into ops (`materialize`). Whether a candidate is *equal* is not decided here: the verifier
proves or rejects every one (`prover.py`). The moves:

- fuse:   the composition itself, one op where one generic form can hold it, when that removes
          work: a transpose or a broadcast absorbed into its consumer, two reductions merged.
- hoist:  factors of an add-reduction's body that do not depend on the reduced dims move out:
          sum_k x[i,k] s[i] w[k,j]  ->  s[i] * sum_k x[i,k] w[k,j]   (a row scaling after a matmul)
- split:  an add-reduction over several dims reduces a subset first, over the factors that
          mention it:  sum_{k,j} x[i,k] w[k,j]  ->  sum_k x[i,k] (sum_j w[k,j])   (x @ rowsum(w))
          and likewise sum_k (sum_r x a) b -> sum_r x (sum_k a b) (pushing a consumer into an
          operand of its producer)
- sink:   a factor moves onto another factor (a read indexed by bare loop variables only) that
          carries all its dims:
          sum_k t[i,k] g[k] w[k,j]  ->  sum_k t[i,k] (g[k] w[k,j])
- factor: two reductions over equal domains sharing a factor combine:
          sum_k x a + sum_k x b  ->  sum_k x (a + b)
- push:   a reducing consumer op itself moved onto every shape-valid subset and permutation of
          the producer's operands (`pushes`): sum(a - b) -> sum(a) - sum(b), and the false
          sum(exp(a)) -> exp(sum(a)) that the verifier rejects.

A shape-validity filter is built in: an intermediate whose dims are not all fixed extents, or
whose rank exceeds every operand's and the output's, is not proposed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from axon.dialects.form.generic_form import LoopDim
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Read, ScalarExpr
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import (
    Factor,
    Fold,
    Group,
    NameSupply,
    compose,
    factors,
    flatten_sums,
    free_vars,
    int_exprs,
    output_dims,
    product,
    split_finalize,
    substitute,
)
from axon.nugraph.materialize import materialize
from axon.nugraph.ops import node_semantics
from axon.nugraph.term import Term


@dataclass(frozen=True)
class Candidate:
    """A proposed replacement for the consumer's value, and the move that produced it."""

    move: str
    term: Term


def size_symbols(g: EGraph) -> frozenset[str]:
    return frozenset(s for c in g.classes.values() for d in c.type.shape for s in d.symbols())


def generate(g: EGraph, consumer: ENode, producers: Mapping[int, ENode]) -> list[Candidate]:
    """Candidates for the value of `consumer` with the given producers substituted."""
    cls = g.lookup(consumer)
    assert cls is not None
    supply = NameSupply(size_symbols(g))
    out = output_dims(g, cls, supply)
    composed = compose(g, consumer, producers, out, supply)
    flat = flatten_sums(composed, supply)
    moves: list[tuple[str, ScalarExpr]] = []
    if _fusion_absorbs(g, consumer, producers):
        moves += [("fuse", composed), ("fuse", flat)]
    hoisted = hoist(flat, supply)
    if hoisted != flat:
        moves.append(("hoist", hoisted))
    moves += [("split", hoist(e, supply)) for e in at_folds(flat, lambda f: splits(f, supply))]
    scope = _scope(out, flat)
    moves += [("sink", hoist(e, supply))
              for e in at_products(flat, lambda fs: sinks(fs, scope, supply))]
    moves += [("factor", hoist(e, supply))
              for e in at_sums(flat, lambda c: distribute(c, scope, supply))]
    ranks = [len(g.type_of(c).shape) for c in consumer.children]
    ranks += [len(g.type_of(c).shape) for p in producers.values() for c in p.children]
    max_rank = max([len(out), *ranks])
    dtype = g.type_of(cls).dtype
    seen: set[Term] = set()
    found: list[Candidate] = []
    for move, expr in moves:
        term = materialize(g, expr, out, dtype, supply, max_rank)
        if term is None or term in seen:
            continue
        seen.add(term)
        found.append(Candidate(move, term))
    for term in pushes(g, consumer, producers):
        if term not in seen:
            seen.add(term)
            found.append(Candidate("push", term))
    return found


def pushes(g: EGraph, consumer: ENode, producers: Mapping[int, ENode]) -> list[Term]:
    """Push the consumer into every shape-valid subset of the producer's operands, under every
    shape-valid permutation of them: C(P(a, b), w) -> P(C(a, w), b), P(a, C(b, w)),
    P(C(a, w), C(b, w)), P(b, C(a, w)), ... Most are false; the verifier sorts them out."""
    if len(producers) != 1:
        return []
    if node_semantics(consumer, [g.type_of(c) for c in consumer.children]).form.reduction is None:
        # elementwise-through-elementwise pushes only re-associate scalings (x*a*b = x*b*a ...),
        # which grows the graph without end; reductions are where pushing saves work
        return []
    ((p_cls, p),) = producers.items()
    want = g.type_of(g.lookup(consumer) or p_cls)
    out: list[Term] = []
    positions = range(len(p.children))
    for size in range(1, len(p.children) + 1):
        for subset in itertools.combinations(positions, size):
            inner: dict[int, Term] = {}
            for k in subset:
                t = Term(consumer.op, consumer.attrs, tuple(
                    p.children[k] if c == p_cls else c for c in consumer.children))
                if _type(g, t) is None:
                    break
                inner[k] = t
            else:
                args: list[Term | int] = [inner.get(k, p.children[k]) for k in positions]
                for perm in set(itertools.permutations(range(len(args)))):
                    t = Term(p.op, p.attrs, tuple(args[i] for i in perm))
                    if _type(g, t) == want:
                        out.append(t)
    return out


def _type(g: EGraph, t: Term) -> object | None:
    try:
        return t.result_type(g)
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def _fusion_absorbs(g: EGraph, consumer: ENode, producers: Mapping[int, ENode]) -> bool:
    """Fusion is proposed where it removes work rather than only merging kernels (that is the
    later fuse stage's job, and proposing every elementwise merge would flood the graph): a
    producer that only moves data (its body a single read: transpose, broadcast, reshape, slice),
    or a reduction feeding a reduction of the same kind (merged reductions)."""
    consumer_form = node_semantics(consumer, [g.type_of(c) for c in consumer.children]).form
    for p in producers.values():
        form = node_semantics(p, [g.type_of(c) for c in p.children]).form
        if form.reduction is None and isinstance(form.body, Read):
            return True
        if form.reduction is not None and form.reduction == consumer_form.reduction:
            return True
    return False


# ---- where moves apply -------------------------------------------------------------------------
def at_folds(expr: ScalarExpr, fn: Callable[[Fold], list[ScalarExpr]]) -> Iterator[ScalarExpr]:
    """`expr` with one fold replaced by each of fn(fold), for every fold in it."""
    if isinstance(expr, Fold):
        yield from fn(expr)
        for b in at_folds(expr.body, fn):
            yield Fold(expr.kind, expr.dims, b, expr.finalize)
    elif isinstance(expr, Group):
        for b in at_folds(expr.body, fn):
            yield Group(expr.dims, b)
    elif isinstance(expr, Call):
        for i, a in enumerate(expr.args):
            for v in at_folds(a, fn):
                yield Call(expr.fn, (*expr.args[:i], v, *expr.args[i + 1:]), expr.param)


def at_products(expr: ScalarExpr, fn: Callable[[list[Factor]], list[list[Factor]]]
                ) -> Iterator[ScalarExpr]:
    """`expr` with one maximal product replaced by each of fn(its factors)."""
    fs = factors(expr)
    if len(fs) > 1:
        for new in fn(fs):
            yield product(new)
        for i, f in enumerate(fs):
            for v in at_products(f.expr, fn):
                yield product([*fs[:i], Factor(v, f.power), *fs[i + 1:]])
        return
    if isinstance(expr, Fold):
        for b in at_products(expr.body, fn):
            yield Fold(expr.kind, expr.dims, b, expr.finalize)
    elif isinstance(expr, Group):
        for b in at_products(expr.body, fn):
            yield Group(expr.dims, b)
    elif isinstance(expr, Call):
        for i, a in enumerate(expr.args):
            for v in at_products(a, fn):
                yield Call(expr.fn, (*expr.args[:i], v, *expr.args[i + 1:]), expr.param)


def at_sums(expr: ScalarExpr, fn: Callable[[Call], list[ScalarExpr]]) -> Iterator[ScalarExpr]:
    """`expr` with one add/sub call replaced by each of fn(call)."""
    if isinstance(expr, Call):
        if expr.fn in ("add", "sub"):
            yield from fn(expr)
        for i, a in enumerate(expr.args):
            for v in at_sums(a, fn):
                yield Call(expr.fn, (*expr.args[:i], v, *expr.args[i + 1:]), expr.param)
    elif isinstance(expr, Fold):
        for b in at_sums(expr.body, fn):
            yield Fold(expr.kind, expr.dims, b, expr.finalize)
    elif isinstance(expr, Group):
        for b in at_sums(expr.body, fn):
            yield Group(expr.dims, b)


# ---- the moves ---------------------------------------------------------------------------------
def hoist(expr: ScalarExpr, supply: NameSupply) -> ScalarExpr:
    """Move factors that do not depend on an add-fold's dims (and scaling finalizers) out of it,
    everywhere in `expr`."""
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(hoist(a, supply) for a in expr.args), expr.param)
    if isinstance(expr, Group):
        return Group(expr.dims, hoist(expr.body, supply))
    if not isinstance(expr, Fold):
        return expr
    body = hoist(expr.body, supply)
    if expr.kind != "add":
        return Fold(expr.kind, expr.dims, body, expr.finalize)
    split = split_finalize(Fold(expr.kind, expr.dims, body, expr.finalize))
    if split is None:
        return Fold(expr.kind, expr.dims, body, expr.finalize)
    plain, scale = split
    own = {d.name for d in expr.dims}
    inside = [f for f in factors(plain.body) if free_vars(f.expr, supply) & own]
    outside = [f for f in factors(plain.body) if not free_vars(f.expr, supply) & own]
    if not inside:
        return Fold(expr.kind, expr.dims, body, expr.finalize)
    if not outside and not scale:
        return plain
    return product([Factor(Fold("add", expr.dims, product(inside)), 1), *outside, *scale])


def splits(fold: Fold, supply: NameSupply) -> list[ScalarExpr]:
    """Reduce a proper subset of an add-fold's dims first, over the factors that mention them."""
    if fold.kind != "add" or fold.finalize is not None or len(fold.dims) < 2:
        return []
    out: list[ScalarExpr] = []
    names = [d.name for d in fold.dims]
    for size in range(1, len(fold.dims)):
        for chosen in itertools.combinations(fold.dims, size):
            first = {d.name for d in chosen}
            rest = [d for d in fold.dims if d.name not in first]
            bound_vars = {s for d in fold.dims for s in (d.lower.symbols() | d.upper.symbols())}
            if bound_vars & set(names):
                continue  # triangular domains stay whole
            fs = factors(fold.body)
            inner = [f for f in fs if free_vars(f.expr, supply) & first]
            outer = [f for f in fs if not free_vars(f.expr, supply) & first]
            if not inner or any(f.power < 0 for f in inner):
                continue
            reduced = Factor(Fold("add", chosen, product(inner)), 1)
            # the partial reduction takes the place of its first factor, keeping operand order
            at = next(k for k, f in enumerate(fs) if f in inner)
            kept = [f for k, f in enumerate(fs) if f in outer or k == at]
            out.append(Fold("add", tuple(rest),
                            product([reduced if f is fs[at] else f for f in kept])))
    return out


def sinks(fs: list[Factor], scope: Mapping[str, LoopDim], supply: NameSupply
          ) -> list[list[Factor]]:
    """Move one factor onto another read that carries all its dims (grouped as one op)."""
    out: list[list[Factor]] = []
    for i, f in enumerate(fs):
        f_vars = free_vars(f.expr, supply)
        if not f_vars:
            continue  # constants are hoisted, not sunk
        for j, h in enumerate(fs):
            if i == j or h.power != 1 or not isinstance(h.expr, Read):
                continue
            bare = [x.as_symbol for x in h.expr.index]
            h_vars = [s for s in bare if s is not None and supply.is_var(s)]
            if not f_vars <= set(h_vars) or len(set(h_vars)) != len(h_vars):
                continue
            if not free_vars(h.expr, supply) <= set(h_vars):
                # a variable only inside a compound index (x[i, H + j]) would be no dim of the
                # group: its op would read `j` as a size that nothing binds
                continue
            if any(s not in scope for s in h_vars):
                continue
            dims = tuple(scope[s] for s in h_vars)
            grouped = Group(dims, product([h, f]))
            rest = [x for k, x in enumerate(fs) if k not in (i, j)]
            out.append([*rest[:min(i, j)], Factor(grouped, 1), *rest[min(i, j):]])
    return out


def distribute(call: Call, scope: Mapping[str, LoopDim], supply: NameSupply
               ) -> list[ScalarExpr]:
    """sum_D a*b (+|-) sum_D' a*c  ->  sum_D a*(b (+|-) c), with and without (b +|- c) as its
    own op, for every matching of D' onto D under which a factor is common."""
    lhs, rhs = call.args
    if not (isinstance(lhs, Fold) and isinstance(rhs, Fold)):
        return []
    if (lhs.kind, rhs.kind) != ("add", "add") or lhs.finalize or rhs.finalize:
        return []
    if len(lhs.dims) != len(rhs.dims):
        return []
    out: list[ScalarExpr] = []
    for perm in itertools.permutations(range(len(lhs.dims))):
        pairs = [(rhs.dims[k], lhs.dims[perm[k]]) for k in range(len(rhs.dims))]
        if any((a.lower, a.upper) != (b.lower, b.upper) for a, b in pairs):
            continue
        env = {a.name: IntExpr.sym(b.name) for a, b in pairs}
        left = factors(lhs.body)
        right = factors(substitute(rhs.body, env))
        common = [f for f in left if f in right]
        if not common:
            continue
        rest_l = [f for f in left if f not in common]
        rest_r = list(right)
        for f in common:
            rest_r.remove(f)
        combined = Call(call.fn, (product(rest_l), product(rest_r)))
        out.append(Fold("add", lhs.dims, product([*common, Factor(combined, 1)])))
        dims = _appearance_dims(combined, scope, supply)
        if dims is not None:
            out.append(Fold("add", lhs.dims,
                            product([*common, Factor(Group(dims, combined), 1)])))
    return out


def _appearance_dims(expr: ScalarExpr, scope: Mapping[str, LoopDim], supply: NameSupply
                     ) -> tuple[LoopDim, ...] | None:
    """The loop dims `expr` mentions, in order of first appearance (the layout of a new op)."""
    order: list[str] = []
    for i in int_exprs(expr):
        for s in sorted(i.symbols()):
            if supply.is_var(s) and s not in order:
                order.append(s)
    if any(s not in scope for s in order):
        return None
    return tuple(scope[s] for s in order)


def _scope(out: tuple[LoopDim, ...], expr: ScalarExpr) -> dict[str, LoopDim]:
    """Every loop dim of the expression by name: the output's, then each fold's."""
    scope = {d.name: d for d in out}

    def visit(e: ScalarExpr) -> None:
        if isinstance(e, (Fold, Group)):
            scope.update({d.name: d for d in e.dims})
            visit(e.body)
        elif isinstance(e, Call):
            for a in e.args:
                visit(a)

    visit(expr)
    return scope
