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

import heapq
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from axon.nugraph.cost import NodeCost
from axon.nugraph.egraph import EGraph
from axon.nugraph.traversal import Cycle, postorder

Choice = dict[int, int]  # canonical class id -> node id


@dataclass(frozen=True)
class Extraction:
    """A program read out of the graph: for each class it reaches, the node chosen, and its cost."""

    roots: tuple[int, ...]
    choice: tuple[tuple[int, int], ...]
    cost: float

    def chosen(self) -> Choice:
        return dict(self.choice)


#: a tree cost too large for a float: a deep program that reuses values counts them once per use
#: (10^300 and more); it stays finite, which is what says a class has a program at all
_SATURATED = sys.float_info.max


#: graphs with at most this many e-nodes are small: their tree costs are a fixed point by passes,
#: their local search also switches two classes at once (which finds sharing that no single
#: switch pays for: two consumers moving onto one common subterm), and their top-k sums every
#: runner-up that may rank afresh
PAIR_SEARCH_NODES = 150


def tree_costs(g: EGraph, cost: NodeCost) -> tuple[dict[int, float], Choice]:
    """Per-class least tree cost and the node achieving it.

    On small graphs, a fixed point by passes over the classes in id order (a tie goes to the
    e-node that reached the least cost first). On large ones the passes would be as many as the
    program is deep (a class improves through a newer class, visited after it), so classes are
    finished in order of cost instead (Knuth's generalization of Dijkstra's algorithm): each
    e-node is priced once, when its last child class is finished."""
    if g.num_nodes <= PAIR_SEARCH_NODES:
        return _tree_costs_by_passes(g, cost)
    return _tree_costs_in_order(g, cost)


def _tree_costs_by_passes(g: EGraph, cost: NodeCost) -> tuple[dict[int, float], Choice]:
    best: dict[int, float] = {c: math.inf for c in g.class_ids()}
    pick: Choice = {}
    changed = True
    while changed:
        changed = False
        for c in g.class_ids():
            for nid in g.class_nodes(c):
                total = _total(cost(g, nid), [best[g.find(ch)] for ch in g.nodes[nid].children])
                if total < best[c] - 1e-18:
                    best[c], pick[c] = total, nid
                    changed = True
    return best, pick


def _tree_costs_in_order(g: EGraph, cost: NodeCost) -> tuple[dict[int, float], Choice]:
    best: dict[int, float] = {c: math.inf for c in g.class_ids()}
    pick: Choice = {}
    readers: dict[int, list[int]] = {}  # class -> the e-nodes reading it, once per read
    missing: dict[int, int] = {}  # e-node -> its reads of classes not finished yet
    ready: list[tuple[float, int, int]] = []  # (tree cost, e-node, class)
    for c in g.class_ids():
        for nid in g.class_nodes(c):
            children = [g.find(ch) for ch in g.nodes[nid].children]
            missing[nid] = len(children)
            for ch in children:
                readers.setdefault(ch, []).append(nid)
            if not children:
                heapq.heappush(ready, (cost(g, nid), nid, c))
    while ready:
        total, nid, c = heapq.heappop(ready)
        if c in pick:
            continue
        best[c], pick[c] = total, nid
        for reader in readers.get(c, []):
            missing[reader] -= 1
            if missing[reader] == 0:
                costs = [best[g.find(ch)] for ch in g.nodes[reader].children]
                heapq.heappush(ready, (_total(cost(g, reader), costs), reader,
                                       g.class_of(reader)))
    return best, pick


def _total(own: float, children: list[float]) -> float:
    """An e-node's tree cost: its own and its children's (saturated, see `_SATURATED`)."""
    total = own + sum(children)
    if total == math.inf and math.inf not in children:
        return _SATURATED
    return total


def reachable(g: EGraph, roots: Sequence[int], choice: Choice) -> list[int] | None:
    """Classes reached from roots under `choice`, children first; None on a cycle or a class
    without a choice."""

    def children(c: int) -> list[int]:
        if c not in choice:
            raise _NoChoice
        return [g.find(ch) for ch in g.nodes[choice[c]].children]

    try:
        return postorder([g.find(r) for r in roots], children, on_cycle="raise")
    except (Cycle, _NoChoice):
        return None


class _NoChoice(Exception):
    """A reached class has no chosen e-node."""


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



#: how far an incrementally summed cost may drift from the same cost summed afresh, relative to
#: the program's cost (float sums in another order; the drift is some 1e-16 per term)
_DRIFT = 1e-9

#: asked between steps of the local search and of top-k; True stops them (the run's clock)
Stop = Callable[[], bool]


def _never() -> bool:
    return False


