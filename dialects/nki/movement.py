"""Data movement and fills: `dma_copy`, `dma_transpose`, `tensor_copy`, `memset`, `iota`
(reference/nki.md 3.1 and 3.5).

    %s = nki.dma_copy %x {buffer = "sbuf"}
        : (!ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 512], f32>
    %t = nki.dma_transpose %x {buffer = "sbuf"}
        : (!ax.tensor<[64, 128], bf16>) -> !ax.tensor<[128, 64], bf16>
    %c = nki.tensor_copy %p {buffer = "sbuf", dtype = bf16} : (...) -> !ax.tensor<[128, 512], bf16>
    %z = nki.memset {value = 0.0 : f64, shape = ["128", "1"], dtype = f32, buffer = "sbuf"} : ...
    %i = nki.iota {shape = ["128", "64"], pattern = array<i64: 1>, channel_multiplier = 64 : i64,
                   dtype = i32, buffer = "sbuf"} : !ax.tensor<[128, 64], i32>

A change of dtype goes through fp32 and is rounded once, on the write (the interpreter's one
rounding to the result dtype).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import I64, ArrayAttr, DenseArrayBase, FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import TypeAttribute
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from axon.dialects.ax import BroadcastToOp as AxBroadcastToOp
from axon.dialects.ax import ConcatOp as AxConcatOp
from axon.dialects.ax import ConstantOp, TensorType
from axon.dialects.ax import ReshapeOp as AxReshapeOp
from axon.dialects.ax import SliceOp as AxSliceOp
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError, product
from axon.dialects.form.dtypes import DTYPES, round_to
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Index, Read
from axon.dialects.nki.base import NkiOp, dims_of, dst_dtype, syms


@irdl_op_definition
class DmaCopyOp(NkiOp):
    """`nisa.dma_copy(dst, src)`: `dst = src` between HBM and SBUF (never from PSUM, NKI >=
    0.3.0). Only element counts must match: a `shape` other than the source's lays the
    elements out row-major in it (`ax.reshape`'s meaning). A dtype change goes src -> fp32 ->
    dst.

        out[d0 < P, d1 < F] = in0[d0, d1]
    """

    name = "nki.dma_copy"
    ROLES: ClassVar[tuple[str, ...]] = ("src",)
    DST_BUFFERS: ClassVar[tuple[str, ...]] = ("hbm", "sbuf")
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("dma",)
    OPERAND_BUFFERS: ClassVar[dict[str, tuple[str, ...]]] = {"src": ("hbm", "sbuf")}
    ATTRS: ClassVar[dict[str, str]] = {"buffer": "text", "dtype": "dtype", "shape": "dims"}
    inputs = var_operand_def(TensorType)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    shape = opt_prop_def(ArrayAttr[StringAttr])
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (src,) = operand_types
        dtype = dst_dtype(attrs, src.dtype)
        shape = attrs.get("shape")
        if shape is not None and tuple(IntExpr.lift(d) for d in shape) != src.shape:
            dims = [IntExpr.lift(d) for d in shape]
            if product(dims) != product(src.shape):
                raise ShapeError(f"shape [{', '.join(map(str, dims))}] holds {product(dims)} "
                                 f"elements; src {src} holds {product(src.shape)}")
            form = AxReshapeOp.semantics(operand_types, {"shape": shape}).form
        else:
            par = dims_of(src)
            form = GenericForm(par, Read(0, syms(par)), 1)
        return Semantics(form, TensorType(form.output_shape, dtype))


@irdl_op_definition
class DmaTransposeOp(NkiOp):
    """`nisa.dma_transpose(dst, src, axes)`: a transpose done by the DMA engines, into SBUF,
    from HBM or SBUF, of a 2-byte dtype (bf16, f16), bit-exact, with the permutation the ISA
    fixes for the rank (`AXES`): dst dim i is src dim axes[i].

        out[d0 < F, d1 < P] = in0[d1, d0]
    """

    name = "nki.dma_transpose"
    #: the one permutation per rank the instruction supports (reference/nki.md 3.1)
    AXES: ClassVar[dict[int, tuple[int, ...]]] = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
    ROLES: ClassVar[tuple[str, ...]] = ("src",)
    DST_BUFFERS: ClassVar[tuple[str, ...]] = ("sbuf",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("dma",)
    OPERAND_BUFFERS: ClassVar[dict[str, tuple[str, ...]]] = {"src": ("hbm", "sbuf")}
    ATTRS: ClassVar[dict[str, str]] = {"buffer": "text"}
    inputs = var_operand_def(TensorType)
    buffer = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (src,) = operand_types
        if src.rank not in cls.AXES:
            raise ShapeError(f"src has rank {src.rank}; a DMA transpose takes rank "
                             f"{', '.join(map(str, cls.AXES))}")
        if src.dtype not in ("bf16", "f16"):
            raise ShapeError(f"src has dtype {src.dtype}; a DMA transpose moves a 2-byte "
                             "dtype (bf16, f16)")
        axes = cls.AXES[src.rank]
        src_dims = dims_of(src)
        out = tuple(src_dims[a] for a in axes)
        index = [IntExpr.const(0)] * src.rank
        for dim, a in zip(out, axes, strict=True):
            index[a] = IntExpr.sym(dim.name)
        form = GenericForm(out, Read(0, tuple(index)), 1)
        return Semantics(form, TensorType(form.output_shape, src.dtype))


@irdl_op_definition
class TensorCopyOp(NkiOp):
    """`nisa.tensor_copy(dst, src, engine)`: an engine-local copy on the Vector, Scalar or
    GpSimd engine (GpSimd cannot touch PSUM); a dtype change goes through fp32.

        out[d0 < P, d1 < F] = in0[d0, d1]
    """

    name = "nki.tensor_copy"
    ROLES: ClassVar[tuple[str, ...]] = ("src",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector", "scalar", "gpsimd")
    ATTRS: ClassVar[dict[str, str]] = {"buffer": "text", "dtype": "dtype", "engine": "text"}
    inputs = var_operand_def(TensorType)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    engine = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (src,) = operand_types
        par = dims_of(src)
        form = GenericForm(par, Read(0, syms(par)), 1)
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, src.dtype)))


@irdl_op_definition
class MemsetOp(NkiOp):
    """`nisa.memset(dst, value)` on the Vector or GpSimd engine; `value` must be a value of the
    dst dtype (NKI >= 0.3.0), never rounded here. Its meaning is `ax.constant`'s.

        out[d0 < P, d1 < F] = value
    """

    name = "nki.memset"
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("vector", "gpsimd")
    ATTRS: ClassVar[dict[str, str]] = {"value": "float", "shape": "dims", "dtype": "dtype",
                                       "buffer": "text", "engine": "text"}
    value = prop_def(FloatAttr)
    shape = prop_def(ArrayAttr[StringAttr])
    dtype = prop_def(TypeAttribute)
    buffer = prop_def(StringAttr)
    engine = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())
    assembly_format = "attr-dict `:` type($result)"

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        if operand_types:
            raise ShapeError(f"takes no operands, got {len(operand_types)}")
        value, dtype = attrs.get("value"), str(attrs.get("dtype"))
        if dtype in DTYPES and DTYPES[dtype].is_float and value is not None \
                and not np.isnan(float(value)):
            with np.errstate(over="ignore"):
                held = float(round_to(np.asarray(float(value)), dtype))
            if held != float(value):
                raise ShapeError(f"value {value!r} is not a {dtype} value (memset's value is "
                                 f"the dst dtype's, NKI >= 0.3.0; the nearest is {held!r})")
        return ConstantOp.semantics((), {k: attrs[k] for k in ("value", "shape", "dtype")
                                         if k in attrs})


@irdl_op_definition
class IotaOp(NkiOp):
    """`nisa.iota(dst, pattern, offset, channel_multiplier)` on GpSimd, into SBUF: an affine
    function of the partition and free indices, computed in int32 and cast to the dst dtype.
    `pattern` is the step of each free dim (its count is the dst's dim). `size_offset`, an
    expression of sizes and loop indices (`N - BK*k`), adds to `offset`: the new API traces a
    kernel with its sizes and unrolled loop indices as Python integers, so the instruction's
    `offset` is that expression's value (a column bound inside a loop over blocks).

        out[p < P, f < F] = offset + size_offset + p * channel_multiplier + f * step
    """

    name = "nki.iota"
    DST_BUFFERS: ClassVar[tuple[str, ...]] = ("sbuf",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("gpsimd",)
    ATTRS: ClassVar[dict[str, str]] = {"shape": "dims", "pattern": "ints", "offset": "int",
                                       "size_offset": "dims", "channel_multiplier": "int",
                                       "dtype": "dtype", "buffer": "text"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"offset": 0, "channel_multiplier": 0}
    shape = prop_def(ArrayAttr[StringAttr])
    pattern = prop_def(DenseArrayBase)
    offset = prop_def(IntegerAttr[I64])
    size_offset = opt_prop_def(ArrayAttr[StringAttr])
    channel_multiplier = prop_def(IntegerAttr[I64])
    dtype = prop_def(TypeAttribute)
    buffer = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())
    assembly_format = "attr-dict `:` type($result)"

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        if operand_types:
            raise ShapeError(f"takes no operands, got {len(operand_types)}")
        shape = TensorType([IntExpr.lift(d) for d in attrs.get("shape", ())], "i32")
        par = dims_of(shape, "p")
        value = affine_index(par, attrs)
        form = GenericForm(par, Index(value), 0)
        return Semantics(form, TensorType(form.output_shape, dst_dtype(attrs, "i32")))


def affine_index(par: Sequence[LoopDim], attrs: Mapping[str, Any]) -> IntExpr:
    """`offset + size_offset + p * channel_multiplier + sum of f_k * pattern[k]` over a tile's
    dims `par` (the partition dim first): the affine value `iota` writes and `affine_select`
    compares. `size_offset` (one expression, or none) may name sizes and loop indices, never
    the tile's own dims."""
    if len(par) < 2:
        raise ShapeError(f"the tile has rank {len(par)}; a partition dim and free dims are "
                         "needed")
    steps = tuple(attrs.get("pattern", ()))
    if len(steps) != len(par) - 1:
        raise ShapeError(f"pattern has {len(steps)} steps for {len(par) - 1} free dims")
    index = IntExpr.const(int(attrs.get("offset", 0)))
    extra = tuple(attrs.get("size_offset") or ())
    if len(extra) > 1:
        raise ShapeError(f"size_offset holds {len(extra)} expressions; it is one")
    if extra:
        added = IntExpr.lift(extra[0])
        clash = added.symbols() & {d.name for d in par}
        if clash:
            raise ShapeError(f"size_offset {added} names the tile's own dims "
                             f"({', '.join(sorted(clash))})")
        index = index + added
    index = index + IntExpr.sym(par[0].name) * int(attrs.get("channel_multiplier", 0))
    for dim, step in zip(par[1:], steps, strict=True):
        index = index + IntExpr.sym(dim.name) * int(step)
    return index


@irdl_op_definition
class AccessOp(NkiOp):
    """An access pattern on chip, not an instruction: a tile read through a view of other
    tiles, partition dim kept (reference/nki.md 2.1-2.2: every partition uses the same free
    access pattern, up to four free dims of a size and a stride each). `layout` names the
    structural `ax` op whose meaning it has, with that op's properties:

    - `slice` (`start`, `stop`, `step`): a strided view of the free dims (rope's interleaved
      pairs, free stride 2), read in place by the instructions;
    - `reshape` (`shape`): the free dims split or merged, row-major (a view of a contiguous
      tile);
    - `broadcast_to` (`shape`): free dims of size 1 stretched (stride 0): a DMA from HBM of
      the tile's load with a zero stride, where the emitter can (`emit.py`);
    - `concat` (`axis`, a free dim): one tile whose windows along `axis` its operands fill
      (each producer writes its window in place, or one DMA per operand).

    Being the `ax` op's own form, it is proved like any lowering; the emitter prints the view,
    or refuses one it cannot print.
    """

    name = "nki.access"
    #: the `ax` op each layout means
    LAYOUTS: ClassVar[dict[str, type[TensorOp]]] = {"slice": AxSliceOp, "reshape": AxReshapeOp,
                                          "broadcast_to": AxBroadcastToOp,
                                          "concat": AxConcatOp}
    #: one source, or a concatenation's up to eight
    ROLES: ClassVar[tuple[str, ...]] = ("src", *("[src]",) * 7)
    DST_BUFFERS: ClassVar[tuple[str, ...]] = ("sbuf",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("dma",)
    OPERAND_BUFFERS: ClassVar[dict[str, tuple[str, ...]]] = {}
    ATTRS: ClassVar[dict[str, str]] = {"layout": "text", "shape": "dims", "start": "dims",
                                       "stop": "dims", "step": "dims", "axis": "int",
                                       "buffer": "text"}
    inputs = var_operand_def(TensorType)
    layout = prop_def(StringAttr)
    shape = opt_prop_def(ArrayAttr[StringAttr])
    start = opt_prop_def(ArrayAttr[StringAttr])
    stop = opt_prop_def(ArrayAttr[StringAttr])
    step = opt_prop_def(ArrayAttr[StringAttr])
    axis = opt_prop_def(IntegerAttr[I64])
    buffer = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        layout = str(attrs.get("layout"))
        if layout not in cls.LAYOUTS:
            raise ShapeError(f"layout '{layout}' is not one of {', '.join(cls.LAYOUTS)}")
        if not operand_types or (layout != "concat" and len(operand_types) != 1):
            raise ShapeError(f"a {layout} access takes "
                             f"{'operands' if layout == 'concat' else 'one operand'}, got "
                             f"{len(operand_types)}")
        props = {k: v for k, v in attrs.items() if k not in ("layout", "buffer") and v is not None}
        meaning = cls.LAYOUTS[layout].semantics(operand_types, props)
        out = meaning.result_type
        assert isinstance(out, TensorType)
        for t in operand_types:
            if t.rank < 2 or out.rank < 2 or t.shape[0] != out.shape[0]:
                raise ShapeError(f"a {layout} access keeps the partition dim: {t} to {out}")
        if layout == "concat" and int(props.get("axis", 0)) % out.rank == 0:
            raise ShapeError("a concat access joins along a free dim, not the partitions")
        if layout == "slice":
            first = [IntExpr.lift(d) for d in props.get("start", ())][:1]
            steps = [IntExpr.lift(d) for d in props.get("step", ())][:1]
            if first != [IntExpr.const(0)] or steps != [IntExpr.const(1)]:
                raise ShapeError("a slice access keeps every partition (start 0, step 1)")
        return meaning
