"""Admission of sketch fillings through the verifier, the cache of what was admitted, and the
report.

For each sketch of the spec's kind, every filling (`enumerate.fillings`, under the cap) is
tried in turn:

1. pruned when a constraint of the sketch fails, when the target cannot build it (`Pruned`:
   a shape or instruction rule), when its parameter or result types are not the spec's, or
   when the op verifier rejects an instruction (an NKI buffer or engine rule);
2. otherwise the verifier decides whether it equals the spec for every size the profile's
   limits and the candidate's own conditions admit: `Proved` admits it, `Refuted` rejects it
   with the counterexample, anything else (Unknown, Inconsistent) rejects it as unknown,
   never admitted.

What a sketch admitted for a spec under a profile is stored in the proof cache's step results
(`ProofCache.put_result`), keyed by the spec's generic forms, the profile, the sketch's id and
holes, and the budget; it is served (each filling rebuilt by the target, no proof) while the
proofs it lists are still in the cache as proved.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import VerifyException

from axon.synth.enumerate import DEFAULT_CAP, fillings
from axon.synth.sketch import Candidate, Filling, Pruned, Sketch, Spec, filling_text
from axon.verifier import ProofBudget, ProofCache, Proved, Refuted, Unknown, Verdict
from axon.verifier import prove_equivalent as _prove_equivalent
from axon.verifier.cache import step_key

#: what asks the verifier: `prove_equivalent`'s signature (a test may count its calls)
Prove = Callable[..., Verdict]
#: the budget of each filling's proof unless the caller gives one (as `propagate`'s and `tile`'s)
DEFAULT_BUDGET = ProofBudget.nominal(5)
#: the step name of the cached results
STEP = "synthesize-isa"


@dataclass(frozen=True)
class Admitted:
    """A filling proved equal to the spec: the candidate the target built, and its proof."""

    sketch: str
    filling: Filling
    candidate: Candidate
    proof_id: str
    obligation: str = ""
    seconds: float = 0.0
    """What the proof took (as the verdict says; the stored one when served from the cache)."""
    cached: bool = False
    """Served from the cache of admitted lowerings (no proof was asked for this run)."""

    @property
    def func(self) -> FuncOp:
        """The candidate's function of instructions."""
        return self.candidate.func


@dataclass(frozen=True)
class Rejected:
    """A filling not admitted: `outcome` is "pruned", "refuted" or "unknown"; `reason` is the
    rule or constraint, the counterexample, or the verifier's reason."""

    sketch: str
    filling: Filling
    outcome: str
    reason: str
    verdict: Verdict | None = None


@dataclass
class Counts:
    """Fillings by outcome (`cached`: admitted lowerings served from the cache)."""

    tried: int = 0
    pruned: int = 0
    admitted: int = 0
    refuted: int = 0
    unknown: int = 0
    cached: int = 0

    def add(self, other: Counts) -> None:
        """Add `other`'s counts to these."""
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class SketchOutcome:
    """What one sketch gave for the spec."""

    sketch: str
    counts: Counts = field(default_factory=Counts)
    admitted: list[Admitted] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    from_cache: bool = False
    seconds: float = 0.0


@dataclass
class SynthesisReport:
    """The outcome of `synthesize`: per sketch, and in total."""

    kind: str
    profile: str
    outcomes: list[SketchOutcome]
    seconds: float

    @property
    def lowerings(self) -> list[Admitted]:
        """Every admitted lowering, sketch by sketch."""
        return [a for o in self.outcomes for a in o.admitted]

    @property
    def counts(self) -> Counts:
        """The counts over all sketches."""
        total = Counts()
        for outcome in self.outcomes:
            total.add(outcome.counts)
        return total

    def rejected(self, outcome: str) -> list[Rejected]:
        """The fillings rejected with `outcome` ("pruned", "refuted", "unknown")."""
        return [r for o in self.outcomes for r in o.rejected if r.outcome == outcome]

    def summary(self) -> str:
        """One line: `synth row_sum @ trn2: 3 sketches (0 from cache), 21 tried, 9 pruned,
        3 admitted, 9 refuted, 0 unknown, 0.52 s`."""
        c = self.counts
        cached = sum(o.from_cache for o in self.outcomes)
        return (f"synth {self.kind} @ {self.profile}: {len(self.outcomes)} sketches "
                f"({cached} from cache), {c.tried} tried, {c.pruned} pruned, {c.admitted} "
                f"admitted, {c.refuted} refuted, {c.unknown} unknown, {self.seconds:.2f} s")


def admit(spec: Spec, sketch: Sketch, filling: Filling, *, prove: Prove = _prove_equivalent,
          budget: ProofBudget = DEFAULT_BUDGET, cache: ProofCache | None = None
          ) -> Admitted | Rejected:
    """Decide one filling of `sketch` for `spec`: pruned before any proof (a constraint, a
    rule the target or the op verifier checks, the types), else admitted only when proved."""
    for constraint in sketch.constraints:
        if not constraint.holds(spec, filling):
            return Rejected(sketch.id, filling, "pruned", constraint.name)
    try:
        candidate = sketch.build(spec, filling)
    except Pruned as why:
        return Rejected(sketch.id, filling, "pruned", str(why))
    mismatch = _types_differ(candidate.func, spec.func)
    if mismatch:
        return Rejected(sketch.id, filling, "pruned", mismatch)
    try:
        candidate.func.verify()
    except VerifyException as err:
        return Rejected(sketch.id, filling, "pruned", str(err).splitlines()[0])
    assumptions = tuple(dict.fromkeys((*spec.assumptions, *candidate.conditions)))
    verdict = prove(candidate.func, spec.func, assumptions=assumptions, budget=budget,
                    cache=cache)
    if isinstance(verdict, Proved):
        return Admitted(sketch.id, filling, candidate, verdict.proof_id, verdict.obligation,
                        verdict.seconds)
    if isinstance(verdict, Refuted):
        return Rejected(sketch.id, filling, "refuted", str(verdict.counterexample), verdict)
    return Rejected(sketch.id, filling, "unknown",
                    f"{verdict.verdict}: {getattr(verdict, 'reason', '')}", verdict)