def extract_best(g: EGraph, roots: Sequence[int], cost: NodeCost, max_passes: int = 4,
                 stop: Stop = _never) -> Extraction:
    """The least-DAG-cost acyclic program for `roots` found by tree costs plus local search.
    The local search's first pass always completes (on large graphs it prices each switch
    incrementally, so a pass is about linear in the graph); `stop()` turning true ends it
    before any further pass."""
    return _extract_best(g, roots, cost, max_passes, stop)[0]


def _extract_best(g: EGraph, roots: Sequence[int], cost: NodeCost, max_passes: int,
                  stop: Stop) -> tuple[Extraction, Choice]:
    """The best extraction, and the tree-cost choice it started from."""
    cost = _per_node(cost)
    _, tree_pick = tree_costs(g, cost)
    choice = dict(tree_pick)
    roots = [g.find(r) for r in roots]
    current = dag_cost(g, roots, choice, cost)
    if math.isinf(current):
        raise ValueError("no finite program for the roots (a class without a finite node)")
    options = [(c, nid) for c in g.class_ids() for nid in g.class_nodes(c)]
    if len(options) <= PAIR_SEARCH_NODES:
        choice = _pair_search(g, roots, cost, choice, current, options, max_passes, stop)
    else:
        choice = _switch_search(g, roots, cost, choice, options, max_passes, stop)
    return _freeze(g, roots, choice, cost), tree_pick


def _pair_search(g: EGraph, roots: list[int], cost: NodeCost, choice: Choice, current: float,
                 options: list[tuple[int, int]], max_passes: int, stop: Stop) -> Choice:
    """Local search over every switch of one class and of two classes (small graphs)."""
    for step in range(max_passes):
        if step > 0 and stop():
            break
        improved = False
        for i, (c, nid) in enumerate(options):
            if choice.get(c) == nid:
                continue
            trial = {**choice, c: nid}
            value = dag_cost(g, roots, trial, cost)
            if value < current - 1e-15:
                choice, current, improved = trial, value, True
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
    return choice


def _switch_search(g: EGraph, roots: list[int], cost: NodeCost, choice: Choice,
                   options: list[tuple[int, int]], max_passes: int, stop: Stop) -> Choice:
    """Local search over switches of one class (large graphs), each priced and made by what it
    changes (`_Program`): the pair search's trials sum the whole program afresh, which on a
    graph of tens of thousands of e-nodes takes longer than the search that grew it."""
    program = _Program(g, roots, choice, cost)
    for step in range(max_passes):
        if step > 0 and stop():
            break
        improved = False
        for c, nid in options:
            if choice.get(c) == nid:
                continue
            change = program.change(c, nid)
            if change is not None and change < -1e-15:
                program.switch(c, nid)
                improved = True
        if not improved:
            break
    return choice


