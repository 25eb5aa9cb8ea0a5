"""The `nki.language` surface: dtypes, buffers, allocation, loop ranges, SPMD ids, tile sizes,
operators, and the convenience functions that run `nki.isa` instructions on new tiles.

`nl.tile_size` reads the running simulation's `HardwareLimits`, so a kernel sizes its tiles by
the profile it is simulated for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from axon.targets.nki.simulator import isa as _isa
from axon.targets.nki.simulator.errors import SimulationError
from axon.targets.nki.simulator.ops import (  # noqa: F401 - re-exported as nl.<name>
    Op,
    abs,
    abs_max,
    abs_min,
    add,
    arctan,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    copy,
    divide,
    equal,
    erf,
    exp,
    gelu,
    gelu_apprx_tanh,
    greater,
    greater_equal,
    invert,
    left_shift,
    less,
    less_equal,
    log,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mish,
    multiply,
    negative,
    not_equal,
    power,
    reciprocal,
    relu,
    right_shift,
    rsqrt,
    sigmoid,
    sign,
    silu,
    sin,
    softplus,
    sqrt,
    square,
    subtract,
    tanh,
)
from axon.targets.nki.simulator.state import current
from axon.targets.nki.simulator.tensor import DynamicSlice, Tensor, allocate, nki_dtype
from axon.targets.nki.simulator.trace import BufferKind

float32 = np.dtype(np.float32)
tfloat32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)


class Buffer:
    """A memory an `nl.ndarray` lives in (`nl.sbuf`, `nl.psum`, `nl.shared_hbm`, ...)."""

    def __init__(self, name: str, kind: BufferKind):
        self.name = name
        self.kind: BufferKind = kind

    def __repr__(self) -> str:
        return f"nl.{self.name}"


sbuf = Buffer("sbuf", "sbuf")
psum = Buffer("psum", "psum")
hbm = Buffer("hbm", "hbm")
private_hbm = Buffer("private_hbm", "hbm")
shared_hbm = Buffer("shared_hbm", "hbm")


def ndarray(shape: Sequence[int], dtype: object, buffer: Buffer = sbuf, name: str = "",
            address: object = None) -> Tensor:
    """A new, uninitialized tensor (NaN for floats, 4 for integers). On SBUF/PSUM dim 0 is the
    partition dim; the tile counts against the buffer's capacity while the kernel holds it. A
    launch's programs share each `shared_hbm` tensor (program k's n-th is program 0's n-th)."""
    api = "nl.ndarray"
    state = current(api)
    if not isinstance(buffer, Buffer):
        raise SimulationError(f"{api}: buffer must be nl.sbuf, nl.psum or an nl.*hbm, got "
                              f"{buffer!r}")
    if address is not None:
        raise SimulationError(f"{api}: manual allocation (address=) is not supported by the "
                              f"simulator")
    dt = nki_dtype(dtype, api)
    if buffer is shared_hbm and state.program_id and any(state.program_id):
        if state.shared_hbm_seen >= len(state.shared_hbm):
            raise SimulationError(f"{api}: program {state.program_id} allocates more shared_hbm "
                                  f"tensors than program 0")
        tensor = state.shared_hbm[state.shared_hbm_seen]
        state.shared_hbm_seen += 1
        assert isinstance(tensor, Tensor)
        if tensor.shape != tuple(shape) or tensor.dtype != dt:
            raise SimulationError(f"{api}: program {state.program_id}'s shared_hbm tensor "
                                  f"{tuple(shape)} {dt.name} differs from program 0's "
                                  f"{tensor.shape} {tensor.dtype.name}")
        return tensor
    tensor = allocate(state, shape, dt, buffer.kind, api, name)
    if buffer is shared_hbm:
        state.shared_hbm.append(tensor)
        state.shared_hbm_seen += 1
    return tensor


def full(shape: Sequence[int], fill_value: float, dtype: object, buffer: Buffer = sbuf,
         name: str = "") -> Tensor:
    """A new tile set to `fill_value` (one memset)."""
    tensor = ndarray(shape, dtype, buffer=buffer, name=name)
    _isa.memset(tensor, fill_value)
    return tensor


def zeros(shape: Sequence[int], dtype: object, buffer: Buffer = sbuf, name: str = "") -> Tensor:
    """A new tile of zeros (one memset)."""
    return full(shape, 0, dtype, buffer=buffer, name=name)


def ones(shape: Sequence[int], dtype: object, buffer: Buffer = sbuf, name: str = "") -> Tensor:
    """A new tile of ones (one memset)."""
    return full(shape, 1, dtype, buffer=buffer, name=name)


