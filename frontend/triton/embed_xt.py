"""The `xt` kernel itself read by the verifier: its structure in `tile`, its ops unchanged.

The raise (`raise_tile.py`) builds a `tile` kernel from an `xt` kernel through an analysis of
roles (tiled, one index a program, walked by a loop, held whole), cuts the dims held whole to
their sizes (proved by the pad analysis) and rewrites a running max to start at its first
block. The verifier proves that `tile` kernel equal to the `ax` function; the steps before it
are a translation. Here the `xt` kernel is given to the verifier with none of them: only its
structural ops change dialect, each to the `tile` op of the same meaning, and every op that
computes stays the `xt` op it was (the verifier reads any op through its generic form, and an
`xt` op's form is its definition):

- `xt.kernel` -> `tile.kernel` (same grid, program ids and parameters, with the raise's
  assumptions: a block holding a dim whole covers it, `BLOCK_N >= N`);
- `xt.for` -> `tile.for`: sequential where it carries values (an `xt.for` runs its iterations
  in order), parallel where it carries none (its iterations only store, and a kernel reads no
  result, so their order is not observable; the verifier still checks that they write
  different elements);
- `xt.store` -> `tile.store` where its extents are its block's shape: both write the lanes
  inside the result, and no others (an `xt.store` masked to fewer lanes is not embedded);
- `xt.dot(a, b, acc)` -> `ax.add(ax.matmul(a, b), acc)`, the dot's form split in its two
  terms (the loop reader sees the accumulation);
- `xt.yield` -> `tile.yield`.

Loads stay `xt.load` (`guarded_read` with the extents: lanes outside the tensor or the extents
read `other`). What the verifier proves of the embedded kernel is then a proof of the user's
kernel as Axon read it (`raise_xt.py`), with no analysis of roles in between. It reasons over
the reals, so a kernel that reads or computes an infinity (a running max from -inf, a causal
mask's fill) is not proved this way; the raise's own proof stands for those (its cut and its
running start are each proved or refused, `raise_tile.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, Region
from xdsl.rewriter import Rewriter

from axon.dialects import xt
from axon.dialects.ax import AddOp, MatmulOp, TensorType
from axon.dialects.tile import ForOp, KernelOp, StoreOp, YieldOp

__all__ = ["NotEmbedded", "embed_xt"]


class NotEmbedded(ValueError):
    """An `xt` kernel with an op this embedding has no `tile` op of the same meaning for."""


def embed_xt(func: FuncOp, assumptions: Sequence[str] = ()) -> FuncOp:
    """A copy of `func` (a function of one `xt.kernel`) with its kernel's structure in `tile`
    and its ops unchanged (module docstring); NotEmbedded says what does not embed."""
    copy = func.clone()
    ops = list(copy.walk())
    # innermost first: a loop's and a kernel's bodies are rewritten before they move
    for op in reversed(ops):
        if isinstance(op, xt.YieldOp):
            Rewriter.replace_op(op, YieldOp(*op.values))
        elif isinstance(op, xt.StoreOp):
            block = op.value.type
            assert isinstance(block, TensorType)
            if list(op.extent_exprs()) != list(block.shape):
                raise NotEmbedded(f"xt.store of result #{op.result.value.data} is masked to "
                                  f"extents {[str(e) for e in op.extent_exprs()]} inside its "
                                  f"block {[str(d) for d in block.shape]}")
            Rewriter.replace_op(op, StoreOp(op.value, op.result.value.data,
                                            op.offset_exprs()))
        elif isinstance(op, xt.DotOp):
            product = MatmulOp.make([op.lhs, op.rhs])
            total = AddOp.make([product.results[0], op.acc])
            if total.results[0].type != op.results[0].type:
                raise NotEmbedded(f"xt.dot of type {op.results[0].type}: the sum of its "
                                  f"product and accumulator is {total.results[0].type}")
            Rewriter.replace_op(op, [product, total])
        elif isinstance(op, xt.ForOp):
            kind = "sequential" if op.inits else "parallel"
            Rewriter.replace_op(op, ForOp(list(op.inits), op.iv.data, op.extent.data,
                                          _moved(op), kind=kind))
        elif isinstance(op, xt.KernelOp):
            outputs = [r.type for r in op.results]
            assert all(isinstance(t, TensorType) for t in outputs)
            Rewriter.replace_op(op, KernelOp(
                list(op.inputs), outputs, op.program_names(),  # type: ignore[arg-type]
                [str(g) for g in op.grid_exprs()], op.param_names(), _moved(op),
                assume=list(assumptions)))
    copy.verify()
    return copy


def _moved(op: Operation) -> Region:
    """`op`'s one region, taken out of it (its block and ops keep their values)."""
    (region,) = op.regions
    return op.detach_region(region)
