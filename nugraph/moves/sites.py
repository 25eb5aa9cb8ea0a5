"""Sites: what a move looks at, and where the runner finds them.

- `PairSite`: a consumer e-node and a producer e-node in one of its operand classes (or, for a
  two-operand consumer, a reduction in each operand class, where sums over one domain can
  combine). The reordering moves compose the two and reshape the composition.
- `GroupSite`: e-nodes of the input program that apply one op to the same classes except at one
  operand position (`merge.merge_groups`), which the merge move factors.

A site is looked at once, between two admissions: what it computes from the graph (the canonical
e-nodes, the original term, the composition) is computed on first use and kept for the moves that
follow at the same site.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field

from axon.dialects.form.scalar import ScalarExpr
from axon.nugraph.candidates import Candidate, Composition
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.merge import merge_groups
from axon.nugraph.ops import node_semantics
from axon.nugraph.term import Term


@dataclass(frozen=True)
class Mark:
    """A point in a graph's growth: how many e-nodes and union edges it had. The runner lists a
    kind of site again only where the graph changed after the mark of its last listing (every
    site listed then has been visited by every move, unless the scheduler banned one)."""

    nodes: int
    edges: int

    @staticmethod
    def of(g: EGraph) -> Mark:
        return Mark(len(g.nodes), len(g.edges))

    def changed(self, g: EGraph) -> set[int]:
        """The classes whose sites may differ from what they were at the mark: those that
        gained an e-node or took part in a union, and those holding an e-node over one of them
        (its canonical form changed)."""
        touched = {g.class_of(n) for n in range(self.nodes, len(g.nodes))}
        touched |= {g.class_of(e.a) for e in g.edges[self.edges:]}
        if not touched:
            return touched
        above = {c for c in g.class_ids() for nid in g.class_nodes(c)
                 if any(g.find(ch) in touched for ch in g.nodes[nid].children)}
        return touched | above


@dataclass
class PairSite:
    """Consumer e-node `consumer_id` with producer e-node `producers[c]` in operand class `c`."""

    consumer_id: int
    producers: Mapping[int, int]
    _nodes: tuple[ENode, dict[int, ENode]] | None = field(default=None, repr=False)
    _original: Term | None = field(default=None, repr=False)
    _composition: Composition | None = field(default=None, repr=False)

    @staticmethod
    def find_all(g: EGraph, fenced: set[int], since: Mark | None = None) -> Iterator[PairSite]:
        """Every consumer e-node with one producer e-node of one operand class, and two-operand
        consumers with a reduction in each operand class (with `since`, only consumers new
        after the mark or over a class that changed after it: `Mark.changed`).

        Consumers in `fenced` classes (a merged computation, a concatenation made by a merge) are
        left alone: pushing the merged computation back into the concatenation only restates the
        originals (f(x, concat(w1, w2)) = concat(f(x, w1), f(x, w2))), and every later move would
        then re-derive the same values through concat/slice round trips without end. Their
        consumers (the slices, and epilogues reading the merged result) still propagate."""
        fenced_now = {g.find(c) for c in fenced}
        changed = None if since is None else since.changed(g)
        reduces: dict[int, bool] = {}

        def is_reduction(nid: int) -> bool:
            if nid not in reduces:
                node = g.nodes[nid]
                reduces[nid] = not node.is_input and node_semantics(
                    node, [g.type_of(c) for c in node.children]).form.reduction is not None
            return reduces[nid]

        for c in g.class_ids():
            if g.find(c) in fenced_now:
                continue
            for nid in list(g.class_nodes(c)):
                if changed is not None and since is not None and nid < since.nodes and not any(
                        g.find(ch) in changed for ch in g.nodes[nid].children):
                    continue  # its sites are as they were at the mark
                node = g.canonical(g.nodes[nid])
                if node.is_input:
                    continue
                operands = list(dict.fromkeys(node.children))
                for p in operands:
                    if p == c:
                        continue
                    for pid in g.class_nodes(p):
                        if not g.nodes[pid].is_input:
                            yield PairSite(nid, {p: pid})
                if len(operands) == 2 and c not in operands:
                    p1, p2 = operands
                    for a in g.class_nodes(p1):
                        for b in g.class_nodes(p2):
                            if is_reduction(a) and is_reduction(b):
                                yield PairSite(nid, {p1: a, p2: b})

    def key(self, g: EGraph) -> Hashable:
        """The site up to equality of classes: a pair looked at once is not looked at again."""
        return (g.canonical(g.nodes[self.consumer_id]),
                tuple(sorted((g.find(c), g.canonical(g.nodes[p]))
                             for c, p in self.producers.items())))

    def nodes(self, g: EGraph) -> tuple[ENode, dict[int, ENode]]:
        """The canonical consumer, and the canonical producers by canonical operand class."""
        if self._nodes is None:
            self._nodes = (g.canonical(g.nodes[self.consumer_id]),
                           {g.find(c): g.canonical(g.nodes[p]) for c, p in self.producers.items()})
        return self._nodes

    def original(self, g: EGraph) -> Term:
        """The consumer over its producers: what every candidate here is proved equal to."""
        if self._original is None:
            consumer, producers = self.nodes(g)
            self._original = Term.of(consumer, [Term.of(producers[c]) if c in producers else c
                                                for c in consumer.children])
        return self._original

    def composition(self, g: EGraph) -> Composition:
        """The consumer and its producers composed into one index expression."""
        if self._composition is None:
            self._composition = Composition.of(g, *self.nodes(g))
        return self._composition

    def candidate(self, g: EGraph, move: str, term: Term) -> Candidate:
        """`term` proposed by `move` for the consumer's value."""
        return Candidate(move, term, self.consumer_id, self.original(g))

    def materialized(self, g: EGraph, move: str, exprs: list[ScalarExpr]
                     ) -> list[Candidate]:
        """Candidates of `move` for reshapings `exprs` of the composition that materialize."""
        composition = self.composition(g)
        terms = [composition.materialize(g, e) for e in exprs]
        return [self.candidate(g, move, t) for t in terms if t is not None]


@dataclass(frozen=True)
class GroupSite:
    """Input-program e-nodes `nodes` that differ only in their operand at `position`."""

    nodes: tuple[int, ...]
    position: int
    listed_key: tuple[ENode, ...]
    """The canonical e-nodes when the group was listed (the merges of one iteration are listed
    before any is admitted, so a group's key does not depend on the order they are looked at)."""

    @staticmethod
    def find_all(g: EGraph, fenced: set[int], since: Mark | None = None) -> Iterator[GroupSite]:
        """Every group `merge.merge_groups` finds (fencing does not apply: only input e-nodes
        are grouped); with `since`, none when no union happened after the mark (the groups
        are then as they were)."""
        if since is not None and len(g.edges) == since.edges:
            return
        for nodes, position in merge_groups(g):
            yield GroupSite(nodes, position, tuple(g.canonical(g.nodes[n]) for n in nodes))

    def key(self, g: EGraph) -> Hashable:
        """The group as listed: a group looked at once is not looked at again."""
        return self.listed_key


#: the kinds of site, in the order the runner visits them in each iteration
SITE_KINDS: tuple[type[PairSite] | type[GroupSite], ...] = (PairSite, GroupSite)
