"""The event timeline: when each instruction of a simulator trace starts and ends.

The NeuronCore model of ../shared/reference/nki.md sections 6 and 10:

* Compute engines (PE, ACT, DVE, POOL) are in-order queues: an instruction starts when its engine
  has finished the previous one and its inputs are ready; engines run concurrently.
* DMAs go round-robin to `dma_queues` FIFO queues. A transfer pays `dma_fixed_s` of latency in
  its queue, then needs the core's DMA engines for bytes / bandwidth; transfers from different
  queues share that bandwidth, each filling the engines' free time from its ready time on, gap
  by gap (the engines serve whichever queue has work, descriptor by descriptor, nki.md 6.2).
* Dependencies go through buffers: an access waits for every earlier access to an overlapping
  byte range of the same allocation that conflicts with it (read after write, write after read,
  write after write), plus `sync_cycles` at the consumer's clock (semaphore wait and access
  start). Consecutive instructions of one TensorE accumulation group pay no sync: the array
  accumulates back to back. A DMA's synchronization is inside its fixed cost.
* NC-v2 port conflicts: with one SBUF port between VectorE and GpSimdE (one PSUM port between
  VectorE and ScalarE), their instructions touching that buffer take turns.

Allocations are told apart by the trace's `allocation_id`: a tile allocated anew in each loop
iteration is a new allocation, which models the compiler giving each iteration its own buffer.
"""

from __future__ import annotations

import bisect
import functools
import math
from dataclasses import dataclass, field

from axon.targets.nki.cost.constants import CostConstants
from axon.targets.nki.cost.formulas import compute_cycles, dma_transfer_s
from axon.targets.nki.simulator.trace import Access, Instruction, Trace

#: the compute engines, in the order summaries list them
COMPUTE_ENGINES = ("PE", "ACT", "DVE", "POOL")
#: the name summaries give the DMA engines together
DMA = "DMA"


@dataclass(frozen=True)
class Event:
    """One instruction placed on the timeline."""

    index: int
    """Its position in the trace."""
    name: str
    engine: str
    """`PE`, `ACT`, `DVE`, `POOL`, or `DMA`."""
    queue: int
    """The DMA queue (0 for compute engines)."""
    start: float
    """When it starts (a DMA: when its queue starts it, before the fixed latency)."""
    busy_start: float
    """When it starts occupying its engine (a DMA: when its transfer starts)."""
    end: float
    busy_s: float
    """The time it occupies its engine (a DMA: its transfer, which may be interleaved with
    others' between `busy_start` and `end`)."""
    line: int
    waited_for: int
    """The event whose end set this one's start (-1: none; the trace's start)."""
    wait_kind: str
    """Why it waited: `engine` (its queue was busy), `dependency` (an input or a buffer it
    overwrites), `port` (a shared SBUF/PSUM port), `bandwidth` (the DMA engines), or `none`."""


@dataclass(frozen=True)
class _Region:
    """The bytes an access touches, as a rectangle of rows x bytes within a row (`pitch` bytes
    apart; pitch 0 for on-chip partitions, -1 for a flat byte range), and as a flat range."""

    pitch: int
    row0: int
    row1: int
    byte0: int
    byte1: int
    flat0: int
    flat1: int

    def overlaps(self, other: _Region) -> bool:
        if self.pitch == other.pitch and self.pitch >= 0:
            return (self.row0 < other.row1 and other.row0 < self.row1
                    and self.byte0 < other.byte1 and other.byte0 < self.byte1)
        return self.flat0 < other.flat1 and other.flat0 < self.flat1

    def covers(self, other: _Region) -> bool:
        if self.pitch == other.pitch and self.pitch >= 0:
            return (self.row0 <= other.row0 and other.row1 <= self.row1
                    and self.byte0 <= other.byte0 and other.byte1 <= self.byte1)
        return self.pitch == other.pitch and self.flat0 <= other.flat0 \
            and other.flat1 <= self.flat1


