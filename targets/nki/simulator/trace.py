"""The simulator's trace: one record per executed instruction, the cost model's input.

`simulate(kernel, *inputs, limits=..., trace=True)` returns the kernel's outputs and a `Trace`,
the list of `Instruction` records in execution order (the order a NeuronCore's sequencers would
issue them, programs of a launch one after another). The format is stable: fields are only ever
added, with a default, never renamed or removed.

An `Instruction` says what ran (`name`, the `nki.isa` function name such as `"nc_matmul"`), where
(`engine`), on what (`reads` and `writes`, one `Access` per operand, keyed by the operand's
parameter name), with which cost-relevant options (`options`), and from which line of the kernel
(`file`, `line`). Convenience functions of `nki.language` (`nl.load`, `nl.matmul`, ...) appear as
the instructions they execute.

An `Access` describes the elements one operand touches, in the terms the hardware uses:

* `buffer`: `"hbm"`, `"sbuf"` or `"psum"`; `allocation_id`: the allocation (an `nl.ndarray`, a
  kernel input) the operand is a view of, unique within one `simulate` call.
* on-chip (`sbuf`, `psum`): dim 0 is the partition dim: `partition_start` and `partition_count`
  are the partitions touched, `free_shape` the shape of the free dims and `free_strides` their
  strides in elements; `byte_offset` is the first element's byte address inside each partition
  (allocations are placed by the simulator's allocator, so two live tiles never overlap).
* HBM has no partitions: dim 0 of the view is reported as the "partition" dim anyway (the rows a
  DMA spreads over its queues), with `partition_stride` its stride in elements; `byte_offset` is
  the first element's byte offset inside the allocation.
* `contiguous_bytes`: the bytes of the longest run of consecutive addresses in one partition (or
  one row in HBM) that the access walks through in order, what DMA efficiency depends on.
* `bytes`: total bytes the access touches (elements x element size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: the engine queues of a NeuronCore an instruction is issued to
Engine = Literal["PE", "ACT", "DVE", "POOL", "SP-DMA"]
#: where an operand lives
BufferKind = Literal["hbm", "sbuf", "psum"]
#: an option's value: what a cost formula may branch on
OptionValue = bool | int | float | str | None


@dataclass(frozen=True)
class Access:
    """The elements one operand of one instruction touches (see the module docstring)."""

    buffer: BufferKind
    allocation_id: int
    partition_start: int
    partition_count: int
    free_shape: tuple[int, ...]
    dtype: str
    """numpy's name of the element type (`"float32"`, `"bfloat16"`, `"float8_e4m3fn"`)."""
    free_strides: tuple[int, ...]
    """Stride of each free dim, in elements."""
    partition_stride: int
    """Stride of dim 0 in elements (on chip: the allocation's free size per partition)."""
    byte_offset: int
    contiguous_bytes: int
    bytes: int

    @property
    def elements_per_partition(self) -> int:
        """Elements touched in each partition (the `N` of the per-instruction cycle formulas)."""
        count = 1
        for size in self.free_shape:
            count *= size
        return count


@dataclass(frozen=True)
class Instruction:
    """One executed instruction (see the module docstring)."""

    name: str
    engine: Engine
    reads: tuple[tuple[str, Access], ...]
    """(operand name, access) for every tensor operand read, in signature order."""
    writes: tuple[tuple[str, Access], ...]
    """(operand name, access) for every tensor operand written (a PSUM accumulation's dst is
    both read and written: it appears in both)."""
    options: tuple[tuple[str, OptionValue], ...] = ()
    """Scalar options that change cost: `accumulate`, `function`, `reduce`, `transpose`,
    `op0`/`op1`, `axis`, ... as (name, value) pairs, sorted by name."""
    file: str = ""
    """The kernel file the instruction was issued from."""
    line: int = 0
    """The kernel source line that issued the instruction."""
    program_id: tuple[int, ...] = ()
    """The SPMD program (grid coordinates) that issued it; () for a launch without a grid."""

    def option(self, name: str) -> OptionValue:
        """The value of option `name`, or None when the instruction has no such option."""
        for key, value in self.options:
            if key == name:
                return value
        return None


@dataclass
class Trace:
    """The instructions of one `simulate` call, in execution order."""

    instructions: list[Instruction] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.instructions)

    def by_engine(self, engine: Engine) -> list[Instruction]:
        """The instructions issued to one engine, in order."""
        return [inst for inst in self.instructions if inst.engine == engine]
