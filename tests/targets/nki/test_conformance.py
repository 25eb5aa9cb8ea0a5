"""Every instruction of the `nki` dialect against the simulator's `nki.isa` instruction.

For each op of `axon.dialects.nki.ALL_OPS`, hypothesis draws shapes within the profile's limits,
attributes and random contents (bf16 and f16 where the instruction takes them); the op's generic
form is evaluated by the reference interpreter (`run_function`, the evaluator the lowering's
proofs are checked against), the simulator runs the same instruction on the same inputs, and the
two results are compared: bit for bit where the instruction only moves or selects values, within
the result dtype's tolerance (`dialects/form/dtypes.py`) where it computes, and for sums within
that tolerance of the sum of the terms' magnitudes (the same form run on |inputs|), since the two
add in different orders.

`test_every_instruction_has_a_conformance_test` keeps the list complete.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.ir import SSAValue

from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.nki import (
    ALL_OPS,
    ALU_OPS,
    ActivationOp,
    ActivationReduceOp,
    AffineSelectOp,
    BnAggrOp,
    BnStatsOp,
    DmaCopyOp,
    DmaTransposeOp,
    ExponentialOp,
    IotaOp,
    MemsetOp,
    NcMatmulOp,
    NcTransposeOp,
    NkiOp,
    SelectOp,
    TensorCopyOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
    TensorTensorScanOp,
)
from axon.interpreter import run_function
from axon.targets.nki.simulator import HardwareLimits, simulate
from axon.targets.nki.simulator import api as nki
from axon.targets.nki.simulator import isa as nisa
from axon.targets.nki.simulator import language as nl
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.nki.sketches import Add, build_function

#: the profile the simulator enforces (its limits are at least the dialect's generic ones)
LIMITS: HardwareLimits = load_limits("trn2")
#: no profile here is a NeuronCore-v4 (the generation with `exponential`): trn2's sizes with
#: the v4 generation, for that instruction's numerics
V4 = dataclasses.replace(LIMITS, profile="trn2 as a NeuronCore-v4", neuron_core_version=4)
EXAMPLES = settings(max_examples=25, deadline=None)
PARTITIONS = st.integers(1, 128)
FREE = st.integers(1, 96)
FLOATS = st.sampled_from(["f32", "bf16", "f16"])
#: an immediate is an fp32 value (docs/nki.md, "Immediates"): 0.1 as fp32 holds it
FP32_TENTH = float(np.float32(0.1))

#: the instructions a test below covers (filled by `covers`)
COVERED: set[type[NkiOp]] = set()


def covers(*ops: type[NkiOp]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Mark a test as the conformance test of `ops`."""

    def mark(test: Callable[..., None]) -> Callable[..., None]:
        COVERED.update(ops)
        return test

    return mark


def test_every_instruction_has_a_conformance_test() -> None:
    assert set(ALL_OPS) - COVERED == set()


# ---- the two sides ---------------------------------------------------------------------------


def t(shape: Sequence[int], dtype: str = "f32") -> TensorType:
    return TensorType(list(shape), dtype)


def form(params: Sequence[TensorType], build: Callable[[list[SSAValue], Add], SSAValue],
         inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The instruction's generic form on `inputs`: `build` adds the ops of a function whose
    arguments are `params` (HBM tensors); the reference interpreter runs it."""
    (out,) = run_function(build_function("k", params, build), list(inputs))
    return out


def sbuf(add: Add, value: SSAValue) -> SSAValue:
    """An argument DMA-copied into SBUF (the instruction's operand)."""
    return add(DmaCopyOp.make([value], buffer="sbuf"))


def sim(body: Callable[..., Any], *inputs: np.ndarray,
        limits: HardwareLimits = LIMITS) -> np.ndarray:
    """The simulator running `body` as a kernel on `inputs`."""
    return np.asarray(simulate(nki.jit(body), *inputs, limits=limits))


def load(src: Any) -> Any:
    """An SBUF tile holding an HBM input."""
    tile = nl.ndarray(src.shape, dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=src)
    return tile


def store(tile: Any) -> Any:
    """A shared_hbm output holding an on-chip tile (a PSUM tile through an SBUF copy)."""
    if tile.buffer == "psum":
        copy = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=copy, src=tile)
        tile = copy
    out = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile)
    return out


def np_dtype(name: str) -> Any:
    return DTYPES[name].storage


