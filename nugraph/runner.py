"""The runner: owns the propagation loop, its limits and a record of every iteration (egg's
`Runner`), with a scheduler that may ban moves that explode (egg's `BackoffScheduler`).

Each iteration visits every kind of site in turn (`moves.sites.SITE_KINDS`: producer/consumer
pairs, then groups of e-nodes), asks each move that looks at that kind what it proposes at each
site not visited before, and takes every candidate through `admission.admit` (a term two moves
propose at one site is one candidate, credited to the first). After each kind the graph is
rebuilt. A kind is listed again only where the graph changed since its last listing
(`sites.Mark`), so a large program with little to prove is not scanned whole every iteration.
The run stops when an iteration joins no two classes (saturated, unless the scheduler still holds
a ban: then the bans are lifted and the run goes on) or a limit of the `Budget` is reached; the
`Report` says which and keeps one `Iteration` per iteration. The limits that bound the work are
counts (iterations, e-nodes, candidates taken to the prover), so a run they stop repeats
exactly; the clock is a safety net, read while the sites are listed, before every move
proposes at a site and before every proof, whose own safety net never outlasts it, so a run
stops on time whether it proves much or nothing at all.

    runner = Runner(g, Budget(max_iterations=8, max_nodes=3000, max_proofs=500))
    report = runner.run()
    report.summary()   # "12 candidates: 5 proved, 1 refuted (0 by a numeric test), 0 unknown, ..."
    report.history[0].move_seconds   # {"fuse": 0.01, "push": 0.4, ...}
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from axon.nugraph.admission import (
    NODE_LIMIT,
    TIME_LIMIT,
    Admission,
    Limits,
    Outcome,
    Tried,
    admit,
)
from axon.nugraph.candidates import Candidate
from axon.nugraph.egraph import EGraph
from axon.nugraph.moves import Move, default_moves
from axon.nugraph.moves.sites import SITE_KINDS, Mark
from axon.nugraph.prover import Prover
from axon.nugraph.term import Term
from axon.verifier import ProofBudget
from axon.verifier.budget import SEARCH_BUDGET

SATURATED = "saturated"
ITERATION_LIMIT = "iteration limit"
PROOF_LIMIT = "proof limit"
#: sites listed between two reads of the clock (listing a graph of thousands of e-nodes is work)
CLOCK_EVERY = 256

__all__ = ["ITERATION_LIMIT", "NODE_LIMIT", "PROOF_LIMIT", "SATURATED", "TIME_LIMIT",
           "BackoffScheduler",
           "Budget", "Iteration", "Progress", "Report", "Runner", "Scheduler", "SimpleScheduler"]


@dataclass(frozen=True)
class Budget:
    """Limits of one propagation run (the defaults are the `propagate` pass's too).

    The run's work is bounded by counts, which stop it at the same place in every run (so a
    result they shaped repeats and may be stored): iterations, e-nodes, and `max_proofs`
    candidates taken to the prover (its numeric test or a proof, each under `proof_budget`).
    `time_limit_s` is a safety net for a machine far slower than the counts assume: a run it
    cuts depends on the machine and its load."""

    max_iterations: int = 6
    max_nodes: int = 2_000
    time_limit_s: float = 600.0
    proof_budget: ProofBudget = SEARCH_BUDGET
    max_proofs: int = 2_000


@dataclass
class Iteration:
    """What one iteration did: candidates by outcome, per move what was proposed, proved and how
    long it took (proposing and proving), which moves the scheduler banned, and the graph's size
    after it."""

    index: int
    candidates: int = 0
    known: int = 0
    proved: int = 0
    refuted: int = 0
    tested_out: int = 0
    """Of the refuted: those a numeric test rejected before the solver ran."""
    unknown: int = 0
    admitted: int = 0
    """Proofs that joined two classes (a proved candidate may share its class already)."""
    proof_seconds: float = 0.0
    proposed: dict[str, int] = field(default_factory=dict)
    by_move: dict[str, int] = field(default_factory=dict)
    """Proved candidates per move."""
    move_seconds: dict[str, float] = field(default_factory=dict)
    banned: list[str] = field(default_factory=list)
    nodes: int = 0
    classes: int = 0
    seconds: float = 0.0

    def count(self, move: str, admission: Admission) -> None:
        """Record the admission of one of `move`'s candidates."""
        self.proof_seconds += admission.seconds
        self.move_seconds[move] = self.move_seconds.get(move, 0.0) + admission.seconds
        outcome = admission.outcome
        if outcome is Outcome.KNOWN:
            self.known += 1
        elif outcome is Outcome.PROVED:
            self.proved += 1
            self.by_move[move] = self.by_move.get(move, 0) + 1
            self.admitted += admission.merged
        elif outcome in (Outcome.REFUTED, Outcome.TESTED_OUT):
            self.refuted += 1
            self.tested_out += outcome is Outcome.TESTED_OUT
        elif outcome is Outcome.UNKNOWN:
            self.unknown += 1


