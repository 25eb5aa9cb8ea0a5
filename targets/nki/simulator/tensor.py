"""NKI tensors: strided views on HBM, SBUF and PSUM allocations.

An `Allocation` owns a numpy array: `(partitions, free elements)` for an on-chip tile (every
partition holds the same byte range, placed by the run's allocator), flat for HBM. A `Tensor` is a
numpy view of it plus the allocation, so slicing, `reshape`, `view(dtype)` and `.ap()` alias the
same storage, and an access's partition start, strides and byte offset are read off the view.

Indexing follows the current NKI API: bounds are checked (numpy would clamp a slice that runs past
the end and silently touch fewer elements); on SBUF/PSUM an integer index on the partition dim
keeps it as size 1 and one on a free dim drops it unless fewer than two dims would remain; on HBM
an integer index drops the dim.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from axon.targets.nki.simulator.errors import SimulationError
from axon.targets.nki.simulator.state import RunState
from axon.targets.nki.simulator.trace import Access, BufferKind

#: the NKI element types by numpy name (tfloat32 is stored as float32)
NKI_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(dt) for name, dt in {
        "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
        "float8_e4m3": ml_dtypes.float8_e4m3, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
        "float8_e5m2": ml_dtypes.float8_e5m2, "int8": np.int8, "int16": np.int16,
        "int32": np.int32, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
        "bool": np.bool_,
    }.items()
}


def nki_dtype(dtype: object, api: str) -> np.dtype:
    """`dtype` as a numpy dtype when it is an NKI element type; SimulationError otherwise."""
    try:
        dt = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError as err:
        raise SimulationError(f"{api}: {dtype!r} is not a dtype") from err
    if dt.name not in NKI_DTYPES:
        raise SimulationError(f"{api}: dtype {dt.name} is not an NKI dtype; expected one of "
                              f"{', '.join(NKI_DTYPES)}")
    return dt


def fill_value(dtype: np.dtype) -> float | int:
    """What a fresh allocation holds, as in AWS's simulator: NaN for floats, 4 for integers."""
    return float("nan") if np.issubdtype(dtype, np.floating) or dtype.kind == "V" else 4


class Allocation:
    """One allocation: its storage, buffer, id and (on chip) byte offset in each partition."""

    __slots__ = ("buffer", "allocation_id", "storage", "address", "matmul_written", "written",
                 "name", "__weakref__")

    def __init__(self, buffer: BufferKind, allocation_id: int, storage: np.ndarray,
                 address: int, name: str):
        self.buffer: BufferKind = buffer
        self.allocation_id = allocation_id
        self.storage = storage
        self.address = address
        self.name = name
        self.matmul_written: np.ndarray | None = (
            np.zeros(storage.shape, dtype=np.bool_) if buffer == "psum" else None)
        """PSUM only: which elements hold a matmul result (nc_matmul's accumulate=None)."""
        self.written = np.zeros(storage.nbytes, dtype=np.bool_)
        """Which bytes of the storage an instruction (or the kernel's input) has written: a read
        of any other byte reads the uninitialized pattern."""


def allocate(state: RunState, shape: Sequence[int], dtype: np.dtype, buffer: BufferKind,
             api: str, name: str = "") -> Tensor:
    """A new tensor filled with the uninitialized pattern; on-chip capacity and the partition
    limit are checked here, so an oversized tile fails where it is declared."""
    shape = tuple(shape)
    if not shape or any(not isinstance(n, int | np.integer) or n < 1 for n in shape):
        raise SimulationError(f"{api}: shape {shape} must be a non-empty tuple of positive ints")
    shape = tuple(int(n) for n in shape)
    allocation_id = state.new_allocation_id()
    free = int(np.prod(shape[1:], dtype=np.int64))
    if buffer == "hbm":
        storage = np.full(int(np.prod(shape, dtype=np.int64)), fill_value(dtype), dtype=dtype)
        alloc = Allocation(buffer, allocation_id, storage, 0, name)
        return Tensor(alloc, storage.reshape(shape))
    lim = state.limits
    if shape[0] > lim.partitions:
        raise SimulationError(f"{api}: a {buffer.upper()} tile of shape {shape} spans "
                              f"{shape[0]} partitions; limit partitions={lim.partitions} "
                              f"({lim.profile})")
    allocator = state.sbuf if buffer == "sbuf" else state.psum
    address = allocator.allocate(allocation_id, free * dtype.itemsize, api)
    storage = np.full((shape[0], free), fill_value(dtype), dtype=dtype)
    alloc = Allocation(buffer, allocation_id, storage, address, name)
    weakref.finalize(alloc, allocator.release, allocation_id)
    return Tensor(alloc, storage.reshape(shape))


def hbm_input(state: RunState, array: np.ndarray, position: int) -> Tensor:
    """Kernel input `position` as an HBM tensor holding a copy of `array`."""
    dt = nki_dtype(array.dtype, f"simulate: input {position}")
    tensor = allocate(state, array.shape if array.ndim else (1,), dt, "hbm",
                      f"simulate: input {position}")
    tensor.assign(array.reshape(tensor.shape))
    return tensor


