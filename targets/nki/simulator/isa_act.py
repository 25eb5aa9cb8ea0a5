"""ScalarE: `activation` and `activation_reduce`."""

from __future__ import annotations

import numpy as np

from axon.targets.nki.simulator import ops as _ops
from axon.targets.nki.simulator.errors import SimulationError
from axon.targets.nki.simulator.operands import (
    F32,
    alu_op,
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
from axon.targets.nki.simulator.state import RunState, current
from axon.targets.nki.simulator.tensor import Tensor


def activation(dst: Tensor, op: object, data: Tensor, bias: object = None,
               scale: object = 1.0, reduce_op: object = None, reduce_res: Tensor | None = None,
               reduce_cmd: str = reduce_cmd.idle, name: str | None = None) -> None:
    """`dst = op(data * scale + bias)` on ScalarE, in fp32. `scale`: a number or a [P, 1] tile;
    `bias`: a [P, 1] tile or a number. With `reduce_op` (nl.add), the per-partition sum of the
    result goes into ScalarE's accumulator registers (zeroed first by `reset`/`reset_reduce`, or
    when only `reduce_res` is given) and `reduce_res[:, 0]` receives them."""
    api = "nisa.activation"
    state = current(api)
    fn = alu_op(op, api, "op")
    if fn.unary is None:
        raise SimulationError(f"{api}: op {fn!r} is not an activation function")
    x = engine_operand(state, data, api, "data")
    d = engine_operand(state, dst, api, "dst")
    same_partitions(api, d, "dst", x, "data")
    same_free(api, d, "dst", x, "data")
    p = x.shape[0]
    values = flat(read_f32(x), p)
    sc = scalar_operand(state, scale, api, "scale", p)
    reads = [("data", x)]
    if isinstance(scale, Tensor):
        reads.append(("scale", scale))
    with np.errstate(all="ignore"):
        values = values * F32(sc) if isinstance(sc, float) else values * sc
        if bias is not None:
            b = scalar_operand(state, bias, api, "bias", p)
            values = values + (F32(b) if isinstance(b, float) else b)
            if isinstance(bias, Tensor):
                reads.append(("bias", bias))
        out = np.asarray(fn.unary(values), dtype=F32)
    if fn.valid is not None:
        _check_range(state, api, fn, values)
    write(d, out)
    writes = [("dst", d)]
    reducing = reduce_op is not None or reduce_res is not None
    if reducing:
        rop = alu_op(reduce_op if reduce_op is not None else _ops.add, api, "reduce_op")
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
            r = engine_operand(state, reduce_res, api, "reduce_res")
            if r.shape[0] != p or free_size(r) != 1:
                raise SimulationError(f"{api}: reduce_res is {r.describe()}; expected [{p}, 1]")
            write(r, regs[:p].copy())
            writes.append(("reduce_res", r))
    finish(state, "activation", "ACT", reads, writes, function=fn.name, reduce=reducing,
           scale_is_tile=isinstance(scale, Tensor))


def _check_range(state: RunState, api: str, fn: _ops.Op, values: np.ndarray) -> None:
    """Warn when inputs fall outside the range ScalarE's approximation of `fn` covers."""
    assert fn.valid is not None
    low, high = fn.valid
    checked = np.abs(values) if fn.valid_magnitude else values
    outside = int(np.count_nonzero((checked < low) | (checked > high)))
    if outside:
        bound = "|x| in" if fn.valid_magnitude else "x in"
        state.warn("range", f"{api}: {outside} of {values.size} inputs of {fn.name} lie outside "
                         f"{bound} [{low:.6g}, {high:.6g}], where ScalarE's approximation is "
                         f"invalid (the simulator computes exact values)")


def activation_reduce(dst: Tensor, op: object, data: Tensor, reduce_op: object,
                      reduce_res: Tensor, bias: object = None, scale: object = 1.0,
                      name: str | None = None) -> None:
    """`activation` with `reduce_cmd.reset_reduce`: dst = op(data * scale + bias) and
    reduce_res[:, 0] = the per-partition sum of dst's fp32 values."""
    activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
               reduce_res=reduce_res, reduce_cmd=reduce_cmd.reset_reduce)
