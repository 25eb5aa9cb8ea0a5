"""The `tile` dialect: Axon's tiled level, target-neutral.

Kernels over launch grids, loops over tiles, tiles moved between global tensors and named
memory spaces (`kernel.py`, `memory.py`). Compute on tiles is the tensor level's ops on
tile-shaped `!ax.tensor` values, so no op's meaning is written twice; the tile-making ops are
form ops, and a kernel's meaning follows from its ops' forms.
"""

from xdsl.ir import Dialect

from axon.dialects.ax.per_signature import per_signature
from axon.dialects.form.interface import register_dialect
from axon.dialects.tile.kernel import ForOp, KernelOp, YieldOp, invariant_forms, parse_assumption
from axon.dialects.tile.memory import FullOp, LoadOp, StoreOp

ALL_OPS = (KernelOp, ForOp, YieldOp, LoadOp, FullOp, StoreOp)
for _op in (LoadOp, FullOp):  # region-free, context-free: memoized per signature like ax ops
    per_signature(_op)
Tile = Dialect("tile", list(ALL_OPS), [])
register_dialect(Tile)

__all__ = ["ALL_OPS", "ForOp", "FullOp", "KernelOp", "LoadOp", "StoreOp", "Tile", "YieldOp",
           "invariant_forms", "parse_assumption"]