def synthesize(spec: Spec, sketches: Iterable[Sketch], profile: str, *,
               cache: ProofCache | None = None, budget: ProofBudget = DEFAULT_BUDGET,
               cap: int = DEFAULT_CAP, prove: Prove = _prove_equivalent,
               progress: Callable[[str], None] | None = None) -> SynthesisReport:
    """Every lowering of `spec` the sketches of its kind admit under `profile` (whose limits
    are `spec.assumptions`). Each sketch's fillings are enumerated under `cap`
    (SketchTooLarge otherwise, before any proof); with a `cache`, a sketch decided before for
    this spec, profile and budget is served from it. `progress`, when given, receives one line
    per sketch."""
    start = time.perf_counter()
    outcomes = []
    for sketch in (s for s in sketches if s.kind == spec.kind):
        outcome = _served(spec, sketch, profile, budget, cache)
        if outcome is None:
            outcome = _enumerated(spec, sketch, profile, budget, cache, cap, prove)
        outcomes.append(outcome)
        if progress is not None:
            c = outcome.counts
            progress(f"  {sketch.id}: {'from cache, ' if outcome.from_cache else ''}"
                     f"{c.tried} tried, {c.pruned} pruned, {c.admitted} admitted, "
                     f"{c.refuted} refuted, {c.unknown} unknown, {outcome.seconds:.2f} s")
    return SynthesisReport(spec.kind, profile, outcomes, time.perf_counter() - start)


def _enumerated(spec: Spec, sketch: Sketch, profile: str, budget: ProofBudget,
                cache: ProofCache | None, cap: int, prove: Prove) -> SketchOutcome:
    start = time.perf_counter()
    outcome = SketchOutcome(sketch.id)
    counts = outcome.counts
    by_clock = False
    for filling in fillings(sketch, cap):
        counts.tried += 1
        decided = admit(spec, sketch, filling, prove=prove, budget=budget, cache=cache)
        if isinstance(decided, Admitted):
            counts.admitted += 1
            outcome.admitted.append(decided)
            continue
        outcome.rejected.append(decided)
        setattr(counts, decided.outcome, getattr(counts, decided.outcome) + 1)
        by_clock = by_clock or (isinstance(decided.verdict, Unknown) and decided.verdict.by_clock)
    outcome.seconds = time.perf_counter() - start
    if cache is not None and not by_clock:  # a clock-shaped run may decide otherwise next time
        record: dict[str, Any] = {
            "admitted": [{"filling": dict(a.filling), "proof_id": a.proof_id,
                          "obligation": a.obligation, "seconds": a.seconds,
                          "conditions": list(a.candidate.conditions)}
                         for a in outcome.admitted]}
        cache.put_result(_key(spec, sketch, profile, budget), record,
                         [a.obligation for a in outcome.admitted])
    return outcome


def _served(spec: Spec, sketch: Sketch, profile: str, budget: ProofBudget,
            cache: ProofCache | None) -> SketchOutcome | None:
    """The sketch's outcome from the cache (its admitted fillings rebuilt, no proof), or None."""
    if cache is None:
        return None
    start = time.perf_counter()
    record = cache.result(_key(spec, sketch, profile, budget))
    if record is None:
        return None
    outcome = SketchOutcome(sketch.id, from_cache=True)
    for stored in record["admitted"]:
        try:
            candidate = sketch.build(spec, stored["filling"])
        except Pruned:  # the target no longer builds it: decide the sketch afresh
            return None
        outcome.admitted.append(Admitted(sketch.id, stored["filling"], candidate,
                                         stored["proof_id"], stored["obligation"],
                                         stored["seconds"], cached=True))
    outcome.counts.admitted = outcome.counts.cached = len(outcome.admitted)
    outcome.seconds = time.perf_counter() - start
    return outcome


def _key(spec: Spec, sketch: Sketch, profile: str, budget: ProofBudget) -> str:
    return step_key(STEP, spec.form_text(), f"profile {profile}",
                    f"assume {' ; '.join(spec.assumptions)}", sketch.signature(), budget.key())


def _types_differ(candidate: FuncOp, spec: FuncOp) -> str:
    """Why the candidate's parameter or result types are not the spec's ("" when they are)."""
    for what, got, want in (("parameter", candidate.function_type.inputs.data,
                             spec.function_type.inputs.data),
                            ("result", candidate.function_type.outputs.data,
                             spec.function_type.outputs.data)):
        if [str(t) for t in got] != [str(t) for t in want]:
            return (f"{what} types ({', '.join(map(str, got))}) are not the tile op's "
                    f"({', '.join(map(str, want))})")
    return ""


def describe(rejected: Rejected) -> str:
    """A rejected filling as one line: `sketch [filling]: outcome: reason`."""
    return f"{rejected.sketch} [{filling_text(rejected.filling)}]: {rejected.outcome}: " \
           f"{rejected.reason}"
