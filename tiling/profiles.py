"""What a device profile asks of a kernel's tiles, as assumptions its proof carries.

On a NeuronCore a tile is laid out with its first dim across the partitions and the rest along
each partition's free dim (`../shared/reference/nki.md`). So every on-chip tile of a kernel
gives, under the profile's numbers:

- its first dim at most the partition count (`BM <= 128`), unless it is a vector that is not
  a block of rows (a weight along the columns: one partition holds it);
- with the other on-chip tiles of its memory space, at most what a kernel may allocate in one
  partition: the sum over the SBUF tiles of their free dims' bytes (all counted as live at once,
  which over-approximates a kernel that frees some early), and each PSUM accumulator within one
  bank (PSUM accumulates in fp32: 4 bytes an element, whatever the tile's dtype);
- for each `ax.matmul` of tiles `[a, b] x [b, c]`: the stationary operand's free size `a` and
  the contraction `b` at most the matmul's stationary limits, the moving free size `c` at most
  its moving limit.

On a NeuronCore the constraints are those of the kernel as the NKI lowering holds it: a load
whose uses pick one lane of a dim is cut to that lane first (`tiling.lane_cut`, which the
lowering applies before it lowers; qknorm_gqa's `[1, HKV, BK, D]` k tiles count as
`[1, 1, BK, D]`). Counting the uncut tiles would bound `BK` by tiles that never exist.

A dim that is a number is checked here; a symbolic one becomes an assumption, so a kernel that
loads a whole dim is proved only for the sizes where it fits (and concretization drops it at
the sizes where it does not). A profile without those numbers (a GPU's) adds nothing: its
limits (registers, shared memory, power-of-two blocks) are met when concrete tile sizes are
enumerated (`tiling.concretize`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from axon.dialects.ax import MatmulOp, TensorType
from axon.dialects.ax.shapes import product
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import FullOp, KernelOp, LoadOp
from axon.targets.profiles import DeviceProfile, Quantity
from axon.tiling.cost import across_partitions, laid_out, row_block
from axon.tiling.kernels import NotTileable
from axon.tiling.lane_cut import cut_picked_lanes

#: bytes of one PSUM element: NeuronCore matmuls accumulate in fp32
PSUM_ELEMENT_BYTES = 4


def tile_spaces(profile: DeviceProfile) -> tuple[str, str]:
    """Where a kernel's tiles live under `profile`, and where a matmul's accumulator lives:
    `sbuf` and `psum` on a core whose profile gives them (a NeuronCore), else `registers`
    for both (a GPU program's tiles)."""
    memory = profile.memory
    if memory is not None and memory.sbuf_bytes is not None:
        return "sbuf", "psum" if memory.psum_bytes is not None else "sbuf"
    return "registers", "registers"


def kernel_constraints(profile: DeviceProfile, kernel: KernelOp) -> list[str]:
    """The assumptions `kernel`'s tiles need under `profile` (see the module docstring);
    NotTileable when a dim that is a number already breaks a limit."""
    with held_on_chip(kernel, profile) as held:
        return _constraints(profile, held)


@contextmanager
def held_on_chip(kernel: KernelOp, profile: DeviceProfile) -> Iterator[KernelOp]:
    """`kernel` as `profile`'s lowering holds it on chip: on a NeuronCore a clone with its
    loads cut to the lanes their uses pick (the module docstring), else `kernel` itself. The
    clone lives for the `with` block only (its uses of the function's values are dropped)."""
    if tile_spaces(profile)[0] != "sbuf":
        yield kernel
        return
    cut = kernel.clone()
    try:
        yield cut if cut_picked_lanes(cut) else kernel
    finally:
        cut.drop_all_references()


def _constraints(profile: DeviceProfile, kernel: KernelOp) -> list[str]:
    memory, limits = profile.memory, profile.limits
    found: list[str] = []
    per_space: dict[str, list[IntExpr]] = {}
    rows = row_block(kernel)
    for op in kernel.walk():
        if isinstance(op, (LoadOp, FullOp)):
            tile = op.results[0].type
            assert isinstance(tile, TensorType)
            space = op.space.data
            if memory is None or space not in ("sbuf", "psum") or tile.rank == 0:
                continue
            itemsize = (PSUM_ELEMENT_BYTES if space == "psum"
                        else DTYPES[tile.dtype].storage.itemsize)
            dims = laid_out(tile)
            if across_partitions(tile, rows):
                if memory.partitions is not None:
                    _at_most(found, dims[0], memory.partitions, f"{op.name} partition dim")
                row = product(dims[1:]) * itemsize
            else:  # a vector along one partition
                row = product(dims) * itemsize
            if space == "psum" and memory.psum_bank_bytes is not None:
                _at_most(found, row, memory.psum_bank_bytes, "a PSUM accumulator")
            per_space.setdefault(space, []).append(row)
        elif isinstance(op, MatmulOp) and limits is not None:
            lhs, rhs = (v.type for v in op.operands)
            assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
            if lhs.rank >= 2 and rhs.rank >= 2:  # batch dims are 1 on tiles
                for dim, limit in [(lhs.shape[-2], limits.matmul_stationary_free_max),
                                   (lhs.shape[-1], memory.partitions if memory else None),
                                   (rhs.shape[-1], limits.matmul_moving_free_max)]:
                    if limit is not None:
                        _at_most(found, dim, limit, "a matmul operand")
    usable = memory.sbuf_partition_usable_bytes if memory is not None else None
    if usable is not None and per_space.get("sbuf"):
        total = per_space["sbuf"][0]
        for row in per_space["sbuf"][1:]:
            total = total + row
        _at_most(found, total, usable, "the SBUF tiles of one partition")
    return sorted(set(found), key=found.index)


def _at_most(found: list[str], expr: IntExpr, limit: Quantity, what: str) -> None:
    bound = int(limit.value)
    if expr.is_const:
        if expr.value > bound:
            raise NotTileable(f"{what} needs {expr.value}, more than the profile's "
                              f"{bound}")
        return
    found.append(f"{expr} <= {bound}")