def draw(data: st.DataObject, shape: Sequence[int], dtype: str, low: float = -4.0,
         high: float = 4.0) -> np.ndarray:
    """Random contents of `dtype` (floats uniform in [low, high), rounded to the dtype)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    if dtype == "i32":
        return rng.integers(-(2 ** 31), 2 ** 31 - 1, size=shape, dtype=np.int64).astype(np.int32)
    return rng.uniform(low, high, size=shape).astype(np.float32).astype(np_dtype(dtype))


def agree(got: np.ndarray, want: np.ndarray, dtype: str, *, exact: bool = False,
          magnitude: np.ndarray | None = None) -> None:
    """The simulator's result `got` equals the form's `want` (both stored in `dtype`): bit for
    bit, or within the dtype's tolerance (relative to `magnitude` for a sum)."""
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype == np_dtype(dtype), (got.dtype, want.dtype, dtype)
    if exact:
        np.testing.assert_array_equal(got, want)
        return
    rtol, atol = DTYPES[dtype].tolerance
    g, w = got.astype(np.float64), want.astype(np.float64)
    if magnitude is None:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        return
    bound = rtol * np.abs(magnitude.astype(np.float64)) + atol
    bad = ~(np.abs(g - w) <= bound) & ~(np.isnan(g) & np.isnan(w))
    assert not bad.any(), f"{int(bad.sum())} elements differ: {g[bad][:4]} vs {w[bad][:4]}"


# ---- data movement and fills -----------------------------------------------------------------
@covers(DmaCopyOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, src=FLOATS, dst=FLOATS, reshape=st.booleans())
def test_dma_copy(data: st.DataObject, p: int, f: int, src: str, dst: str,
                  reshape: bool) -> None:
    x = draw(data, (p, f), src)
    shape = (f, p) if reshape and f <= 128 else (p, f)
    attrs: dict[str, Any] = {"dtype": dst}
    if shape != (p, f):
        attrs["shape"] = list(shape)
    want = form([t((p, f), src)], lambda a, add: add(DmaCopyOp.make([a[0]], buffer="sbuf",
                                                                    **attrs)), [x])

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray(shape, dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        return store(tile)

    agree(sim(body, x), want, dst, exact=True)


@covers(DmaTransposeOp)
@EXAMPLES
@given(data=st.data(), rank=st.sampled_from([2, 3, 4]), dtype=st.sampled_from(["bf16", "f16"]))
def test_dma_transpose(data: st.DataObject, rank: int, dtype: str) -> None:
    lead = [data.draw(st.integers(1, 8)) for _ in range(rank - 1)]
    shape = (*lead, data.draw(PARTITIONS))  # the last src dim is dst's partition dim
    x = draw(data, shape, dtype)
    want = form([t(shape, dtype)],
                lambda a, add: add(DmaTransposeOp.make([a[0]], buffer="sbuf")), [x])

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray(want.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=tile, src=x)
        return store(tile)

    agree(sim(body, x), want, dtype, exact=True)


@covers(TensorCopyOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, src=FLOATS, dst=FLOATS,
       engine=st.sampled_from(["vector", "scalar", "gpsimd"]))
def test_tensor_copy(data: st.DataObject, p: int, f: int, src: str, dst: str,
                     engine: str) -> None:
    x = draw(data, (p, f), src)
    want = form([t((p, f), src)], lambda a, add: add(TensorCopyOp.make(
        [sbuf(add, a[0])], buffer="sbuf", dtype=dst, engine=engine)), [x])

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, f), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.tensor_copy(dst=tile, src=load(x), engine=engine)
        return store(tile)

    agree(sim(body, x), want, dst, exact=True)


@covers(MemsetOp)
@EXAMPLES
@given(p=PARTITIONS, f=FREE, value=st.sampled_from([0.0, 1.0, -2.5, 3.0, 0.375, -96.0]),
       dtype=st.sampled_from(["f32", "bf16", "f16", "i32"]),
       engine=st.sampled_from(["vector", "gpsimd"]))
def test_memset(p: int, f: int, value: float, dtype: str, engine: str) -> None:
    if dtype == "i32":
        value = float(int(value))
    want = form([], lambda a, add: add(MemsetOp.make(
        [], value=value, shape=[p, f], dtype=dtype, buffer="sbuf", engine=engine)), [])

    def body():  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, f), dtype=np_dtype(dtype), buffer=nl.sbuf)
        nisa.memset(dst=tile, value=int(value) if dtype == "i32" else value, engine=engine)
        return store(tile)

    agree(sim(body), want, dtype, exact=True)


