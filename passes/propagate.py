"""`propagate`: SMT-proved operator propagation in a nu-graph, then extraction.

For every `func.func` of `ax` ops (or holding a `nu.graph`, e.g. from `build-nugraph` or an
earlier `propagate{emit="graph"}`): build the nu-graph, propagate (every candidate admitted only on
a proof, see `axon.nugraph.propagate`), and replace the function by what `emit` asks for:

- `emit="best"` (default): the cheapest extracted program under the roofline cost of `device` at
  `sizes` (symbols not given are 1024; a name that is no size symbol of the program is an error);
- `emit="graph"`: a function holding the whole `nu.graph` (classes' `best` marks the extraction);
- `emit="top-k"`: the best program plus up to `top_k - 1` runners-up as `@<name>_k1`, `@<name>_k2`,
  each marked `axon.variant_of = @<name>` (the `tile` pass tiles them all and keeps the best).

Every emitted program (the best one, each top-k one, the one `emit="graph"` marks) passes the
float-error check (`axon.nugraph.numerics`): run in its own dtype on small inputs of realistic
magnitude, its error against the exact (float64) result of the input program is within the dtype's
tolerance, or within a small factor of the input program's own error. A proof holds over the reals
only; a candidate that fails the check is skipped for the next one in the cost ranking, and the
input program is the last resort.

Options are typed and checked when the pipeline is parsed (`axon.tools.pass_options`): a count
below 1, an unknown `device` or `emit`, or `sizes` that are not `NAME=INTEGER` entries are errors
before any work. A function whose search takes longer than a couple of seconds shows progress on
stderr when the command has progress lines on (`axon.tools.progress`; `--quiet` turns them off).

`cache` names a proof-cache file (`axon.verifier.cache`): proofs found in it are not redone, and
the run's verdicts are written back, so a second run of the same program proves nothing again.
The cache also keeps each function's result (the functions it is replaced by), keyed by the
function's text, the options, the device's profile data and Axon's code: a second run with the
same key takes the stored functions instead of searching again, as long as every proof the
result relies on is still in the cache and each function read back proves equal to the input
again (a graph read back with its memberships re-proved). The run that stores a result makes
that check itself, so the cache holds each of its queries (the two texts, the budget, the
code) with the obligation that decided it, and the later run is served those verdicts
without normalizing (`verifier.prove.query_key`). The search is bounded by counts
(`max_iterations`, `max_nodes`, `max_proofs` candidates taken to the prover), which stop it at
the same place in every run; a result is stored only when the search was not cut by its
safety-net clock (`time_limit`) and no proof's verdict was decided by a proof's safety-net
clock (a re-run might go further), so a stored result is what the search would find again. A
proof's budget is a count of work too (`proof_steps` normalization steps, `proof_rlimit` z3
resource units): a proof it stops is stopped again in every run, so it does not keep a result
from being stored; `proof_seconds` is the safety net. `report=true` always searches (its
lines describe the search).

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
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from axon.dialects import nu
from axon.nugraph.convert import ConvertError
from axon.nugraph.cost import DEFAULT_SIZE, RooflineCost
from axon.nugraph.egraph import EGraph
from axon.nugraph.nu_ir import GraphReadError
from axon.nugraph.propagate import Progress
from axon.nugraph.prover import Prover
from axon.nugraph.runner import TIME_LIMIT, Budget, Report
from axon.nugraph.session import Checked, Session
from axon.nugraph.stored import function_text, function_texts, stored_functions
from axon.passes.sizes import SIZES_VALID, check_size_names, parse_sizes, sizes_problem
from axon.targets.profiles import load_profile, unknown_profile
from axon.tools import progress
from axon.tools.pass_options import CheckedPass, option
from axon.verifier import ProofBudget, Proved, prove_equivalent
from axon.verifier.budget import SEARCH_BUDGET
from axon.verifier.cache import ProofCache, step_key
from axon.verifier.prove import ENCODING_REVISION


def _device_problem(name: str) -> str | None:
    return unknown_profile(name, "device")


@dataclass(frozen=True)
class PropagatePass(CheckedPass):
    """Grow each function's nu-graph with proved reorderings and emit the best program(s)."""

    name = "propagate"

    max_iterations: int = option(Budget.max_iterations, "propagation iterations per function",
                                 at_least=1)
    max_nodes: int = option(Budget.max_nodes, "e-nodes a function's graph may grow to",
                            at_least=1)
    max_proofs: int = option(Budget.max_proofs, "candidates one function's search takes to "
                             "the prover", at_least=1)
    time_limit: float = option(Budget.time_limit_s, "seconds after which one function's search "
                               "stops whatever its counts (its result is then not stored)",
                               above=0)
    proof_steps: int = option(SEARCH_BUDGET.steps, "normalization steps for one proof",
                              at_least=1)
    proof_rlimit: int = option(SEARCH_BUDGET.rlimit, "z3 resource units (rlimit) for one proof",
                               at_least=1)
    proof_seconds: float = option(SEARCH_BUDGET.seconds, "seconds after which one proof stops "
                                  "whatever its counts (its verdict is then not stored)",
                                  above=0)
    device: str = option("h200", "the device whose roofline prices the programs",
                         check=_device_problem, valid="a profile of targets/*/profiles/")
    sizes: str = option("", f"size symbols' values for the cost; the others are {DEFAULT_SIZE}",
                        check=sizes_problem, valid=SIZES_VALID)
    emit: Literal["best", "graph", "top-k"] = option(
        "best", "the cheapest program, the whole nu-graph, or the top_k cheapest")
    top_k: int = option(3, "programs that emit=\"top-k\" prints", at_least=1)
    report: bool = option(False, "a line per iteration and a summary per function on stderr")
    cache: str = option("", "a proof-cache file to read and write; empty for none")

    def proof_budget(self) -> ProofBudget:
        """One proof's budget, from the `proof_*` options."""
        return ProofBudget(self.proof_steps, self.proof_rlimit, self.proof_seconds)

    def size_bindings(self) -> dict[str, int]:
        """`sizes` as a mapping (checked at construction)."""
        return parse_sizes(self.sizes)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sizes = self.size_bindings()
        check_size_names(sizes, op, "propagate")
        budget = Budget(self.max_iterations, self.max_nodes, self.time_limit,
                        self.proof_budget(), self.max_proofs)
        cache = ProofCache(self.cache or None)
        for func_op in [f for f in op.walk() if isinstance(f, FuncOp)]:
            text = function_text(func_op)  # printed once: the result key's and the proofs'
            key = self._result_key(func_op, sizes, text)
            is_graph = any(isinstance(o, nu.GraphOp) for o in func_op.walk())
            stored = None if self.report or is_graph else cache.result(key)
            found = None if stored is None else stored_functions(stored.get("functions"),
                                                                self.name)
            if found is not None and \
                    self._still_proved(func_op, found, cache, text) is not None:
                Rewriter.replace_op(func_op, found)
                continue
            cost = RooflineCost(self.device, sizes)
            # one prover reads a printed graph back (re-proving it) and grows it: one cache
            prover = Prover(budget=budget.proof_budget, cache=cache)
            try:
                if any(isinstance(o, nu.GraphOp) for o in func_op.walk()):
                    session = Session.from_graph_function(func_op, cost, prover)
                else:
                    session = Session.from_function(func_op, cost)
            except GraphReadError as err:
                raise DiagnosticException(str(err)) from None
            except ConvertError as err:
                raise DiagnosticException(f"propagate: {err}") from None
            name = session.imported.name
            # report=true prints a line per iteration itself
            with progress.step(f"propagate @{name}", shown=not self.report) as step:
                report = session.run(budget, prover, progress=_report_lines(name) if self.report
                                     else _progress_updates(step))
                emitted = (session.checked_top_k(self.top_k) if self.emit == "top-k"
                           else [session.checked_best()])
            best = emitted[0].extraction
            if self.report:
                print(f"propagate: @{name}: {session.graph.num_classes} "
                      f"classes, {session.graph.num_nodes} e-nodes; {report.summary()}; cost "
                      f"{session.input_cost() * 1e6:.2f}us -> {best.cost * 1e6:.2f}us; "
                      f"{_float_summary(emitted, len(session.float_rejected))}",
                      file=sys.stderr)
            if self.emit == "graph":
                new = [session.graph_ir(marked=best)]
            elif self.emit == "best":
                new = [session.export(best)]
            else:
                new = [session.export(c.extraction, name if i == 0 else f"{name}_k{i}")
                       for i, c in enumerate(emitted)]
                for runner_up in new[1:]:  # later passes (tile) know whose variant it is
                    runner_up.attributes["axon.variant_of"] = SymbolRefAttr(name)
            if _repeatable(report, prover):
                # the check a later run makes of the stored functions, made now: its queries'
                # verdicts are then in the cache, and that run is served them unnormalized
                texts = function_texts(new)
                again = self._still_proved(func_op, new, cache, text, texts)
                if again is not None:
                    cache.put_result(key, {"functions": texts}, [*prover.proofs, *again])
            Rewriter.replace_op(func_op, new)
        if self.cache:
            cache.save()

    def _still_proved(self, func_op: FuncOp, found: list[FuncOp], cache: ProofCache,
                      text: str | None = None, found_texts: Sequence[str] | None = None
                      ) -> list[str] | None:
        """The obligation keys of the proofs that each function of `found` (read back from
        text, or about to be stored) equals `func_op` (a graph: every membership); None, with
        a warning, when one is not proved. Text is never trusted on its own: each function is
        proved again through `prove_equivalent`, whose query (the two texts, the budget, the
        code) is served from the cache without normalizing when this check was made before,
        as the run that stored the result made it. `text` and `found_texts`: the functions'
        printed texts where the caller has them (the queries' keys print them otherwise)."""
        proofs: list[str] = []
        for n, f in enumerate(found):
            if any(isinstance(o, nu.GraphOp) for o in f.walk()):
                prover = Prover(budget=self.proof_budget(), cache=cache)
                try:
                    Session.from_graph_function(f, RooflineCost(self.device, {}), prover)
                except GraphReadError:
                    ok = False
                else:
                    ok = True
                    proofs.extend(prover.proofs)
            else:
                verdict = prove_equivalent(
                    func_op, f, budget=self.proof_budget(), cache=cache,
                    texts=(text, None if found_texts is None else found_texts[n]))
                ok = isinstance(verdict, Proved)
                if isinstance(verdict, Proved):
                    proofs.append(verdict.obligation)
            if not ok:
                warnings.warn(f"a stored {self.name} result of @{func_op.sym_name.data} is not "
                              "proved again; searching again", stacklevel=2)
                return None
        return proofs

    def _result_key(self, func_op: FuncOp, sizes: dict[str, int], text: str | None = None
                    ) -> str:
        """What determines a function's result: its text, the options that shape the search
        and the emitted programs, the device's profile data and the verifier's encoding."""
        options = (f"max_iterations={self.max_iterations} max_nodes={self.max_nodes} "
                   f"max_proofs={self.max_proofs} time_limit={self.time_limit!r} "
                   f"proof budget {self.proof_budget().key()} "
                   f"emit={self.emit} top_k={self.top_k} sizes={sorted(sizes.items())}")
        return step_key(self.name, function_text(func_op) if text is None else text, options,
                        repr(load_profile(self.device)), f"encoding {ENCODING_REVISION}")


