"""One propagation session over a function: build the graph, propagate, extract.

The entry point the pass, the benchmark script and the tests share:

    s = Session.from_function(func_op)
    s.run(Budget(time_limit_s=60))
    best = s.best()                  # Extraction, DAG cost under the roofline model
    new_func = s.export(best)        # a func.func of ax ops
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp

from axon.nugraph.convert import Imported, export_function, find_nodes, import_function
from axon.nugraph.cost import NodeCost, RooflineCost
from axon.nugraph.egraph import INPUT_PROOF, EGraph
from axon.nugraph.explain import Step, explain
from axon.nugraph.extract import Extraction, dag_cost, extract_best, extract_top_k
from axon.nugraph.nu_ir import graph_function, read_graph
from axon.nugraph.propagate import Progress, propagate
from axon.nugraph.prover import Prover
from axon.nugraph.runner import Budget, Report


@dataclass
class Session:
    """A graph holding one function, its input program's choice, and the cost used to rank."""

    graph: EGraph
    imported: Imported
    input_choice: dict[int, int]
    cost: NodeCost = field(default_factory=RooflineCost)
    report: Report | None = None

    @staticmethod
    def from_function(func_op: FuncOp, cost: NodeCost | None = None) -> Session:
        g = EGraph()
        imported = import_function(g, func_op)
        # the input program: for each class, its first e-node (the one imported)
        choice = {c: g.class_nodes(c)[0] for c in g.class_ids()}
        return Session(g, imported, choice, cost or RooflineCost())

    @staticmethod
    def from_graph_function(func_op: FuncOp, cost: NodeCost | None = None) -> Session:
        """A session over a function holding a `nu.graph` (printed by `graph_ir` or by
        `build-nugraph`); its input program is the `input` e-nodes."""
        g, imported = read_graph(func_op)
        choice = {}
        for c in g.class_ids():
            inputs = [n for n in g.class_nodes(c) if g.justification[n] == INPUT_PROOF]
            if inputs:
                choice[c] = inputs[0]
        return Session(g, imported, choice, cost or RooflineCost())

    @staticmethod
    def with_sizes(func_op: FuncOp, device: str, sizes: Mapping[str, int]) -> Session:
        return Session.from_function(func_op, RooflineCost(device, dict(sizes)))

    def run(self, budget: Budget | None = None, prover: Prover | None = None,
            progress: Progress | None = None) -> Report:
        self.report = propagate(self.graph, budget, prover, progress)
        return self.report

    def input_cost(self) -> float:
        """Cost of the program the graph was built from."""
        g = self.graph
        choice = {g.find(c): n for c, n in self.input_choice.items()}
        return dag_cost(g, self.imported.results, choice, self.cost)

    def best(self) -> Extraction:
        return extract_best(self.graph, self.imported.results, self.cost)

    def top_k(self, k: int) -> list[Extraction]:
        return extract_top_k(self.graph, self.imported.results, self.cost, k)

    def export(self, extraction: Extraction, name: str | None = None) -> FuncOp:
        return export_function(self.graph, extraction, name or self.imported.name,
                               self.imported.params, self.imported.param_names)

    def explain(self, a: FuncOp, b: FuncOp) -> list[Step]:
        """Why programs `a` and `b` (over this session's parameters) are equal: the chain of
        proofs between their result e-nodes. ValueError when either is not in the graph or
        they are not equal."""
        na = find_nodes(self.graph, a, self.imported.params)
        nb = find_nodes(self.graph, b, self.imported.params)
        if na is None or nb is None:
            raise ValueError("a program to explain is not in the graph")
        return [step for x, y in zip(na, nb, strict=True) for step in explain(self.graph, x, y)]

    def graph_ir(self, mark_best: bool = True) -> FuncOp:
        """The whole graph as a function holding a `nu.graph` (best choices marked)."""
        best = self.best().chosen() if mark_best else None
        return graph_function(self.graph, self.imported, best)
