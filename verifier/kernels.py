"""Reading a tiled kernel's result as a function of its index: the grid as an index split.

A kernel whose store of result r writes, in each dim d, the tile of program `p` at offset
`p*B` with a tile extent of `B` over a grid extent of `ceildiv(D, B)` (or the whole dim at
offset 0) writes every element `o < D` exactly once: by the program `o floordiv B`, from its
tile's place `o mod B`. That pattern is checked here, structurally, for every dim; a program id
that no dim splits must have a grid extent of 1 (else every program would write the same
elements). The element of the result at `o` is then the stored tile's element at `o mod B` with
each program id replaced by `o floordiv B` (`StoreRead`); the inliner reads on from there, and
a load at `p*B + t` reads the global tensor at `o` again (`indices.recombine`).

Read so far: kernels whose body is straight-line (loads, form ops on tiles, one store per
result). Loops inside kernels are proved by induction (architecture.md) and are Unsupported
here until that lands: never misread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import ForOp, KernelOp, StoreOp, YieldOp
from axon.verifier.budget import Unsupported


@dataclass(frozen=True)
class StoreRead:
    """Where result `o` of a kernel comes from: the stored tile `value` at `tile_index`, with
    the program ids replaced as `env` says."""

    value: SSAValue
    tile_index: tuple[IntExpr, ...]
    env: tuple[tuple[str, IntExpr], ...]


def assumptions(kernel: KernelOp) -> list[str]:
    """What a kernel's proof may assume: its own assumptions, and that each tile parameter is a
    positive integer (as every size is)."""
    return [*kernel.assumptions(), *(f"{p} >= 1" for p in kernel.param_names())]


def check_readable(kernel: KernelOp) -> None:
    """Unsupported unless the kernel's body is straight-line with one store per result."""
    stored: set[int] = set()
    for op in kernel.body.block.ops:
        if isinstance(op, ForOp):
            raise Unsupported("loops inside a tile.kernel are not read by the verifier yet "
                              "(a sequential loop needs its induction proof)")
        if isinstance(op, StoreOp):
            k = op.result.value.data
            if k in stored:
                raise Unsupported(f"tile.kernel stores result #{k} more than once")
            stored.add(k)
    missing = sorted(set(range(len(kernel.outputs))) - stored)
    if missing:
        raise Unsupported(f"tile.kernel never stores result(s) {missing}")


def store_read(kernel: KernelOp, result: int, index: Sequence[IntExpr]) -> StoreRead:
    """Result #`result` of `kernel` at `index` (see the module docstring)."""
    store = _store_of(kernel, result)
    out = kernel.output_types()[result]
    tile = store.value.type
    assert isinstance(tile, TensorType)
    pids = kernel.program_names()
    grid = dict(zip(pids, kernel.grid_exprs(), strict=True))
    env: dict[str, IntExpr] = {}
    tile_index: list[IntExpr] = []
    for d, (off, extent, dim, o) in enumerate(zip(store.offset_exprs(), tile.shape, out.shape,
                                                  index, strict=True)):
        if off == IntExpr.const(0) and extent == dim:
            tile_index.append(o)
            continue
        pid = _program_times(off, extent, pids)
        if pid is None or pid in env:
            raise Unsupported(f"tile.store of result #{result}: dim {d} is written at {off} "
                              f"with a tile extent of {extent}; the verifier reads a program "
                              "id times the tile extent, each program id in one dim")
        if grid[pid] != dim.ceildiv(extent):
            raise Unsupported(f"tile.store of result #{result}: program id {pid} ranges over "
                              f"{grid[pid]}, not ceildiv({dim}, {extent}) tiles of dim {d}")
        env[pid] = o.floordiv(extent)
        tile_index.append(o.mod(extent))
    for pid in pids:
        if pid not in env and grid[pid] != IntExpr.const(1):
            raise Unsupported(f"tile.store of result #{result}: program id {pid} ranges over "
                              f"{grid[pid]} but splits no dim (its programs would write the "
                              "same elements)")
    return StoreRead(store.value, tuple(tile_index), tuple(sorted(env.items())))


def kernel_of_argument(owner: Operation | None) -> KernelOp | None:
    """The kernel whose body's block argument this is (its inputs), if any."""
    return owner if isinstance(owner, KernelOp) else None


def _store_of(kernel: KernelOp, result: int) -> StoreOp:
    for op in kernel.body.block.ops:
        if isinstance(op, StoreOp) and op.result.value.data == result:
            return op
        if isinstance(op, YieldOp):
            break
    raise Unsupported(f"tile.kernel never stores result #{result}")


def _program_times(offset: IntExpr, extent: IntExpr, pids: Sequence[str]) -> str | None:
    """The program id p when `offset` is `p * extent`."""
    for p in pids:
        if offset == IntExpr.sym(p) * extent:
            return p
    return None