def affine_range(start: int, stop: int | None = None, step: int = 1) -> range:
    """A loop with no loop-carried dependency but associative accumulation; run in order."""
    return range(start, stop, step) if stop is not None else range(start)


def sequential_range(start: int, stop: int | None = None, step: int = 1) -> range:
    """A loop that keeps its order."""
    return range(start, stop, step) if stop is not None else range(start)


def static_range(start: int, stop: int | None = None, step: int = 1) -> range:
    """A loop unrolled at trace time."""
    return range(start, stop, step) if stop is not None else range(start)


def ds(start: int, size: int) -> DynamicSlice:
    """The slice start : start + size of one dim."""
    return DynamicSlice(start, size)


def program_id(axis: int = 0) -> int:
    """This program's index along launch-grid axis `axis`."""
    state = current("nl.program_id")
    if not state.grid:
        if axis != 0:
            raise SimulationError(f"nl.program_id: axis {axis} of a launch without a grid")
        return 0
    if not 0 <= axis < len(state.grid):
        raise SimulationError(f"nl.program_id: axis {axis} of a {len(state.grid)}-d grid")
    return state.program_id[axis]


def num_programs(axes: int | Sequence[int] = 0) -> int:
    """The number of programs along a grid axis (or the product over several axes)."""
    state = current("nl.num_programs")
    grid = state.grid or (1,)
    chosen = (axes,) if isinstance(axes, int) else tuple(axes)
    count = 1
    for axis in chosen:
        if not 0 <= axis < len(grid):
            raise SimulationError(f"nl.num_programs: axis {axis} of a {len(grid)}-d grid")
        count *= grid[axis]
    return count


def program_ndim() -> int:
    """The number of launch-grid dims."""
    return len(current("nl.program_ndim").grid)


class _TileSize:
    """`nl.tile_size`: the running profile's tile-size limits."""

    @property
    def pmax(self) -> int:
        """Partitions of a tile."""
        return current("nl.tile_size").limits.partitions

    @property
    def psum_fmax(self) -> int:
        """fp32 elements per partition of one PSUM bank (the deprecated name)."""
        return current("nl.tile_size").limits.psum_bank_free_max

    @property
    def psum_bank_fmax(self) -> int:
        """fp32 elements per partition of one PSUM bank."""
        return current("nl.tile_size").limits.psum_bank_free_max

    @property
    def gemm_stationary_fmax(self) -> int:
        """The largest free size of a matmul's stationary operand."""
        return current("nl.tile_size").limits.matmul_stationary_free_max

    @property
    def gemm_moving_fmax(self) -> int:
        """The largest free size of a matmul's moving operand."""
        return current("nl.tile_size").limits.matmul_moving_free_max

    @property
    def bn_stats_fmax(self) -> int:
        """The most elements per partition `nisa.bn_stats` reads."""
        return current("nl.tile_size").limits.bn_stats_free_max

    @property
    def psum_num_banks(self) -> int:
        """PSUM banks per partition."""
        return current("nl.tile_size").limits.psum_banks

    @property
    def sbuf_fmax_bytes(self) -> int:
        """Bytes a kernel may allocate in one SBUF partition."""
        return current("nl.tile_size").limits.sbuf_partition_bytes


tile_size = _TileSize()


# --- convenience functions: each runs nki.isa instructions on new tiles -----------------------

def load(src: Tensor, dtype: object = None) -> Tensor:
    """A new SBUF tile holding `src` (one dma_copy)."""
    if not isinstance(src, Tensor):
        raise SimulationError("nl.load: src must be a tensor")
    tile = ndarray(src.shape, src.dtype if dtype is None else dtype, buffer=sbuf)
    _isa.dma_copy(tile, src)
    return tile


def store(dst: Tensor, value: Tensor) -> None:
    """Write an SBUF tile to `dst` (one dma_copy)."""
    _isa.dma_copy(dst, value)


