"""The `nki.isa` surface: one function per instruction, executed eagerly on numpy.

Every instruction takes its destination first (`dst=`), as the current API does. Semantics follow
../shared/reference/nki.md sections 2-4: operands are read and computed in fp32 and rounded once,
to the destination's dtype, on the write (ml_dtypes, round-to-nearest-even); TensorE accumulates
in fp32 in PSUM; equal-dtype copies are bit-exact. Each instruction checks its operands' buffers,
partition counts, partition start alignment and sizes, and raises a `SimulationError` naming the
instruction and the rule or limit; `simulate` locates it at the kernel's line.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from axon.targets.nki.simulator import ops as _ops
from axon.targets.nki.simulator.errors import SimulationError, SimulationWarning
from axon.targets.nki.simulator.state import RunState, current
from axon.targets.nki.simulator.tensor import Tensor
from axon.targets.nki.simulator.trace import Engine, OptionValue

F32 = np.float32


class engine:  # noqa: N801 - the NKI name
    """`nisa.engine`: which engine runs an instruction that several can run."""

    unknown = "unknown"
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    sync = "sync"


class reduce_cmd:  # noqa: N801 - the NKI name
    """`nisa.reduce_cmd`: what an instruction does with its engine's accumulator registers."""

    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"


class dge_mode:  # noqa: N801 - the NKI name
    """`nisa.dge_mode`: how DMA descriptors are generated (no effect on the simulated values)."""

    unknown = "unknown"
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"


class oob_mode:  # noqa: N801 - the NKI name
    """`nisa.oob_mode`: what an out-of-bounds DMA does; the simulator always reports it."""

    error = "error"
    skip = "skip"


class matmul_perf_mode:  # noqa: N801 - the NKI name
    """`nisa.matmul_perf_mode`; only `none` is simulated."""

    none = "none"
    double_row = "double_row"


_ENGINES: dict[str, Engine] = {engine.tensor: "PE", engine.vector: "DVE", engine.scalar: "ACT",
            engine.gpsimd: "POOL", engine.sync: "SP-DMA"}


# --- operand checks --------------------------------------------------------------------------

def _tensor(value: object, api: str, role: str, buffers: Sequence[str]) -> Tensor:
    if not isinstance(value, Tensor):
        raise SimulationError(f"{api}: {role} must be a tensor, got {type(value).__name__}")
    if value.buffer not in buffers:
        raise SimulationError(f"{api}: {role} is a {value.describe()}; expected it in "
                              f"{' or '.join(b.upper() for b in buffers)}")
    return value


def _engine_operand(state: RunState, value: object, api: str, role: str,
                    buffers: Sequence[str] = ("sbuf", "psum")) -> Tensor:
    """An on-chip operand of a compute engine: its partitions must fit and start aligned (a
    64 < P access starts at 0, 32 < P <= 64 at 0 or 64, P <= 32 at a multiple of 32)."""
    t = _tensor(value, api, role, buffers)
    start, count = t.partition_range()
    if count > state.limits.partitions:
        raise SimulationError(f"{api}: {role} spans {count} partitions; limit "
                              f"partitions={state.limits.partitions} ({state.limits.profile})")
    quantum = 128 if count > 64 else 64 if count > 32 else 32
    if start % quantum:
        starts = ", ".join(str(s) for s in range(0, 128, quantum))
        raise SimulationError(f"{api}: {role} covers {count} partitions starting at partition "
                              f"{start}; an engine access of {count} partitions must start at "
                              f"{starts}")
    return t


def _op(value: object, api: str, role: str) -> _ops.Op:
    if isinstance(value, _ops.Op):
        return value
    if value in _ops.UFUNCS:
        return _ops.UFUNCS[value]
    raise SimulationError(f"{api}: {role} must be an nl operator (nl.add, nl.exp, ...), got "
                          f"{value!r}")


def _free(t: Tensor) -> int:
    return int(np.prod(t.shape[1:], dtype=np.int64)) if t.ndim > 1 else 1


