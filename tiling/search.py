"""Tiling a program: every tiling of every variant proposed, proved, priced and ranked.

A program arrives as its function and the variants propagation found equal to it (`propagate
{emit="top-k"}` marks them `axon.variant_of`): the same computation in other orders, one of
which may tile better (rmsnorm's scale moved after the matmul lets the K loop accumulate both
the matmul and the sum of squares). For each variant and each of its tilings
(`tiling.kernels.tilings`) a kernel is built, the profile's limits join its assumptions
(`tiling.profiles`), and the verifier proves it equal to the variant for every size and tile
size those assumptions admit; Unknown and Refuted are rejections with their reason. Each proved
kernel is priced at the program's sizes (1024 where none is given, as propagation prices
them) by enumerating concrete tile sizes
(`tiling.concretize`), and the kernels are ranked by their best candidate's modeled time.

The search is bounded by counts, so a search they stop stops at the same proposal in every run:
a proof has its `budget` (`verifier.ProofBudget`: counts of work, and a safety-net clock), a
program's whole search `max_proofs` kernel proofs (what is left unproposed is counted, never
silently dropped), and `time_limit_s` is a safety-net clock over the whole search (a search it
cuts depends on the machine and is not stored); once a tiling's proof runs out of its budget on
one variant, the same tiling of the later variants is skipped (counted, with the reason); so
is a nested tiling (`Tiling.inner`) whose tiling without the nested loop has a candidate that
fits (the nested loop is for a dim too large to be one tile: K past a NeuronCore's 128
partitions); a progress callback hears of each proposal.

With a cache, the whole result is stored in it too (`ProofCache.put_result`), keyed by the
functions' text, the profile's data, the sizes, the limits and Axon's code, and listing the
proofs of its kernels: a later search with the same key, while those proofs are still in the
cache, returns the stored result without proving or pricing anything. Only a result no clock
shaped is stored: no search cut by `time_limit_s`, and no proof decided by its safety-net clock
(`Unknown.by_clock`). A proof its budget's counts left Unknown is Unknown again in every run
with that budget (the key includes it), so it, and the skips it caused, do not keep the result
from being stored; nor does `max_proofs`, a count.

What a stored result's proved kernels are trusted for, and why: each proposal records its
kernel's query key (`verifier.prove.query_key`: the kernel's text and the variant's, the
budget, Axon's code), and the result is served only where the cache answers every one of those
queries with a proved obligation the result lists (else it is refused with a warning and the
search runs again): that is the check `prove_equivalent(kernel, variant)` itself makes before
normalizing. The kernels are built again by code from the input when first read (the step key
pins the code and the inputs, so they build as they did; building is most of a served
result's time, and a pass reads one kernel or a few), and a kernel is handed out only when its
own query is the recorded one: then asking for its proof again would be served that same
proof. One that builds otherwise (an edited record, a cache written by other code) is refused
with `StoredKernelMismatch`. A proposal that is not proved has its kernel checked against the
stored hash of its text instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.dialects.tile import KernelOp
from axon.nugraph.cost import DEFAULT_SIZE
from axon.nugraph.stored import function_text
from axon.targets.profiles import DeviceProfile
from axon.tiling.concretize import Candidate, concretize
from axon.tiling.cost import KernelCost, kernel_cost
from axon.tiling.kernels import NotTileable, Tiling, tile_function, tilings
from axon.tiling.profiles import kernel_constraints, tile_spaces
from axon.verifier import ProofBudget, Proved, Unknown, Verdict, prove_equivalent
from axon.verifier.budget import SEARCH_BUDGET
from axon.verifier.cache import ProofCache, step_key
from axon.verifier.prove import ENCODING_REVISION, query_key


class StoredKernelMismatch(RuntimeError):
    """A stored result's kernel, built when first read, is not the kernel the stored result
    recorded (another query, or another text)."""


@dataclass
class Proposal:
    """One tiling of one variant, and what became of it. `kernel` is the kernel (None where
    the tiling does not build); a stored result's kernel is built when first read
    (`_rebuild`)."""

    variant: str
    tiling: Tiling
    _kernel: FuncOp | None = field(default=None, repr=False, compare=False)
    verdict: str = "not tileable"  # "proved", "refuted", "unknown", "not tileable", "skipped"
    reason: str = ""
    proof_id: str = ""
    seconds: float = 0.0
    candidates: list[Candidate] = field(default_factory=list)
    source_ops: int = 0
    """How many ops of the variant the kernel holds (all of them: a kernel is the whole
    function)."""
    _rebuild: Callable[[], FuncOp] | None = field(default=None, repr=False, compare=False)

    @property
    def kernel(self) -> FuncOp | None:
        """The tiled kernel (built now where a stored result left it to be built when read)."""
        if self._kernel is None and self._rebuild is not None:
            self._kernel, self._rebuild = self._rebuild(), None
        return self._kernel

    @kernel.setter
    def kernel(self, kernel: FuncOp | None) -> None:
        self._kernel, self._rebuild = kernel, None

    @property
    def fused(self) -> bool:
        """The kernel holds more than one of the program's ops (their intermediates on chip)."""
        has_kernel = self._kernel is not None or self._rebuild is not None
        return has_kernel and self.source_ops > 1

    def rank_key(self) -> tuple[float, float]:
        """Proved kernels with a fitting candidate first, by modeled time then traffic."""
        if not self.candidates:
            return (float("inf"), float("inf"))
        best = self.candidates[0].cost
        # times within the model's resolution tie; then the least traffic wins
        return (float(f"{best.seconds:.3g}"), best.hbm_bytes)