class _Program:
    """The program an acyclic `choice` reaches from `roots`, held so that switching one class to
    another e-node is priced (and made) by what it adds and what it drops, not by walking it all
    again.

    A class is reached while some reached class's chosen e-node (or a root) reads it: `readers`
    counts those reads. A switch of class c to e-node n reads n's children instead of the old
    e-node's; the classes that come into reach and those whose readers all go are what changes.
    The switch closes a cycle when c comes into reach from n's children; a reached class before
    c in a children-first order (`position`) cannot read c, so that walk stops there. A switch
    made keeps the order: what comes into reach is placed between its children and c (when its
    children all come before c; else the order is taken afresh)."""

    def __init__(self, g: EGraph, roots: list[int], choice: Choice, cost: NodeCost) -> None:
        self.g, self.roots, self.choice, self.cost = g, roots, choice, cost
        self.position: dict[int, float] = {}
        self.readers: dict[int, int] = {}
        self._walk()

    def _walk(self) -> None:
        """Take the order and the readers afresh."""
        order = reachable(self.g, self.roots, self.choice)
        assert order is not None, "the program to improve is acyclic"
        self.position = {c: float(i) for i, c in enumerate(order)}
        self.readers = dict.fromkeys(order, 0)
        for r in self.roots:
            self.readers[r] += 1
        for c in order:
            for ch in self._reads(self.choice[c]):
                self.readers[ch] += 1

    def _reads(self, nid: int) -> list[int]:
        return [self.g.find(ch) for ch in self.g.nodes[nid].children]

    def change(self, c: int, nid: int) -> float | None:
        """The cost change of choosing e-node `nid` for class `c`; None when that program is
        cyclic or reaches a class without a choice."""
        if c not in self.position:
            return 0.0  # not part of the program
        found = self._effects(c, nid)
        return None if found is None else found[0]

    def switch(self, c: int, nid: int) -> None:
        """Choose e-node `nid` for class `c` (a switch `change` priced)."""
        found = self._effects(c, nid)
        assert found is not None, "the switch keeps the program acyclic"
        _, readers, came, went = found
        for d, k in readers.items():
            self.readers[d] = self.readers.get(d, 0) + k
        for d in went:
            del self.readers[d], self.position[d]
        self.choice[c] = nid
        limit = self.position[c]
        arrived = set(came)
        for d in postorder(came, lambda d: [ch for ch in self._reads(self.choice[d])
                                            if ch in arrived]):
            below = max((self.position[ch] for ch in self._reads(self.choice[d])), default=-1.0)
            if below >= limit:
                break
            self.position[d] = below + (limit - below) / 2
        else:
            if all(self.position[ch] < limit for ch in self._reads(nid)):
                return
        self._walk()

    def _effects(self, c: int, nid: int
                 ) -> tuple[float, dict[int, int], list[int], list[int]] | None:
        """(cost change, change of each class's readers, classes that come into reach, classes
        that go out of it) of choosing `nid` for the reached class `c`; None when cyclic or a
        class reached has no choice."""
        if self._closes_cycle(c, nid):
            return None
        delta = self.cost(self.g, nid) - self.cost(self.g, self.choice[c])
        extra: dict[int, int] = {}
        came: list[int] = []
        work = self._reads(nid)
        while work:  # what comes into reach
            d = work.pop()
            before = self.readers.get(d, 0) + extra.get(d, 0)
            extra[d] = extra.get(d, 0) + 1
            if before == 0:
                if d not in self.choice:
                    return None
                came.append(d)
                delta += self.cost(self.g, self.choice[d])
                work.extend(self._reads(self.choice[d]))
        went: list[int] = []
        work = self._reads(self.choice[c])
        while work:  # what goes out of reach
            d = work.pop()
            extra[d] = extra.get(d, 0) - 1
            if self.readers.get(d, 0) + extra[d] == 0:
                went.append(d)
                delta -= self.cost(self.g, self.choice[d])
                work.extend(self._reads(self.choice[d]))
        return delta, extra, came, went

    def _closes_cycle(self, c: int, nid: int) -> bool:
        limit = self.position[c]
        seen: set[int] = set()
        work = self._reads(nid)
        while work:
            d = work.pop()
            if d == c:
                return True
            if d in seen or self.position.get(d, limit) < limit or d not in self.choice:
                continue
            seen.add(d)
            work.extend(self._reads(self.choice[d]))
        return False


def _per_node(cost: NodeCost) -> NodeCost:
    """`cost`, asked once per e-node (the graph does not change while it is extracted from)."""
    known: dict[int, float] = {}

    def node_cost(g: EGraph, nid: int) -> float:
        value = known.get(nid)
        if value is None:
            value = known[nid] = cost(g, nid)
        return value

    return node_cost


def extract_top_k(g: EGraph, roots: Sequence[int], cost: NodeCost, k: int,
                  stop: Stop = _never) -> list[Extraction]:
    """Up to k distinct programs, cheapest first: the best one and its one-class deviations
    (those priced before `stop()` turns true)."""
    return extract_ranking(g, roots, cost, k, stop)[1]


def extract_ranking(g: EGraph, roots: Sequence[int], cost: NodeCost, k: int,
                    stop: Stop = _never) -> tuple[Extraction, list[Extraction]]:
    """`extract_best` and `extract_top_k` at once (one search for the best program)."""
    cost = _per_node(cost)
    best, tree_pick = _extract_best(g, roots, cost, 4, stop)
    base = {**tree_pick, **best.chosen()}
    program = _Program(g, list(best.roots), base, cost)
    deviations: list[tuple[float, int, int]] = []  # (estimated cost, class, e-node)
    others = [(c, nid) for c, chosen in best.choice for nid in g.class_nodes(c) if nid != chosen]
    for c, nid in others:
        if stop():
            break
        change = program.change(c, nid)
        if change is not None:
            deviations.append((best.cost + change, c, nid))
    if g.num_nodes <= PAIR_SEARCH_NODES:
        # every deviation that can rank among the k cheapest is summed afresh
        estimates = sorted([best.cost, *(d[0] for d in deviations)])
        bound = estimates[min(k, len(estimates)) - 1] + 2 * _DRIFT * abs(best.cost)
        deviations = [d for d in deviations if d[0] <= bound]
    else:
        # the k - 1 cheapest by their incremental price (ties: in the order they were priced)
        deviations = sorted(deviations, key=lambda d: d[0])[:k - 1]
    seen = {best.choice}
    found = [best]
    for _, c, nid in deviations:
        trial = dict(base)
        trial[c] = nid
        e = _freeze(g, best.roots, trial, cost)
        if e.choice not in seen:
            seen.add(e.choice)
            found.append(e)
    found.sort(key=lambda e: e.cost)
    return best, found[:k]
