"""Operator propagation: grow the nu-graph with every candidate the verifier proves equal.

Propagation is the runner (`runner.Runner`: the loop, the budget, the per-iteration record) with
the default moves (`moves.default_moves`): each iteration takes every producer/consumer pair in
the graph (an e-node and an e-node of one of its operand classes; and, for two-operand consumers,
a reduction in each operand class together) and lets the reordering moves propose candidates
generically from the generic forms; then it factors common operands (the merge move: two e-nodes
that differ only in one operand get the merged computation over the concatenated operands, each
original admitted as a slice of it on its own proof). Every candidate is admitted only on a proof
(`admission.admit`): its new e-nodes are justified by that proof and its root is merged into the
class it was proposed for. Refuted and unknown candidates change nothing. The run stops when an
iteration admits nothing (saturated) or a limit of the `Budget` is reached; the `Report` says which.

    report = propagate(g, Budget(max_iterations=6), Prover())
"""

from __future__ import annotations

from axon.nugraph.egraph import EGraph
from axon.nugraph.moves import default_moves
from axon.nugraph.prover import Prover
from axon.nugraph.runner import Budget, Progress, Report, Runner, Scheduler, SimpleScheduler

__all__ = ["Progress", "propagate"]


def propagate(g: EGraph, budget: Budget | None = None, prover: Prover | None = None,
              progress: Progress | None = None, scheduler: Scheduler | None = None) -> Report:
    """Run propagation with every default move on `g` in place; returns the report."""
    return Runner(g, budget or Budget(), prover, default_moves(), scheduler or SimpleScheduler(),
                  progress).run()
