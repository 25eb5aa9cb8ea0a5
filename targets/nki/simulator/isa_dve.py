"""VectorE and GpSimd: elementwise, scalar-broadcast, reduction and scan instructions, `iota`,
`affine_select`, `select` and `exponential`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from axon.targets.nki.simulator import ops as _ops
from axon.targets.nki.simulator.errors import SimulationError
from axon.targets.nki.simulator.operands import (
    ENGINES,
    F32,
    alu_op,
    apply,
    engine,
    engine_operand,
    finish,
    flat,
    free_size,
    read_f32,
    reduce_cmd,
    same_free,
    same_partitions,
    scalar_operand,
    write,
)
from axon.targets.nki.simulator.state import current
from axon.targets.nki.simulator.tensor import Tensor


def tensor_tensor(dst: Tensor, data1: Tensor, data2: Tensor, op: object,
                  engine: str = engine.unknown, name: str | None = None) -> None:
    """`dst = data1 op data2` elementwise in fp32 (bitvec operators on the integers); equal
    partitions and elements per partition; at most one input in PSUM; GpSimd cannot touch
    PSUM. When the inputs and dst are all int32 (or all uint32), GpSimd is the default engine
    and computes in native integer arithmetic, exact for every 32-bit value (the SDK's
    `nki.isa.tensor_tensor`); `engine=vector` computes them in fp32 like any other dtype, and so
    does the default when an operand is in PSUM (GpSimd cannot read it)."""
    api = "nisa.tensor_tensor"
    state = current(api)
    fn = alu_op(op, api, "op")
    buffers = ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum")
    a = engine_operand(state, data1, api, "data1", buffers)
    b = engine_operand(state, data2, api, "data2", buffers)
    d = engine_operand(state, dst, api, "dst", buffers)
    if a.buffer == "psum" and b.buffer == "psum":
        raise SimulationError(f"{api}: data1 and data2 are both in PSUM; at most one may be")
    for t, role in ((b, "data2"), (d, "dst")):
        same_partitions(api, a, "data1", t, role)
        same_free(api, a, "data1", t, role)
    p = a.shape[0]
    integers = _all_int32(a, b, d)
    on_pool = engine == "gpsimd" or fn is _ops.power or (
        engine == "unknown" and integers and "psum" not in (a.buffer, b.buffer, d.buffer))
    if fn.bitvec:
        result = apply(fn, flat(a.array, p), flat(b.array, p), api)
    elif integers and on_pool:
        result = _integer(fn, flat(a.array, p), flat(b.array, p), api)
    else:
        result = apply(fn, flat(read_f32(a), p), flat(read_f32(b), p), api)
    write(d, result)
    eng = ENGINES.get(engine, "POOL" if on_pool else "DVE")
    finish(state, "tensor_tensor", eng, [("data1", a), ("data2", b)], [("dst", d)], op=fn.name)


def _all_int32(*tiles: Tensor) -> bool:
    """Are all of `tiles` int32, or all uint32?"""
    return any(all(t.dtype == np.dtype(kind) for t in tiles) for kind in (np.int32, np.uint32))


#: the ALU operators GpSimd computes in native integer arithmetic on 32-bit integer tiles
_INTEGER_OPS = ("add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal",
                "greater", "greater_equal", "less", "less_equal")


def _integer(fn: _ops.Op, a: np.ndarray, b: np.ndarray, api: str) -> np.ndarray:
    """`a fn b` in exact integer arithmetic (int64; the write saturates, as every integer
    write does: the kernels here never overflow, and the device's overflow is not documented)."""
    if fn.name not in _INTEGER_OPS or fn.binary is None:
        raise SimulationError(f"{api}: {fn!r} on 32-bit integer tiles on GpSimd; integer "
                              f"arithmetic runs {', '.join(_INTEGER_OPS)}")
    result = np.asarray(fn.binary(a.astype(np.int64), b.astype(np.int64))).astype(np.int64)
    return result


def tensor_scalar(dst: Tensor, data: Tensor, op0: object, operand0: object,
                  reverse0: bool = False, op1: object = None, operand1: object = None,
                  reverse1: bool = False, engine: str = engine.unknown,
                  name: str | None = None) -> None:
    """`dst = (data op0 operand0) op1 operand1`, each operand a number or a [P, 1] tile
    broadcast along the free dims; `reverse*` swaps an operator's operands."""
    api = "nisa.tensor_scalar"
    state = current(api)
    buffers = ("sbuf",) if engine == "gpsimd" else ("sbuf", "psum")
    x = engine_operand(state, data, api, "data", buffers)
    d = engine_operand(state, dst, api, "dst", buffers)
    same_partitions(api, d, "dst", x, "data")
    same_free(api, d, "dst", x, "data")
    p = x.shape[0]
    reads = [("data", x)]
    values = flat(x.array, p) if alu_op(op0, api, "op0").bitvec else flat(read_f32(x), p)
    steps = [(op0, operand0, reverse0, "op0", "operand0")]
    if op1 is not None:
        steps.append((op1, operand1, reverse1, "op1", "operand1"))
    names = []
    for op, operand, reverse, op_role, operand_role in steps:
        fn = alu_op(op, api, op_role)
        if operand is None:
            raise SimulationError(f"{api}: {op_role} is given without {operand_role}")
        value = scalar_operand(state, operand, api, operand_role, p)
        if isinstance(operand, Tensor):
            reads.append((operand_role, operand))
        values = apply(fn, value, values, api) if reverse else apply(fn, values, value, api)
        names.append(fn.name)
    write(d, values)
    finish(state, "tensor_scalar", ENGINES.get(engine, "DVE"), reads, [("dst", d)],
           op0=names[0], op1=names[1] if len(names) > 1 else None)


def tensor_reduce(dst: Tensor, op: object, data: Tensor, axis: int | Sequence[int],
                  negate: bool = False, keepdims: bool = False,
                  name: str | None = None) -> None:
    """`dst = op-reduction of data over free axes `axis`` (trailing dims only), in fp32;
    `negate` multiplies the result by -1."""
    api = "nisa.tensor_reduce"
    state = current(api)
    fn = alu_op(op, api, "op")
    if not fn.reduce or fn.binary is None:
        raise SimulationError(f"{api}: {fn!r} is not a reduction operator")
    x = engine_operand(state, data, api, "data")
    d = engine_operand(state, dst, api, "dst")
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    axes = tuple(sorted(int(a) % x.ndim for a in axes))
    if not axes or axes[0] == 0 or axes != tuple(range(x.ndim - len(axes), x.ndim)):
        raise SimulationError(f"{api}: axis {axis} of a {x.ndim}-d tile; expected trailing free "
                              f"axes such as {tuple(range(1, x.ndim))[-1:]} (never the partition "
                              f"axis 0)")
    values = x.array.astype(np.int64) if fn.bitvec else read_f32(x)
    if fn.binary in (np.add, np.multiply, np.maximum, np.minimum):
        reducer = {id(np.add): np.add, id(np.multiply): np.multiply, id(np.maximum): np.maximum,
                   id(np.minimum): np.minimum}[id(fn.binary)]
        with np.errstate(all="ignore"):
            result = reducer.reduce(values, axis=axes, keepdims=keepdims)
    else:
        flat = values.reshape(*x.shape[:x.ndim - len(axes)], -1)
        result = flat[..., 0]
        for i in range(1, flat.shape[-1]):
            result = apply(fn, result, flat[..., i], api)
    result = np.asarray(result, dtype=F32)
    if negate:
        result = -result
    same_partitions(api, d, "dst", x, "data")
    if free_size(d) != max(1, result.size // x.shape[0]):
        raise SimulationError(f"{api}: dst is {d.describe()}; the reduction has "
                              f"{result.size // x.shape[0]} elements per partition")
    write(d, result)
    finish(state, "tensor_reduce", "DVE", [("data", x)], [("dst", d)], op=fn.name,
           axis=len(axes), negate=bool(negate))


def tensor_tensor_scan(dst: Tensor, data0: Tensor, data1: Tensor, initial: object,
                       op0: object, op1: object, reverse0: bool = False,
                       reverse1: bool = False, name: str | None = None) -> None:
    """Per partition, along the (flattened) free dims: `r[0] = op1(op0(data0[0], initial),
    data1[0])`, `r[i] = op1(op0(data0[i], r[i-1]), data1[i])`, in fp32; `reverse*` swaps an
    operator's operands; `initial` is a number or a [P, 1] tile."""
    api = "nisa.tensor_tensor_scan"
    state = current(api)
    f0, f1 = alu_op(op0, api, "op0"), alu_op(op1, api, "op1")
    a = engine_operand(state, data0, api, "data0")
    b = engine_operand(state, data1, api, "data1")
    d = engine_operand(state, dst, api, "dst")
    for t, role in ((b, "data1"), (d, "dst")):
        same_partitions(api, a, "data0", t, role)
        same_free(api, a, "data0", t, role)
    p = a.shape[0]
    x0, x1 = flat(read_f32(a), p), flat(read_f32(b), p)
    init = scalar_operand(state, initial, api, "initial", p)
    carry = np.full(p, init, dtype=F32) if isinstance(init, float) else init.reshape(p)
    out = np.empty_like(x0)
    for i in range(x0.shape[1]):
        step = apply(f0, carry, x0[:, i], api) if reverse0 else apply(f0, x0[:, i], carry, api)
        carry = apply(f1, x1[:, i], step, api) if reverse1 else apply(f1, step, x1[:, i], api)
        out[:, i] = carry
    write(d, out)
    reads = [("data0", a), ("data1", b)] + ([("initial", initial)]
                                            if isinstance(initial, Tensor) else [])
    finish(state, "tensor_tensor_scan", "DVE", reads, [("dst", d)], op0=f0.name, op1=f1.name)


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
    d = engine_operand(state, dst, api, "dst", ("sbuf",))
    values = _affine(pattern, offset, channel_multiplier, d.shape[0], api)
    if values.shape[1] != free_size(d):
        raise SimulationError(f"{api}: pattern {pattern} makes {values.shape[1]} elements per "
                              f"partition but dst has {free_size(d)}")
    ints = values.astype(np.int32)
    d.assign(ints.reshape(d.shape).astype(d.dtype))
    finish(state, "iota", "POOL", [], [("dst", d)])


def affine_select(dst: Tensor, pattern: Sequence[Sequence[int]], channel_multiplier: int,
                  on_true_tile: Tensor, on_false_value: float, cmp_op: object = _ops.equal,
                  offset: int = 0, name: str | None = None) -> None:
    """`dst = on_true_tile where cmp_op(offset + p * channel_multiplier + sum of step_k * i_k,
    0) else on_false_value`, on GpSimd (e.g. a causal mask)."""
    api = "nisa.affine_select"
    state = current(api)
    fn = alu_op(cmp_op, api, "cmp_op")
    t = engine_operand(state, on_true_tile, api, "on_true_tile", ("sbuf",))
    d = engine_operand(state, dst, api, "dst", ("sbuf",))
    same_partitions(api, d, "dst", t, "on_true_tile")
    same_free(api, d, "dst", t, "on_true_tile")
    p = d.shape[0]
    values = _affine(pattern, offset, channel_multiplier, p, api)
    if values.shape[1] != free_size(d):
        raise SimulationError(f"{api}: pattern {pattern} makes {values.shape[1]} elements per "
                              f"partition but dst has {free_size(d)}")
    keep = apply(fn, values.astype(F32), F32(0.0), api) != 0
    write(d, np.where(keep, flat(read_f32(t), p), F32(on_false_value)))
    finish(state, "affine_select", "POOL", [("on_true_tile", t)], [("dst", d)], op=fn.name)


def select(dst: Tensor, predicate: Tensor, on_true: Tensor, on_false: object,
           reverse_pred: bool = False, name: str | None = None) -> None:
    """`dst = on_true where predicate != 0 (== 0 with `reverse_pred`) else on_false` on VectorE:
    the select of `nisa.select_reduce` without its reduction. `on_false` is a number, a
    [P, 1] tile broadcast along the free dims (the SDK's two forms), or a tile of on_true's
    shape."""
    api = "nisa.select"
    state = current(api)
    pr = engine_operand(state, predicate, api, "predicate")
    t = engine_operand(state, on_true, api, "on_true")
    d = engine_operand(state, dst, api, "dst")
    reads = [("predicate", pr), ("on_true", t)]
    for u, role in ((t, "on_true"), (d, "dst")):
        same_partitions(api, pr, "predicate", u, role)
        same_free(api, pr, "predicate", u, role)
    p = d.shape[0]
    if isinstance(on_false, Tensor):
        f = engine_operand(state, on_false, api, "on_false")
        same_partitions(api, pr, "predicate", f, "on_false")
        if free_size(f) != 1:
            same_free(api, pr, "predicate", f, "on_false")
        false_values: np.ndarray | float = flat(read_f32(f), p)
        reads.append(("on_false", f))
    elif isinstance(on_false, bool | int | float | np.number):
        false_values = float(F32(on_false))  # an immediate, held in fp32
    else:
        raise SimulationError(f"{api}: on_false must be a tile or a number")
    holds = flat(read_f32(pr), p) != 0
    if reverse_pred:
        holds = ~holds
    write(d, np.where(holds, flat(read_f32(t), p), false_values))
    finish(state, "select", "DVE", reads, [("dst", d)])


def exponential(dst: Tensor, src: Tensor, max_value: object = 0.0,
                reduce_res: Tensor | None = None, reduce_cmd: str = reduce_cmd.idle,
                reduce_init: float = 0.0, name: str | None = None) -> None:
    """`dst = exp(src - max_value)` on VectorE in fp32 (`max_value` a number or a [P, 1] tile),
    on NeuronCore-v4 and newer (SDK@HEAD:nki/api/nki/isa/__init__.py, exponential);
    with a `reduce_cmd` other than idle, the per-partition sum of the result goes into VectorE's
    accumulator registers, and `reduce_res[:, 0]` receives them."""
    api = "nisa.exponential"
    state = current(api)
    version = state.limits.neuron_core_version
    if version < 4:
        raise SimulationError(f"{api}: available on NeuronCore-v4 and newer only; profile "
                              f"{state.limits.profile} is NeuronCore-v{version} "
                              f"(neuron_core_version={version}); use nisa.activation with "
                              f"op=nl.exp")
    s = engine_operand(state, src, api, "src")
    d = engine_operand(state, dst, api, "dst")
    same_partitions(api, d, "dst", s, "src")
    same_free(api, d, "dst", s, "src")
    p = s.shape[0]
    m = scalar_operand(state, max_value, api, "max_value", p)
    with np.errstate(all="ignore"):
        out = np.exp(flat(read_f32(s), p) - (F32(m) if isinstance(m, float) else m), dtype=F32)
    write(d, out)
    writes = [("dst", d)]
    regs = state.dve_accumulators
    if reduce_cmd in ("reset", "reset_reduce"):
        regs[:p] = F32(reduce_init)
    if reduce_cmd in ("reduce", "reset_reduce"):
        regs[:p] += out.sum(axis=1, dtype=F32)
    if reduce_res is not None:
        if reduce_cmd == "idle":
            raise SimulationError(f"{api}: reduce_res needs a reduce_cmd other than idle")
        r = engine_operand(state, reduce_res, api, "reduce_res")
        if r.shape[0] != p or free_size(r) != 1:
            raise SimulationError(f"{api}: reduce_res is {r.describe()}; expected [{p}, 1]")
        write(r, regs[:p].copy())
        writes.append(("reduce_res", r))
    finish(state, "exponential", "DVE", [("src", s)], writes, reduce=reduce_cmd != "idle")


def bn_stats(dst: Tensor, data: Tensor, name: str | None = None) -> None:
    """Per partition, the batch-norm statistics of data's (flattened) free elements on VectorE,
    in fp32: `dst[p, :] = (count, mean, variance * count)` of the even elements, then the same
    of the odd ones (an empty half: count, mean and variance * count 0). At most
    `bn_stats_free_max` (512) elements per partition; dst has 6 per partition."""
    api = "nisa.bn_stats"
    state = current(api)
    x = engine_operand(state, data, api, "data")
    d = engine_operand(state, dst, api, "dst")
    same_partitions(api, d, "dst", x, "data")
    n, limit = free_size(x), state.limits.bn_stats_free_max
    if n > limit:
        raise SimulationError(f"{api}: data has {n} elements per partition; limit "
                              f"bn_stats_free_max={limit} ({state.limits.profile})")
    if free_size(d) != 6:
        raise SimulationError(f"{api}: dst is {d.describe()}; bn_stats writes 6 elements per "
                              f"partition")
    p = x.shape[0]
    values = flat(read_f32(x), p)
    stats = np.zeros((p, 6), dtype=F32)
    for half in (0, 1):
        part = values[:, half::2]
        count = part.shape[1]
        if count:
            mean = part.sum(axis=1, dtype=F32) / F32(count)
            stats[:, 3 * half] = F32(count)
            stats[:, 3 * half + 1] = mean
            stats[:, 3 * half + 2] = np.square(part - mean[:, None]).sum(axis=1, dtype=F32)
    write(d, stats)
    finish(state, "bn_stats", "DVE", [("data", x)], [("dst", d)])


def bn_aggr(dst: Tensor, data: Tensor, name: str | None = None) -> None:
    """Per partition, the mean and variance (dst's 2 elements) of the elements summarised by
    data's `(count, mean, variance * count)` triples (one or more bn_stats results), on
    VectorE in fp32: mean = sum(count * mean) / sum(count), variance = sum(variance * count +
    count * (mean_g - mean)^2) / sum(count)."""
    api = "nisa.bn_aggr"
    state = current(api)
    x = engine_operand(state, data, api, "data")
    d = engine_operand(state, dst, api, "dst")
    same_partitions(api, d, "dst", x, "data")
    if free_size(x) % 3:
        raise SimulationError(f"{api}: data has {free_size(x)} elements per partition; bn_aggr "
                              f"reads (count, mean, variance * count) triples")
    if free_size(d) != 2:
        raise SimulationError(f"{api}: dst is {d.describe()}; bn_aggr writes 2 elements per "
                              f"partition (mean, variance)")
    p = x.shape[0]
    triples = flat(read_f32(x), p).reshape(p, -1, 3)
    count, mean, m2 = triples[:, :, 0], triples[:, :, 1], triples[:, :, 2]
    with np.errstate(all="ignore"):
        total = count.sum(axis=1, dtype=F32)
        overall = (count * mean).sum(axis=1, dtype=F32) / total
        spread = m2 + count * np.square(mean - overall[:, None])
        variance = spread.sum(axis=1, dtype=F32) / total
    write(d, np.stack([overall, variance], axis=1))
    finish(state, "bn_aggr", "DVE", [("data", x)], [("dst", d)])