@dataclass
class Result:
    """What tiling one program gave: its proposals, ranked proved ones first."""

    program: str
    proposals: list[Proposal]
    unproposed: int
    seconds: float

    @property
    def proved(self) -> list[Proposal]:
        found = [p for p in self.proposals if p.verdict == "proved"]
        return sorted(found, key=Proposal.rank_key)

    def count(self, verdict: str) -> int:
        return sum(1 for p in self.proposals if p.verdict == verdict)


Progress = Callable[[Proposal, int, int], None]


#: kernel proofs one program's search may make (`tile_program`'s `max_proofs`): a count, so a
#: search it stops stops at the same proposal in every run; the suite's programs propose at
#: most 56 tilings of their variants
MAX_PROOFS = 100
#: a split kernel's proof (`Tiling.split`) is this many proofs' worth of the search budget: its
#: loop's induction obligations carry the stretch's start `BK*NB*s`, a product of three
#: symbols, and z3 spends 4-8x the unsplit loop's resource units on them (gqa: 263k and 400k
#: against 76k and 97k; qknorm_gqa: 1.54M and 0.54M against 131k and 140k)
SPLIT_PROOF_SCALE = 8
#: the safety net over one program's whole search, in seconds (`time_limit_s`): far past what
#: `MAX_PROOFS` proofs of the search budget take, so it stops only a machine far slower than
#: the counts assume
TIME_LIMIT_S = 600.0