def _sbuf_operand(value: Any, api: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise SimulationError(f"{api}: expected a tile, got {type(value).__name__}")
    if value.buffer == "hbm":
        raise SimulationError(f"{api}: the operand is in HBM; load it into SBUF first (nl.load "
                              f"or nisa.dma_copy)")
    return value


def elementwise(op: Op, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tensor:
    """`nl.<op>(x[, y], dtype=None)` on tiles: a new SBUF tile computed by tensor_copy
    (`nl.copy`), activation (other unary functions), tensor_tensor (two tiles of one shape) or
    tensor_scalar (a tile and a number or a [P, 1] tile)."""
    api = f"nl.{op.name}"
    dtype = kwargs.pop("dtype", None)
    if kwargs:
        raise SimulationError(f"{api}: unsupported arguments {', '.join(sorted(kwargs))}")
    if op.unary is not None:
        if len(args) != 1:
            raise SimulationError(f"{api}: expected one tile, got {len(args)} arguments")
        x = _sbuf_operand(args[0], api)
        out = ndarray(x.shape, x.dtype if dtype is None else dtype, buffer=sbuf)
        if op is copy:
            _isa.tensor_copy(out, x)
        elif op.bitvec:
            _isa.tensor_scalar(out, x, bitwise_xor, -1)
        else:
            _isa.activation(out, op, x)
        return out
    if len(args) != 2:
        raise SimulationError(f"{api}: expected two operands, got {len(args)}")
    a, b = args
    if not isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            raise SimulationError(f"{api}: at least one operand must be a tile")
        x = _sbuf_operand(b, api)
        out = ndarray(x.shape, x.dtype if dtype is None else dtype, buffer=sbuf)
        _isa.tensor_scalar(out, x, op, a, reverse0=True)
        return out
    x = _sbuf_operand(a, api)
    out = ndarray(x.shape, x.dtype if dtype is None else dtype, buffer=sbuf)
    if isinstance(b, Tensor) and b.shape != x.shape:
        _isa.tensor_scalar(out, x, op, _sbuf_operand(b, api))
    elif isinstance(b, Tensor):
        _isa.tensor_tensor(out, x, _sbuf_operand(b, api), op)
    else:
        _isa.tensor_scalar(out, x, op, b)
    return out


def _reduce(op: Op, api: str, x: Tensor, axis: int | Sequence[int], dtype: object,
            keepdims: bool) -> Tensor:
    x = _sbuf_operand(x, api)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % x.ndim for a in axes)
    kept = [1 if d in axes else n for d, n in enumerate(x.shape)] if keepdims else \
        [n for d, n in enumerate(x.shape) if d not in axes]
    if len(kept) < 2:
        kept = [*kept, 1]
    out = ndarray(tuple(kept), x.dtype if dtype is None else dtype, buffer=sbuf)
    _isa.tensor_reduce(out, op, x, axes, keepdims=keepdims)
    return out


def sum(x: Tensor, axis: int | Sequence[int], dtype: object = None,  # noqa: A001
        keepdims: bool = False) -> Tensor:
    """The sum over free axes `axis` (one tensor_reduce)."""
    return _reduce(add, "nl.sum", x, axis, dtype, keepdims)


def max(x: Tensor, axis: int | Sequence[int], dtype: object = None,  # noqa: A001
        keepdims: bool = False) -> Tensor:
    """The maximum over free axes `axis` (one tensor_reduce)."""
    return _reduce(maximum, "nl.max", x, axis, dtype, keepdims)


def min(x: Tensor, axis: int | Sequence[int], dtype: object = None,  # noqa: A001
        keepdims: bool = False) -> Tensor:
    """The minimum over free axes `axis` (one tensor_reduce)."""
    return _reduce(minimum, "nl.min", x, axis, dtype, keepdims)


def matmul(x: Tensor, y: Tensor, transpose_x: bool = False) -> Tensor:
    """`x @ y` as a new PSUM tile (float32). With `transpose_x`, x is given as [K, M] (the
    stationary operand); otherwise x [M, K] is first transposed on TensorE."""
    api = "nl.matmul"
    x = _sbuf_operand(x, api)
    y = _sbuf_operand(y, api)
    if transpose_x:
        stationary = x
    else:
        flipped = ndarray((x.shape[1], x.shape[0]), float32, buffer=psum)
        _isa.nc_transpose(flipped, x)
        stationary = ndarray(flipped.shape, x.dtype, buffer=sbuf)
        _isa.tensor_copy(stationary, flipped)
    out = ndarray((stationary.shape[1], y.shape[1]), float32, buffer=psum)
    _isa.nc_matmul(out, stationary, y)
    return out


def transpose(x: Tensor, dtype: object = None) -> Tensor:
    """x's 2-D transpose as a new PSUM tile (TensorE)."""
    x = _sbuf_operand(x, "nl.transpose")
    out = ndarray((x.shape[1], x.shape[0]), x.dtype if dtype is None else dtype, buffer=psum)
    _isa.nc_transpose(out, x)
    return out
