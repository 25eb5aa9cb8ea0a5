"""Budgets and the run report: the limits that cut a search, and what the search did.

    budget = Budget(max_iterations=8, max_nodes=3000, time_limit_s=60)
    report.summary()   # "12 candidates: 5 proved, 1 refuted, 0 unknown, 6 known; saturated ..."
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

SATURATED = "saturated"
ITERATION_LIMIT = "iteration limit"
NODE_LIMIT = "node limit"
TIME_LIMIT = "time limit"


@dataclass(frozen=True)
class Budget:
    """Limits of one propagation run."""

    max_iterations: int = 6
    max_nodes: int = 2_000
    time_limit_s: float = 60.0
    proof_timeout_ms: int = 5_000


@dataclass
class Report:
    """Counts and timings of one run, and which limit (if any) cut it."""

    candidates: int = 0
    known: int = 0
    proved: int = 0
    refuted: int = 0
    tested_out: int = 0
    """Of the refuted: those a numeric test rejected before the solver ran."""
    unknown: int = 0
    iterations: int = 0
    stop_reason: str = ""
    seconds: float = 0.0
    proof_seconds: float = 0.0
    by_move: dict[str, int] = field(default_factory=dict)
    _start: float = field(default_factory=time.perf_counter, repr=False)

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

    def summary(self) -> str:
        moves = ", ".join(f"{k} {v}" for k, v in sorted(self.by_move.items()))
        cut = f"cut by the {self.stop_reason}" if self.limit_hit else self.stop_reason
        return (f"{self.candidates} candidates: {self.proved} proved, {self.refuted} refuted "
                f"({self.tested_out} by a numeric test), "
                f"{self.unknown} unknown, {self.known} already present; admitted by move: "
                f"{moves or 'none'}; {self.iterations} iteration(s), {cut}, "
                f"{self.seconds:.2f}s ({self.proof_seconds:.2f}s proving)")
