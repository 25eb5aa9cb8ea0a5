"""The `xt` dialect: Axon's Triton level, one op per Triton construct the emitter prints.

Kernels and loops (`kernel.py`: a `@triton.jit` function over a launch grid, `for` loops with
carried values), masked loads and stores, constant blocks, elementwise math, reductions and
`tl.dot` with an accumulator dtype (`ops.py`). The value ops are form ops: each states its
meaning as one generic form, so a lowering from `tile` is checked the way the tiled level is.
`targets/xe_triton/` lowers `tile` kernels to this level and prints Triton from it.
"""

from xdsl.ir import Dialect

from axon.dialects.ax.per_signature import per_signature
from axon.dialects.form.interface import register_dialect
from axon.dialects.xt.kernel import ForOp, KernelOp, YieldOp, parse_block
from axon.dialects.xt.ops import (
    REDUCE_KINDS,
    DotOp,
    FullOp,
    LoadOp,
    MapOp,
    ReduceOp,
    StoreOp,
)

ALL_OPS = (KernelOp, ForOp, YieldOp, LoadOp, FullOp, MapOp, ReduceOp, DotOp, StoreOp)
for _op in (LoadOp, FullOp, MapOp, ReduceOp, DotOp):
    per_signature(_op)
Xt = Dialect("xt", list(ALL_OPS), [])
register_dialect(Xt)

__all__ = ["ALL_OPS", "REDUCE_KINDS", "DotOp", "ForOp", "FullOp", "KernelOp", "LoadOp", "MapOp",
           "ReduceOp", "StoreOp", "Xt", "YieldOp", "parse_block"]
