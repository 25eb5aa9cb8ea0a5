"""Extraction: the best program in a nu-graph under a pluggable cost, DAG-aware, and the top-k.

1. Tree costs by fixed point (cost of a node = its own cost + its children's class costs); with
   every non-input node costing more than zero, the chosen nodes form an acyclic program even when
   the graph has cycles (`x * 1 = x` puts a class inside its own node).
2. DAG cost of a choice = the sum over the *distinct* classes it reaches, so a shared subterm
   counts once. Local search switches one class (on small graphs, also two classes) at a time to
   another node while that lowers the DAG cost and keeps the program acyclic.
3. Top-k: the best program and its distinct one-class deviations, ranked by DAG cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from axon.nugraph.cost import NodeCost
from axon.nugraph.egraph import EGraph

Choice = dict[int, int]  # canonical class id -> node id


@dataclass(frozen=True)
class Extraction:
    """A program read out of the graph: for each class it reaches, the node chosen, and its cost."""

    roots: tuple[int, ...]
    choice: tuple[tuple[int, int], ...]
    cost: float

    def chosen(self) -> Choice:
        return dict(self.choice)


def tree_costs(g: EGraph, cost: NodeCost) -> tuple[dict[int, float], Choice]:
    """Per-class least tree cost and the node achieving it (fixed point over the whole graph)."""
    best: dict[int, float] = {c: math.inf for c in g.class_ids()}
    pick: Choice = {}
    changed = True
    while changed:
        changed = False
        for c in g.class_ids():
            for nid in g.class_nodes(c):
                node = g.nodes[nid]
                total = cost(g, nid) + sum(best[g.find(ch)] for ch in node.children)
                if total < best[c] - 1e-18:
                    best[c], pick[c] = total, nid
                    changed = True
    return best, pick


def reachable(g: EGraph, roots: Sequence[int], choice: Choice) -> list[int] | None:
    """Classes reached from roots under `choice`, children first; None on a cycle or a class
    without a choice."""
    order: list[int] = []
    state: dict[int, int] = {}  # 1 = on the stack, 2 = done

    def visit(c: int) -> bool:
        c = g.find(c)
        s = state.get(c)
        if s == 2:
            return True
        if s == 1 or c not in choice:
            return False
        state[c] = 1
        for ch in g.nodes[choice[c]].children:
            if not visit(ch):
                return False
        state[c] = 2
        order.append(c)
        return True

    for r in roots:
        if not visit(r):
            return None
    return order


def dag_cost(g: EGraph, roots: Sequence[int], choice: Choice, cost: NodeCost) -> float:
    """Cost of the program `choice` picks, each reached class counted once (inf on a cycle)."""
    order = reachable(g, roots, choice)
    if order is None:
        return math.inf
    return sum(cost(g, choice[c]) for c in order)


def _freeze(g: EGraph, roots: Sequence[int], choice: Choice, cost: NodeCost) -> Extraction:
    order = reachable(g, roots, choice) or []
    kept = tuple(sorted((c, choice[c]) for c in order))
    return Extraction(tuple(g.find(r) for r in roots), kept,
                      sum(cost(g, n) for _, n in kept))


#: graphs with at most this many e-nodes also try switching two classes at once, which finds
#: sharing that no single switch pays for (two consumers moving onto one common subterm)
PAIR_SEARCH_NODES = 150


def extract_best(g: EGraph, roots: Sequence[int], cost: NodeCost,
                 max_passes: int = 4) -> Extraction:
    """The least-DAG-cost acyclic program for `roots` found by tree costs plus local search."""
    _, choice = tree_costs(g, cost)
    roots = [g.find(r) for r in roots]
    current = dag_cost(g, roots, choice, cost)
    if math.isinf(current):
        raise ValueError("no finite program for the roots (a class without a finite node)")
    options = [(c, nid) for c in g.class_ids() for nid in g.class_nodes(c)]
    pairs = len(options) <= PAIR_SEARCH_NODES
    for _ in range(max_passes):
        improved = False
        for i, (c, nid) in enumerate(options):
            if choice.get(c) == nid:
                continue
            trial = {**choice, c: nid}
            value = dag_cost(g, roots, trial, cost)
            if value < current - 1e-15:
                choice, current, improved = trial, value, True
                continue
            if not pairs:
                continue
            for c2, nid2 in options[i + 1:]:
                if c2 == c or trial.get(c2) == nid2:
                    continue
                both = {**trial, c2: nid2}
                value = dag_cost(g, roots, both, cost)
                if value < current - 1e-15:
                    choice, current, improved = both, value, True
                    break
        if not improved:
            break
    return _freeze(g, roots, choice, cost)


def extract_top_k(g: EGraph, roots: Sequence[int], cost: NodeCost, k: int) -> list[Extraction]:
    """Up to k distinct programs, cheapest first: the best one and its one-class deviations."""
    best = extract_best(g, roots, cost)
    _, tree_pick = tree_costs(g, cost)
    base = {**tree_pick, **best.chosen()}
    seen = {best.choice}
    found = [best]
    for c, chosen in best.choice:
        for nid in g.class_nodes(c):
            if nid == chosen:
                continue
            trial = dict(base)
            trial[c] = nid
            if reachable(g, best.roots, trial) is None:
                continue
            e = _freeze(g, best.roots, trial, cost)
            if e.choice not in seen:
                seen.add(e.choice)
                found.append(e)
    found.sort(key=lambda e: e.cost)
    return found[:k]
