"""`tile`: tiled kernels for the programs of a module, each admitted only when proved.

For each program (a `func.func`, with the variants `propagate{emit="top-k"}` marked as its
`axon.variant_of`), the pass proposes every tiling of every variant (`tiling/kernels.py`: blocks
of rows, blocks of rows and columns, each with or without a sequential loop over a reduced dim,
every op of the function fused into the one kernel), with the profile's limits as assumptions
(`tiling/profiles.py`); the verifier proves each equal to its variant for every size and every
tile size the assumptions admit (Unknown is never admitted); each proved kernel is priced at
`sizes` by enumerating concrete tile sizes under the tiled cost model (`tiling/concretize.py`),
and the cheapest is the best. Options:

- `profile` (default `h200`): the device profile whose limits and cost the kernels meet;
- `sizes`: size symbols' values for ranking (the others are 1024), as for `propagate`;
- `emit="best"` (default): the best proved kernel replaces the program (its variants go);
  `emit="variants"`: the program stays and every proved kernel is added beside it as
  `@<variant>_<tiling>`, marked `axon.tiling_of = @<variant>`; `emit="top-k"`: the `top_k`
  cheapest kernels, the first named as the program, the others `@<name>_t1`, ...;
  `emit="graph"`: the program's nu-graph with every proved kernel as a `tile.kernel` e-node
  of the result classes beside the untiled e-nodes, the cheapest marked `best`
  (`axon.tiling.graph`, `axon.nugraph.kernels`);
- a function holding a `nu.graph` (`propagate{emit="graph"}`) is read back (every membership
  re-proved) and its `variants` cheapest untiled programs are the program and its variants
  (for `best`, `variants` and `top-k` they replace the graph, as `propagate{emit="top-k"}`
  would print them); `emit="graph"` on a plain function tiles it alone in its own graph, and
  refuses variants marked `axon.variant_of` (a graph holds only what propagation proved:
  run `propagate{emit="graph"}` first);
- `top_k`: kernels `emit="top-k"` prints, and concrete tile sizes kept per kernel;
- `proof_steps`, `proof_rlimit`: one kernel's proof budget, normalization steps and z3 resource
  units (counts of work: a proof they stop is stopped again in every run, so the result of a
  search it shaped is stored); `proof_seconds`: a safety-net clock per proof (a verdict it
  decides is not stored); `max_proofs`: kernel proofs one program's search may make (a
  count: a search it stops is stored); `time_limit`: a safety-net clock over one program's
  search (a search it cuts is not stored);
- `cache`: a proof-cache file (read, then written back), as for `verify-equivalence`;
- `report=true`: a line per proposed tiling too (its verdict, and the reason of a rejection).

Every emitted kernel carries `axon.proof_id`, `axon.tiling` (its kind) and `axon.tile_sizes`
(the best concrete tile sizes at `sizes`, cheapest first, with their modeled time and HBM
traffic). A report goes to stderr: a line per program (proposed, proved, refuted, unknown, not
tileable, fused, the best kernel and its figures, the first rejection's reason) and a summary.
A program with no proved kernel is left as it was.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from axon.nugraph.convert import ConvertError
from axon.nugraph.cost import DEFAULT_SIZE
from axon.nugraph.nu_ir import GraphReadError
from axon.nugraph.prover import Prover
from axon.passes.sizes import SIZES_VALID, check_size_names, parse_sizes, sizes_problem
from axon.targets.profiles import DeviceProfile, load_profile, unknown_profile
from axon.tiling.concretize import describe
from axon.tiling.graph import (
    GraphVariants,
    graph_variants,
    holds_graph,
    tiled_graph,
    tiled_graph_function,
)
from axon.tiling.search import (
    MAX_PROOFS,
    TIME_LIMIT_S,
    Proposal,
    Result,
    StoredKernelMismatch,
    tile_program,
)
from axon.tools import progress
from axon.tools.pass_options import CheckedPass, option
from axon.verifier import ProofBudget
from axon.verifier.budget import SEARCH_BUDGET
from axon.verifier.cache import ProofCache


@dataclass(frozen=True)
class TilePass(CheckedPass):
    """Propose tiled kernels per program; keep those the verifier proves; rank by cost."""

    name = "tile"

    profile: str = option("h200", "the device profile whose limits and cost the kernels meet",
                          check=unknown_profile, valid="a profile of targets/*/profiles/")
    sizes: str = option("", f"size symbols' values for ranking; the others are {DEFAULT_SIZE}",
                        check=sizes_problem, valid=SIZES_VALID)
    emit: Literal["best", "variants", "top-k", "graph"] = option(
        "best", "best: the cheapest proved kernel replaces the program; variants: every proved "
        "kernel beside it; top-k: the top_k cheapest; graph: the nu-graph with every proved "
        "kernel as an e-node, the cheapest marked")
    top_k: int = option(3, "kernels emit=\"top-k\" prints, and tile sizes kept per kernel",
                        at_least=1)
    variants: int = option(3, "untiled programs tiled per nu.graph input (its cheapest)",
                           at_least=1)
    proof_steps: int = option(SEARCH_BUDGET.steps, "normalization steps for one kernel's proof",
                              at_least=1)
    proof_rlimit: int = option(SEARCH_BUDGET.rlimit,
                               "z3 resource units (rlimit) for one kernel's proof", at_least=1)
    proof_seconds: float = option(SEARCH_BUDGET.seconds,
                                  "seconds after which one kernel's proof stops whatever its "
                                  "counts (its verdict is then not stored)", above=0)
    max_proofs: int = option(MAX_PROOFS, "kernel proofs one program's search may make",
                             at_least=1)
    time_limit: float = option(TIME_LIMIT_S, "seconds after which one program's search stops "
                               "whatever its counts (its result is then not stored)", above=0)
    cache: str = option("", "a proof-cache file to read and write back")
    report: bool = option(False, "a line per proposed tiling (its verdict and reason) on stderr")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = load_profile(self.profile)
        sizes = parse_sizes(self.sizes)
        check_size_names(sizes, op, "tile")
        cache = ProofCache(self.cache or None)
        start = time.perf_counter()
        results: list[Result] = []
        budget = ProofBudget(self.proof_steps, self.proof_rlimit, self.proof_seconds)
        prover = Prover(budget=budget, cache=cache)
        for funcs in _programs(op):
            graph = self._graph_variants(funcs, profile, sizes, prover)
            if graph is not None and self.emit != "graph":
                # the graph's programs replace it, as propagate{emit="top-k"} prints them
                Rewriter.replace_op(funcs[0], graph.functions)
                funcs = graph.functions
            tiled = graph.functions if graph is not None else funcs
            name = tiled[0].sym_name.data
            with progress.step(f"tile @{name}") as step:
                result = tile_program(
                    tiled, profile, sizes, budget=budget,
                    max_proofs=self.max_proofs, time_limit_s=self.time_limit,
                    top_k=self.top_k, cache=cache,
                    progress=lambda p, done, total: step.update(
                        f"{done}/{total} tilings, last {p.tiling.kind} of @{p.variant}: "
                        f"{p.verdict}"))
            results.append(result)
            if self.report:
                for proposal in result.proposals:
                    print(proposal_line(result.program, proposal), file=sys.stderr)
            print(report_line(result), file=sys.stderr)
            try:
                if self.emit == "graph":
                    assert graph is not None
                    Rewriter.replace_op(funcs[0],
                                        tiled_graph_function(tiled_graph(graph, result)))
                else:
                    self._emit(funcs, result)
            except StoredKernelMismatch as err:  # an edited proof cache: said, not a traceback
                raise DiagnosticException(f"tile: {err}") from None
        if self.cache:
            cache.save()
        print(summary_line(results, self.profile, time.perf_counter() - start), file=sys.stderr)

    def _graph_variants(self, funcs: Sequence[FuncOp], profile: DeviceProfile,
                        sizes: dict[str, int], prover: Prover) -> GraphVariants | None:
        """The untiled programs of a graph input, or of any program for `emit="graph"`; None
        for a plain program tiled with its variants as functions."""
        if self.emit != "graph" and not holds_graph(funcs[0]):
            return None
        if self.emit == "graph" and len(funcs) > 1:
            raise DiagnosticException(
                f"tile: @{funcs[1].sym_name.data} is a variant of @{funcs[0].sym_name.data} "
                "(axon.variant_of); emit=\"graph\" puts in a graph only what propagation "
                "proved equal: run propagate{emit=\"graph\"} before tile{emit=\"graph\"}")
        try:
            return graph_variants(funcs[0], profile, sizes, self.variants, prover)
        except GraphReadError as err:
            raise DiagnosticException(str(err)) from None
        except ConvertError as err:
            raise DiagnosticException(f"tile: {err}") from None

    def _emit(self, funcs: Sequence[FuncOp], result: Result) -> None:
        program = funcs[0]
        name = program.sym_name.data
        ranked = result.proved
        chosen = ranked[:1] if self.emit == "best" else ranked[:self.top_k] \
            if self.emit == "top-k" else ranked
        kernels: list[FuncOp] = []
        for index, proposal in enumerate(chosen):
            assert proposal.kernel is not None
            kernel = proposal.kernel.clone()
            _annotate(kernel, proposal)
            if self.emit == "variants":
                kernel.attributes["axon.tiling_of"] = SymbolRefAttr(proposal.variant)
            else:
                kernel.sym_name = StringAttr(name if index == 0 else f"{name}_t{index}")
                if index:
                    kernel.attributes["axon.variant_of"] = SymbolRefAttr(name)
            kernels.append(kernel)
        if self.emit == "variants":
            anchor = funcs[-1]
            for kernel in reversed(kernels):
                Rewriter.insert_op(kernel, InsertPoint.after(anchor))
            return
        if not kernels:
            return
        for variant in funcs[1:]:
            Rewriter.erase_op(variant)
        Rewriter.replace_op(program, kernels)


def _programs(module: ModuleOp) -> list[list[FuncOp]]:
    """Each program's function followed by the variants marked `axon.variant_of` it."""
    funcs = [f for f in module.ops if isinstance(f, FuncOp)]
    by_name = {f.sym_name.data: [f] for f in funcs if "axon.variant_of" not in f.attributes}
    for f in funcs:
        of = f.attributes.get("axon.variant_of")
        if isinstance(of, SymbolRefAttr) and of.root_reference.data in by_name:
            by_name[of.root_reference.data].append(f)
        elif of is not None:
            by_name[f.sym_name.data] = [f]
    return list(by_name.values())


