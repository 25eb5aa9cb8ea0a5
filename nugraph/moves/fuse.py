"""The fuse move: the composition itself, one op where one generic form can hold it, when that
removes work: a transpose or a broadcast absorbed into its consumer, two reductions merged.
"""

from __future__ import annotations

from collections.abc import Mapping

from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.scalar import Read
from axon.nugraph.candidates import Candidate
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.moves.sites import PairSite
from axon.nugraph.ops import node_semantics


class FuseMove:
    """The composition, as composed and with nested sums flattened, where fusion absorbs work."""

    name = "fuse"
    site = PairSite

    def propose(self, graph: EGraph, site: PairSite) -> list[Candidate]:
        if not _fusion_absorbs(graph, *site.nodes(graph)):
            return []
        c = site.composition(graph)
        return site.materialized(graph, self.name, [c.composed, c.flat])


def _fusion_absorbs(g: EGraph, consumer: ENode, producers: Mapping[int, ENode]) -> bool:
    """Fusion is proposed where it removes work rather than only merging kernels (that is the
    later fuse stage's job, and proposing every elementwise merge would flood the graph): a
    producer that only moves data (its body a single read: transpose, broadcast, reshape, slice),
    a transpose of a reduction's result (`(x @ w).T`: the contraction writes the transposed
    result itself; a broadcast would recompute the reduction per copy), or a reduction
    feeding a reduction of the same kind (merged reductions)."""
    consumer_form = node_semantics(consumer, [g.type_of(c) for c in consumer.children]).form
    for p in producers.values():
        form = node_semantics(p, [g.type_of(c) for c in p.children]).form
        if form.reduction is None and isinstance(form.body, Read):
            return True
        if form.reduction is not None and (_permutes(consumer_form)
                                           or form.reduction == consumer_form.reduction):
            return True
    return False


def _permutes(form: GenericForm) -> bool:
    """The form is a transpose: it reads its operand at a permutation of its own dims, not in
    their order (`out[d0, d1] = in0[d1, d0]`; an identity read is a slice or a copy)."""
    body = form.body
    if form.reduction is not None or not isinstance(body, Read):
        return False
    names = [i.as_symbol or "" for i in body.index]
    own = [d.name for d in form.parallel]
    return len(names) == len(own) and sorted(names) == sorted(own) and names != own
