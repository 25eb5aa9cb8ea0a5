"""Running the plan on a kernel file: proposals in, only checked ones kept.

    result = optimize_kernel_file(path, load_device("b70"), check, print)
    result.source            # the final module text
    result.report_lines()    # per stage: applied / skipped (why) / rolled back (step, reason)

`check(current_source, proposal_source) -> CheckOutcome` is injected: the cascade (syntax,
structure against the KB, correctness against the original kernel's outputs, performance on the
device) is another piece; the driver only asks it. For each planned stage that applies to the
current text the driver takes the stage's proposals, checks each, keeps the fastest that passes
(by `candidate_ms` where the check measured it, else the first that passes) and moves on from
it; a stage whose proposals all fail is rolled back (the text stays) and the first failure's
step and reason recorded. Plugged proposers (`proposer.py`) run after the stages, the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from axon.forge.planner import make_plan
from axon.forge.proposer import Proposer
from axon.forge.source import KernelFile
from axon.forge.stages import Proposal, Stage, analyse_file, builtin_stages
from axon.forge.stages.facts import ForgeOptions
from axon.targets.xe_triton.kb import Device

__all__ = ["CheckOutcome", "Checker", "ForgeResult", "StageRecord", "optimize_kernel_file",
           "optimize_source"]


@dataclass(frozen=True)
class CheckOutcome:
    """The cascade's verdict on one proposal: the step that decided and why; the candidate's
    time where it was measured."""

    passed: bool
    step: str
    reason: str
    candidate_ms: float | None = None


#: check(current_source, proposal_source)
Checker = Callable[[str, str], CheckOutcome]


@dataclass(frozen=True)
class StageRecord:
    """What happened at one stage: "applied", "skipped", "rolled back" or "reported"."""

    stage: str
    status: str
    why: str
    proposals: int = 0
    outcomes: tuple[tuple[str, CheckOutcome], ...] = ()

    def line(self) -> str:
        """One line of the report."""
        count = f" ({self.proposals} proposal(s))" if self.proposals else ""
        return f"{self.stage}: {self.status}{count}: {self.why}"


@dataclass
class ForgeResult:
    """The final module text and what each stage did."""

    original: str
    source: str
    records: list[StageRecord] = field(default_factory=list)
    #: the text after each applied stage, in order: (stage, source); the last is `source`
    snapshots: list[tuple[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether any proposal was kept."""
        return self.source != self.original

    def add(self, record: StageRecord, source: str) -> None:
        """Record one stage's outcome and, where it applied, the text it left."""
        self.records.append(record)
        if record.status == "applied":
            self.snapshots.append((record.stage, source))

    def applied(self) -> list[str]:
        """The stages whose proposal was kept, in order."""
        return [r.stage for r in self.records if r.status == "applied"]

    def report_lines(self) -> list[str]:
        """The per-stage report."""
        return [r.line() for r in self.records]


def _choose(proposals: Sequence[Proposal], source: str, check: Checker
            ) -> tuple[Proposal | None, list[tuple[str, CheckOutcome]]]:
    outcomes = [(p.description, check(source, p.source)) for p in proposals]
    passing = [(p, o) for p, (_, o) in zip(proposals, outcomes, strict=True) if o.passed]
    if not passing:
        return None, outcomes
    timed = [(p, o) for p, o in passing if o.candidate_ms is not None]
    if timed:
        return min(timed, key=lambda po: po[1].candidate_ms or 0.0)[0], outcomes
    return passing[0][0], outcomes


def _run(name: str, proposals: Sequence[Proposal], source: str, check: Checker
         ) -> tuple[str, StageRecord]:
    if not proposals:
        return source, StageRecord(name, "skipped", "applies, but made no proposal")
    best, outcomes = _choose(proposals, source, check)
    if best is None:
        step, reason = outcomes[0][1].step, outcomes[0][1].reason
        return source, StageRecord(name, "rolled back", f"every proposal failed; the first at "
                                                        f"{step}: {reason}", len(proposals),
                                   tuple(outcomes))
    chosen = next(o for d, o in outcomes if d == best.description)
    timing = f" ({chosen.candidate_ms:.4g} ms)" if chosen.candidate_ms is not None else ""
    return best.source, StageRecord(name, "applied", f"{best.description}{timing}",
                                    len(proposals), tuple(outcomes))


def optimize_source(source: str, filename: str, profile: Device, check: Checker,
                    say: Callable[[str], None] = lambda line: None,
                    stages: Sequence[Stage] | None = None,
                    proposers: Sequence[Proposer] = ()) -> ForgeResult:
    """`optimize_kernel_file` on a module's text (named `filename` in diagnostics)."""
    result = ForgeResult(source, source)
    current = source
    for step in make_plan(KernelFile(source, filename), stages):
        stage = step.stage
        kernel_file = KernelFile(current, filename)
        verdict = stage.applies(kernel_file)
        if stage.name == "analysis":
            record = StageRecord(stage.name, "reported" if verdict.applies else "skipped",
                                 verdict.why)
        elif not verdict.applies:
            record = StageRecord(stage.name, "skipped", verdict.why)
        else:
            current, record = _run(stage.name, stage.propose(kernel_file, profile), current,
                                   check)
        result.add(record, current)
        say(record.line())
    for proposer in proposers:
        report = analyse_file(KernelFile(current, filename))
        current, record = _run(proposer.name, list(proposer.propose(current, report, profile)),
                               current, check)
        result.add(record, current)
        say(record.line())
    result.source = current
    return result


def optimize_kernel_file(path: str | Path, profile: Device, check: Checker,
                         say: Callable[[str], None] = lambda line: None,
                         options: ForgeOptions | None = None,
                         proposers: Sequence[Proposer] = ()) -> ForgeResult:
    """Run the plan of the built-in stages (with `options`), then `proposers`, on the kernel
    file at `path`, keeping only proposals `check` passes; `say` gets one line per stage."""
    path = Path(path)
    return optimize_source(path.read_text(encoding="utf-8"), str(path), profile, check, say,
                           builtin_stages(options), proposers)


