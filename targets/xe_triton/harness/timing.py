"""Timing a callable: the one method used for Axon's kernels and for every baseline.

On a GPU each run is bracketed by CUDA events after an L2 flush (writing a buffer twice the L2's
size, from the device profile), and the median of the runs is taken. The same runs are timed
again with the callable captured in a CUDA graph and replayed (the flush still between runs), which
removes the CPU's launch overhead; the harness reports the graph figure for a case whose kernels
run under `GRAPH_BELOW_MS` (see `run.py`). Without CUDA the callable runs on Triton's CPU
interpreter and is timed by the wall clock: not a performance figure.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

#: below this (ms), launch overhead dominates plain event timing: report the CUDA-graph figure
GRAPH_BELOW_MS = 0.05
#: the most seconds one method spends on the runs of one callable (fewer runs for slow kernels)
BUDGET_S = 3.0
#: runs before timing (compilation, caches, clocks)
WARMUP = 3


@dataclass(frozen=True)
class Timing:
    """One callable's figures: the median ms of plain runs (events on a GPU, the wall clock on
    the CPU), the median ms with a CUDA graph (None on the CPU or when capture failed), the runs
    each took, and a note (why there is no graph figure)."""

    events_ms: float
    graph_ms: float | None
    runs: int
    note: str = ""

    def as_json(self) -> dict[str, object]:
        """The figures as JSON values."""
        return {"events_ms": self.events_ms, "graph_ms": self.graph_ms, "runs": self.runs,
                "note": self.note}


def flush_buffer(l2_bytes: int) -> torch.Tensor:
    """A buffer twice the L2's size: zeroing it evicts what a previous run left in L2."""
    return torch.empty(max(2 * l2_bytes // 4, 1), dtype=torch.int32, device="cuda")


def _event_runs(run: Callable[[], object], flush: torch.Tensor, runs: int) -> float:
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for start, end in zip(starts, ends, strict=True):
        flush.zero_()
        start.record()
        run()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


def _runs_within_budget(estimate_ms: float, repeats: int) -> int:
    return max(5, min(repeats, int(BUDGET_S * 1e3 / max(estimate_ms, 1e-3))))


def time_gpu(fn: Callable[[], object], repeats: int, flush: torch.Tensor) -> Timing:
    """Median ms of `fn()` with an L2 flush between runs, with events and with a CUDA graph."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    runs = _runs_within_budget(_event_runs(fn, flush, 3), repeats)
    events_ms = _event_runs(fn, flush, runs)
    try:
        # capture on a side stream after a warm run there, as torch.cuda.graphs asks
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        graph.replay()
        torch.cuda.synchronize()
        graph_ms: float | None = _event_runs(graph.replay, flush, runs)
        note = ""
    except Exception as e:  # noqa: BLE001 (a callable that cannot be captured keeps its events)
        graph_ms, note = None, f"no CUDA graph: {type(e).__name__}: {str(e)[:120]}"
        torch.cuda.synchronize()
    return Timing(events_ms, graph_ms, runs, note)


def time_cpu(fn: Callable[[], object], repeats: int) -> Timing:
    """Median wall-clock ms of `fn()` on the CPU (Triton's interpreter): not a performance
    figure."""
    fn()
    times = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return Timing(statistics.median(times), None, len(times),
                  "cpu interpreter: not a performance figure")


def time_callable(fn: Callable[[], object], repeats: int,
                  flush: torch.Tensor | None) -> Timing:
    """`time_gpu` when a flush buffer is given (CUDA), else `time_cpu`."""
    return time_gpu(fn, repeats, flush) if flush is not None else time_cpu(fn, repeats)


def method(timings: Iterable[Timing | None], device: str) -> str:
    """How the callables of one comparison are reported: "cpu" on the interpreter, "graph" when
    one of them has a CUDA-graph figure under `GRAPH_BELOW_MS`, else "events"."""
    graphs = [t.graph_ms for t in timings if t is not None and t.graph_ms is not None]
    return ("cpu" if device == "cpu" else
            "graph" if graphs and min(graphs) < GRAPH_BELOW_MS else "events")


def figure(timing: Timing | None, how: str) -> float | None:
    """A timing's ms under the method `how` (the graph figure where it has one, else the
    events'); None when it was not timed."""
    if timing is None:
        return None
    return timing.graph_ms if how == "graph" and timing.graph_ms is not None else timing.events_ms
