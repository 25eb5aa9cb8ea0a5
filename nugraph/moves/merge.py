"""The merge move: e-nodes that differ only in one operand become slices of one computation over
the concatenated operands (`nugraph/merge.py` finds the groups and builds the merge):

    A = f(x, w1),  B = f(x, w2)  ==>  A = slice(f(x, concat(w1, w2)), ...),  B = slice(...)

Each slice is a candidate for its own e-node, proved on its own; the merged computation and the
concatenation come in with the first proof, fenced from the pair moves (`PairSite.find_all`).
"""

from __future__ import annotations

from axon.nugraph.candidates import Candidate
from axon.nugraph.egraph import EGraph
from axon.nugraph.merge import build_merge
from axon.nugraph.moves.sites import GroupSite
from axon.nugraph.term import Term


class MergeMove:
    """One slice of the merged computation per e-node of the group."""

    name = "merge"
    site = GroupSite

    def propose(self, graph: EGraph, site: GroupSite) -> list[Candidate]:
        merge = build_merge(graph, site.nodes, site.position)
        if merge is None:
            return []
        # the slice reads the other operands merged in, which its original ignores
        return [Candidate(self.name, half, node, Term.of(graph.canonical(graph.nodes[node])),
                          extra_leaves=True, derived=(merge.merged, merge.concat))
                for node, half in zip(merge.nodes, merge.halves, strict=True)]
