"""The push move: a reducing consumer op itself moved onto every shape-valid subset and
permutation of the producer's operands: sum(a - b) -> sum(a) - sum(b), and the false
sum(exp(a)) -> exp(sum(a)) that the verifier rejects. It works on op terms, not on the
composition.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from axon.nugraph.candidates import Candidate
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.moves.sites import PairSite
from axon.nugraph.ops import node_semantics
from axon.nugraph.term import Term

#: producers with more operands than this are not pushed into
MAX_ARITY = 4


class PushMove:
    """The consumer pushed into its producer's operands."""

    name = "push"
    site = PairSite

    def propose(self, graph: EGraph, site: PairSite) -> list[Candidate]:
        return [site.candidate(graph, self.name, t) for t in pushes(graph, *site.nodes(graph))]


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
    if len(p.children) > MAX_ARITY:
        return []  # subsets and orders of a concatenation of many grow factorially
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