@covers(IotaOp)
@EXAMPLES
@given(p=PARTITIONS, f=st.integers(1, 40), g=st.integers(1, 6),
       steps=st.lists(st.integers(-300, 300), min_size=2, max_size=2),
       multiplier=st.integers(-300, 300), offset=st.integers(-5000, 5000),
       dtype=st.sampled_from(["i32", "f32", "bf16"]))
def test_iota(p: int, f: int, g: int, steps: list[int], multiplier: int, offset: int,
              dtype: str) -> None:
    want = form([], lambda a, add: add(IotaOp.make(
        [], shape=[p, f, g], pattern=tuple(steps), channel_multiplier=multiplier, offset=offset,
        dtype=dtype, buffer="sbuf")), [])

    def body():  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, f, g), dtype=np_dtype(dtype), buffer=nl.sbuf)
        nisa.iota(dst=tile, pattern=[[steps[0], f], [steps[1], g]], offset=offset,
                  channel_multiplier=multiplier)
        return store(tile)

    agree(sim(body), want, dtype, exact=True)


# ---- TensorE -----------------------------------------------------------------------------------
@covers(NcMatmulOp)
@EXAMPLES
@given(data=st.data(), k=st.integers(1, 128), m=st.integers(1, 128), n=st.integers(1, 512),
       dtype=FLOATS, accumulate=st.booleans())
def test_nc_matmul(data: st.DataObject, k: int, m: int, n: int, dtype: str,
                   accumulate: bool) -> None:
    inputs = [draw(data, s, dtype) for s in ((k, m), (k, n), (k, m), (k, n))]
    params = [t((k, m), dtype), t((k, n), dtype)] * 2

    def build(a: list[SSAValue], add: Add) -> SSAValue:
        st0, mv0, st1, mv1 = (sbuf(add, v) for v in a)
        first = add(NcMatmulOp.make([st0, mv0], buffer="psum"))
        return add(NcMatmulOp.make([st1, mv1, first], buffer="psum")) if accumulate else first

    want = form(params, build, inputs)
    magnitude = form(params, build, [np.abs(x) for x in inputs])

    def body(s0, m0, s1, m1):  # type: ignore[no-untyped-def]
        acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=load(s0), moving=load(m0))
        if accumulate:
            nisa.nc_matmul(dst=acc, stationary=load(s1), moving=load(m1))
        return store(acc)

    agree(sim(body, *inputs), want, "f32", magnitude=magnitude)


@covers(NcTransposeOp)
@EXAMPLES
@given(data=st.data(), engine=st.sampled_from(["tensor", "vector"]), dtype=FLOATS,
       to_f32=st.booleans())
