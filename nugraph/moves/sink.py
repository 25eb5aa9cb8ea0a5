"""The sink move: a factor moves onto another factor (a read indexed by bare loop variables
only) that carries all its dims, the two becoming one op:

    sum_k t[i,k] g[k] w[k,j]  ->  sum_k t[i,k] (g[k] w[k,j])
"""

from __future__ import annotations

from collections.abc import Mapping

from axon.dialects.form.generic_form import LoopDim
from axon.dialects.form.scalar import Read
from axon.nugraph.candidates import Candidate, at_products
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import Factor, Group, NameSupply, free_vars, product
from axon.nugraph.moves.hoist import hoist
from axon.nugraph.moves.sites import PairSite


class SinkMove:
    """Every sink within every product of the composition."""

    name = "sink"
    site = PairSite

    def propose(self, graph: EGraph, site: PairSite) -> list[Candidate]:
        c = site.composition(graph)
        return site.materialized(graph, self.name, [
            hoist(e, c.supply)
            for e in at_products(c.flat, lambda fs: sinks(fs, c.scope, c.supply))])


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
