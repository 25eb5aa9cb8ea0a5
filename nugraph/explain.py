"""Explanations: why two e-nodes are equal, as the chain of proofs that merged their classes.

Every union recorded the two e-nodes it equated and the reason (egg's "proof forest", flattened to
an edge list). A path between two e-nodes in that edge graph is an explanation; a `congruence` step
is explained further by the explanations of its children, which differ pairwise.

    for step in explain(g, a, b):
        print(step.describe(g))    # ax.sum(...) == ax.matmul(...) by p3 (push ...)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from axon.nugraph.egraph import CONGRUENCE, EGraph
from axon.nugraph.traversal import Nested, run_nested


@dataclass(frozen=True)
class Step:
    """One link of a chain: e-node `a` equals e-node `b` by `reason`; a congruence step carries
    the chains that equate its children."""

    a: int
    b: int
    reason: str
    children: tuple[tuple[Step, ...], ...] = field(default=())

    def describe(self, g: EGraph, depth: int = 0) -> str:
        lines: list[str] = []
        stack: list[tuple[Step, int]] = [(self, depth)]
        while stack:
            step, level = stack.pop()
            why = step.reason if step.reason == CONGRUENCE else (
                f"{step.reason} ({g.proofs[step.reason].move})")
            lines.append(f"{'  ' * level}{g.nodes[step.a].label()} == "
                         f"{g.nodes[step.b].label()} by {why}")
            nested = [(s, level + 1) for chain in step.children for s in chain]
            stack.extend(reversed(nested))
        return "\n".join(lines)

    def proof_ids(self) -> set[str]:
        """Every proof this step relies on, including through congruence."""
        ids: set[str] = set()
        stack: list[Step] = [self]
        while stack:
            step = stack.pop()
            if step.reason != CONGRUENCE:
                ids.add(step.reason)
            stack.extend(s for chain in step.children for s in chain)
        return ids


def explain(g: EGraph, a: int, b: int) -> list[Step]:
    """The chain of steps from e-node `a` to e-node `b` (empty when a == b).

    Raises ValueError when the two are not in one class: there is nothing to explain.
    """
    if g.class_of(a) != g.class_of(b):
        raise ValueError(f"e-nodes {a} and {b} are not equal in this graph")
    return run_nested(_chain(g, _Edges(g), a, b, set()))


class _Edges:
    """The union edges by e-node, and the e-node each class was made with."""

    def __init__(self, g: EGraph) -> None:
        self.adjacency: dict[int, list[tuple[int, int]]] = {}
        for i, e in enumerate(g.edges):
            self.adjacency.setdefault(e.a, []).append((e.b, i))
            self.adjacency.setdefault(e.b, []).append((e.a, i))
        self.first: dict[int, int] = {}
        for nid, c in enumerate(g.node_class):
            self.first.setdefault(c, nid)


def _chain(g: EGraph, edges: _Edges, a: int, b: int, active: set[tuple[int, int]]
           ) -> Nested[list[Step]]:
    """The steps from `a` to `b`; a congruence step not already being explained further up
    (`active`, shared down the nesting: each call removes what it added) carries the chains
    between its children's classes. Written for `run_nested`: programs nest deeply."""
    if a == b:
        return []
    previous: dict[int, tuple[int, int]] = {a: (a, -1)}
    queue = deque([a])
    while queue and b not in previous:
        n = queue.popleft()
        for m, i in edges.adjacency.get(n, []):
            if m not in previous:
                previous[m] = (n, i)
                queue.append(m)
    if b not in previous:
        raise ValueError(f"no recorded chain from e-node {a} to {b}")
    added: list[tuple[int, int]] = []
    path: list[Step] = []
    n = b
    while n != a:
        p, i = previous[n]
        reason = g.edges[i].reason
        children: list[tuple[Step, ...]] = []
        if reason == CONGRUENCE and (p, n) not in active:
            active.add((p, n))
            added.append((p, n))
            for x, y in zip(g.nodes[p].children, g.nodes[n].children, strict=True):
                if x != y:
                    # between the first e-nodes ever added to the two (now equal) classes
                    chain = yield _chain(g, edges, edges.first[x], edges.first[y], active)
                    children.append(tuple(chain))
        path.append(Step(p, n, reason, tuple(children)))
        n = p
    active.difference_update(added)
    return list(reversed(path))