def _annotate(kernel: FuncOp, proposal: Proposal) -> None:
    kernel.attributes["axon.proof_id"] = StringAttr(proposal.proof_id)
    kernel.attributes["axon.tiling"] = StringAttr(proposal.tiling.kind)
    kernel.attributes["axon.tile_sizes"] = ArrayAttr(
        [StringAttr(describe(c)) for c in proposal.candidates])


def proposal_line(program: str, proposal: Proposal) -> str:
    """One tiling's line: which, of which variant, its verdict and why (`report=true`)."""
    line = (f"tile: @{program}: {proposal.tiling.kind or '-'} of @{proposal.variant}: "
            f"{proposal.verdict}")
    if proposal.verdict == "proved":
        best = describe(proposal.candidates[0]) if proposal.candidates else \
            "no tile sizes fit at these sizes"
        return f"{line} (proof {proposal.proof_id}, {proposal.seconds:.2f} s): {best}"
    return f"{line}: {proposal.reason}" if proposal.reason else line


def report_line(result: Result) -> str:
    """One program's line: counts, the best kernel, the first rejection's reason."""
    counts = (f"{len(result.proposals)} proposed, {result.count('proved')} proved, "
              f"{result.count('refuted')} refuted, {result.count('unknown')} unknown, "
              f"{result.count('not tileable')} not tileable, "
              f"{sum(p.fused for p in result.proved)} fused")
    if result.count("skipped"):
        counts += f", {result.count('skipped')} skipped after a proof ran out of budget"
    if result.unproposed:
        counts += f", {result.unproposed} not tried (time limit)"
    line = f"tile: @{result.program}: {counts} in {result.seconds:.2f} s"
    ranked = result.proved
    if ranked:
        best = ranked[0]
        sizes = describe(best.candidates[0]) if best.candidates else \
            "no tile sizes fit at these sizes"
        line += (f"; best {best.tiling.kind} of @{best.variant} (proof {best.proof_id}): "
                 f"{sizes}")
    else:
        rejected = next((p for p in result.proposals if p.verdict != "proved" and p.reason),
                        None)
        line += "; no kernel proved" + (f" (first reason: {rejected.reason})" if rejected
                                        else "")
    return line


def summary_line(results: Sequence[Result], profile: str, seconds: float) -> str:
    tiled = sum(1 for r in results if r.proved)
    total = {v: sum(r.count(v) for r in results)
             for v in ("proved", "refuted", "unknown", "not tileable")}
    fused = sum(p.fused for r in results for p in r.proved)
    proposed = sum(len(r.proposals) for r in results)
    return (f"tile: {tiled} of {len(results)} programs tiled; {proposed} tilings proposed, "
            f"{total['proved']} proved ({fused} fused), {total['refuted']} refuted, "
            f"{total['unknown']} unknown, {total['not tileable']} not tileable in "
            f"{seconds:.2f} s (profile {profile})")