def _same_partitions(api: str, a: Tensor, a_role: str, b: Tensor, b_role: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise SimulationError(f"{api}: {a_role} spans {a.shape[0]} partitions but {b_role} "
                              f"{b.shape[0]}; they must match")


def _same_free(api: str, a: Tensor, a_role: str, b: Tensor, b_role: str) -> None:
    if _free(a) != _free(b):
        raise SimulationError(f"{api}: {a_role} has {_free(a)} elements per partition but "
                              f"{b_role} {_free(b)}; they must match")


def _read(t: Tensor) -> np.ndarray:
    """The operand's values in fp32 (a copy)."""
    return t.array.astype(F32)


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """fp32 results rounded to a storage dtype: RNE through ml_dtypes for floats, RNE then
    saturation for integers."""
    if np.issubdtype(dtype, np.integer) or dtype == np.bool_:
        if dtype == np.bool_:
            return values != 0
        info = np.iinfo(dtype)
        return np.clip(np.rint(values), info.min, info.max).astype(dtype)
    return np.asarray(values, dtype=F32).astype(dtype)


def _matmul_mask(t: Tensor) -> np.ndarray:
    """The PSUM "written by matmul" flags of the elements `t` views."""
    mask = t.allocation.matmul_written
    assert mask is not None
    itemsize = t.dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        mask.reshape(-1)[t.element_offset():], shape=t.shape,
        strides=tuple(s // itemsize for s in t.array.strides), writeable=True)


def _write(dst: Tensor, values: np.ndarray) -> None:
    """Round `values` to dst's dtype and store them in dst's shape."""
    dst.array[...] = _cast(np.asarray(values).reshape(dst.shape), dst.dtype)
    if dst.buffer == "psum" and dst.dtype == dst.allocation.storage.dtype:
        _matmul_mask(dst)[...] = False


def _scalar_operand(state: RunState, value: object, api: str, role: str,
                    partitions: int) -> np.ndarray | float:
    """A compile-time scalar, or a [P, 1] tile broadcast along the free dims."""
    if isinstance(value, Tensor):
        t = _engine_operand(state, value, api, role)
        if t.shape[0] != partitions or _free(t) != 1:
            raise SimulationError(f"{api}: {role} is a {t.describe()}; expected a scalar or a "
                                  f"[{partitions}, 1] tile")
        return _read(t).reshape(partitions, 1)
    if isinstance(value, bool | int | float | np.number):
        return float(value)
    raise SimulationError(f"{api}: {role} must be a number or a [P, 1] tile, got "
                          f"{type(value).__name__}")


def _apply(op: _ops.Op, a: Any, b: Any, api: str) -> np.ndarray:
    if op.binary is None:
        raise SimulationError(f"{api}: {op!r} is not a binary ALU operator")
    if op.bitvec:
        return np.asarray(op.binary(np.asarray(a).astype(np.int64),
                                    np.asarray(b).astype(np.int64))).astype(F32)
    with np.errstate(all="ignore"):
        return np.asarray(op.binary(F32(a) if isinstance(a, float) else a,
                                    F32(b) if isinstance(b, float) else b), dtype=F32)


def _flat(values: np.ndarray, partitions: int) -> np.ndarray:
    return values.reshape(partitions, -1)


def _trace(state: RunState, name: str, eng: Engine, reads: Sequence[tuple[str, Tensor]],
           writes: Sequence[tuple[str, Tensor]], **options: OptionValue) -> None:
    if state.trace is not None:
        state.record(name, eng, [(r, t.access()) for r, t in reads],
                     [(r, t.access()) for r, t in writes], options)


# --- data movement ---------------------------------------------------------------------------

def dma_copy(dst: Tensor, src: Tensor, priority: object = None, oob_mode: str = oob_mode.error,
             dge_mode: str = dge_mode.unknown, engine: str = engine.unknown,
             name: str | None = None) -> None:
    """`dst = src` by DMA between HBM and SBUF; equal element counts; a dtype change goes
    through fp32. PSUM can be neither source nor destination."""
    api = "nisa.dma_copy"
    state = current(api)
    d = _tensor(dst, api, "dst", ("hbm", "sbuf"))
    s = _tensor(src, api, "src", ("hbm", "sbuf"))
    if d.array.size != s.array.size:
        raise SimulationError(f"{api}: src {s.describe()} has {s.array.size} elements but dst "
                              f"{d.describe()} {d.array.size}; they must match")
    if d.dtype == s.dtype:
        d.array[...] = s.array.reshape(d.shape)
    else:
        _write(d, _read(s))
    _trace(state, "dma_copy", "SP-DMA", [("src", s)], [("dst", d)], dge_mode=dge_mode)


_DMA_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_transpose(dst: Tensor, src: Tensor, axes: Sequence[int] | None = None,
                  priority: object = None, dge_mode: str = dge_mode.unknown,
                  oob_mode: str = oob_mode.error, name: str | None = None) -> None:
    """`dst = src.transpose(axes)` by DMA: 2-D (1, 0), 3-D (2, 1, 0) or 4-D (3, 1, 2, 0); dst in
    SBUF, src in HBM or SBUF; 2-byte dtypes, equal on both sides."""
    api = "nisa.dma_transpose"
    state = current(api)
    d = _tensor(dst, api, "dst", ("sbuf",))
    s = _tensor(src, api, "src", ("hbm", "sbuf"))
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
    d.array[...] = moved
    _trace(state, "dma_transpose", "SP-DMA", [("src", s)], [("dst", d)], transpose=True)


def tensor_copy(dst: Tensor, src: Tensor, engine: str = engine.unknown,
                name: str | None = None) -> None:
    """`dst = src` on one engine (Vector by default, Scalar or GpSimd); bit-exact for equal
    dtypes, otherwise through fp32. GpSimd cannot access PSUM."""
    api = "nisa.tensor_copy"
    state = current(api)
    buffers = ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum")
    s = _engine_operand(state, src, api, "src", buffers)
    d = _engine_operand(state, dst, api, "dst", buffers)
    _same_partitions(api, d, "dst", s, "src")
    _same_free(api, d, "dst", s, "src")
    if d.dtype == s.dtype:
        d.array[...] = s.array.reshape(d.shape)
        if d.buffer == "psum":
            _matmul_mask(d)[...] = False
    else:
        _write(d, _read(s))
    _trace(state, "tensor_copy", _ENGINES.get(engine, "DVE"), [("src", s)], [("dst", d)])


def memset(dst: Tensor, value: float | int, engine: str = engine.unknown,
           name: str | None = None) -> None:
    """Fill dst with `value` (Vector by default, or GpSimd)."""
    api = "nisa.memset"
    state = current(api)
    d = _engine_operand(state, dst, api, "dst",
                        ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum"))
    if not isinstance(value, bool | int | float | np.number):
        raise SimulationError(f"{api}: value must be a number, got {type(value).__name__}")
    _write(d, np.full(d.shape, value, dtype=F32))
    _trace(state, "memset", "POOL" if engine == "gpsimd" else "DVE", [], [("dst", d)],
           value=float(value))


# --- TensorE ---------------------------------------------------------------------------------

def nc_matmul(dst: Tensor, stationary: Tensor, moving: Tensor,
              is_stationary_onezero: bool = False, is_moving_onezero: bool = False,
              is_transpose: bool = False, accumulate: bool | None = None,
              tile_position: Sequence[int] = (), tile_size: Sequence[int] = (),
              perf_mode: str = matmul_perf_mode.none, name: str | None = None) -> None:
    """`dst[M, N] (+)= stationary[K, M].T @ moving[K, N]` on TensorE, accumulated in fp32 in
    PSUM. `accumulate=None` overwrites a location not yet written by a matmul and adds to one that
    is; `True` always adds (a location no matmul wrote is an error: undefined on the device);
    `False` overwrites."""
    api = "nisa.nc_matmul"
    state = current(api)
    lim = state.limits
    st = _tensor(stationary, api, "stationary", ("sbuf",))
    mv = _tensor(moving, api, "moving", ("sbuf",))
    d = _tensor(dst, api, "dst", ("psum",))
    if perf_mode != matmul_perf_mode.none:
        raise SimulationError(f"{api}: perf_mode={perf_mode} is not simulated")
    k, m, n = st.shape[0], _free(st), _free(mv)
    if mv.shape[0] != k:
        raise SimulationError(f"{api}: stationary contracts over {k} partitions but moving "
                              f"over {mv.shape[0]}; they must match")
    if k > lim.partitions:
        raise SimulationError(f"{api}: contraction over {k} partitions; limit "
                              f"partitions={lim.partitions} ({lim.profile})")
    if m > lim.matmul_stationary_free_max:
        raise SimulationError(f"{api}: stationary free size {m}; limit "
                              f"matmul_stationary_free_max={lim.matmul_stationary_free_max} "
                              f"({lim.profile})")
    if n > lim.matmul_moving_free_max:
        raise SimulationError(f"{api}: moving free size {n}; limit "
                              f"matmul_moving_free_max={lim.matmul_moving_free_max} "
                              f"({lim.profile})")
    if d.shape[0] != m or _free(d) != n:
        raise SimulationError(f"{api}: dst is {d.describe()}; expected [{m}, {n}] "
                              f"(stationary free size x moving free size)")
    floats32 = {np.dtype(F32)}
    if (st.dtype in floats32) != (mv.dtype in floats32):
        raise SimulationError(f"{api}: stationary is {st.dtype.name} and moving "
                              f"{mv.dtype.name}; if one is fp32 both must be")
    if is_transpose:
        if d.dtype != st.dtype and d.dtype != F32:
            raise SimulationError(f"{api}: a transpose writes {st.dtype.name} or float32, not "
                                  f"{d.dtype.name}")
    elif d.dtype != F32:
        raise SimulationError(f"{api}: dst is {d.dtype.name}; a matmul result in PSUM is "
                              f"float32")
    start = d.allocation.address + (d.element_offset() % d.allocation.storage.shape[1]) \
        * d.dtype.itemsize
    end = start + n * d.dtype.itemsize - 1
    if n > lim.psum_bank_free_max or start // lim.psum_bank_bytes != end // lim.psum_bank_bytes:
        raise SimulationError(f"{api}: dst covers PSUM bytes {start}..{end} of each partition, "
                              f"across a bank boundary; a matmul result must lie in one bank "
                              f"(psum_bank_bytes={lim.psum_bank_bytes}, psum_bank_free_max="
                              f"{lim.psum_bank_free_max}, {lim.profile})")
    product = (_flat(_read(st), k).T @ _flat(_read(mv), k)).reshape(d.shape)
    written = _matmul_mask(d) if d.dtype == F32 else None
    if accumulate is True and written is not None and not written.all():
        raise SimulationError(f"{api}: accumulate=True onto PSUM elements no matmul has written "
                              f"(undefined on the device); use accumulate=None or False for "
                              f"the first matmul of an accumulation group")
    if accumulate is False or written is None:
        result = product
    else:
        old = d.array.astype(F32)
        result = np.where(written, old + product, product) if accumulate is None \
            else old + product
    d.array[...] = _cast(result, d.dtype)
    if written is not None:
        written[...] = True
    _trace(state, "nc_matmul", "PE", [("stationary", st), ("moving", mv)]
           + ([("dst", d)] if accumulate is not False else []), [("dst", d)],
           accumulate=accumulate, transpose=bool(is_transpose),
           stationary_onezero=bool(is_stationary_onezero),
           moving_onezero=bool(is_moving_onezero))


def nc_transpose(dst: Tensor, data: Tensor, engine: str = engine.unknown,
                 name: str | None = None) -> None:
    """`dst[F, P] = data[P, F]` (free dims flattened first). TensorE: data up to [128, 128] in
    SBUF, dst in PSUM (float32 or data's dtype). VectorE: up to [32, 32], SBUF or PSUM, dst of
    data's dtype. `engine.unknown` picks TensorE when data is in SBUF and dst in PSUM."""
    api = "nisa.nc_transpose"
    state = current(api)
    if not isinstance(data, Tensor) or not isinstance(dst, Tensor):
        raise SimulationError(f"{api}: dst and data must be tensors")
    on_pe = engine == "tensor" or (engine == "unknown" and data.buffer == "sbuf"
                                   and dst.buffer == "psum")
    if engine not in ("tensor", "vector", "unknown"):
        raise SimulationError(f"{api}: engine {engine} cannot transpose; expected "
                              f"nisa.engine.tensor or nisa.engine.vector")
    p = data.shape[0]
    f = _free(data)
    if on_pe:
        s = _tensor(data, api, "data", ("sbuf",))
        d = _tensor(dst, api, "dst", ("psum",))
        limit = min(state.limits.partitions, state.limits.matmul_stationary_free_max)
        if p > limit or f > limit:
            raise SimulationError(f"{api}: TensorE transposes at most [{limit}, {limit}]; data "
                                  f"is [{p}, {f}]")
        if d.dtype not in (np.dtype(F32), s.dtype):
            raise SimulationError(f"{api}: dst is {d.dtype.name}; a TensorE transpose writes "
                                  f"float32 or data's dtype {s.dtype.name}")
    else:
        s = _engine_operand(state, data, api, "data")
        d = _engine_operand(state, dst, api, "dst")
        if p > 32 or f > 32:
            raise SimulationError(f"{api}: VectorE transposes at most [32, 32]; data is "
                                  f"[{p}, {f}]")
        if d.dtype != s.dtype:
            raise SimulationError(f"{api}: VectorE transpose keeps the dtype: dst is "
                                  f"{d.dtype.name}, data {s.dtype.name}")
    if d.shape[0] != f or _free(d) != p:
        raise SimulationError(f"{api}: dst is {d.describe()}; expected [{f}, {p}]")
    if d.dtype == s.dtype:
        d.array[...] = s.array.reshape(p, f).T.reshape(d.shape)
        if d.buffer == "psum":
            _matmul_mask(d)[...] = False
    else:
        _write(d, _flat(_read(s), p).T)
    _trace(state, "nc_transpose", "PE" if on_pe else "DVE", [("data", s)], [("dst", d)],
           transpose=True)


# --- ScalarE ---------------------------------------------------------------------------------

def activation(dst: Tensor, op: object, data: Tensor, bias: object = None,
               scale: object = 1.0, reduce_op: object = None, reduce_res: Tensor | None = None,
               reduce_cmd: str = reduce_cmd.idle, name: str | None = None) -> None:
    """`dst = op(data * scale + bias)` on ScalarE, in fp32. `scale`: a number or a [P, 1] tile;
    `bias`: a [P, 1] tile or a number. With `reduce_op` (nl.add), the per-partition sum of the
    result goes into ScalarE's accumulator registers (zeroed first by `reset`/`reset_reduce`, or
    when only `reduce_res` is given) and `reduce_res[:, 0]` receives them."""
    api = "nisa.activation"
    state = current(api)
    fn = _op(op, api, "op")
    if fn.unary is None:
        raise SimulationError(f"{api}: op {fn!r} is not an activation function")
    x = _engine_operand(state, data, api, "data")
    d = _engine_operand(state, dst, api, "dst")
    _same_partitions(api, d, "dst", x, "data")
    _same_free(api, d, "dst", x, "data")
    p = x.shape[0]
    values = _flat(_read(x), p)
    sc = _scalar_operand(state, scale, api, "scale", p)
    reads = [("data", x)]
    if isinstance(scale, Tensor):
        reads.append(("scale", scale))
    with np.errstate(all="ignore"):
        values = values * F32(sc) if isinstance(sc, float) else values * sc
        if bias is not None:
            b = _scalar_operand(state, bias, api, "bias", p)
            values = values + (F32(b) if isinstance(b, float) else b)
            if isinstance(bias, Tensor):
                reads.append(("bias", bias))
        out = np.asarray(fn.unary(values), dtype=F32)
    if fn.valid is not None:
        _check_range(state, api, fn, values)
    _write(d, out)
    writes = [("dst", d)]
    reducing = reduce_op is not None or reduce_res is not None
    if reducing:
        rop = _op(reduce_op if reduce_op is not None else _ops.add, api, "reduce_op")
        if rop is not _ops.add:
            raise SimulationError(f"{api}: reduce_op must be nl.add, got {rop!r}")
        command = reduce_cmd
        if command == "idle":
            command = "reset_reduce"
        regs = state.act_accumulators
        if command in ("reset", "reset_reduce"):
            regs[:p] = 0.0
        if command in ("reduce", "reset_reduce"):
            regs[:p] += out.sum(axis=1, dtype=F32)
        if reduce_res is not None:
            r = _engine_operand(state, reduce_res, api, "reduce_res")
            if r.shape[0] != p or _free(r) != 1:
                raise SimulationError(f"{api}: reduce_res is {r.describe()}; expected [{p}, 1]")
            _write(r, regs[:p].copy())
            writes.append(("reduce_res", r))
    _trace(state, "activation", "ACT", reads, writes, function=fn.name, reduce=reducing,
           scale_is_tile=isinstance(scale, Tensor))


def _check_range(state: RunState, api: str, fn: _ops.Op, values: np.ndarray) -> None:
    """Warn when inputs fall outside the range ScalarE's approximation of `fn` covers."""
    assert fn.valid is not None
    low, high = fn.valid
    checked = np.abs(values) if fn.valid_magnitude else values
    outside = int(np.count_nonzero((checked < low) | (checked > high)))
    if outside:
        file, line = state.location()
        bound = "|x| in" if fn.valid_magnitude else "x in"
        warnings.warn(SimulationWarning(
            f"{file}:{line}: warning: {api}: {outside} of {values.size} inputs of {fn.name} lie "
            f"outside {bound} [{low:.6g}, {high:.6g}], where ScalarE's approximation is invalid "
            f"(the simulator computes exact values)"), stacklevel=2)


def activation_reduce(dst: Tensor, op: object, data: Tensor, reduce_op: object,
                      reduce_res: Tensor, bias: object = None, scale: object = 1.0,
                      name: str | None = None) -> None:
    """`activation` with `reduce_cmd.reset_reduce`: dst = op(data * scale + bias) and
    reduce_res[:, 0] = the per-partition sum of dst's fp32 values."""
    activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
               reduce_res=reduce_res, reduce_cmd=reduce_cmd.reset_reduce)


# --- VectorE / GpSimd ------------------------------------------------------------------------

def tensor_tensor(dst: Tensor, data1: Tensor, data2: Tensor, op: object,
                  engine: str = engine.unknown, name: str | None = None) -> None:
    """`dst = data1 op data2` elementwise in fp32 (bitvec operators on the integers); equal
    partitions and elements per partition; at most one input in PSUM; GpSimd cannot touch
    PSUM."""
    api = "nisa.tensor_tensor"
    state = current(api)
    fn = _op(op, api, "op")
    buffers = ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum")
    a = _engine_operand(state, data1, api, "data1", buffers)
    b = _engine_operand(state, data2, api, "data2", buffers)
    d = _engine_operand(state, dst, api, "dst", buffers)
    if a.buffer == "psum" and b.buffer == "psum":
        raise SimulationError(f"{api}: data1 and data2 are both in PSUM; at most one may be")
    for t, role in ((b, "data2"), (d, "dst")):
        _same_partitions(api, a, "data1", t, role)
        _same_free(api, a, "data1", t, role)
    p = a.shape[0]
    if fn.bitvec:
        result = _apply(fn, _flat(a.array, p), _flat(b.array, p), api)
    else:
        result = _apply(fn, _flat(_read(a), p), _flat(_read(b), p), api)
    _write(d, result)
    eng = _ENGINES.get(engine, "POOL" if fn is _ops.power else "DVE")
    _trace(state, "tensor_tensor", eng, [("data1", a), ("data2", b)], [("dst", d)], op=fn.name)


def tensor_scalar(dst: Tensor, data: Tensor, op0: object, operand0: object,
                  reverse0: bool = False, op1: object = None, operand1: object = None,
                  reverse1: bool = False, engine: str = engine.unknown,
                  name: str | None = None) -> None:
    """`dst = (data op0 operand0) op1 operand1`, each operand a number or a [P, 1] tile
    broadcast along the free dims; `reverse*` swaps an operator's operands."""
    api = "nisa.tensor_scalar"
    state = current(api)
    buffers = ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum")
    x = _engine_operand(state, data, api, "data", buffers)
    d = _engine_operand(state, dst, api, "dst", buffers)
    _same_partitions(api, d, "dst", x, "data")
    _same_free(api, d, "dst", x, "data")
    p = x.shape[0]
    reads = [("data", x)]
    values = _flat(x.array, p) if _op(op0, api, "op0").bitvec else _flat(_read(x), p)
    steps = [(op0, operand0, reverse0, "op0", "operand0")]
    if op1 is not None:
        steps.append((op1, operand1, reverse1, "op1", "operand1"))
    names = []
    for op, operand, reverse, op_role, operand_role in steps:
        fn = _op(op, api, op_role)
        if operand is None:
            raise SimulationError(f"{api}: {op_role} is given without {operand_role}")
        value = _scalar_operand(state, operand, api, operand_role, p)
        if isinstance(operand, Tensor):
            reads.append((operand_role, operand))
        values = _apply(fn, value, values, api) if reverse else _apply(fn, values, value, api)
        names.append(fn.name)
    _write(d, values)
    _trace(state, "tensor_scalar", _ENGINES.get(engine, "DVE"), reads, [("dst", d)],
           op0=names[0], op1=names[1] if len(names) > 1 else None)


def tensor_reduce(dst: Tensor, op: object, data: Tensor, axis: int | Sequence[int],
                  negate: bool = False, keepdims: bool = False,
                  name: str | None = None) -> None:
    """`dst = op-reduction of data over free axes `axis`` (trailing dims only), in fp32;
    `negate` multiplies the result by -1."""
    api = "nisa.tensor_reduce"
    state = current(api)
    fn = _op(op, api, "op")
    if not fn.reduce or fn.binary is None:
        raise SimulationError(f"{api}: {fn!r} is not a reduction operator")
    x = _engine_operand(state, data, api, "data")
    d = _engine_operand(state, dst, api, "dst")
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    axes = tuple(sorted(int(a) % x.ndim for a in axes))
    if not axes or axes[0] == 0 or axes != tuple(range(x.ndim - len(axes), x.ndim)):
        raise SimulationError(f"{api}: axis {axis} of a {x.ndim}-d tile; expected trailing free "
                              f"axes such as {tuple(range(1, x.ndim))[-1:]} (never the partition "
                              f"axis 0)")
    values = x.array.astype(np.int64) if fn.bitvec else _read(x)
    if fn.binary in (np.add, np.multiply, np.maximum, np.minimum):
        reducer = {id(np.add): np.add, id(np.multiply): np.multiply, id(np.maximum): np.maximum,
                   id(np.minimum): np.minimum}[id(fn.binary)]
        with np.errstate(all="ignore"):
            result = reducer.reduce(values, axis=axes, keepdims=keepdims)
    else:
        flat = values.reshape(*x.shape[:x.ndim - len(axes)], -1)
        result = flat[..., 0]
        for i in range(1, flat.shape[-1]):
            result = _apply(fn, result, flat[..., i], api)
    result = np.asarray(result, dtype=F32)
    if negate:
        result = -result
    _same_partitions(api, d, "dst", x, "data")
    if _free(d) != max(1, result.size // x.shape[0]):
        raise SimulationError(f"{api}: dst is {d.describe()}; the reduction has "
                              f"{result.size // x.shape[0]} elements per partition")
    _write(d, result)
    _trace(state, "tensor_reduce", "DVE", [("data", x)], [("dst", d)], op=fn.name,
           axis=len(axes), negate=bool(negate))


def tensor_tensor_scan(dst: Tensor, data0: Tensor, data1: Tensor, initial: object,
                       op0: object, op1: object, reverse0: bool = False,
                       reverse1: bool = False, name: str | None = None) -> None:
    """Per partition, along the (flattened) free dims: `r[0] = op1(op0(data0[0], initial),
    data1[0])`, `r[i] = op1(op0(data0[i], r[i-1]), data1[i])`, in fp32; `reverse*` swaps an
    operator's operands; `initial` is a number or a [P, 1] tile."""
    api = "nisa.tensor_tensor_scan"
    state = current(api)
    f0, f1 = _op(op0, api, "op0"), _op(op1, api, "op1")
    a = _engine_operand(state, data0, api, "data0")
    b = _engine_operand(state, data1, api, "data1")
    d = _engine_operand(state, dst, api, "dst")
    for t, role in ((b, "data1"), (d, "dst")):
        _same_partitions(api, a, "data0", t, role)
        _same_free(api, a, "data0", t, role)
    p = a.shape[0]
    x0, x1 = _flat(_read(a), p), _flat(_read(b), p)
    init = _scalar_operand(state, initial, api, "initial", p)
    carry = np.full(p, init, dtype=F32) if isinstance(init, float) else init.reshape(p)
    out = np.empty_like(x0)
    for i in range(x0.shape[1]):
        step = _apply(f0, carry, x0[:, i], api) if reverse0 else _apply(f0, x0[:, i], carry, api)
        carry = _apply(f1, x1[:, i], step, api) if reverse1 else _apply(f1, step, x1[:, i], api)
        out[:, i] = carry
    _write(d, out)
    reads = [("data0", a), ("data1", b)] + ([("initial", initial)]
                                            if isinstance(initial, Tensor) else [])
    _trace(state, "tensor_tensor_scan", "DVE", reads, [("dst", d)], op0=f0.name, op1=f1.name)


def _affine(pattern: Sequence[Sequence[int]], offset: int, channel_multiplier: int,
            partitions: int, api: str) -> np.ndarray:
    """`offset + p * channel_multiplier + sum of step_k * i_k` over the pattern's grid, int64."""
    if not 1 <= len(pattern) <= 4:
        raise SimulationError(f"{api}: pattern {pattern} must have 1 to 4 [step, num] pairs")
    value: np.ndarray = np.full((partitions, 1), int(offset), dtype=np.int64)
    value = value + np.arange(partitions, dtype=np.int64).reshape(partitions, 1) * int(
        channel_multiplier)
    grid = np.zeros((1,), dtype=np.int64)
    for step, num in pattern:
        grid = (grid[:, None] + int(step) * np.arange(int(num), dtype=np.int64)[None, :]) \
            .reshape(-1)
    return value + grid[None, :]


def iota(dst: Tensor, pattern: Sequence[Sequence[int]], offset: int = 0,
         channel_multiplier: int = 0, name: str | None = None) -> None:
    """`dst[p, i...] = offset + p * channel_multiplier + sum of step_k * i_k` on GpSimd,
    computed in int32 and cast to dst's dtype; dst in SBUF."""
    api = "nisa.iota"
    state = current(api)
    d = _engine_operand(state, dst, api, "dst", ("sbuf",))
    values = _affine(pattern, offset, channel_multiplier, d.shape[0], api)
    if values.shape[1] != _free(d):
        raise SimulationError(f"{api}: pattern {pattern} makes {values.shape[1]} elements per "
                              f"partition but dst has {_free(d)}")
    ints = values.astype(np.int32)
    d.array[...] = ints.reshape(d.shape).astype(d.dtype)
    _trace(state, "iota", "POOL", [], [("dst", d)])


def affine_select(dst: Tensor, pattern: Sequence[Sequence[int]], channel_multiplier: int,
                  on_true_tile: Tensor, on_false_value: float, cmp_op: object = _ops.equal,
                  offset: int = 0, name: str | None = None) -> None:
    """`dst = on_true_tile where cmp_op(offset + p * channel_multiplier + sum of step_k * i_k,
    0) else on_false_value`, on GpSimd (e.g. a causal mask)."""
    api = "nisa.affine_select"
    state = current(api)
    fn = _op(cmp_op, api, "cmp_op")
    t = _engine_operand(state, on_true_tile, api, "on_true_tile", ("sbuf",))
    d = _engine_operand(state, dst, api, "dst", ("sbuf",))
    _same_partitions(api, d, "dst", t, "on_true_tile")
    _same_free(api, d, "dst", t, "on_true_tile")
    p = d.shape[0]
    values = _affine(pattern, offset, channel_multiplier, p, api)
    if values.shape[1] != _free(d):
        raise SimulationError(f"{api}: pattern {pattern} makes {values.shape[1]} elements per "
                              f"partition but dst has {_free(d)}")
    keep = _apply(fn, values.astype(F32), F32(0.0), api) != 0
    _write(d, np.where(keep, _flat(_read(t), p), F32(on_false_value)))
    _trace(state, "affine_select", "POOL", [("on_true_tile", t)], [("dst", d)], op=fn.name)


def select(dst: Tensor, predicate: Tensor, on_true: Tensor, on_false: object,
           name: str | None = None) -> None:
    """`dst = on_true where predicate != 0 else on_false` (a tile or a number) on VectorE."""
    api = "nisa.select"
    state = current(api)
    pr = _engine_operand(state, predicate, api, "predicate")
    t = _engine_operand(state, on_true, api, "on_true")
    d = _engine_operand(state, dst, api, "dst")
    reads = [("predicate", pr), ("on_true", t)]
    for u, role in ((t, "on_true"), (d, "dst")):
        _same_partitions(api, pr, "predicate", u, role)
        _same_free(api, pr, "predicate", u, role)
    p = d.shape[0]
    if isinstance(on_false, Tensor):
        f = _engine_operand(state, on_false, api, "on_false")
        _same_free(api, pr, "predicate", f, "on_false")
        _same_partitions(api, pr, "predicate", f, "on_false")
        false_values: np.ndarray | float = _flat(_read(f), p)
        reads.append(("on_false", f))
    elif isinstance(on_false, bool | int | float | np.number):
        false_values = float(on_false)
    else:
        raise SimulationError(f"{api}: on_false must be a tile or a number")
    _write(d, np.where(_flat(_read(pr), p) != 0, _flat(_read(t), p), false_values))
    _trace(state, "select", "DVE", reads, [("dst", d)])


def exponential(dst: Tensor, src: Tensor, max_value: object = 0.0,
                reduce_res: Tensor | None = None, reduce_cmd: str = reduce_cmd.idle,
                reduce_init: float = 0.0, name: str | None = None) -> None:
    """`dst = exp(src - max_value)` on VectorE in fp32 (`max_value` a number or a [P, 1] tile);
    with a `reduce_cmd` other than idle, the per-partition sum of the result goes into VectorE's
    accumulator registers, and `reduce_res[:, 0]` receives them."""
    api = "nisa.exponential"
    state = current(api)
    s = _engine_operand(state, src, api, "src")
    d = _engine_operand(state, dst, api, "dst")
    _same_partitions(api, d, "dst", s, "src")
    _same_free(api, d, "dst", s, "src")
    p = s.shape[0]
    m = _scalar_operand(state, max_value, api, "max_value", p)
    with np.errstate(all="ignore"):
        out = np.exp(_flat(_read(s), p) - (F32(m) if isinstance(m, float) else m), dtype=F32)
    _write(d, out)
    writes = [("dst", d)]
    regs = state.dve_accumulators
    if reduce_cmd in ("reset", "reset_reduce"):
        regs[:p] = F32(reduce_init)
    if reduce_cmd in ("reduce", "reset_reduce"):
        regs[:p] += out.sum(axis=1, dtype=F32)
    if reduce_res is not None:
        if reduce_cmd == "idle":
            raise SimulationError(f"{api}: reduce_res needs a reduce_cmd other than idle")
        r = _engine_operand(state, reduce_res, api, "reduce_res")
        if r.shape[0] != p or _free(r) != 1:
            raise SimulationError(f"{api}: reduce_res is {r.describe()}; expected [{p}, 1]")
        _write(r, regs[:p].copy())
        writes.append(("reduce_res", r))
    _trace(state, "exponential", "DVE", [("src", s)], writes, reduce=reduce_cmd != "idle")