def tile_program(funcs: Sequence[FuncOp], profile: DeviceProfile, sizes: Mapping[str, int],
                 *, budget: ProofBudget = SEARCH_BUDGET, max_proofs: int = MAX_PROOFS,
                 time_limit_s: float = TIME_LIMIT_S, top_k: int = 3,
                 cache: ProofCache | None = None, progress: Progress | None = None) -> Result:
    """Propose, prove and price every tiling of `funcs` (a program and its variants, the
    program first); see the module docstring."""
    start = time.perf_counter()
    sizes = all_sizes(funcs[0], sizes)
    key = step_key("tile", *(function_text(f) for f in funcs), repr(profile),
                   repr(sorted(sizes.items())),
                   f"proof budget {budget.key()} max_proofs={max_proofs} "
                   f"time_limit_s={time_limit_s!r} top_k={top_k}",
                   f"encoding {ENCODING_REVISION}")
    space, accumulator_space = tile_spaces(profile)
    stored = (_stored(cache, cache.result(key), funcs, profile, space, accumulator_space,
                      budget) if cache is not None else None)
    if stored is not None:
        served, unproposed = stored
        for index, proposal in enumerate(served):
            if progress is not None:
                progress(proposal, index + 1, len(served))
        return Result(funcs[0].sym_name.data, served, unproposed, time.perf_counter() - start)
    plan = _plan(funcs)
    proposals: list[Proposal] = []
    gave_up: set[str] = set()  # tilings whose proof ran out of its budget on some variant
    fitting: set[tuple[str, Tiling]] = set()  # (variant, tiling) with a fitting candidate
    proofs: list[str] = []  # the obligation keys of the kernels' proofs
    queries: dict[int, str] = {}  # a proved proposal's index: its kernel's query key
    by_clock = False  # a proof the safety-net clock decided: a re-run may decide otherwise
    spent = 0  # kernel proofs asked for
    unproposed = 0
    for index, (func, tiling, why) in enumerate(plan):
        if time.perf_counter() - start > time_limit_s:
            return Result(funcs[0].sym_name.data, proposals, len(plan) - index,
                          time.perf_counter() - start)
        if spent >= max_proofs:
            unproposed = len(plan) - index
            break
        proposal = Proposal(func.sym_name.data, tiling or Tiling(""), reason=why)
        if tiling is not None and tiling.kind in gave_up:
            proposal.verdict = "skipped"
            proposal.reason = (f"the {tiling.kind} kernel of an earlier variant ran out of "
                               "its proof budget; the variants are the same computation")
        elif (tiling is not None and tiling.inner is not None
              and (proposal.variant, replace(tiling, inner=None)) in fitting):
            proposal.verdict = "skipped"
            proposal.reason = (f"the {replace(tiling, inner=None).kind} kernel fits without "
                               f"the loop over {tiling.inner} nested in it")
        elif tiling is not None:
            verdict = _prove(proposal, func, tiling, profile, sizes, space, accumulator_space,
                             budget, top_k, cache)
            spent += verdict is not None
            if isinstance(verdict, Unknown) and verdict.limited:
                gave_up.add(tiling.kind)
            if isinstance(verdict, Proved):
                proofs.append(verdict.obligation)
                if proposal.kernel is not None:
                    queries[len(proposals)] = query_key(proposal.kernel, func, (),
                                                        proof_budget(tiling, budget))
            if proposal.candidates:
                fitting.add((proposal.variant, tiling))
            by_clock |= isinstance(verdict, Unknown) and verdict.by_clock
        proposals.append(proposal)
        if progress is not None:
            progress(proposal, index + 1, len(plan))
    if cache is not None and not by_clock:
        cache.put_result(key, {"proposals": [_record(p, queries.get(i, ""))
                                             for i, p in enumerate(proposals)],
                               "unproposed": unproposed}, proofs)
    return Result(funcs[0].sym_name.data, proposals, unproposed, time.perf_counter() - start)


def _plan(funcs: Sequence[FuncOp]) -> list[tuple[FuncOp, Tiling | None, str]]:
    """Every tiling of every function, in order (a function that does not tile: None and
    why)."""
    plan: list[tuple[FuncOp, Tiling | None, str]] = []
    for func in funcs:
        try:
            plan.extend((func, t, "") for t in tilings(func))
        except NotTileable as err:
            plan.append((func, None, str(err)))
    return plan


