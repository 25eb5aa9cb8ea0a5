"""`estimate(trace, constants)`: a kernel's latency, per-engine utilisation and critical path."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from axon.targets.nki.cost.constants import CostConstants
from axon.targets.nki.cost.timeline import COMPUTE_ENGINES, DMA, Event, place
from axon.targets.nki.simulator.trace import Trace

#: every engine a summary lists
ENGINES = (*COMPUTE_ENGINES, DMA)


@dataclass(frozen=True)
class Estimate:
    """What the cost model says about one run of a kernel."""

    profile: str
    total_s: float
    """Latency: when the last instruction ends."""
    events: tuple[Event, ...]
    busy_s: dict[str, float]
    """Seconds each engine is occupied (DMA: transfers holding the DMA engines)."""
    critical_path: tuple[int, ...]
    """Event indices from the first to the last, each one's start set by the one before."""
    critical_s: dict[str, float]
    """The critical path's composition, summing to `total_s`: seconds of each engine's work on
    it, plus `sync` (dependency synchronization, port turns), `dma fixed` (DMA latency) and
    `idle` (the rest of a wait for a busy queue)."""

    @property
    def utilisation(self) -> dict[str, float]:
        """Each engine's busy fraction of the latency."""
        if self.total_s <= 0:
            return dict.fromkeys(ENGINES, 0.0)
        return {e: self.busy_s[e] / self.total_s for e in ENGINES}

    def summary(self) -> str:
        """A few lines a user reads to see where the time goes."""
        lines = [f"latency {self.total_s * 1e6:.2f} us on {self.profile} "
                 f"({len(self.events)} instructions)",
                 f"{'engine':<8}{'instructions':>13}{'busy us':>12}{'utilisation':>13}"]
        counts = Counter(e.engine for e in self.events)
        for engine in ENGINES:
            lines.append(f"{engine:<8}{counts[engine]:>13}{self.busy_s[engine] * 1e6:>12.2f}"
                         f"{self.utilisation[engine]:>12.1%}")
        parts = ", ".join(f"{k} {v * 1e6:.2f} us" for k, v in
                          sorted(self.critical_s.items(), key=lambda kv: -kv[1]) if v > 0)
        lines.append(f"critical path: {len(self.critical_path)} instructions; {parts}")
        lines.append(f"bound by: {self.bound_by()}")
        return "\n".join(lines)

    def bound_by(self) -> str:
        """The largest part of the critical path."""
        if not self.critical_s:
            return "nothing (empty trace)"
        return max(self.critical_s.items(), key=lambda kv: kv[1])[0]


def _critical_path(events: list[Event], constants: CostConstants) -> tuple[tuple[int, ...],
                                                                            dict[str, float]]:
    """Walk back from the last event to end along each event's `waited_for`."""
    parts = dict.fromkeys((*ENGINES, "sync", "dma fixed", "idle"), 0.0)
    if not events:
        return (), parts
    path: list[int] = []
    index = max(range(len(events)), key=lambda i: events[i].end)
    while index >= 0:
        event = events[index]
        path.append(index)
        previous_end = events[event.waited_for].end if event.waited_for >= 0 else 0.0
        # each event on the path accounts for the stretch from its predecessor's end to its own
        stretch = max(0.0, event.end - previous_end)
        busy = min(event.busy_s, stretch)
        parts[event.engine] += busy
        rest = stretch - busy
        if event.engine == DMA:
            fixed = min(rest, constants.dma_fixed_s)
            parts["dma fixed"] += fixed
            rest -= fixed
        parts["sync" if event.wait_kind in ("dependency", "port") else "idle"] += rest
        index = event.waited_for
    path.reverse()
    return tuple(path), parts


def estimate(trace: Trace, constants: CostConstants) -> Estimate:
    """Place every instruction of `trace` (a simulator run's) on the NeuronCore timeline of
    `constants` (`load_constants("trn1")`) and summarize it."""
    events = place(trace, constants)
    busy = dict.fromkeys(ENGINES, 0.0)
    for event in events:
        busy[event.engine] += event.busy_s
    total = max((e.end for e in events), default=0.0)
    path, parts = _critical_path(events, constants)
    return Estimate(constants.profile, total, tuple(events), busy, path, parts)
