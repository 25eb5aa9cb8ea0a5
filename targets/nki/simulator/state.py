"""The state of one simulation run: limits, allocators, engine registers, the trace.

`simulate` installs a `RunState` for the duration of a kernel launch (`running(state)`); the
`nki.language` and `nki.isa` surfaces reach it through `current()`. Runs do not nest.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

import numpy as np

from axon.targets.nki.simulator.errors import SimulationError, SimulationWarning
from axon.targets.nki.simulator.limits import HardwareLimits
from axon.targets.nki.simulator.trace import Access, Engine, Instruction, OptionValue, Trace


class Allocator:
    """First-fit placement of live on-chip tiles inside one partition's bytes.

    Every partition holds the same layout, so one list of byte ranges per buffer describes it.
    `granule` rounds each allocation up (a PSUM tile starts on a bank boundary and takes whole
    banks). A tile is released when its last view is garbage collected (CPython frees it as soon
    as no name refers to it), so the live bytes are those of the tiles the kernel still holds."""

    def __init__(self, buffer: str, capacity: int, granule: int, limit_name: str, profile: str):
        self.buffer = buffer
        self.capacity = capacity
        self.granule = granule
        self.limit_name = limit_name
        self.profile = profile
        self.ranges: dict[int, tuple[int, int]] = {}
        """allocation id -> (byte offset, bytes) per partition"""

    def allocate(self, allocation_id: int, nbytes: int, api: str) -> int:
        """The byte offset of a new tile of `nbytes` per partition; SimulationError when the
        live tiles leave no room."""
        size = max(self.granule, -(-nbytes // self.granule) * self.granule)
        offset = 0
        for start, length in sorted(self.ranges.values()):
            if start - offset >= size:
                break
            offset = max(offset, start + length)
        if offset + size > self.capacity:
            live = sum(length for _, length in self.ranges.values())
            raise SimulationError(
                f"{api}: {self.buffer.upper()} overflow: a tile of {nbytes} bytes per partition "
                f"does not fit beside {len(self.ranges)} live tiles ({live} bytes per partition); "
                f"limit {self.limit_name}={self.capacity} bytes ({self.profile})")
        self.ranges[allocation_id] = (offset, size)
        return offset

    def release(self, allocation_id: int) -> None:
        """Free the bytes of a tile no longer referenced."""
        self.ranges.pop(allocation_id, None)


@dataclass
class RunState:
    """Everything one `simulate` call's kernel launch can observe or change."""

    limits: HardwareLimits
    kernel_file: str
    grid: tuple[int, ...] = ()
    program_id: tuple[int, ...] = ()
    trace: Trace | None = None
    next_allocation_id: int = 0
    sbuf: Allocator = field(init=False)
    psum: Allocator = field(init=False)
    act_accumulators: np.ndarray = field(init=False)
    """ScalarE's per-partition fp32 accumulator registers (activation's reduce_cmd)."""
    dve_accumulators: np.ndarray = field(init=False)
    """VectorE's per-partition fp32 accumulator registers (exponential's reduce_cmd)."""
    shared_hbm: list[object] = field(default_factory=list)
    """The launch's shared_hbm allocations in allocation order: program k's n-th shared_hbm
    ndarray is program 0's n-th (the kernel's outputs are shared by all programs)."""
    shared_hbm_seen: int = 0
    warned: set[tuple[int, str]] = field(default_factory=set)
    """(line, kind) of the warnings given, so a loop warns once per line."""

    def __post_init__(self) -> None:
        lim = self.limits
        self.sbuf = Allocator("sbuf", lim.sbuf_partition_bytes, 1, "sbuf_partition_bytes",
                              lim.profile)
        self.psum = Allocator("psum", lim.psum_banks * lim.psum_bank_bytes, lim.psum_bank_bytes,
                              f"psum_banks={lim.psum_banks} x psum_bank_bytes", lim.profile)
        self.act_accumulators = np.zeros(lim.partitions, dtype=np.float32)
        self.dve_accumulators = np.zeros(lim.partitions, dtype=np.float32)

    def new_allocation_id(self) -> int:
        """A fresh allocation id, unique within the run."""
        self.next_allocation_id += 1
        return self.next_allocation_id

    def location(self) -> tuple[str, int]:
        """The kernel file and line executing now: the innermost frame of the kernel file."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.kernel_file:
                return self.kernel_file, frame.f_lineno
            frame = frame.f_back
        return self.kernel_file, 0

    def warn(self, kind: str, message: str, line: int | None = None) -> None:
        """A SimulationWarning at the kernel line executing now (or at `line`), once per line
        and `kind`."""
        file, here = self.location()
        line = here if line is None else line
        if (line, kind) in self.warned:
            return
        self.warned.add((line, kind))
        warnings.warn(SimulationWarning(f"{file}:{line}: warning: {message}"), stacklevel=3)

    def record(self, name: str, engine: Engine, reads: list[tuple[str, Access]],
               writes: list[tuple[str, Access]], options: dict[str, OptionValue]) -> None:
        """Append one instruction to the trace (the caller checks `self.trace` first, so
        building the accesses costs nothing when no trace was asked for)."""
        assert self.trace is not None
        file, line = self.location()
        self.trace.instructions.append(Instruction(
            name=name, engine=engine, reads=tuple(reads), writes=tuple(writes),
            options=tuple(sorted(options.items())), file=file, line=line,
            program_id=self.program_id))


_current: RunState | None = None


def current(api: str) -> RunState:
    """The running simulation's state; SimulationError when `api` is used outside one."""
    if _current is None:
        raise SimulationError(f"{api}: called outside a simulation: run the kernel with "
                              f"simulate(kernel, *inputs, limits=...)")
    return _current


@contextmanager
def running(state: RunState) -> Iterator[RunState]:
    """Make `state` the current run for the duration of the block."""
    global _current
    if _current is not None:
        raise SimulationError("simulate: a simulation is already running (runs do not nest)")
    _current = state
    try:
        yield state
    finally:
        _current = None
