"""The hoist move: factors of an add-reduction's body that do not depend on the reduced dims
move out of it:

    sum_k x[i,k] s[i] w[k,j]  ->  s[i] * sum_k x[i,k] w[k,j]   (a row scaling after a matmul)

`hoist` is also the normal form the other reshaping moves (split, sink, factor) put their
results in.
"""

from __future__ import annotations

from axon.dialects.form.scalar import Call, ScalarExpr
from axon.nugraph.candidates import Candidate
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import (
    Factor,
    Fold,
    Group,
    NameSupply,
    factors,
    free_vars,
    product,
    split_finalize,
)
from axon.nugraph.moves.sites import PairSite


class HoistMove:
    """The composition with every reduction-independent factor hoisted, when that changes it."""

    name = "hoist"
    site = PairSite

    def propose(self, graph: EGraph, site: PairSite) -> list[Candidate]:
        composition = site.composition(graph)
        hoisted = hoist(composition.flat, composition.supply)
        if hoisted == composition.flat:
            return []
        return site.materialized(graph, self.name, [hoisted])


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
