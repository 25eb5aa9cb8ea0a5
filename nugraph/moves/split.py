"""The split move: an add-reduction over several dims reduces a subset first, over the factors
that mention it:

    sum_{k,j} x[i,k] w[k,j]  ->  sum_k x[i,k] (sum_j w[k,j])   (x @ rowsum(w))

and likewise sum_k (sum_r x a) b -> sum_r x (sum_k a b) (pushing a consumer into an operand of
its producer).
"""

from __future__ import annotations

import itertools

from axon.dialects.form.scalar import ScalarExpr
from axon.nugraph.candidates import Candidate, at_folds
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import Factor, Fold, NameSupply, factors, free_vars, product
from axon.nugraph.moves.hoist import hoist
from axon.nugraph.moves.sites import PairSite


class SplitMove:
    """Every split of every add-reduction of the composition."""

    name = "split"
    site = PairSite

    def propose(self, graph: EGraph, site: PairSite) -> list[Candidate]:
        c = site.composition(graph)
        return site.materialized(graph, self.name, [
            hoist(e, c.supply) for e in at_folds(c.flat, lambda f: splits(f, c.supply))])


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
