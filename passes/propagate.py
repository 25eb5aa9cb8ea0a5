"""`propagate`: SMT-proved operator propagation in a nu-graph, then extraction.

For every `func.func` of `ax` ops (or holding a `nu.graph`, e.g. from `build-nugraph` or an
earlier `propagate{emit="graph"}`): build the nu-graph, propagate (every candidate admitted only on
a proof, see `axon.nugraph.propagate`), and replace the function by what `emit` asks for:

- `emit="best"` (default): the cheapest extracted program under the roofline cost of `device` at
  `sizes` (symbols not given are 1024);
- `emit="graph"`: a function holding the whole `nu.graph` (classes' `best` marks the extraction);
- `emit="top-k"`: the best program plus up to `top_k - 1` runners-up as `@<name>_k1`, `@<name>_k2`.

Every emitted program (the best one, each top-k one, the one `emit="graph"` marks) passes the
float-error check (`axon.nugraph.numerics`): run in its own dtype on small inputs of realistic
magnitude, its error against the exact (float64) result of the input program is within the dtype's
tolerance, or within a small factor of the input program's own error. A proof holds over the reals
only; a candidate that fails the check is skipped for the next one in the cost ranking, and the
input program is the last resort.

With `report=true`, stderr gets a progress line per iteration and then one summary line per
function: candidates, proved, refuted, unknown, time, which limit (if any) cut the search, the
cost before and after, the emitted programs' float error and how many candidates the float-error
check rejected, e.g. `float error 3.1e-07 (f32 tolerance 2e-05); 0 rejected for float error`.

Before:

    func.func @f(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M], f32> {
      %y = ax.matmul %x, %w : (...) -> !ax.tensor<[M, N], f32>
      %s = ax.sum %y {axes = array<i64: 1>, keepdims = false} : (...) -> !ax.tensor<[M], f32>
      func.return %s : !ax.tensor<[M], f32>
    }

After `-p propagate`:

    func.func @f(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M], f32> {
      %0 = ax.sum %w {axes = array<i64: 1>, keepdims = false} : (...) -> !ax.tensor<[K], f32>
      %1 = ax.matmul %x, %0 : (...) -> !ax.tensor<[M], f32>
      func.return %1 : !ax.tensor<[M], f32>
    }
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from axon.dialects import nu
from axon.nugraph.convert import ConvertError
from axon.nugraph.cost import RooflineCost
from axon.nugraph.egraph import EGraph
from axon.nugraph.nu_ir import GraphReadError
from axon.nugraph.propagate import Progress
from axon.nugraph.prover import Prover
from axon.nugraph.runner import Budget, Report
from axon.nugraph.session import Checked, Session
from axon.targets.profiles import profile_names

EMITS = ("best", "graph", "top-k")


@dataclass(frozen=True)
class PropagatePass(ModulePass):
    """Grow each function's nu-graph with proved reorderings and emit the best program(s)."""

    name = "propagate"

    max_iterations: int = Budget.max_iterations
    max_nodes: int = Budget.max_nodes
    time_limit: float = Budget.time_limit_s
    """Seconds for the whole search of one function."""
    proof_timeout_ms: int = Budget.proof_timeout_ms
    device: str = "h200"
    sizes: str = ""
    """Size bindings for the cost, e.g. "M=1024,K=4096"."""
    emit: str = "best"
    top_k: int = 3
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.emit not in EMITS:
            raise DiagnosticException(f"propagate: emit={self.emit!r} is not one of "
                                      f"{', '.join(EMITS)}")
        if self.device not in profile_names():
            raise DiagnosticException(f"propagate: unknown device {self.device!r}; known: "
                                      f"{', '.join(profile_names())}")
        sizes = _parse_sizes(self.sizes)
        budget = Budget(self.max_iterations, self.max_nodes, self.time_limit,
                        self.proof_timeout_ms)
        for func_op in [f for f in op.walk() if isinstance(f, FuncOp)]:
            cost = RooflineCost(self.device, sizes)
            # one prover reads a printed graph back (re-proving it) and grows it: one cache
            prover = Prover(timeout_ms=budget.proof_timeout_ms)
            try:
                if any(isinstance(o, nu.GraphOp) for o in func_op.walk()):
                    session = Session.from_graph_function(func_op, cost, prover)
                else:
                    session = Session.from_function(func_op, cost)
            except GraphReadError as err:
                raise DiagnosticException(str(err)) from None
            except ConvertError as err:
                raise DiagnosticException(f"propagate: {err}") from None
            report = session.run(budget, prover,
                                 progress=_progress(func_op) if self.report else None)
            emitted = (session.checked_top_k(self.top_k) if self.emit == "top-k"
                       else [session.checked_best()])
            best = emitted[0].extraction
            if self.report:
                print(f"propagate: @{session.imported.name}: {session.graph.num_classes} "
                      f"classes, {session.graph.num_nodes} e-nodes; {report.summary()}; cost "
                      f"{session.input_cost() * 1e6:.2f}us -> {best.cost * 1e6:.2f}us; "
                      f"{_float_summary(emitted, len(session.float_rejected))}",
                      file=sys.stderr)
            if self.emit == "graph":
                Rewriter.replace_op(func_op, session.graph_ir(marked=best))
            elif self.emit == "best":
                Rewriter.replace_op(func_op, session.export(best))
            else:
                new = [session.export(c.extraction, session.imported.name if i == 0
                                      else f"{session.imported.name}_k{i}")
                       for i, c in enumerate(emitted)]
                Rewriter.replace_op(func_op, new)


def _float_summary(emitted: list[Checked], rejected: int) -> str:
    """The report's float-error part: the first emitted program's error, the runners-up's."""
    text = emitted[0].float_error.describe()
    others = [c.float_error.error for c in emitted[1:]]
    if others:
        text += ", runners-up " + ", ".join("not checked" if e is None else f"{e:.1e}"
                                            for e in others)
    return f"{text}; {rejected} rejected for float error"


def _parse_sizes(text: str) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, _, value = item.partition("=")
        if not value.strip().isdigit():
            raise DiagnosticException(f"propagate: sizes entry {item!r} is not NAME=INTEGER")
        sizes[name.strip()] = int(value)
    return sizes


def _progress(func_op: FuncOp) -> Progress:
    """One stderr line per propagation iteration of `func_op`."""
    name = func_op.sym_name.data

    def show(report: Report, g: EGraph) -> None:
        print(f"propagate: @{name}: iteration {report.iterations}: {g.num_classes} classes, "
              f"{g.num_nodes} e-nodes; {report.candidates} candidates, {report.proved} proved "
              f"so far ({report.elapsed():.1f}s)", file=sys.stderr, flush=True)

    return show

