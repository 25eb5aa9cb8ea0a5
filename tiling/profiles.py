"""What a device profile asks of a kernel's tile parameters, as assumptions the proof carries.

A row kernel's block of `BM` rows is laid out with its rows across a NeuronCore's partitions and
each row along one partition's free dim: `BM` is at most the partition count, and one row of a
row-indexed input must fit what a kernel may allocate in a partition. A profile without those
numbers (a GPU's, today) adds nothing beyond `BM >= 1`; its limits (registers, shared memory,
power-of-two blocks) are met when concrete tile sizes are enumerated.
"""

from __future__ import annotations

from collections.abc import Sequence

from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import product
from axon.dialects.form.dtypes import DTYPES
from axon.targets.profiles import DeviceProfile


def row_constraints(profile: DeviceProfile, block: str, row_inputs: Sequence[TensorType]
                    ) -> list[str]:
    """Assumptions on `block` (and on the row length) for a row kernel under `profile`."""
    memory = profile.memory
    if memory is None:
        return []
    found: list[str] = []
    if memory.partitions is not None:
        found.append(f"{block} <= {int(memory.partitions.value)}")
    usable = memory.sbuf_partition_usable_bytes
    if usable is not None:
        for t in row_inputs:
            row = product(t.shape[1:])
            found.append(f"{row}*{DTYPES[t.dtype].storage.itemsize} <= {int(usable.value)}")
    return sorted(set(found))


def row_tile_space(profile: DeviceProfile) -> str:
    """Where a row kernel's tiles live under `profile`: `sbuf` on a core whose profile gives an
    SBUF (a NeuronCore), else `registers` (a GPU program's tile)."""
    memory = profile.memory
    return "sbuf" if memory is not None and memory.sbuf_bytes is not None else "registers"
