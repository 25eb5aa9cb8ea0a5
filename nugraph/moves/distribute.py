"""The distribute move: an add-reduction of a sum or difference is the sum or difference of the
reductions,

    sum_n (a + b)  ->  sum_n a + sum_n b

the inverse of `factor`. Each term then meets the other moves alone: a row sum of a linear
layer's output, `sum_n (sum_k x[m,k] w[n,k] + bias[n])`, becomes `sum_n sum_k x w + sum_n bias`,
whose first term `split` turns into a matrix-vector product `x @ rowsum(w)` (Forge's problem
08) where the whole was a GEMM followed by a reduction.
"""

from __future__ import annotations

from axon.dialects.form.scalar import Call, ScalarExpr
from axon.nugraph.candidates import Candidate, at_folds
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import Fold
from axon.nugraph.moves.hoist import hoist
from axon.nugraph.moves.sites import PairSite


class DistributeMove:
    """Every distribution of an add-reduction over the sum or difference it reduces."""

    name = "distribute"
    site = PairSite

    def propose(self, graph: EGraph, site: PairSite) -> list[Candidate]:
        c = site.composition(graph)
        return site.materialized(graph, self.name, [
            hoist(e, c.supply) for e in at_folds(c.flat, distribute)])


def distribute(fold: Fold) -> list[ScalarExpr]:
    """sum_D (a +|- b) -> sum_D a +|- sum_D b (a fold with a finalize is left whole)."""
    body = fold.body
    if fold.kind != "add" or fold.finalize is not None:
        return []
    if not (isinstance(body, Call) and body.fn in ("add", "sub") and len(body.args) == 2):
        return []
    a, b = body.args
    return [Call(body.fn, (Fold("add", fold.dims, a), Fold("add", fold.dims, b)), body.param)]
