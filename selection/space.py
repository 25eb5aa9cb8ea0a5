"""Bounded enumeration of a candidate space and the pick among the checked candidates.

    kept = ranked_bounded(candidates, cost=lambda c: c.modeled_ms,
                          group=lambda c: (c.program, c.tiling), limit=64)
    kept.chosen      # at most `limit`, cheapest first within each group, groups interleaved
    kept.space, kept.pruned

The groups are interleaved by rank (every group's cheapest, in order of cost, then every group's
second, ...), so a bounded list keeps the best of each kind of kernel before the runners-up of
the cheapest one: a cost model that misjudges a whole tiling cannot crowd it out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

#: the cascade's steps, in order (the targets' cascades use these names)
STEPS = ("syntax", "structure", "correctness", "performance")


@dataclass(frozen=True)
class Bounded(Generic[T]):
    """The candidates kept, how many there were, and how many were pruned."""

    chosen: list[T]
    space: int
    pruned: int


def ranked_bounded(candidates: Iterable[T], cost: Callable[[T], float],
                   group: Callable[[T], Hashable], limit: int) -> Bounded[T]:
    """At most `limit` of `candidates`: each group ordered by `cost`, the groups interleaved by
    rank (see the module docstring); a candidate of infinite cost is never kept."""
    everything = list(candidates)
    finite = [c for c in everything if math.isfinite(cost(c))]
    groups: dict[Hashable, list[T]] = {}
    for c in sorted(finite, key=cost):
        groups.setdefault(group(c), []).append(c)
    ordered: list[T] = []
    depth = max((len(g) for g in groups.values()), default=0)
    for rank in range(depth):
        ordered.extend(sorted((g[rank] for g in groups.values() if rank < len(g)), key=cost))
    chosen = ordered[:max(limit, 0)]
    return Bounded(chosen, len(everything), len(everything) - len(chosen))


@dataclass(frozen=True)
class Verdict:
    """What the cascade said of one candidate: passed, or the step that rejected it and why."""

    id: str
    passed: bool
    step: str = ""
    """The rejecting step (one of STEPS); empty when it passed."""
    reason: str = ""
    measured_ms: float | None = None
    baseline_ms: float | None = None
    baseline: str = ""
    timing: str = ""
    """How step 4 went when it did not time (`timing skipped: no GPU`)."""


@dataclass
class Tally:
    """Counts for a summary: candidates checked, and rejections per cascade step."""

    checked: int = 0
    passed: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    first_reasons: dict[str, str] = field(default_factory=dict)

    def add(self, verdicts: Iterable[Verdict]) -> None:
        for v in verdicts:
            self.checked += 1
            if v.passed:
                self.passed += 1
            else:
                self.rejected[v.step] += 1
                self.first_reasons.setdefault(v.step, f"{v.id}: {v.reason}")

    def line(self) -> str:
        """`12 checked, 9 passed; rejected: syntax 0, structure 2, correctness 1, ...`."""
        steps = ", ".join(f"{s} {self.rejected[s]}" for s in STEPS)
        return f"{self.checked} checked, {self.passed} passed; rejected: {steps}"


def pick(verdicts: Sequence[Verdict], modeled_ms: Callable[[str], float]) -> Verdict | None:
    """The passing candidate to use: the fastest measured one, or, where nothing was timed,
    the one the cost model prices lowest (ties: the earlier); None when none passed."""
    passed = [v for v in verdicts if v.passed]
    timed = [v for v in passed if v.measured_ms is not None]
    if timed:
        return min(timed, key=lambda v: v.measured_ms or math.inf)
    return min(passed, key=lambda v: modeled_ms(v.id), default=None)