@dataclass
class Report:
    """The iterations of one run, which limit (if any) cut it, and the totals over them."""

    history: list[Iteration] = field(default_factory=list)
    stop_reason: str = ""
    seconds: float = 0.0
    cut_after: list[str] = field(default_factory=list)
    """Stages after the search that the time limit ended early (`Session`: "extraction",
    "float check")."""
    _start: float = field(default_factory=time.perf_counter, repr=False)

    def _total(self, name: str) -> Any:
        return sum(getattr(i, name) for i in self.history)

    @property
    def iterations(self) -> int:
        return len(self.history)

    @property
    def candidates(self) -> int:
        return self._total("candidates")

    @property
    def known(self) -> int:
        return self._total("known")

    @property
    def proved(self) -> int:
        return self._total("proved")

    @property
    def refuted(self) -> int:
        return self._total("refuted")

    @property
    def tested_out(self) -> int:
        return self._total("tested_out")

    @property
    def unknown(self) -> int:
        return self._total("unknown")

    @property
    def proof_seconds(self) -> float:
        return self._total("proof_seconds")

    @property
    def by_move(self) -> dict[str, int]:
        """Proved candidates per move, over the run."""
        total: dict[str, int] = {}
        for i in self.history:
            for move, n in i.by_move.items():
                total[move] = total.get(move, 0) + n
        return total

    @property
    def rejected(self) -> int:
        return self.refuted + self.unknown

    @property
    def limit_hit(self) -> bool:
        return self.stop_reason not in ("", SATURATED)

    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    def finish(self, reason: str) -> None:
        self.stop_reason = reason
        self.seconds = self.elapsed()

    def cut(self, stage: str) -> None:
        """Record that the time limit ended `stage` early."""
        if stage not in self.cut_after:
            self.cut_after.append(stage)

    def summary(self) -> str:
        moves = ", ".join(f"{k} {v}" for k, v in sorted(self.by_move.items()))
        cut = f"cut by the {self.stop_reason}" if self.limit_hit else self.stop_reason
        if self.cut_after:
            cut += f" (the time limit also cut {' and '.join(self.cut_after)} short)"
        return (f"{self.candidates} candidates: {self.proved} proved, {self.refuted} refuted "
                f"({self.tested_out} by a numeric test), "
                f"{self.unknown} unknown, {self.known} already present; admitted by move: "
                f"{moves or 'none'}; {self.iterations} iteration(s), {cut}, "
                f"{self.seconds:.2f}s ({self.proof_seconds:.2f}s proving)")


class Scheduler(Protocol):
    """Decides which moves propose in an iteration (iterations count from 1)."""

    def allows(self, move: str, iteration: int) -> bool:
        """Whether `move` may propose in `iteration`."""
        ...

    def proposed(self, move: str, iteration: int, count: int) -> bool:
        """`move` has proposed `count` candidates so far in `iteration`; False bans it now (what
        it just proposed is dropped)."""
        ...

    def can_stop(self, iteration: int) -> bool:
        """Whether the run may stop as saturated after `iteration` (False: a ban was lifted)."""
        ...


class SimpleScheduler:
    """Never bans: every move proposes at every site (the default)."""

    def allows(self, move: str, iteration: int) -> bool:
        return True

    def proposed(self, move: str, iteration: int, count: int) -> bool:
        return True

    def can_stop(self, iteration: int) -> bool:
        return True


@dataclass
class BackoffScheduler:
    """Bans a move that proposes more than `match_limit` candidates in an iteration for the next
    `ban_length` iterations; each ban doubles both for that move (egg's `BackoffScheduler`). A
    run that saturates while a move is banned lifts the bans and goes on, as egg's does. Sites a
    banned move missed stay unvisited for it, so it sees them once its ban ends."""

    match_limit: int = 1_000
    ban_length: int = 2
    banned_until: dict[str, int] = field(default_factory=dict)
    """The first iteration each banned move may propose in again."""
    times_banned: dict[str, int] = field(default_factory=dict)

    def allows(self, move: str, iteration: int) -> bool:
        return iteration >= self.banned_until.get(move, 0)

    def proposed(self, move: str, iteration: int, count: int) -> bool:
        times = self.times_banned.get(move, 0)
        if count <= self.match_limit << times:
            return True
        self.banned_until[move] = iteration + 1 + (self.ban_length << times)
        self.times_banned[move] = times + 1
        return False

    def can_stop(self, iteration: int) -> bool:
        # a move banned in this iteration missed sites: it looks at them before the run ends
        banned = [m for m, until in self.banned_until.items() if until > iteration]
        for move in banned:
            self.banned_until[move] = iteration + 1
        return not banned


#: called after every iteration with the report so far and the graph (progress output)
Progress = Callable[[Report, EGraph], None]