def proved_cheapest_first(funcs: Sequence[FuncOp], profile: DeviceProfile,
                          sizes: Mapping[str, int], *, budget: ProofBudget = SEARCH_BUDGET,
                          time_limit_s: float = TIME_LIMIT_S, top_k: int = 3,
                          cache: ProofCache | None = None) -> Iterator[Proposal]:
    """The proved proposals of `tile_program(funcs, profile, sizes)` that have a fitting
    candidate, in `Result.proved`'s order, each proved only when the caller asks for the next:
    every kernel is built and priced first (pricing relies on no proof), then they are proved
    cheapest first. `tile_program`'s skips are kept: a proposal whose tiling kind ran out of
    its proof budget on an earlier proposal, and a nested tiling whose tiling without the
    nested loop is proved and fits, are decided by deciding those earlier proposals first. A
    caller that takes the first proposal it can use (`first_kernel`) so proves only those
    ranked before it. A plan longer than `MAX_PROOFS` is searched whole (`tile_program`: its
    count, not the ranking, decides where it stops). `time_limit_s` is the same safety net
    over the whole search as `tile_program`'s: past it, no further proposal is proved."""
    start = time.perf_counter()
    sizes = all_sizes(funcs[0], sizes)
    plan = _plan(funcs)
    if len(plan) > MAX_PROOFS:
        whole = tile_program(funcs, profile, sizes, budget=budget, time_limit_s=time_limit_s,
                             top_k=top_k, cache=cache)
        yield from (p for p in whole.proved if p.candidates)
        return
    space, accumulator_space = tile_spaces(profile)
    built: dict[int, Proposal] = {}  # plan index: its proposal, kernel built and priced
    for index, (func, tiling, _) in enumerate(plan):
        if tiling is None:
            continue
        proposal = Proposal(func.sym_name.data, tiling)
        try:
            proposal.kernel = _kernel(func, tiling, profile, space, accumulator_space)
        except NotTileable:
            continue
        proposal.candidates = _priced(proposal.kernel, sizes, profile, top_k, cache)
        built[index] = proposal
    #: plan index: "proved", "limited" (its budget's counts ran out), "skipped" or "other"
    outcome: dict[int, str] = {}

    def decide_one(index: int) -> None:
        """`tile_program`'s step for the proposal at `index`, the earlier ones of its kind
        decided."""
        func, tiling, _ = plan[index]
        proposal = built.get(index)
        if proposal is None or tiling is None:
            outcome[index] = "other"
            return
        if any(outcome.get(j) == "limited" for j in range(index)
               if (t := plan[j][1]) is not None and t.kind == tiling.kind):
            outcome[index] = "skipped"
            return
        if tiling.inner is not None:
            bare = replace(tiling, inner=None)
            sibling = next((j for j in range(index) if plan[j][0] is func and plan[j][1] == bare),
                           None)
            if sibling is not None and decide(sibling) == "proved" and built[sibling].candidates:
                outcome[index] = "skipped"
                return
        verdict = _proved(proposal, func, budget, cache)
        outcome[index] = ("proved" if isinstance(verdict, Proved) else
                          "limited" if isinstance(verdict, Unknown) and verdict.limited
                          else "other")

    def decide(index: int) -> str:
        """What `tile_program` makes of the proposal at `index`: the earlier proposals of its
        kind first, in plan order (one that ran out skips the later ones)."""
        tiling = plan[index][1]
        for j in range(index + 1):
            if j not in outcome and (j == index or (
                    (t := plan[j][1]) is not None and tiling is not None
                    and t.kind == tiling.kind)):
                decide_one(j)
        return outcome[index]

    for index in sorted(built, key=lambda i: built[i].rank_key()):
        if time.perf_counter() - start > time_limit_s:
            return
        if built[index].candidates and decide(index) == "proved":
            yield built[index]


def _prove(proposal: Proposal, func: FuncOp, tiling: Tiling, profile: DeviceProfile,
           sizes: Mapping[str, int], space: str, accumulator_space: str, budget: ProofBudget,
           top_k: int, cache: ProofCache | None) -> Verdict | None:
    """Build, prove and price one tiling into `proposal`; the verdict (None when the tiling
    does not build)."""
    try:
        kernel = _kernel(func, tiling, profile, space, accumulator_space)
    except NotTileable as err:
        proposal.reason = str(err)
        return None
    proposal.kernel = kernel
    verdict = _proved(proposal, func, budget, cache)
    if isinstance(verdict, Proved):
        proposal.candidates = _priced(kernel, sizes, profile, top_k, cache)
    return verdict


def _proved(proposal: Proposal, func: FuncOp, budget: ProofBudget, cache: ProofCache | None
            ) -> Verdict:
    """Prove the proposal's kernel (built) equal to `func` under its tiling's share of
    `budget` (`proof_budget`), the verdict written into the proposal."""
    assert proposal.kernel is not None
    verdict = prove_equivalent(proposal.kernel, func, budget=proof_budget(proposal.tiling, budget),
                               cache=cache)
    proposal.seconds, proposal.verdict = verdict.seconds, verdict.verdict
    proposal.source_ops = len(func.body.block.ops) - 1  # all but the return
    if isinstance(verdict, Proved):
        proposal.proof_id = verdict.proof_id
    else:
        proposal.reason = getattr(verdict, "reason", None) or str(
            getattr(verdict, "counterexample", verdict.verdict))
    return verdict


