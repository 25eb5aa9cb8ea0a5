"""One propagation session over a function: build the graph, propagate, extract.

The entry point the pass, the benchmark script and the tests share:

    s = Session.from_function(func_op)
    s.run(Budget(max_proofs=500))
    best = s.best()                  # Extraction, DAG cost under the roofline model
    new_func = s.export(best)        # a func.func of ax ops

`checked_best()` / `checked_top_k(k)` walk the same cost ranking but skip every program that fails
the float-error check (`axon.nugraph.numerics`) against the input program, which is the fallback
and always passes; what they return carries the measured error.

After `run`, the budget's time limit holds for the whole session: past it, extraction's local
search ends after its first pass, top-k prices no more runners-up, and the walk down the ranking
checks no program after the first (the input program remains the fallback); `report.cut_after`
names what it cut short.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp

from axon.nugraph.convert import Imported, export_function, find_nodes, import_function
from axon.nugraph.cost import NodeCost, RooflineCost
from axon.nugraph.egraph import INPUT_PROOF, EGraph
from axon.nugraph.explain import Step, explain
from axon.nugraph.extract import (
    Extraction,
    dag_cost,
    extract_best,
    extract_ranking,
    extract_top_k,
    reachable,
)
from axon.nugraph.nu_ir import graph_function, read_graph
from axon.nugraph.numerics import FloatCheck, FloatError
from axon.nugraph.propagate import propagate
from axon.nugraph.prover import Prover
from axon.nugraph.runner import Budget, Progress, Report, Scheduler

#: how many programs past the k wanted the checked extractions look at down the cost ranking
#: before falling back to the input program
CHECK_DEPTH = 8


@dataclass(frozen=True)
class Checked:
    """An extracted program that passed the float-error check, and its measured error.

    The input program passes by definition (it is the fallback, and its own error is the bound
    it is held to), so it is measured only when `float_error` is read (a report prints it): a
    long program with nothing to propagate is not run six times for nothing."""

    extraction: Extraction
    measure: Callable[[], FloatError] = field(repr=False, compare=False)

    @property
    def float_error(self) -> FloatError:
        return self.measure()


@dataclass
class Session:
    """A graph holding one function, its input program's choice, and the cost used to rank.

    `float_rejected` maps each extraction (its choice) the float-error check rejected to the
    measured error."""

    graph: EGraph
    imported: Imported
    input_choice: dict[int, int]
    cost: NodeCost = field(default_factory=RooflineCost)
    report: Report | None = None
    float_rejected: dict[tuple[tuple[int, int], ...], FloatError] = field(default_factory=dict)
    _time_limit_s: float = field(default=math.inf, repr=False)
    _float_check: FloatCheck | None = field(default=None, repr=False)
    _float_errors: dict[tuple[tuple[int, int], ...], FloatError] = field(default_factory=dict,
                                                                         repr=False)
    _spare: dict[tuple[tuple[int, int], ...], FuncOp] = field(default_factory=dict, repr=False)
    """Programs exported for the float-error check that passed it, not yet handed out by
    `export` (exporting a large program is as dear as checking it)."""

    @staticmethod
    def from_function(func_op: FuncOp, cost: NodeCost | None = None) -> Session:
        g = EGraph()
        imported = import_function(g, func_op)
        # the input program: for each class, its first e-node (the one imported)
        choice = {c: g.class_nodes(c)[0] for c in g.class_ids()}
        return Session(g, imported, choice, cost or RooflineCost())

    @staticmethod
    def from_graph_function(func_op: FuncOp, cost: NodeCost | None = None,
                            prover: Prover | None = None) -> Session:
        """A session over a function holding a `nu.graph` (printed by `graph_ir` or by
        `build-nugraph`); its input program is the `input` e-nodes.

        The printed graph is not trusted: every class membership is re-proved with `prover` (pass
        the one the session will run with, to share its timeout and cache); GraphReadError (a
        ConvertError) when one is not proved."""
        g, imported = read_graph(func_op, prover)
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
            progress: Progress | None = None, scheduler: Scheduler | None = None) -> Report:
        """Propagate within `budget` (see `propagate`); the report is also `self.report`."""
        budget = budget or Budget()
        self._time_limit_s = budget.time_limit_s
        self._spare.clear()
        self.report = propagate(self.graph, budget, prover, progress, scheduler)
        return self.report

    def _clock(self, stage: str) -> Callable[[], bool]:
        """Whether the run's time limit has passed (recording that it cut `stage` short)."""

        def out_of_time() -> bool:
            report = self.report
            if report is None or report.elapsed() <= self._time_limit_s:
                return False
            report.cut(stage)
            return True

        return out_of_time

    def input_cost(self) -> float:
        """Cost of the program the graph was built from."""
        g = self.graph
        choice = {g.find(c): n for c, n in self.input_choice.items()}
        return dag_cost(g, self.imported.results, choice, self.cost)

    def best(self) -> Extraction:
        return extract_best(self.graph, self.imported.results, self.cost,
                            stop=self._clock("extraction"))

    def top_k(self, k: int) -> list[Extraction]:
        return extract_top_k(self.graph, self.imported.results, self.cost, k,
                             stop=self._clock("extraction"))

    def input_extraction(self) -> Extraction:
        """The input program as an extraction. Where propagation merged classes of the input
        program (`x * 1 = x`), each class keeps its earliest input e-node: operands are imported
        before their users, so the choice stays acyclic."""
        g = self.graph
        choice: dict[int, int] = {}
        for node in sorted(self.input_choice.values()):
            choice.setdefault(g.class_of(node), node)
        roots = [g.find(r) for r in self.imported.results]
        order = reachable(g, roots, choice)
        if order is None:
            raise ValueError("the input program is not acyclic in the graph")
        kept = tuple(sorted((c, choice[c]) for c in order))
        return Extraction(tuple(roots), kept, sum(self.cost(g, n) for _, n in kept))

    def float_error(self, extraction: Extraction) -> FloatError:
        """The float-error check of an extracted program against the input program (measured
        once per program)."""
        if self._float_check is None:
            original = self.input_extraction()
            self._spare[original.choice] = self._export(original, None)
            self._float_check = FloatCheck(self._spare[original.choice])
        if extraction.choice not in self._float_errors:
            program = self._spare.pop(extraction.choice, None) or self._export(extraction, None)
            error = self._float_check.measure(program)
            self._float_errors[extraction.choice] = error
            if error.ok:
                self._spare[extraction.choice] = program
        return self._float_errors[extraction.choice]

    def checked_best(self) -> Checked:
        """The cheapest program that passes the float-error check: the best extraction, else the
        next in the cost ranking, else the input program."""
        best, top = extract_ranking(self.graph, self.imported.results, self.cost, CHECK_DEPTH,
                                    stop=self._clock("extraction"))
        ranking = [best, *(e for e in top if e.choice != best.choice)]
        return self._checked(ranking, 1)[0]

    def checked_top_k(self, k: int) -> list[Checked]:
        """Up to k programs that pass the float-error check, cheapest first (the input program
        alone when none of the ranking does)."""
        return self._checked(self.top_k(k + CHECK_DEPTH), k)

    def _checked(self, ranking: list[Extraction], k: int) -> list[Checked]:
        kept: list[Checked] = []
        out_of_time = self._clock("float check")
        original = self.input_extraction()
        for i, e in enumerate(ranking):
            if i > 0 and out_of_time():
                break
            if e.choice != original.choice:
                error = self.float_error(e)
                if not error.ok:
                    self.float_rejected[e.choice] = error
                    continue
            if len(kept) < k:
                kept.append(self._kept(e))
        if not kept:
            kept.append(self._kept(original))
        return kept

    def _kept(self, extraction: Extraction) -> Checked:
        """`extraction` as a checked program whose error is `float_error`'s (memoized; the
        input program's is measured only when asked for)."""
        return Checked(extraction, lambda: self.float_error(extraction))

    def export(self, extraction: Extraction, name: str | None = None) -> FuncOp:
        """The extracted program as a new function (named `name`, default the input's)."""
        program = self._spare.pop(extraction.choice, None)
        if program is None:
            return self._export(extraction, name)
        program.sym_name = StringAttr(name or self.imported.name)
        return program

    def _export(self, extraction: Extraction, name: str | None) -> FuncOp:
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

    def graph_ir(self, mark_best: bool = True, marked: Extraction | None = None) -> FuncOp:
        """The whole graph as a function holding a `nu.graph`, with the choices of `marked`
        (default: the best extraction) marked unless `mark_best` is false."""
        best = (marked or self.best()).chosen() if mark_best else None
        return graph_function(self.graph, self.imported, best)
