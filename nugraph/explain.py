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


@dataclass(frozen=True)
class Step:
    """One link of a chain: e-node `a` equals e-node `b` by `reason`; a congruence step carries
    the chains that equate its children."""

    a: int
    b: int
    reason: str
    children: tuple[tuple[Step, ...], ...] = field(default=())

    def describe(self, g: EGraph, depth: int = 0) -> str:
        pad = "  " * depth
        why = self.reason if self.reason == CONGRUENCE else (
            f"{self.reason} ({g.proofs[self.reason].move})")
        text = f"{pad}{g.nodes[self.a].label()} == {g.nodes[self.b].label()} by {why}"
        for chain in self.children:
            for step in chain:
                text += "\n" + step.describe(g, depth + 1)
        return text

    def proof_ids(self) -> set[str]:
        """Every proof this step relies on, including through congruence."""
        ids = set() if self.reason == CONGRUENCE else {self.reason}
        for chain in self.children:
            for step in chain:
                ids |= step.proof_ids()
        return ids


def explain(g: EGraph, a: int, b: int) -> list[Step]:
    """The chain of steps from e-node `a` to e-node `b` (empty when a == b).

    Raises ValueError when the two are not in one class: there is nothing to explain.
    """
    if g.class_of(a) != g.class_of(b):
        raise ValueError(f"e-nodes {a} and {b} are not equal in this graph")
    return _chain(g, a, b, set())


def _chain(g: EGraph, a: int, b: int, active: set[tuple[int, int]]) -> list[Step]:
    if a == b:
        return []
    adjacency: dict[int, list[tuple[int, int]]] = {}
    for i, e in enumerate(g.edges):
        adjacency.setdefault(e.a, []).append((e.b, i))
        adjacency.setdefault(e.b, []).append((e.a, i))
    previous: dict[int, tuple[int, int]] = {a: (a, -1)}
    queue = deque([a])
    while queue and b not in previous:
        n = queue.popleft()
        for m, i in adjacency.get(n, []):
            if m not in previous:
                previous[m] = (n, i)
                queue.append(m)
    if b not in previous:
        raise ValueError(f"no recorded chain from e-node {a} to {b}")
    path: list[Step] = []
    n = b
    while n != a:
        p, i = previous[n]
        reason = g.edges[i].reason
        children: tuple[tuple[Step, ...], ...] = ()
        if reason == CONGRUENCE and (p, n) not in active:
            active = active | {(p, n)}
            children = tuple(tuple(_class_chain(g, x, y, active))
                             for x, y in zip(g.nodes[p].children, g.nodes[n].children,
                                             strict=True) if x != y)
        path.append(Step(p, n, reason, children))
        n = p
    return list(reversed(path))


def _class_chain(g: EGraph, ca: int, cb: int, active: set[tuple[int, int]]) -> list[Step]:
    """A chain between the first e-nodes ever added to two (now equal) classes."""
    na = next(i for i, c in enumerate(g.node_class) if c == ca)
    nb = next(i for i, c in enumerate(g.node_class) if c == cb)
    return _chain(g, na, nb, active)