def proof_budget(tiling: Tiling, budget: ProofBudget) -> ProofBudget:
    """The budget of one tiling's proof in a search of `budget` (`SPLIT_PROOF_SCALE`)."""
    return budget.scaled(SPLIT_PROOF_SCALE) if tiling.split else budget


def _priced(kernel: FuncOp, sizes: Mapping[str, int], profile: DeviceProfile, top_k: int,
            cache: ProofCache | None) -> list[Candidate]:
    """The kernel's best concrete tile sizes (`concretize`), kept in the cache by the kernel's
    text, the sizes, the profile's data and `top_k`: pricing relies on no proof and no clock,
    so a search whose whole result is not stored (a clock shaped it) still prices each
    kernel once."""
    if cache is None:
        return _concretized(kernel, sizes, profile, top_k)
    key = step_key("concretize", function_text(kernel), repr(profile),
                   repr(sorted(sizes.items())), f"top_k={top_k}")
    stored = cache.result(key)
    if stored is not None:
        return [_candidate(c) for c in stored["candidates"]]
    candidates = _concretized(kernel, sizes, profile, top_k)
    cache.put_result(key, {"candidates": [_candidate_record(c) for c in candidates]}, [])
    return candidates


def _concretized(kernel: FuncOp, sizes: Mapping[str, int], profile: DeviceProfile,
                 top_k: int) -> list[Candidate]:
    """The best concrete tile sizes of a tiled function: its kernel's (`concretize`), or, for
    a split loop's partials and combine (`tiling.split_loop`), the partials kernel's, each
    priced with the combine launch at the same sizes added (it reads what they write)."""
    kernels = [op for op in kernel.body.block.ops if isinstance(op, KernelOp)]
    found = concretize(kernels[0], dict(sizes), profile, top_k)
    if len(kernels) == 1:
        return found
    combined = []
    for c in found:
        env = {**sizes, **c.params}
        rest = [kernel_cost(k, env, profile, warps=c.cost.warps) for k in kernels[1:]]
        cost = dataclasses.replace(
            c.cost, hbm_bytes=c.cost.hbm_bytes + sum(r.hbm_bytes for r in rest),
            flops=c.cost.flops + sum(r.flops for r in rest),
            seconds=c.cost.seconds + sum(r.seconds for r in rest),
            fits=c.cost.fits and all(r.fits for r in rest),
            why_not=c.cost.why_not or next((r.why_not for r in rest if r.why_not), None))
        combined.append(Candidate(c.params, cost))
    return sorted((c for c in combined if c.cost.fits), key=lambda c: c.cost.seconds)


def _candidate_record(candidate: Candidate) -> dict[str, Any]:
    """A candidate as JSON data (mappings as lists of pairs: their order is printed)."""
    cost = {f.name: getattr(candidate.cost, f.name) for f in dataclasses.fields(KernelCost)}
    return {"params": list(candidate.params.items()),
            "cost": cost | {"onchip_bytes": list(candidate.cost.onchip_bytes.items())}}


def _candidate(record: dict[str, Any]) -> Candidate:
    onchip = MappingProxyType(dict(record["cost"]["onchip_bytes"]))
    cost = record["cost"] | {"onchip_bytes": onchip}
    return Candidate(dict(record["params"]), KernelCost(**cost))


def profiled_kernel(func: FuncOp, tiling: Tiling, profile: DeviceProfile) -> FuncOp:
    """The kernel of `tiling` of `func` in `profile`'s memory spaces (`tile_spaces`), the
    profile's limits among its assumptions: what the search proves and prices."""
    return _kernel(func, tiling, profile, *tile_spaces(profile))


def _kernel(func: FuncOp, tiling: Tiling, profile: DeviceProfile, space: str,
            accumulator_space: str) -> FuncOp:
    """The kernel of `tiling` of `func`, the profile's limits among its assumptions."""
    kernel = tile_function(func, tiling, space, accumulator_space)
    _kernel_op(kernel).assume_also(kernel_constraints(profile, _kernel_op(kernel)))
    return kernel


