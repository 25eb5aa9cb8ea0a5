"""Hand-built trace records for the cost model's tests: each test states exactly what it runs."""

from __future__ import annotations

from pathlib import Path

from axon.targets.nki.simulator.trace import Access, BufferKind, Engine, Instruction, OptionValue

#: the kernels written in the project from the public NKI tutorials' algorithms
KERNELS = Path(__file__).resolve().parents[4] / "benchmarks" / "nki_kernels"

_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}


def tile(allocation: int, free: int, dtype: str = "float32", buffer: BufferKind = "sbuf",
         partitions: int = 128, offset: int = 0, start: int = 0) -> Access:
    """A contiguous on-chip [partitions, free] operand at byte `offset` of its partitions."""
    size = _ITEMSIZE[dtype]
    return Access(buffer=buffer, allocation_id=allocation, partition_start=start,
                  partition_count=partitions, free_shape=(free,), dtype=dtype,
                  free_strides=(1,), partition_stride=free, byte_offset=offset,
                  contiguous_bytes=free * size, bytes=partitions * free * size)


def hbm(allocation: int, rows: int, cols: int, row_pitch: int, dtype: str = "float32",
        offset: int = 0) -> Access:
    """A [rows, cols] window of an HBM tensor whose rows are `row_pitch` elements apart."""
    size = _ITEMSIZE[dtype]
    return Access(buffer="hbm", allocation_id=allocation, partition_start=0,
                  partition_count=rows, free_shape=(cols,), dtype=dtype, free_strides=(1,),
                  partition_stride=row_pitch, byte_offset=offset,
                  contiguous_bytes=cols * size, bytes=rows * cols * size)


def inst(name: str, engine: Engine, reads: dict[str, Access], writes: dict[str, Access],
         **options: OptionValue) -> Instruction:
    """One instruction record."""
    return Instruction(name=name, engine=engine, reads=tuple(reads.items()),
                       writes=tuple(writes.items()), options=tuple(sorted(options.items())))
