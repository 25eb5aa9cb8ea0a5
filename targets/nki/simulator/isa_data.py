"""Data movement: `dma_copy`, `dma_transpose` (DMA queues), `tensor_copy` and `memset`
(an engine's local copy and fill)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from axon.targets.nki.simulator.errors import SimulationError
from axon.targets.nki.simulator.operands import (
    ENGINES,
    F32,
    dge_mode,
    engine,
    engine_operand,
    finish,
    matmul_mask,
    oob_mode,
    read_f32,
    same_free,
    same_partitions,
    tensor_operand,
    write,
)
from axon.targets.nki.simulator.state import current
from axon.targets.nki.simulator.tensor import Tensor


def dma_copy(dst: Tensor, src: Tensor, priority: object = None, oob_mode: str = oob_mode.error,
             dge_mode: str = dge_mode.unknown, engine: str = engine.unknown,
             name: str | None = None) -> None:
    """`dst = src` by DMA between HBM and SBUF; equal element counts; a dtype change goes
    through fp32. PSUM can be neither source nor destination."""
    api = "nisa.dma_copy"
    state = current(api)
    d = tensor_operand(dst, api, "dst", ("hbm", "sbuf"))
    s = tensor_operand(src, api, "src", ("hbm", "sbuf"))
    if d.array.size != s.array.size:
        raise SimulationError(f"{api}: src {s.describe()} has {s.array.size} elements but dst "
                              f"{d.describe()} {d.array.size}; they must match")
    if d.dtype == s.dtype:
        d.assign(s.array.reshape(d.shape))
    else:
        write(d, read_f32(s))
    finish(state, "dma_copy", "SP-DMA", [("src", s)], [("dst", d)], dge_mode=dge_mode)


_DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(dst: Tensor, src: Tensor, axes: Sequence[int] | None = None,
                  priority: object = None, dge_mode: str = dge_mode.unknown,
                  oob_mode: str = oob_mode.error, name: str | None = None) -> None:
    """`dst = src.transpose(axes)` by DMA: 2-D (1, 0), 3-D (2, 1, 0) or 4-D (3, 1, 2, 0); dst in
    SBUF, src in HBM or SBUF; 2-byte dtypes, equal on both sides."""
    api = "nisa.dma_transpose"
    state = current(api)
    d = tensor_operand(dst, api, "dst", ("sbuf",))
    s = tensor_operand(src, api, "src", ("hbm", "sbuf"))
    fixed = _DMA_TRANSPOSE_AXES.get(s.ndim)
    if fixed is None:
        raise SimulationError(f"{api}: src is {s.ndim}-d; expected 2, 3 or 4 dims")
    chosen = fixed if axes is None else tuple(int(a) for a in axes)
    if chosen != fixed:
        raise SimulationError(f"{api}: axes {chosen} for a {s.ndim}-d src; the only supported "
                              f"permutation is {fixed}")
    if s.dtype.itemsize != 2 or d.dtype != s.dtype:
        raise SimulationError(f"{api}: src {s.dtype.name} and dst {d.dtype.name} must be the "
                              f"same 2-byte dtype")
    moved = s.array.transpose(fixed)
    if moved.shape != d.shape:
        raise SimulationError(f"{api}: transposed src has shape {moved.shape} but dst "
                              f"{d.shape}")
    d.assign(moved)
    finish(state, "dma_transpose", "SP-DMA", [("src", s)], [("dst", d)], transpose=True)


def tensor_copy(dst: Tensor, src: Tensor, engine: str = engine.unknown,
                name: str | None = None) -> None:
    """`dst = src` on one engine (Vector by default, Scalar or GpSimd); bit-exact for equal
    dtypes, otherwise through fp32. GpSimd cannot access PSUM."""
    api = "nisa.tensor_copy"
    state = current(api)
    buffers = ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum")
    s = engine_operand(state, src, api, "src", buffers)
    d = engine_operand(state, dst, api, "dst", buffers)
    same_partitions(api, d, "dst", s, "src")
    same_free(api, d, "dst", s, "src")
    if d.dtype == s.dtype:
        d.assign(s.array.reshape(d.shape))
        if d.buffer == "psum":
            matmul_mask(d)[...] = False
    else:
        write(d, read_f32(s))
    finish(state, "tensor_copy", ENGINES.get(engine, "DVE"), [("src", s)], [("dst", d)])


def memset(dst: Tensor, value: float | int, engine: str = engine.unknown,
           name: str | None = None) -> None:
    """Fill dst with `value` (Vector by default, or GpSimd)."""
    api = "nisa.memset"
    state = current(api)
    d = engine_operand(state, dst, api, "dst",
                        ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum"))
    if not isinstance(value, bool | int | float | np.number):
        raise SimulationError(f"{api}: value must be a number, got {type(value).__name__}")
    write(d, np.full(d.shape, value, dtype=F32))
    finish(state, "memset", "POOL" if engine == "gpsimd" else "DVE", [], [("dst", d)],
           value=float(value))