class _Stop(Exception):
    """A limit was reached; carries which."""


@dataclass
class Runner:
    """Grows `graph` with the candidates of `moves` that are proved, within `budget`."""

    graph: EGraph
    budget: Budget = field(default_factory=Budget)
    prover: Prover | None = None
    """Default: a fresh one with the budget's proof timeout."""
    moves: Sequence[Move] = field(default_factory=default_moves)  # type: ignore[type-arg]
    scheduler: Scheduler = field(default_factory=SimpleScheduler)
    progress: Progress | None = None
    report: Report = field(default_factory=Report)
    _visited: set[tuple[str, Hashable]] = field(default_factory=set, repr=False)
    _tried: Tried = field(default_factory=set, repr=False)
    _fenced: set[int] = field(default_factory=set, repr=False)
    _marks: dict[type, Mark] = field(default_factory=dict, repr=False)
    """Where the graph stood when each kind of site was last listed."""
    _banned: bool = field(default=False, repr=False)
    """Whether the scheduler has banned a move: its sites then wait, and are listed in full."""
    _asked: int = field(default=0, repr=False)
    """Candidates taken to the prover so far (`Budget.max_proofs`)."""

    def run(self) -> Report:
        """Run to saturation or a limit; returns the report (also `self.report`)."""
        g, report = self.graph, self.report
        prover = self.prover or Prover(budget=self.budget.proof_budget)
        limits = Limits(self.budget.max_nodes, self.budget.time_limit_s, report.elapsed)
        try:
            for index in range(1, self.budget.max_iterations + 1):
                record = Iteration(index)
                report.history.append(record)
                start = time.perf_counter()
                for kind in SITE_KINDS:
                    if limits.out_of_time():
                        raise _Stop(TIME_LIMIT)
                    moves = [m for m in self.moves if m.site is kind]
                    if moves:
                        since = None if self._banned else self._marks.get(kind)
                        self._marks[kind] = Mark.of(g)
                        for site in self._listed(kind.find_all(g, self._fenced, since),
                                                 limits):
                            self._visit(site, moves, record, prover, limits)
                    g.rebuild()
                self._close(record, start)
                if self.progress is not None:
                    self.progress(report, g)
                if record.admitted == 0 and self.scheduler.can_stop(index):
                    report.finish(SATURATED)
                    return report
            report.finish(ITERATION_LIMIT)
        except _Stop as stop:
            g.rebuild()
            self._close(report.history[-1], start)
            report.finish(str(stop))
        return report

    @staticmethod
    def _listed(sites: Iterator[Any], limits: Limits) -> list[Any]:
        """The sites of one kind, listed before any is visited (visits change the graph), with
        the clock read every `CLOCK_EVERY` sites: listing a large graph is work too."""
        listed = []
        for site in sites:
            listed.append(site)
            if len(listed) % CLOCK_EVERY == 0 and limits.out_of_time():
                raise _Stop(TIME_LIMIT)
        return listed

    def _visit(self, site: Any, moves: list[Move], record: Iteration,  # type: ignore[type-arg]
               prover: Prover, limits: Limits) -> None:
        """Ask the moves not yet asked at `site`, then admit what they proposed."""
        g = self.graph
        key = site.key(g)
        proposals: list[Candidate] = []
        seen: set[Term] = set()
        for move in moves:
            if (move.name, key) in self._visited or not self.scheduler.allows(move.name,
                                                                               record.index):
                continue
            if limits.out_of_time():
                # proposing is work too: a program with nothing to prove still runs out of time
                raise _Stop(TIME_LIMIT)
            start = time.perf_counter()
            found = list(move.propose(g, site))
            record.move_seconds[move.name] = (record.move_seconds.get(move.name, 0.0)
                                              + time.perf_counter() - start)
            record.proposed[move.name] = record.proposed.get(move.name, 0) + len(found)
            if not self.scheduler.proposed(move.name, record.index, record.proposed[move.name]):
                record.banned.append(move.name)
                self._banned = True
                continue
            self._visited.add((move.name, key))
            for candidate in found:
                if candidate.term not in seen:
                    seen.add(candidate.term)
                    proposals.append(candidate)
        for candidate in proposals:
            if self._asked >= self.budget.max_proofs:
                raise _Stop(PROOF_LIMIT)
            record.candidates += 1
            admission = admit(g, prover, candidate, limits, self._tried)
            if admission.outcome in (Outcome.TIME_LIMIT, Outcome.NODE_LIMIT):
                raise _Stop(admission.outcome.value)
            self._asked += admission.outcome is not Outcome.KNOWN
            record.count(candidate.move, admission)
            self._fenced.update(admission.derived)

    def _close(self, record: Iteration, start: float) -> None:
        record.nodes, record.classes = self.graph.num_nodes, self.graph.num_classes
        record.seconds = time.perf_counter() - start
