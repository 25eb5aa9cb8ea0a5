"""The `xt` dialect: Axon's Triton level, one op per Triton construct the emitter prints.

Kernels and loops (`kernel.py`: a `@triton.jit` function over a launch grid, `for` loops with
carried values), masked loads and stores, constant blocks, elementwise math, reductions,
`tl.dot` with an accumulator dtype, `tl.reshape`, `tl.split` / `tl.join` (interleaved lanes) and
`tl.cumsum` (`ops.py`). The value ops are form ops: each states its
meaning as one generic form, so a lowering from `tile` is checked the way the tiled level is.
`targets/xe_triton/` lowers `tile` kernels to this level and prints Triton from it.
"""

from xdsl.ir import Dialect

from axon.dialects.ax.per_signature import per_signature
from axon.dialects.form.interface import register_dialect
from axon.dialects.xt.kernel import ForOp, KernelOp, YieldOp, parse_block
from axon.dialects.xt.ops import (
    REDUCE_KINDS,
    CumsumOp,
    DotOp,
    FullOp,
    JoinOp,
    LoadOp,
    MapOp,
    ReduceOp,
    ReshapeOp,
    SplitOp,
    StoreOp,
)

ALL_OPS = (KernelOp, ForOp, YieldOp, LoadOp, FullOp, MapOp, ReduceOp, DotOp, ReshapeOp, SplitOp,
           JoinOp, CumsumOp, StoreOp)
for _op in (LoadOp, FullOp, MapOp, ReduceOp, DotOp, ReshapeOp, SplitOp, JoinOp, CumsumOp):
    per_signature(_op)
Xt = Dialect("xt", list(ALL_OPS), [])
register_dialect(Xt)

__all__ = ["ALL_OPS", "REDUCE_KINDS", "CumsumOp", "DotOp", "ForOp", "FullOp", "JoinOp", "KernelOp",
           "LoadOp", "MapOp", "ReduceOp", "ReshapeOp", "SplitOp", "StoreOp", "Xt", "YieldOp",
           "parse_block"]