def _repeatable(report: Report, prover: Prover) -> bool:
    """Whether a re-run would find the same result: no clock cut the search or what came
    after it, and no proof's verdict was decided by its safety-net clock (an Unknown a
    budget's count decided is decided again)."""
    return report.stop_reason != TIME_LIMIT and not report.cut_after and prover.by_clock == 0


def _float_summary(emitted: list[Checked], rejected: int) -> str:
    """The report's float-error part: the first emitted program's error, the runners-up's."""
    text = emitted[0].float_error.describe()
    others = [c.float_error.error for c in emitted[1:]]
    if others:
        text += ", runners-up " + ", ".join("not checked" if e is None else f"{e:.1e}"
                                            for e in others)
    return f"{text}; {rejected} rejected for float error"


def _iteration_line(report: Report, g: EGraph) -> str:
    return (f"iteration {report.iterations}: {g.num_classes} classes, {g.num_nodes} e-nodes; "
            f"{report.candidates} candidates, {report.proved} proved so far")


def _report_lines(name: str) -> Progress:
    """One stderr line per propagation iteration of `@name` (`report=true`)."""

    def show(report: Report, g: EGraph) -> None:
        print(f"propagate: @{name}: {_iteration_line(report, g)} ({report.elapsed():.1f}s)",
              file=sys.stderr, flush=True)

    return show


def _progress_updates(step: progress.Step) -> Progress:
    """Each iteration's state handed to the progress line of a long search."""

    def update(report: Report, g: EGraph) -> None:
        step.update(_iteration_line(report, g))

    return update