def test_nc_transpose(data: st.DataObject, engine: str, dtype: str, to_f32: bool) -> None:
    bound = 128 if engine == "tensor" else 32
    g = data.draw(st.integers(1, 4))  # a second free dim, flattened with the first
    p, f = data.draw(st.integers(1, bound)), data.draw(st.integers(1, bound // g))
    shape = (p, f) if g == 1 else (p, f, g)
    x = draw(data, shape, dtype)
    out = "f32" if to_f32 and engine == "tensor" else dtype
    buffer = "psum" if engine == "tensor" else "sbuf"
    want = form([t(shape, dtype)], lambda a, add: add(NcTransposeOp.make(
        [sbuf(add, a[0])], buffer=buffer, engine=engine, dtype=out)), [x])

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((f * g, p), dtype=np_dtype(out),
                          buffer=nl.psum if engine == "tensor" else nl.sbuf)
        nisa.nc_transpose(dst=tile, data=load(x), engine=engine)
        return store(tile)

    agree(sim(body, x), want, out, exact=True)


# ---- VectorE, ScalarE, GpSimd -----------------------------------------------------------------
@covers(TensorTensorOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, op=st.sampled_from(sorted(ALU_OPS)), src=FLOATS,
       dst=FLOATS, engine=st.sampled_from(["vector", "gpsimd"]))
def test_tensor_tensor(data: st.DataObject, p: int, f: int, op: str, src: str, dst: str,
                       engine: str) -> None:
    a, b = draw(data, (p, f), src), draw(data, (p, f), src)
    b[: p // 2] = a[: p // 2]  # equal elements, so that comparisons see both outcomes
    want = form([t((p, f), src)] * 2, lambda v, add: add(TensorTensorOp.make(
        [sbuf(add, v[0]), sbuf(add, v[1])], op=op, buffer="sbuf", dtype=dst, engine=engine)),
        [a, b])

    def body(a, b):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, f), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.tensor_tensor(dst=tile, data1=load(a), data2=load(b), op=getattr(nl, op),
                           engine=engine)
        return store(tile)

    agree(sim(body, a, b), want, dst)


@covers(TensorTensorOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE,
       op=st.sampled_from(sorted(TensorTensorOp.INTEGER_OPS)))
def test_tensor_tensor_on_int32_tiles_is_exact_integer_arithmetic(data: st.DataObject, p: int,
                                                                  f: int, op: str) -> None:
    a, b = draw(data, (p, f), "i32"), draw(data, (p, f), "i32")
    if op in ("add", "subtract", "multiply"):  # no overflow: int32 wraps, fp32 would not
        a, b = a >> 17, b >> 17
    b[: p // 2] = a[: p // 2]
    want = form([t((p, f), "i32")] * 2, lambda v, add: add(TensorTensorOp.make(
        [sbuf(add, v[0]), sbuf(add, v[1])], op=op, buffer="sbuf")), [a, b])

    def body(a, b):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, f), dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=tile, data1=load(a), data2=load(b), op=getattr(nl, op))
        return store(tile)

    agree(sim(body, a, b), want, "i32", exact=True)


@covers(TensorScalarOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, src=FLOATS, dst=FLOATS,
       op0=st.sampled_from(sorted(ALU_OPS)), op1=st.sampled_from([None, *sorted(ALU_OPS)]),
       reverse=st.lists(st.booleans(), min_size=2, max_size=2),
       vector=st.lists(st.booleans(), min_size=2, max_size=2),
       constants=st.lists(st.floats(-8, 8, width=32), min_size=2, max_size=2),
       engine=st.sampled_from(["vector", "scalar", "gpsimd"]))
def test_tensor_scalar(data: st.DataObject, p: int, f: int, src: str, dst: str, op0: str,
                       op1: str | None, reverse: list[bool], vector: list[bool],
                       constants: list[float], engine: str) -> None:
    if engine == "scalar":  # ScalarE's pairs (SDK stub): (multiply, add), (multiply,), (add,)
        op0, op1 = data.draw(st.sampled_from([("multiply", "add"), ("multiply", None),
                                              ("add", None)]), label="scalar engine ops")
    ops = [op0] if op1 is None else [op0, op1]
    x = draw(data, (p, f), src)
    params, inputs = [t((p, f), src)], [x]
    attrs: dict[str, Any] = {"op0": op0, "reverse0": reverse[0], "dtype": dst,
                             "engine": engine}
    if op1 is not None:
        attrs.update(op1=op1, reverse1=reverse[1])
    operands: list[Any] = []
    for k in range(len(ops)):
        if vector[k]:
            params.append(t((p, 1)))
            inputs.append(draw(data, (p, 1), "f32"))
            operands.append(len(inputs) - 1)
        else:
            attrs[f"scalar{k}"] = constants[k]
            operands.append(constants[k])
    want = form(params, lambda a, add: add(TensorScalarOp.make(
        [sbuf(add, v) for v in a], buffer="sbuf", **attrs)), inputs)

    def body(*hbm):  # type: ignore[no-untyped-def]
        tiles = [load(v) for v in hbm]
        given_operands = [tiles[o] if isinstance(o, int) else o for o in operands]
        tile = nl.ndarray((p, f), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.tensor_scalar(dst=tile, data=tiles[0], op0=getattr(nl, op0),
                           operand0=given_operands[0], reverse0=reverse[0],
                           op1=getattr(nl, op1) if op1 else None,
                           operand1=given_operands[1] if op1 else None, reverse1=reverse[1],
                           engine=engine)
        return store(tile)

    agree(sim(body, *inputs), want, dst)


#: the activation functions and the inputs within ScalarE's valid range for each
POSITIVE = ("log", "sqrt", "rsqrt", "reciprocal")
ACTIVATION_FUNCS = st.sampled_from(["copy", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh",
                                    "sigmoid", "silu", "gelu", "erf", "relu", "square", "abs"])


@covers(ActivationOp, ActivationReduceOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, func=ACTIVATION_FUNCS, src=FLOATS, dst=FLOATS,
       operands=st.integers(0, 2), scale=st.sampled_from([1.0, -0.5, 2.0, FP32_TENTH]),
       reduce=st.booleans())
def test_activation(data: st.DataObject, p: int, f: int, func: str, src: str, dst: str,
                    operands: int, scale: float, reduce: bool) -> None:
    positive = func in POSITIVE
    x = draw(data, (p, f), src, *((0.5, 4.0) if positive else (-4.0, 4.0)))
    bias = draw(data, (p, 1), "f32", *((0.0, 1.0) if positive else (-1.0, 1.0)))
    vscale = draw(data, (p, 1), "f32", 0.25, 2.0)
    scale = abs(scale) if positive else scale
    params = [t((p, f), src)] + [t((p, 1))] * operands
    inputs = [x, bias, vscale][:operands + 1]
    out = "f32" if reduce else dst
    attrs: dict[str, Any] = {"func": func, "dtype": out}
    if operands < 2:
        attrs["scale"] = scale
    op = ActivationReduceOp if reduce else ActivationOp

    def build(a: list[SSAValue], add: Add) -> SSAValue:
        return add(op.make([sbuf(add, v) for v in a], buffer="sbuf", **attrs))

    want = form(params, build, inputs)

    def body(*hbm):  # type: ignore[no-untyped-def]
        tiles = [load(v) for v in hbm]
        tile = nl.ndarray((p, f), dtype=np_dtype(dst), buffer=nl.sbuf)
        kwargs: dict[str, Any] = {"scale": tiles[2] if operands == 2 else scale}
        if operands:
            kwargs["bias"] = tiles[1]
        if not reduce:
            nisa.activation(dst=tile, op=getattr(nl, func), data=tiles[0], **kwargs)
            return store(tile)
        res = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=tile, op=getattr(nl, func), data=tiles[0],
                               reduce_op=nl.add, reduce_res=res, **kwargs)
        return store(res)

    magnitude = None
    if reduce:  # the same sum of |func(...)|: the form run with the function's absolute value
        terms = form(params, lambda a, add: add(ActivationOp.make(
            [sbuf(add, v) for v in a], buffer="sbuf", **attrs)), inputs)
        magnitude = np.abs(terms.astype(np.float64)).sum(axis=1, keepdims=True)
    agree(sim(body, *inputs), want, out, magnitude=magnitude)


@covers(TensorReduceOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=st.integers(1, 24), g=st.integers(1, 12),
       op=st.sampled_from(["add", "maximum", "minimum", "multiply"]), both=st.booleans(),
       negate=st.booleans(), keepdims=st.booleans(), src=FLOATS, dst=FLOATS)
def test_tensor_reduce(data: st.DataObject, p: int, f: int, g: int, op: str, both: bool,
                       negate: bool, keepdims: bool, src: str, dst: str) -> None:
    negate = negate and op != "multiply"
    keepdims = keepdims or both  # an on-chip result keeps a free dim
    low, high = (0.7, 1.3) if op == "multiply" else (-4.0, 4.0)
    x = draw(data, (p, f, g), src, low, high)
    axes = (1, 2) if both else (2,)

    def build(a: list[SSAValue], add: Add) -> SSAValue:
        return add(TensorReduceOp.make([sbuf(add, a[0])], op=op, axes=axes, negate=negate,
                                       keepdims=keepdims, buffer="sbuf", dtype=dst))

    want = form([t((p, f, g), src)], build, [x])
    magnitude = form([t((p, f, g), src)], build, [np.abs(x)]) if op == "add" else None

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray(want.shape, dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.tensor_reduce(dst=tile, op=getattr(nl, op), data=load(x), axis=axes,
                           negate=negate, keepdims=keepdims)
        return store(tile)

    agree(sim(body, x), want, dst, magnitude=magnitude)


SCANS = [("add", "add"), ("add", "subtract"), ("multiply", "multiply"), ("maximum", "maximum"),
         ("minimum", "minimum")]


@covers(TensorTensorScanOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, ops=st.sampled_from(SCANS), src=FLOATS,
       dst=FLOATS, initial=st.sampled_from([None, 0.0, 1.0, -2.0, FP32_TENTH, "operand"]))
def test_tensor_tensor_scan(data: st.DataObject, p: int, f: int, ops: tuple[str, str],
                            src: str, dst: str, initial: float | str | None) -> None:
    low, high = (0.8, 1.2) if ops == ("multiply", "multiply") else (-4.0, 4.0)
    d0, d1 = draw(data, (p, f), src, low, high), draw(data, (p, f), src, low, high)
    params, inputs = [t((p, f), src)] * 2, [d0, d1]
    attrs: dict[str, Any] = {"op0": ops[0], "op1": ops[1], "dtype": dst}
    if initial == "operand":
        params, inputs = [*params, t((p, 1))], [*inputs, draw(data, (p, 1), "f32")]
    elif initial is not None:
        attrs["initial"] = initial

    def build(a: list[SSAValue], add: Add, **changed: Any) -> SSAValue:
        return add(TensorTensorScanOp.make([sbuf(add, v) for v in a], buffer="sbuf",
                                           **{**attrs, **changed}))

    want = form(params, build, inputs)
    magnitude = None
    if ops[0] == "add":  # the prefix sums of |terms|: (add, add) over |inputs|
        magnitude = form(params, lambda a, add: build(a, add, op1="add"),
                         [np.abs(x) for x in inputs])

    def body(*hbm):  # type: ignore[no-untyped-def]
        tiles = [load(v) for v in hbm]
        start = tiles[2] if initial == "operand" else (initial or 0.0)
        tile = nl.ndarray((p, f), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=tile, data0=tiles[0], data1=tiles[1], initial=start,
                                op0=getattr(nl, ops[0]), op1=getattr(nl, ops[1]))
        return store(tile)

    agree(sim(body, *inputs), want, dst, magnitude=magnitude)


@covers(SelectOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, vector=st.booleans(), reverse=st.booleans(),
       src=FLOATS, dst=FLOATS, fill=st.sampled_from([-7.0, FP32_TENTH, -1e4]))
def test_select(data: st.DataObject, p: int, f: int, vector: bool, reverse: bool, src: str,
                dst: str, fill: float) -> None:
    flags = draw(data, (p, f), "f32") > 0
    a, b = draw(data, (p, f), src), draw(data, (p, 1), "f32")
    params = [t((p, f), "i1"), t((p, f), src)] + ([t((p, 1))] if vector else [])
    inputs = [flags, a] + ([b] if vector else [])
    attrs: dict[str, Any] = {"reverse_pred": reverse, "dtype": dst}
    if not vector:
        attrs["on_false_value"] = fill
    want = form(params, lambda v, add: add(SelectOp.make([sbuf(add, x) for x in v],
                                                         buffer="sbuf", **attrs)), inputs)

    def body(*hbm):  # type: ignore[no-untyped-def]
        tiles = [load(v) for v in hbm]
        tile = nl.ndarray((p, f), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.select(dst=tile, predicate=tiles[0], on_true=tiles[1],
                    on_false=tiles[2] if vector else fill, reverse_pred=reverse)
        return store(tile)

    agree(sim(body, *inputs), want, dst, exact=True)


@covers(AffineSelectOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=st.integers(1, 24), g=st.integers(1, 6),
       steps=st.lists(st.integers(-3, 3), min_size=2, max_size=2),
       multiplier=st.integers(-3, 3), offset=st.integers(-40, 40),
       cmp=st.sampled_from(["equal", "not_equal", "greater", "greater_equal", "less",
                            "less_equal"]),
       src=FLOATS, dst=FLOATS, fill=st.sampled_from([-9.0, FP32_TENTH, -1e4]))
def test_affine_select(data: st.DataObject, p: int, f: int, g: int, steps: list[int],
                       multiplier: int, offset: int, cmp: str, src: str, dst: str,
                       fill: float) -> None:
    x = draw(data, (p, f, g), src)
    want = form([t((p, f, g), src)], lambda a, add: add(AffineSelectOp.make(
        [sbuf(add, a[0])], pattern=tuple(steps), channel_multiplier=multiplier, offset=offset,
        cmp_op=cmp, on_false_value=fill, buffer="sbuf", dtype=dst)), [x])

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, f, g), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.affine_select(dst=tile, pattern=[[steps[0], f], [steps[1], g]],
                           channel_multiplier=multiplier, on_true_tile=load(x),
                           on_false_value=fill, cmp_op=getattr(nl, cmp), offset=offset)
        return store(tile)

    agree(sim(body, x), want, dst, exact=True)


@covers(ExponentialOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=FREE, src=FLOATS, dst=FLOATS,
       peak=st.sampled_from([None, 0.0, 1.5, -FP32_TENTH, "operand"]))
def test_exponential(data: st.DataObject, p: int, f: int, src: str, dst: str,
                     peak: float | str | None) -> None:
    x = draw(data, (p, f), src)
    params, inputs = [t((p, f), src)], [x]
    attrs: dict[str, Any] = {"dtype": dst}
    if peak == "operand":
        params, inputs = [*params, t((p, 1))], [*inputs, draw(data, (p, 1), "f32")]
    elif peak is not None:
        attrs["max_value"] = peak
    want = form(params, lambda a, add: add(ExponentialOp.make(
        [sbuf(add, v) for v in a], buffer="sbuf", **attrs)), inputs)

    def body(*hbm):  # type: ignore[no-untyped-def]
        tiles = [load(v) for v in hbm]
        tile = nl.ndarray((p, f), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.exponential(dst=tile, src=tiles[0],
                         max_value=tiles[1] if peak == "operand" else (peak or 0.0))
        return store(tile)

    agree(sim(body, *inputs, limits=V4), want, dst)


@covers(BnStatsOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, f=st.integers(1, 40), src=FLOATS,
       shift=st.sampled_from([0.0, 100.0]))
def test_bn_stats(data: st.DataObject, p: int, f: int, src: str, shift: float) -> None:
    x = (draw(data, (p, f), "f32") + np.float32(shift)).astype(np_dtype(src))

    def build(a: list[SSAValue], add: Add) -> SSAValue:
        return add(BnStatsOp.make([sbuf(add, a[0])], buffer="sbuf"))

    want = form([t((p, f), src)], build, [x])
    # the means' terms are signed: their scale is the mean of |x|; the variances' are squares
    magnitude = np.maximum(form([t((p, f), src)], build, [np.abs(x)]), want)

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_stats(dst=tile, data=load(x))
        return store(tile)

    agree(sim(body, x), want, "f32", magnitude=magnitude)


@covers(BnAggrOp)
@EXAMPLES
@given(data=st.data(), p=PARTITIONS, groups=st.integers(1, 16), dst=FLOATS)
def test_bn_aggr(data: st.DataObject, p: int, groups: int, dst: str) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    triples = np.stack([rng.integers(0, 257, size=(p, groups)).astype(np.float32),
                        rng.uniform(-4, 4, size=(p, groups)).astype(np.float32),
                        rng.uniform(0, 50, size=(p, groups)).astype(np.float32)], axis=2)
    triples[:, 0, 0] = np.maximum(triples[:, 0, 0], 1.0)  # at least one element summarised
    stats = triples.reshape(p, 3 * groups)
    want = form([t((p, 3 * groups))], lambda a, add: add(BnAggrOp.make(
        [sbuf(add, a[0])], buffer="sbuf", dtype=dst)), [stats])

    def body(stats):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((p, 2), dtype=np_dtype(dst), buffer=nl.sbuf)
        nisa.bn_aggr(dst=tile, data=load(stats))
        return store(tile)

    agree(sim(body, stats), want, dst)


def test_bn_stats_then_bn_aggr_give_the_mean_and_population_variance() -> None:
    x = np.random.default_rng(5).normal(3.0, 2.0, size=(7, 1100)).astype(np.float32)

    def body(x):  # type: ignore[no-untyped-def]
        tile = load(x)
        stats = nl.ndarray((7, 3, 6), dtype=nl.float32, buffer=nl.sbuf)
        for k in range(3):  # chunks of at most bn_stats_free_max elements
            nisa.bn_stats(dst=stats[:, k, :], data=tile[:, 512 * k:min(1100, 512 * (k + 1))])
        out = nl.ndarray((7, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=out, data=stats)
        return store(out)

    got = sim(body, x)
    np.testing.assert_allclose(got[:, 0], x.astype(np.float64).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], x.astype(np.float64).var(axis=1), rtol=1e-4)


def test_the_drawn_dtypes_are_the_projects() -> None:
    assert {np_dtype(d) for d in ("f32", "bf16", "f16")} == {
        np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)}