def _digest(kernel: FuncOp) -> str:
    return hashlib.sha256(function_text(kernel).encode()).hexdigest()


def _record(proposal: Proposal, query: str) -> dict[str, Any]:
    """A proposal as JSON data: the kernel as the hash of its text, a proved kernel's proof as
    its query key (`query_key`)."""
    return {"variant": proposal.variant, "tiling": dataclasses.asdict(proposal.tiling),
            "kernel": None if proposal.kernel is None else _digest(proposal.kernel),
            "query": query, "verdict": proposal.verdict, "reason": proposal.reason,
            "proof_id": proposal.proof_id, "source_ops": proposal.source_ops,
            "candidates": [_candidate_record(c) for c in proposal.candidates]}


def _stored(cache: ProofCache, record: dict[str, Any] | None, funcs: Sequence[FuncOp],
            profile: DeviceProfile, space: str, accumulator_space: str, budget: ProofBudget
            ) -> tuple[list[Proposal], int] | None:
    """The proposals of a stored result and how many tilings it left unproposed, their kernels
    to be built when read; None, with a warning, where the cache does not answer a proved
    kernel's recorded query with a proof the result lists."""
    if record is None:
        return None
    by_name = {f.sym_name.data: f for f in funcs}
    proposals = []
    for entry in record["proposals"]:
        tiling = Tiling(**entry["tiling"])
        func = by_name[entry["variant"]]
        proposal = Proposal(entry["variant"], tiling, None, entry["verdict"], entry["reason"],
                            entry["proof_id"], 0.0, [_candidate(c) for c in entry["candidates"]],
                            entry["source_ops"])
        query = entry.get("query", "")
        if entry["verdict"] == "proved":
            answered = cache.answered(query) if query else None
            if answered is None or answered[1]["verdict"] != "proved" \
                    or answered[0] not in record["proofs"]:
                warnings.warn(f"a stored tile result ignored: the proof of the {tiling.kind} "
                              f"kernel of @{entry['variant']} is not in the cache", stacklevel=3)
                return None

            def same_proof(kernel: FuncOp, func: FuncOp = func, query: str = query,
                           tiling: Tiling = tiling) -> bool:
                return query_key(kernel, func, (), proof_budget(tiling, budget)) == query

            proposal._rebuild = _rebuilder(func, tiling, profile, space, accumulator_space,
                                           same_proof)
        elif entry["kernel"] is not None:
            def same_text(kernel: FuncOp, digest: str = entry["kernel"]) -> bool:
                return _digest(kernel) == digest

            proposal._rebuild = _rebuilder(func, tiling, profile, space, accumulator_space,
                                           same_text)
        proposals.append(proposal)
    return proposals, record.get("unproposed", 0)


def _rebuilder(func: FuncOp, tiling: Tiling, profile: DeviceProfile, space: str,
               accumulator_space: str, stored: Callable[[FuncOp], bool]
               ) -> Callable[[], FuncOp]:
    """Builds a stored proposal's kernel when it is first read; `StoredKernelMismatch` unless
    `stored` says it is the kernel the result recorded."""

    def rebuild() -> FuncOp:
        try:
            kernel: FuncOp | None = _kernel(func, tiling, profile, space, accumulator_space)
        except NotTileable:
            kernel = None
        if kernel is None or not stored(kernel):
            raise StoredKernelMismatch(
                f"the {tiling.kind} kernel of @{func.sym_name.data} in a stored tile result "
                "does not build as the recorded one (a proof cache edited, or written by "
                "other code): remove the cache file")
        return kernel

    return rebuild


def all_sizes(func: FuncOp, given: Mapping[str, int]) -> dict[str, int]:
    """`given`, and DEFAULT_SIZE (as propagation prices them) for every other size symbol of
    the function's signature."""
    symbols = {s for t in [*func.function_type.inputs.data, *func.function_type.outputs.data]
               if isinstance(t, TensorType) for d in t.shape for s in d.symbols()}
    return {s: given.get(s, DEFAULT_SIZE) for s in sorted(symbols)} | dict(given)


def _kernel_op(func: FuncOp) -> KernelOp:
    return next(op for op in func.body.block.ops if isinstance(op, KernelOp))
