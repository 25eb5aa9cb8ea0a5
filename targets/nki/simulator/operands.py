"""What every `nki.isa` instruction shares: the option enums, operand checks, fp32 reads,
rounded writes, and finishing an instruction (warnings about never-written reads, the trace).

Semantics follow ../shared/reference/nki.md sections 2-4: operands are read and computed in fp32
and rounded once, to the destination's dtype, on the write (ml_dtypes, round-to-nearest-even);
equal-dtype copies are bit-exact. A broken rule is a `SimulationError` naming the instruction and
the rule or limit; `simulate` locates it at the kernel's line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from axon.targets.nki.simulator import ops as _ops
from axon.targets.nki.simulator.errors import SimulationError
from axon.targets.nki.simulator.state import RunState
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


ENGINES: dict[str, Engine] = {engine.tensor: "PE", engine.vector: "DVE", engine.scalar: "ACT",
            engine.gpsimd: "POOL", engine.sync: "SP-DMA"}

def tensor_operand(value: object, api: str, role: str, buffers: Sequence[str]) -> Tensor:
    """`value` as a tensor in one of `buffers`; SimulationError naming the operand otherwise."""
    if not isinstance(value, Tensor):
        raise SimulationError(f"{api}: {role} must be a tensor, got {type(value).__name__}")
    if value.buffer not in buffers:
        raise SimulationError(f"{api}: {role} is a {value.describe()}; expected it in "
                              f"{' or '.join(b.upper() for b in buffers)}")
    return value


def engine_operand(state: RunState, value: object, api: str, role: str,
                    buffers: Sequence[str] = ("sbuf", "psum")) -> Tensor:
    """An on-chip operand of a compute engine: its partitions must fit and start aligned (a
    64 < P access starts at 0, 32 < P <= 64 at 0 or 64, P <= 32 at a multiple of 32)."""
    t = tensor_operand(value, api, role, buffers)
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


def alu_op(value: object, api: str, role: str) -> _ops.Op:
    """`value` as an operator (an `nl` operator, or a numpy ufunc legacy kernels pass)."""
    if isinstance(value, _ops.Op):
        return value
    if value in _ops.UFUNCS:
        return _ops.UFUNCS[value]
    raise SimulationError(f"{api}: {role} must be an nl operator (nl.add, nl.exp, ...), got "
                          f"{value!r}")


def free_size(t: Tensor) -> int:
    """Elements per partition (the product of the free dims)."""
    return int(np.prod(t.shape[1:], dtype=np.int64)) if t.ndim > 1 else 1


def same_partitions(api: str, a: Tensor, a_role: str, b: Tensor, b_role: str) -> None:
    """Two operands must span the same number of partitions."""
    if a.shape[0] != b.shape[0]:
        raise SimulationError(f"{api}: {a_role} spans {a.shape[0]} partitions but {b_role} "
                              f"{b.shape[0]}; they must match")


def same_free(api: str, a: Tensor, a_role: str, b: Tensor, b_role: str) -> None:
    """Two operands must hold the same number of elements per partition."""
    if free_size(a) != free_size(b):
        raise SimulationError(f"{api}: {a_role} has {free_size(a)} elements per partition but "
                              f"{b_role} {free_size(b)}; they must match")


def read_f32(t: Tensor) -> np.ndarray:
    """The operand's values in fp32 (a copy)."""
    return t.array.astype(F32)


def cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """fp32 results rounded to a storage dtype: RNE through ml_dtypes for floats, RNE then
    saturation for integers."""
    if np.issubdtype(dtype, np.integer) or dtype == np.bool_:
        if dtype == np.bool_:
            return values != 0
        info = np.iinfo(dtype)
        return np.clip(np.rint(values), info.min, info.max).astype(dtype)
    with np.errstate(over="ignore"):  # beyond a narrow float's range is inf, as on the device
        return np.asarray(values, dtype=F32).astype(dtype)


def matmul_mask(t: Tensor) -> np.ndarray:
    """The PSUM "written by matmul" flags of the elements `t` views."""
    mask = t.allocation.matmul_written
    assert mask is not None
    itemsize = t.dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        mask.reshape(-1)[t.element_offset():], shape=t.shape,
        strides=tuple(s // itemsize for s in t.array.strides), writeable=True)


def write(dst: Tensor, values: np.ndarray) -> None:
    """Round `values` to dst's dtype and store them in dst's shape."""
    dst.assign(cast(np.asarray(values).reshape(dst.shape), dst.dtype))
    if dst.buffer == "psum" and dst.dtype == dst.allocation.storage.dtype:
        matmul_mask(dst)[...] = False


def scalar_operand(state: RunState, value: object, api: str, role: str,
                    partitions: int) -> np.ndarray | float:
    """A compile-time scalar, or a [P, 1] tile broadcast along the free dims."""
    if isinstance(value, Tensor):
        t = engine_operand(state, value, api, role)
        if t.shape[0] != partitions or free_size(t) != 1:
            raise SimulationError(f"{api}: {role} is a {t.describe()}; expected a scalar or a "
                                  f"[{partitions}, 1] tile")
        return read_f32(t).reshape(partitions, 1)
    if isinstance(value, bool | int | float | np.number):
        return float(value)
    raise SimulationError(f"{api}: {role} must be a number or a [P, 1] tile, got "
                          f"{type(value).__name__}")


def apply(op: _ops.Op, a: Any, b: Any, api: str) -> np.ndarray:
    """`a op b` in fp32 (bitvec operators on the integers), broadcasting numpy-style."""
    if op.binary is None:
        raise SimulationError(f"{api}: {op!r} is not a binary ALU operator")
    if op.bitvec:
        return np.asarray(op.binary(np.asarray(a).astype(np.int64),
                                    np.asarray(b).astype(np.int64))).astype(F32)
    with np.errstate(all="ignore"):
        return np.asarray(op.binary(F32(a) if isinstance(a, float) else a,
                                    F32(b) if isinstance(b, float) else b), dtype=F32)


def flat(values: np.ndarray, partitions: int) -> np.ndarray:
    """`values` as [partitions, free elements] (free dims flattened row-major)."""
    return values.reshape(partitions, -1)


def finish(state: RunState, name: str, eng: Engine, reads: Sequence[tuple[str, Tensor]],
           writes: Sequence[tuple[str, Tensor]], **options: OptionValue) -> None:
    """Finish an instruction: warn about operands that read never-written memory (a dst read
    for accumulation is exempt: nc_matmul overwrites what no matmul wrote) and append the
    instruction to the trace when one is kept."""
    for role, t in reads:
        if role != "dst":
            unwritten = t.unwritten()
            if unwritten:
                state.warn("unwritten", f"nisa.{name}: {role} reads {unwritten} of {t.array.size} "
                                 f"elements of a {t.describe()} that nothing wrote (they hold "
                                 f"the uninitialized pattern: NaN, or 4 for integers)")
    if state.trace is not None:
        state.record(name, eng, [(r, t.access()) for r, t in reads],
                     [(r, t.access()) for r, t in writes], options)
