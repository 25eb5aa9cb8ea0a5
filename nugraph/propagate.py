"""Operator propagation: grow the nu-graph with every candidate the verifier proves equal.

Each iteration takes every producer/consumer pair in the graph (an e-node and an e-node of one of
its operand classes; and, for two-operand consumers, a reduction in each operand class together),
generates candidates generically (`candidates.generate`), and admits each one only on a proof:
its new e-nodes are justified by that proof and its root is merged into the consumer's class.
Refuted and unknown candidates change nothing. Each iteration then factors common operands
(`merge.find_merges`): two e-nodes that differ only in one operand get the merged computation over
the concatenated operands, each original admitted as a slice of it on its own proof. The run stops
when an iteration admits nothing (saturated) or a limit of the `Budget` is reached; the `Report`
says which.

    report = propagate(g, Budget(max_iterations=6), Prover())
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from axon.nugraph.admission import prove_and_record
from axon.nugraph.candidates import generate
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.merge import Merge, find_merges
from axon.nugraph.ops import node_semantics
from axon.nugraph.prover import NumericRejection, Prover
from axon.nugraph.runner import (
    ITERATION_LIMIT,
    NODE_LIMIT,
    SATURATED,
    TIME_LIMIT,
    Budget,
    Report,
)
from axon.nugraph.term import Term, insert_term, lookup_term
from axon.verifier import Refuted

Pair = tuple[int, dict[int, int]]  # consumer node id, {operand class: producer node id}


class _Stop(Exception):
    """A limit was reached; carries which."""


#: called after every iteration with the report so far and the graph (progress output)
Progress = Callable[[Report, EGraph], None]


def propagate(g: EGraph, budget: Budget | None = None, prover: Prover | None = None,
              progress: Progress | None = None) -> Report:
    """Run propagation on `g` in place; returns the report."""
    budget = budget or Budget()
    prover = prover or Prover(timeout_ms=budget.proof_timeout_ms)
    report = Report()
    done_pairs: set[tuple[ENode, tuple[tuple[int, ENode], ...]]] = set()
    tried: set[tuple[int, Term]] = set()
    merges_tried: set[tuple[ENode, ...]] = set()
    derived: set[int] = set()
    try:
        for _ in range(budget.max_iterations):
            report.iterations += 1
            admitted = 0
            for consumer_id, producers in list(_pairs(g, derived)):
                key = (g.canonical(g.nodes[consumer_id]),
                       tuple(sorted((g.find(c), g.canonical(g.nodes[p]))
                                    for c, p in producers.items())))
                if key in done_pairs:
                    continue
                done_pairs.add(key)
                admitted += _propagate_pair(g, consumer_id, producers, budget, prover, report,
                                            tried)
            g.rebuild()
            for merge in list(find_merges(g, merges_tried)):
                admitted += _admit_merge(g, merge, budget, prover, report, derived)
            g.rebuild()
            if progress is not None:
                progress(report, g)
            if admitted == 0:
                report.finish(SATURATED)
                return report
        report.finish(ITERATION_LIMIT)
    except _Stop as stop:
        g.rebuild()
        report.finish(str(stop))
    return report


def _propagate_pair(g: EGraph, consumer_id: int, producers: dict[int, int], budget: Budget,
                    prover: Prover, report: Report, tried: set[tuple[int, Term]]) -> int:
    consumer = g.canonical(g.nodes[consumer_id])
    producer_nodes = {g.find(c): g.canonical(g.nodes[p]) for c, p in producers.items()}
    original = Term.of(consumer, [Term.of(producer_nodes[c]) if c in producer_nodes else c
                                  for c in consumer.children])
    admitted = 0
    for cand in generate(g, consumer, producer_nodes):
        report.candidates += 1
        cls = g.class_of(consumer_id)
        term = cand.term.canonical(g)
        if lookup_term(g, term) == cls or (cls, term) in tried:
            report.known += 1
            continue
        tried.add((cls, term))
        if report.elapsed() > budget.time_limit_s:
            raise _Stop(TIME_LIMIT)
        if g.num_nodes + term.size() > budget.max_nodes:
            raise _Stop(NODE_LIMIT)
        start = time.perf_counter()
        verdict, pid = prove_and_record(g, prover, cand.move, original, term)
        report.proof_seconds += time.perf_counter() - start
        if pid is None:
            _count_rejection(report, verdict)
            continue
        report.proved += 1
        report.by_move[cand.move] = report.by_move.get(cand.move, 0) + 1
        _, root = insert_term(g, term, pid)
        if g.union(consumer_id, root, pid):
            admitted += 1
    return admitted


def _admit_merge(g: EGraph, merge: Merge, budget: Budget, prover: Prover, report: Report,
                 derived: set[int]) -> int:
    """Prove each slice of a merge equal to its original; admit the slices that are proved.

    The merged computation and the concatenation enter the graph with the first proof; their
    classes join `derived`, whose e-nodes propagation leaves alone (see `_pairs`).
    """
    admitted = 0
    for node_id, half in zip(merge.nodes, merge.halves, strict=True):
        report.candidates += 1
        cls = g.class_of(node_id)
        term = half.canonical(g)
        if lookup_term(g, term) == cls:
            report.known += 1
            continue
        if report.elapsed() > budget.time_limit_s:
            raise _Stop(TIME_LIMIT)
        if g.num_nodes + term.size() > budget.max_nodes:
            raise _Stop(NODE_LIMIT)
        original = Term.of(g.canonical(g.nodes[node_id]))
        start = time.perf_counter()
        verdict, pid = prove_and_record(g, prover, "merge", original, term, extra_leaves=True)
        report.proof_seconds += time.perf_counter() - start
        if pid is None:
            _count_rejection(report, verdict)
            continue
        report.proved += 1
        report.by_move["merge"] = report.by_move.get("merge", 0) + 1
        _, root = insert_term(g, term, pid)
        derived.add(insert_term(g, merge.merged, pid)[0])
        derived.add(insert_term(g, merge.concat, pid)[0])
        if g.union(node_id, root, pid):
            admitted += 1
    return admitted


def _count_rejection(report: Report, verdict: object) -> None:
    if isinstance(verdict, NumericRejection):
        report.refuted += 1
        report.tested_out += 1
    elif isinstance(verdict, Refuted):
        report.refuted += 1
    else:
        report.unknown += 1


def _pairs(g: EGraph, derived: set[int]) -> Iterator[Pair]:
    """Every consumer e-node with one producer e-node of one operand class, and two-operand
    consumers with a reduction in each operand class (where sums over one domain can combine).

    Consumers in `derived` classes (a merged computation, a concatenation made by a merge) are
    left alone: pushing the merged computation back into the concatenation only restates the
    originals (f(x, concat(w1, w2)) = concat(f(x, w1), f(x, w2))), and every later move would
    then re-derive the same values through concat/slice round trips without end. Their consumers
    (the slices, and epilogues reading the merged result) still propagate."""
    derived_now = {g.find(c) for c in derived}
    reduces: dict[int, bool] = {}

    def is_reduction(nid: int) -> bool:
        if nid not in reduces:
            node = g.nodes[nid]
            reduces[nid] = not node.is_input and node_semantics(
                node, [g.type_of(c) for c in node.children]).form.reduction is not None
        return reduces[nid]

    for c in g.class_ids():
        if g.find(c) in derived_now:
            continue
        for nid in list(g.class_nodes(c)):
            node = g.canonical(g.nodes[nid])
            if node.is_input:
                continue
            operands = list(dict.fromkeys(node.children))
            for p in operands:
                if p == c:
                    continue
                for pid in g.class_nodes(p):
                    if not g.nodes[pid].is_input:
                        yield nid, {p: pid}
            if len(operands) == 2 and c not in operands:
                p1, p2 = operands
                for a in g.class_nodes(p1):
                    for b in g.class_nodes(p2):
                        if is_reduction(a) and is_reduction(b):
                            yield nid, {p1: a, p2: b}