def _itemsize(access: Access) -> int:
    elements = access.partition_count * access.elements_per_partition
    return max(1, access.bytes // max(1, elements))


@functools.lru_cache(maxsize=1 << 18)
def region(access: Access) -> _Region:
    """The bytes `access` touches (see `_Region`). Cached: the calibration places one trace
    many times, and a loop's accesses repeat."""
    size = _itemsize(access)
    low = sum(min(0, (n - 1) * s) for n, s in zip(access.free_shape, access.free_strides,
                                                     strict=True))
    high = sum(max(0, (n - 1) * s) for n, s in zip(access.free_shape, access.free_strides,
                                                      strict=True))
    first, last = access.byte_offset + low * size, access.byte_offset + (high + 1) * size
    if access.buffer != "hbm":
        p0 = access.partition_start
        return _Region(0, p0, p0 + access.partition_count, first, last, first, last)
    pitch = access.partition_stride * size
    rows = access.partition_count
    flat_lo = first + min(0, (rows - 1) * pitch)
    flat_hi = last + max(0, (rows - 1) * pitch)
    if pitch > 0 and 0 <= first and last - (first // pitch) * pitch <= pitch:
        row0 = first // pitch
        return _Region(pitch, row0, row0 + rows, first - row0 * pitch, last - row0 * pitch,
                       flat_lo, flat_hi)
    return _Region(-1, 0, 1, flat_lo, flat_hi, flat_lo, flat_hi)


@dataclass
class _Accesses:
    """The earlier accesses of one allocation that later ones may depend on."""

    reads: list[tuple[_Region, int]] = field(default_factory=list)
    writes: list[tuple[_Region, int]] = field(default_factory=list)
    read_ready: dict[tuple[_Region, str], tuple[float, int]] = field(default_factory=dict)
    """(region, reading engine) -> when the writes let such a read start, and the write that
    decides it: a read waits for the writes only, so the answer holds until the next write
    (which clears this). A tile that many instructions read (a matmul's operands) is then not
    searched again for each of them."""


class _Bandwidth:
    """The DMA engines' time: merged busy intervals. A new transfer fills the free time from its
    ready time on, gap by gap (the engines interleave the descriptors of the queues they
    serve), so it ends when it has had `length` seconds of the engines."""

    #: gaps shorter than this (float noise between touching intervals) are not used
    MIN_PIECE_S = 1e-12

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def place(self, ready: float, length: float) -> list[tuple[float, float]]:
        """Reserve `length` seconds of free time from `ready` on; the pieces, in order."""
        i = bisect.bisect_right(self.ends, ready)
        t, remaining = ready, length
        pieces: list[tuple[float, float]] = []
        while remaining > 0:
            if i < len(self.starts) and self.starts[i] <= t:
                t = max(t, self.ends[i])
                i += 1
                continue
            gap_end = self.starts[i] if i < len(self.starts) else math.inf
            use = min(remaining, gap_end - t)
            if use >= self.MIN_PIECE_S or use == remaining:
                pieces.append((t, t + use))
                remaining -= use
                t += use
            if remaining > 0 and i < len(self.starts):
                t = max(t, self.ends[i])
                i += 1
        for start, end in pieces:
            self._insert(start, end)
        return pieces

    def _insert(self, start: float, end: float) -> None:
        i = bisect.bisect_left(self.starts, start)
        # merge with the neighbours it touches, so a saturated stretch stays one interval
        if i > 0 and self.ends[i - 1] >= start:
            i -= 1
            start = self.starts[i]
            end = max(end, self.ends[i])
            del self.starts[i], self.ends[i]
        while i < len(self.starts) and self.starts[i] <= end:
            end = max(end, self.ends[i])
            del self.starts[i], self.ends[i]
        self.starts.insert(i, start)
        self.ends.insert(i, end)


class Timeline:
    """Places a trace's instructions one by one (see the module docstring)."""

    def __init__(self, constants: CostConstants):
        self.c = constants
        self.events: list[Event] = []
        self.engine_free: dict[str, tuple[float, int]] = {e: (0.0, -1) for e in COMPUTE_ENGINES}
        self.queue_free: list[tuple[float, int]] = [(0.0, -1)] * constants.dma_queues
        self.next_queue = 0
        self.bandwidth = _Bandwidth()
        self.transfer_ending: dict[float, int] = {}
        """The DMA whose transfer ends at a time: a transfer that waits for bandwidth starts
        when another one ends."""
        self.sbuf_port: tuple[float, int] = (0.0, -1)
        self.psum_port: tuple[float, int] = (0.0, -1)
        self.accesses: dict[int, _Accesses] = {}

    def _dependencies(self, inst: Instruction) -> list[tuple[int, _Region, bool]]:
        """(allocation, region, is_write) of every operand."""
        found = [(a.allocation_id, region(a), False) for _, a in inst.reads]
        found += [(a.allocation_id, region(a), True) for _, a in inst.writes]
        return found

    def _ready(self, inst: Instruction, engine: str,
               operands: list[tuple[int, _Region, bool]]) -> tuple[float, int]:
        """When the instruction's buffers allow it to start, and the event that decides it."""
        sync = 0.0 if engine == DMA else self.c.sync_cycles / self.c.clock_hz(engine)
        ready, by = 0.0, -1
        for allocation, reg, is_write in operands:
            seen = self.accesses.get(allocation)
            if seen is None:
                continue
            known = None if is_write else seen.read_ready.get((reg, engine))
            if known is None:
                known = self._wait(reg, engine, sync,
                                   seen.writes + seen.reads if is_write else seen.writes)
                if not is_write:
                    seen.read_ready[(reg, engine)] = known
            if known[0] > ready:
                ready, by = known
        return ready, by

    def _wait(self, reg: _Region, engine: str, sync: float,
              earlier: list[tuple[_Region, int]]) -> tuple[float, int]:
        """When the `earlier` accesses overlapping `reg` let `engine` access it, and the first
        of them that decides it ((0, -1): none)."""
        ready, by = 0.0, -1
        for other, index in earlier:
            if not reg.overlaps(other):
                continue
            producer = self.events[index]
            # an accumulation group on TensorE runs back to back, without a semaphore
            gap = 0.0 if producer.engine == engine == "PE" else sync
            if producer.end + gap > ready:
                ready, by = producer.end + gap, index
        return ready, by

    def _record(self, index: int, operands: list[tuple[int, _Region, bool]]) -> None:
        for allocation, reg, is_write in operands:
            seen = self.accesses.setdefault(allocation, _Accesses())
            if is_write:
                # a later access overlapping what this write covers waits for this write, which
                # itself waited for the covered accesses: those can be forgotten
                seen.reads = [(r, i) for r, i in seen.reads if not reg.covers(r)]
                seen.writes = [(r, i) for r, i in seen.writes if not reg.covers(r)]
                seen.writes.append((reg, index))
                seen.read_ready.clear()
            else:
                seen.reads.append((reg, index))

    def add(self, inst: Instruction) -> Event:
        """Place the next instruction of the trace."""
        index = len(self.events)
        operands = self._dependencies(inst)
        if inst.engine == "SP-DMA":
            event = self._add_dma(index, inst, operands)
        else:
            event = self._add_compute(index, inst, operands)
        self.events.append(event)
        self._record(index, operands)
        return event

    def _add_compute(self, index: int, inst: Instruction,
                     operands: list[tuple[int, _Region, bool]]) -> Event:
        engine = inst.engine
        free, previous = self.engine_free[engine]
        ready, producer = self._ready(inst, engine, operands)
        start, by, kind = free, previous, "engine"
        if ready > start:
            start, by, kind = ready, producer, "dependency"
        buffers = {a.buffer for _, a in (*inst.reads, *inst.writes)}
        sbuf_shared = self.c.sbuf_ports_dve_pool < 2 and engine in ("DVE", "POOL") \
            and "sbuf" in buffers
        psum_shared = self.c.psum_ports_dve_act < 2 and engine in ("DVE", "ACT") \
            and "psum" in buffers
        for shared, (port_free, holder) in ((sbuf_shared, self.sbuf_port),
                                            (psum_shared, self.psum_port)):
            if shared and port_free > start:
                start, by, kind = port_free, holder, "port"
        if by < 0:
            kind = "none"
        busy = compute_cycles(inst, self.c) / self.c.clock_hz(engine)
        end = start + busy
        self.engine_free[engine] = (end, index)
        if sbuf_shared:
            self.sbuf_port = (end, index)
        if psum_shared:
            self.psum_port = (end, index)
        return Event(index, inst.name, engine, 0, start, start, end, busy, inst.line, by, kind)

    def _add_dma(self, index: int, inst: Instruction,
                 operands: list[tuple[int, _Region, bool]]) -> Event:
        queue = self.next_queue
        self.next_queue = (queue + 1) % self.c.dma_queues
        free, previous = self.queue_free[queue]
        ready, producer = self._ready(inst, DMA, operands)
        start, by, kind = free, previous, "engine"
        if ready > start:
            start, by, kind = ready, producer, "dependency"
        if by < 0:
            kind = "none"
        length = dma_transfer_s(inst, self.c)
        wanted = start + self.c.dma_fixed_s
        pieces = self.bandwidth.place(wanted, length)
        transfer, end = pieces[0][0], pieces[-1][1]
        if end > wanted + length:
            # it ends late because other transfers held the engines: the last of them decides
            gaps = [p[0] for p in pieces[1:]] + ([transfer] if transfer > wanted else [])
            blocker = max(gaps)
            by, kind = self.transfer_ending.get(blocker, by), "bandwidth"
        self.queue_free[queue] = (end, index)
        for _, piece_end in pieces:
            self.transfer_ending[piece_end] = index
        return Event(index, inst.name, DMA, queue, start, transfer, end, length, inst.line, by,
                     kind)


def place(trace: Trace, constants: CostConstants) -> list[Event]:
    """Every instruction of `trace` on the timeline, in trace order."""
    timeline = Timeline(constants)
    for inst in trace.instructions:
        timeline.add(inst)
    return timeline.events
