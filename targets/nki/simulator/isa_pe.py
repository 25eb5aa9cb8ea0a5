"""TensorE: `nc_matmul` (fp32 accumulation in PSUM) and `nc_transpose` (TensorE or VectorE)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from axon.targets.nki.simulator.errors import SimulationError
from axon.targets.nki.simulator.operands import (
    F32,
    cast,
    engine,
    engine_operand,
    finish,
    flat,
    free_size,
    matmul_mask,
    matmul_perf_mode,
    read_f32,
    tensor_operand,
    write,
)
from axon.targets.nki.simulator.state import current
from axon.targets.nki.simulator.tensor import Tensor

#: the dtypes TensorE takes as matmul inputs (tfloat32 is stored as float32)
_MATMUL_INPUTS = ("float8_e4m3", "float8_e4m3fn", "float8_e5m2", "bfloat16", "float16",
                  "float32")


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
    st = tensor_operand(stationary, api, "stationary", ("sbuf",))
    mv = tensor_operand(moving, api, "moving", ("sbuf",))
    d = tensor_operand(dst, api, "dst", ("psum",))
    if perf_mode != matmul_perf_mode.none:
        raise SimulationError(f"{api}: perf_mode={perf_mode} is not simulated")
    k, m, n = st.shape[0], free_size(st), free_size(mv)
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
    if d.shape[0] != m or free_size(d) != n:
        raise SimulationError(f"{api}: dst is {d.describe()}; expected [{m}, {n}] "
                              f"(stationary free size x moving free size)")
    for t, role in ((st, "stationary"), (mv, "moving")):
        if t.dtype.name not in _MATMUL_INPUTS:
            raise SimulationError(f"{api}: {role} is {t.dtype.name}; TensorE multiplies "
                                  f"{', '.join(_MATMUL_INPUTS)}")
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
    product = (flat(read_f32(st), k).T @ flat(read_f32(mv), k)).reshape(d.shape)
    written = matmul_mask(d) if d.dtype == F32 else None
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
    d.assign(cast(result, d.dtype))
    if written is not None:
        written[...] = True
    finish(state, "nc_matmul", "PE", [("stationary", st), ("moving", mv)]
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
    f = free_size(data)
    if on_pe:
        s = tensor_operand(data, api, "data", ("sbuf",))
        d = tensor_operand(dst, api, "dst", ("psum",))
        limit = min(state.limits.partitions, state.limits.matmul_stationary_free_max)
        if p > limit or f > limit:
            raise SimulationError(f"{api}: TensorE transposes at most [{limit}, {limit}]; data "
                                  f"is [{p}, {f}]")
        if d.dtype not in (np.dtype(F32), s.dtype):
            raise SimulationError(f"{api}: dst is {d.dtype.name}; a TensorE transpose writes "
                                  f"float32 or data's dtype {s.dtype.name}")
    else:
        s = engine_operand(state, data, api, "data")
        d = engine_operand(state, dst, api, "dst")
        if p > 32 or f > 32:
            raise SimulationError(f"{api}: VectorE transposes at most [32, 32]; data is "
                                  f"[{p}, {f}]")
        if d.dtype != s.dtype:
            raise SimulationError(f"{api}: VectorE transpose keeps the dtype: dst is "
                                  f"{d.dtype.name}, data {s.dtype.name}")
    if d.shape[0] != f or free_size(d) != p:
        raise SimulationError(f"{api}: dst is {d.describe()}; expected [{f}, {p}]")
    if d.dtype == s.dtype:
        d.assign(s.array.reshape(p, f).T.reshape(d.shape))
        if d.buffer == "psum":
            matmul_mask(d)[...] = False
    else:
        write(d, flat(read_f32(s), p).T)
    finish(state, "nc_transpose", "PE" if on_pe else "DVE", [("data", s)], [("dst", d)],
           transpose=True)