class DynamicSlice:
    """`nl.ds(start, size)`: the elements start .. start + size - 1 of one dim."""

    def __init__(self, start: int, size: int):
        self.start = int(start)
        self.size = int(size)


def _index_key(key: object) -> tuple[object, ...]:
    items = key if isinstance(key, tuple) else (key,)
    return tuple(slice(i.start, i.start + i.size) if isinstance(i, DynamicSlice) else i
                 for i in items)


class Tensor:
    """An NKI tensor (`nl.ndarray`): a view on an allocation's storage."""

    __slots__ = ("allocation", "array")

    def __init__(self, allocation: Allocation, array: np.ndarray):
        self.allocation = allocation
        self.array = array

    # --- what a kernel reads off a tensor ---
    @property
    def shape(self) -> tuple[int, ...]:
        """The view's shape."""
        return tuple(self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self.array.dtype

    @property
    def buffer(self) -> BufferKind:
        """`"hbm"`, `"sbuf"` or `"psum"`."""
        return self.allocation.buffer

    @property
    def ndim(self) -> int:
        """Number of dims."""
        return self.array.ndim

    def __repr__(self) -> str:
        return (f"Tensor({self.buffer}, shape={self.shape}, dtype={self.dtype.name}, "
                f"allocation={self.allocation.allocation_id})")

    def __len__(self) -> int:
        return self.shape[0]

    def describe(self) -> str:
        """`sbuf tensor (128, 512) bfloat16`: how errors name an operand."""
        return f"{self.buffer} tensor {self.shape} {self.dtype.name}"

    # --- views ---
    def __getitem__(self, key: object) -> Tensor:
        items = _index_key(key)
        if any(i is Ellipsis for i in items):
            at = next(n for n, i in enumerate(items) if i is Ellipsis)
            fill = (slice(None),) * (self.ndim - len(items) + 1)
            items = items[:at] + fill + items[at + 1:]
        if len(items) > self.ndim:
            raise SimulationError(f"index {key!r}: {len(items)} indices for a {self.ndim}-d "
                                  f"{self.describe()}")
        onchip = self.buffer != "hbm"
        normalized: list[slice | int] = []
        squeeze: list[int] = []
        for dim, item in enumerate(items):
            size = self.shape[dim]
            if isinstance(item, int | np.integer):
                index = int(item)
                if not -size <= index < size:
                    raise SimulationError(f"index {index} is out of bounds for dim {dim} "
                                          f"(size {size}) of the {self.describe()}")
                index %= size
                normalized.append(slice(index, index + 1))
                squeeze.append(dim)
            elif isinstance(item, slice):
                start, stop, step = item.start, item.stop, item.step
                step = 1 if step is None else int(step)
                if step < 1:
                    raise SimulationError(f"slice {item}: step must be a positive int")
                start = 0 if start is None else int(start)
                stop = size if stop is None else int(stop)
                if not (0 <= start <= stop <= size):
                    raise SimulationError(
                        f"slice {start}:{stop} is out of bounds for dim {dim} (size {size}) of "
                        f"the {self.describe()}: it would touch past the end of the tensor")
                if start == stop:
                    raise SimulationError(f"slice {start}:{stop} of dim {dim} is empty")
                normalized.append(slice(start, stop, step))
            else:
                raise SimulationError(f"index {item!r} of dim {dim}: expected an int, a slice "
                                      f"or nl.ds(start, size)")
        view = self.array[tuple(normalized)]
        if onchip:
            # dim 0 stays; free dims drop while at least two dims remain
            drop = [d for d in squeeze if d != 0]
            keep_dims = view.ndim - len(drop)
            if keep_dims < 2:
                drop = drop[:max(0, view.ndim - 2)]
        else:
            drop = squeeze if len(squeeze) < view.ndim else squeeze[1:]
        if drop:
            view = view.reshape([n for d, n in enumerate(view.shape) if d not in set(drop)])
        return Tensor(self.allocation, view)

    def __setitem__(self, key: object, value: object) -> None:
        raise SimulationError("tensor item assignment is not part of the current NKI API: "
                              "write through an instruction (nisa.tensor_copy(dst=t[...], ...))")

    def reshape(self, shape: Sequence[int] | int, *more: int) -> Tensor:
        """The same elements with another shape (no copy; the view must be reshapeable)."""
        dims = (shape, *more) if isinstance(shape, int) else tuple(shape)
        try:
            view = self.array.view()
            view.shape = tuple(int(n) for n in dims)
        except (AttributeError, ValueError) as err:
            raise SimulationError(f"reshape of the {self.describe()} to {tuple(dims)}: {err}") \
                from err
        return Tensor(self.allocation, view)

    def view(self, dtype: object) -> Tensor:
        """The same bytes read as another element type (the last dim rescales)."""
        dt = nki_dtype(dtype, "view")
        try:
            return Tensor(self.allocation, self.array.view(dt))
        except ValueError as err:
            raise SimulationError(f"view of the {self.describe()} as {dt.name}: {err}") from err

    def ap(self, pattern: Sequence[Sequence[int]], offset: int = 0,
           dtype: object = None, **unsupported: Any) -> Tensor:
        """An access pattern on the allocation's storage: `pattern` = [[stride, count], ...] in
        elements, the first pair the partition dim on chip; `offset` in elements. It addresses
        the storage directly and does not compose with this view's own slicing."""
        if unsupported:
            raise SimulationError(f"ap: {', '.join(sorted(unsupported))} (dynamic or indirect "
                                  f"access) is not supported by the simulator")
        storage = self.allocation.storage
        dt = storage.dtype if dtype is None else nki_dtype(dtype, "ap")
        flat = storage.reshape(-1).view(dt)
        counts = [int(c) for _, c in pattern]
        strides = [int(s) for s, _ in pattern]
        if not counts or any(c < 1 for c in counts):
            raise SimulationError(f"ap: pattern {pattern} needs positive counts")
        if self.buffer != "hbm":
            row = storage.shape[1] * storage.dtype.itemsize // dt.itemsize
            if strides[0] != row:
                raise SimulationError(f"ap: partition stride {strides[0]} must equal the "
                                      f"tile's free size per partition ({row} elements)")
        low = offset + sum(s * (c - 1) for s, c in zip(strides, counts, strict=True) if s < 0)
        high = offset + sum(s * (c - 1) for s, c in zip(strides, counts, strict=True) if s > 0)
        if low < 0 or high >= flat.size:
            raise SimulationError(f"ap: pattern {pattern} at offset {offset} touches elements "
                                  f"{low}..{high}, past the {flat.size} of the allocation")
        view = np.lib.stride_tricks.as_strided(
            flat[offset:], shape=tuple(counts),
            strides=tuple(s * dt.itemsize for s in strides), writeable=True)
        return Tensor(self.allocation, view)

    # --- what the simulator reads off a tensor ---
    def _written_bytes(self) -> np.ndarray:
        """The `written` flags of this view's bytes, shaped (*shape, itemsize)."""
        start = self.array.__array_interface__["data"][0]
        base = self.allocation.storage.__array_interface__["data"][0]
        return np.lib.stride_tricks.as_strided(
            self.allocation.written[start - base:],
            shape=(*self.shape, self.dtype.itemsize), strides=(*self.array.strides, 1),
            writeable=True)

    def assign(self, values: np.ndarray) -> None:
        """Store `values` (already of this view's dtype and shape) and mark them written."""
        self.array[...] = values
        self._written_bytes()[...] = True

    def unwritten(self) -> int:
        """How many elements of this view were never written."""
        flags = self._written_bytes()
        if flags.all():  # the common case, and much faster than the per-element reduction
            return 0
        return int(np.count_nonzero(~flags.all(axis=-1)))

    def element_offset(self) -> int:
        """The first element's offset in the storage, in elements of this view's dtype."""
        start = self.array.__array_interface__["data"][0]
        base = self.allocation.storage.__array_interface__["data"][0]
        return (start - base) // self.dtype.itemsize

    def partition_range(self) -> tuple[int, int]:
        """(start, count) of the partitions an on-chip view touches."""
        storage = self.allocation.storage
        start = self.array.__array_interface__["data"][0]
        base = storage.__array_interface__["data"][0]
        row_bytes = storage.shape[1] * storage.dtype.itemsize
        return (start - base) // row_bytes, self.shape[0]

    def access(self) -> Access:
        """This view as a trace access (see `trace.py`)."""
        storage = self.allocation.storage
        itemsize = self.dtype.itemsize
        start = self.array.__array_interface__["data"][0]
        base = storage.__array_interface__["data"][0]
        byte_strides = self.array.strides
        if self.buffer == "hbm":
            partition_start, byte_offset = 0, start - base
        else:
            row_bytes = storage.shape[1] * storage.dtype.itemsize
            partition_start = (start - base) // row_bytes
            byte_offset = self.allocation.address + (start - base) % row_bytes
        contiguous = itemsize
        for size, stride in zip(reversed(self.shape[1:]), reversed(byte_strides[1:]),
                                strict=True):
            if size == 1:
                continue
            if stride != contiguous:
                break
            contiguous *= size
        if self.ndim == 1:
            contiguous = itemsize
        return Access(
            buffer=self.buffer, allocation_id=self.allocation.allocation_id,
            partition_start=partition_start, partition_count=self.shape[0],
            free_shape=self.shape[1:], dtype=self.dtype.name,
            free_strides=tuple(s // itemsize for s in byte_strides[1:]),
            partition_stride=byte_strides[0] // itemsize, byte_offset=byte_offset,
            contiguous_bytes=contiguous, bytes=self.array.size * itemsize)
