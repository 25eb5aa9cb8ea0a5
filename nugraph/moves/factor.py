"""The factor move: two reductions over equal domains sharing a factor combine:

    sum_k x a + sum_k x b  ->  sum_k x (a + b)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from axon.dialects.form.generic_form import LoopDim
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, ScalarExpr, index_exprs, substitute
from axon.nugraph.candidates import Candidate, at_sums
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import (
    Factor,
    Fold,
    Group,
    NameSupply,
    factors,
    product,
)
from axon.nugraph.moves.hoist import hoist
from axon.nugraph.moves.sites import PairSite


class FactorMove:
    """Every factoring of every sum or difference of reductions in the composition."""

    name = "factor"
    site = PairSite

    def propose(self, graph: EGraph, site: PairSite) -> list[Candidate]:
        c = site.composition(graph)
        return site.materialized(graph, self.name, [
            hoist(e, c.supply)
            for e in at_sums(c.flat, lambda call: distribute(call, c.scope, c.supply))])


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
    for i in index_exprs(expr):
        for s in sorted(i.symbols()):
            if supply.is_var(s) and s not in order:
                order.append(s)
    if any(s not in scope for s in order):
        return None
    return tuple(scope[s] for s in order)
