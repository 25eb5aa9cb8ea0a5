"""NKI sketches: the instruction sequences with holes that `synth` fills and proves (docs/synth.md).

Each tile op kind has one or more sketches; each hole is one choice a lowering makes (the
sketch's id, then its holes):

- `elementwise.alu`: the instruction (tensor_tensor, tensor_scalar), the engine, which operand
  is the data, `reverse0`;
- `row_sum.tensor_reduce`, `row_max.tensor_reduce`: the reduce op, `negate`;
- `row_sum.activation_reduce`: the activation function, the scale;
- `row_sum.matmul_ones`: the data's transpose (none, TensorE, VectorE, DMA), which operand is
  stationary (the data or the ones column);
- `row_sum_blocks.matmul_ones` (the row sum of two column blocks): the blocks' transpose, the
  second matmul's accumulate flag (accumulating in PSUM onto the first);
- `cumsum.scan`: (op0, op1) of `tensor_tensor_scan`, which operand is the data;
- `cumsum.triangular_matmul`: the data's transpose, the mask's comparison and partition step;
- `transpose.move`: the instruction (nc_transpose on TensorE or VectorE, dma_transpose, or a
  plain tensor_copy);
- `matmul.stationary`: the left operand's transpose, which operand is stationary;
- `matmul_ksplit.accumulate`: the second matmul's accumulate flag, how the products combine.

A candidate takes the spec's parameters (HBM tensors), loads them into SBUF (`dma_copy`, or a
`dma_transpose` where the layout hole says so), runs the instructions and leaves its result in
SBUF in the spec's dtype (a `tensor_copy` out of PSUM where needed). What an instruction cannot
take (a shape, an engine, a dtype) is `Pruned` where the op is built; the size conditions its
instructions put on the spec's symbolic dims beyond the profile's tile limits (`F <= 128` for
a contraction over F, `P <= 32` for a VectorE transpose) are the candidate's `conditions`: it
is proved under them and admitted for tiles that meet them.

The tile ops themselves (`TILE_OPS`) are `ax` ops over symbolic tiles, with a numpy reference
and the dim a kernel's grid splits, for the simulator's check (`targets/nki/sketch_run.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects import nki
from axon.dialects.ax import (
    AddOp,
    CumsumOp,
    MatmulOp,
    MaxOp,
    MinOp,
    MulOp,
    ReduceMaxOp,
    SubOp,
    SumOp,
    TensorType,
    TransposeOp,
)
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError, product
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.intexpr import IntExpr
from axon.synth import Candidate, Constraint, Filling, Hole, Pruned, Sketch, Slot, Spec
from axon.targets.profiles import load_profile

#: the tile-level binary ops the `elementwise` sketch lowers, with their ALU op
ALU: dict[type[Operation], str] = {AddOp: "add", SubOp: "subtract", MulOp: "multiply",
                                   MaxOp: "maximum", MinOp: "minimum"}
#: the layouts a sketch may give an operand: as loaded, or transposed by one of three engines
TRANSPOSES = ("none", "tensor", "vector", "dma")


# ---- the profile's limits ---------------------------------------------------------------------
@dataclass(frozen=True)
class TileLimits:
    """The NeuronCore limits a lowering's tiles must meet, read from one profile."""

    profile: str
    partitions: int
    sbuf_partition_bytes: int
    psum_bank_bytes: int
    matmul_stationary_free_max: int
    matmul_moving_free_max: int
    vector_transpose_max: int

    def free_max(self, buffer: str, dtype: str) -> int:
        """The most elements of `dtype` one partition of a tile in `buffer` holds."""
        room = self.psum_bank_bytes if buffer == "psum" else self.sbuf_partition_bytes
        return room // DTYPES[dtype].storage.itemsize


def tile_limits(profile: str) -> TileLimits:
    """The limits of the NKI profile `profile` (`targets/nki/profiles/<profile>.yaml`);
    ValueError naming what the profile lacks."""
    loaded = load_profile(profile)
    memory, limits = loaded.memory, loaded.limits
    if memory is None or limits is None:
        raise ValueError(f"profile '{profile}' has no memory or limits section: it is not a "
                         "NeuronCore profile")

    def whole(section: str, key: str, owner: object) -> int:
        quantity = getattr(owner, key, None)
        if quantity is None:
            raise ValueError(f"profile '{profile}' has no {section}.{key}, which the NKI "
                             "sketches need")
        return int(quantity.value)

    sbuf = memory.sbuf_partition_usable_bytes or memory.sbuf_partition_bytes
    return TileLimits(
        profile=profile,
        partitions=whole("memory", "partitions", memory),
        sbuf_partition_bytes=int(sbuf.value) if sbuf is not None
        else whole("memory", "sbuf_partition_bytes", memory),
        psum_bank_bytes=whole("memory", "psum_bank_bytes", memory),
        matmul_stationary_free_max=whole("limits", "matmul_stationary_free_max", limits),
        matmul_moving_free_max=whole("limits", "matmul_moving_free_max", limits),
        vector_transpose_max=whole("limits", "vector_transpose_max", limits))


# ---- tile ops -----------------------------------------------------------------------------------
#: adds an op to the function being built and gives its result
Add = Callable[[Operation], SSAValue]


@dataclass(frozen=True)
class TileOp:
    """A tile-level op (ax ops over symbolic tiles) that sketches lower: its kind, its
    parameters' shapes and dtypes, the ops, a numpy reference over whole tensors, and the dim
    a kernel's grid splits (the simulator's check runs it over a grid of such tiles)."""

    name: str
    kind: str
    params: tuple[tuple[tuple[str, ...], str], ...]
    body: Callable[[list[SSAValue], Add], SSAValue]
    reference: Callable[..., np.ndarray]
    grid: str | None
    """None for a square tile (both dims one symbol): no grid splits one dim alone."""

    def spec(self, limits: TileLimits, rename: dict[str, str] | None = None) -> Spec:
        """The spec for the profile's limits: every dim that is some parameter's partition
        dim at most `partitions`, every other dim at most what one SBUF partition holds.
        `rename` renames dims (the simulator's kernel names its tile dim as a parameter)."""
        names = rename or {}
        types = [TensorType([names.get(d, d) for d in shape], dtype)
                 for shape, dtype in self.params]
        bounds: dict[str, int] = {}
        for shape, dtype in self.params:
            for dim in shape:
                if dim.isdigit():
                    continue
                bound = limits.partitions if any(s[0] == dim for s, _ in self.params) \
                    else limits.free_max("sbuf", dtype)
                bounds[dim] = min(bound, bounds.get(dim, bound))
        return Spec(self.kind, build_function(self.name, types, self.body),
                    tuple(f"{names.get(d, d)} <= {b}" for d, b in bounds.items()))


def build_function(name: str, params: Sequence[TensorType],
                   build: Callable[[list[SSAValue], Add], SSAValue]) -> FuncOp:
    """`func.func @name(params) { build(args, add); return }`: `add` appends an op and gives
    its result, the last value `build` gives is returned."""
    block = Block(arg_types=list(params))
    ops: list[Operation] = []

    def add(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    result = build(list(block.args), add)
    block.add_ops([*ops, ReturnOp(result)])
    return FuncOp(name, FunctionType.from_lists(list(params), [result.type]), Region(block))


def _binary(cls: type[TensorOp]) -> Callable[[list[SSAValue], Add], SSAValue]:
    return lambda a, add: add(cls.make(a))


def _row(cls: type[TensorOp]) -> Callable[[list[SSAValue], Add], SSAValue]:
    return lambda a, add: add(cls.make(a, axes=(1,), keepdims=True))


def _transposed(x: SSAValue, add: Add) -> SSAValue:
    return add(TransposeOp.make([x], perm=(1, 0)))


def _ksplit(a: list[SSAValue], add: Add) -> SSAValue:
    a0, a1, b0, b1 = a
    return add(AddOp.make([add(MatmulOp.make([_transposed(a0, add), b0])),
                           add(MatmulOp.make([_transposed(a1, add), b1]))]))


_PF = ("P", "F")
_PP = ("P", "P")
TILE_OPS: dict[str, TileOp] = {op.name: op for op in (
    TileOp("add", "elementwise", ((_PF, "f32"), (_PF, "f32")), _binary(AddOp),
           np.add, "P"),
    TileOp("sub_column", "elementwise", ((_PF, "f32"), (("P", "1"), "f32")), _binary(SubOp),
           np.subtract, "P"),
    TileOp("mul_column", "elementwise", ((_PF, "f32"), (("P", "1"), "f32")), _binary(MulOp),
           np.multiply, "P"),
    TileOp("row_sum", "row_sum", ((_PF, "f32"),), _row(SumOp),
           lambda x: x.sum(axis=1, keepdims=True), "P"),
    TileOp("row_sum_bf16", "row_sum", ((_PF, "bf16"),), _row(SumOp),
           lambda x: x.sum(axis=1, keepdims=True), "P"),
    TileOp("row_sum_square", "row_sum", ((_PP, "f32"),), _row(SumOp),
           lambda x: x.sum(axis=1, keepdims=True), None),
    TileOp("row_sum_blocks", "row_sum_blocks", ((_PF, "f32"), (_PF, "f32")),
           lambda a, add: add(AddOp.make([_row(SumOp)([a[0]], add), _row(SumOp)([a[1]], add)])),
           lambda x0, x1: x0.sum(axis=1, keepdims=True) + x1.sum(axis=1, keepdims=True), "P"),
    TileOp("row_max", "row_max", ((_PF, "f32"),), _row(ReduceMaxOp),
           lambda x: x.max(axis=1, keepdims=True), "P"),
    TileOp("cumsum", "cumsum", ((_PF, "f32"),),
           lambda a, add: add(CumsumOp.make(a, axis=1)), lambda x: np.cumsum(x, axis=1), "P"),
    TileOp("cumsum_bf16", "cumsum", ((_PF, "bf16"),),
           lambda a, add: add(CumsumOp.make(a, axis=1)), lambda x: np.cumsum(x, axis=1), "P"),
    TileOp("cumsum_square", "cumsum", ((_PP, "f32"),),
           lambda a, add: add(CumsumOp.make(a, axis=1)), lambda x: np.cumsum(x, axis=1), None),
    TileOp("transpose", "transpose", ((_PF, "bf16"),), lambda a, add: _transposed(a[0], add),
           lambda x: x.T, "P"),
    TileOp("transpose_square", "transpose", ((_PP, "bf16"),),
           lambda a, add: _transposed(a[0], add), lambda x: x.T, None),
    TileOp("matmul", "matmul", ((("M", "K"), "f32"), (("K", "N"), "f32")),
           _binary(MatmulOp), lambda a, b: a @ b, "M"),
    TileOp("matmul_square", "matmul", ((("M", "M"), "f32"), (("M", "M"), "f32")),
           _binary(MatmulOp), lambda a, b: a @ b, None),
    TileOp("transpose_matmul", "matmul", ((("K", "M"), "f32"), (("K", "N"), "f32")),
           lambda a, add: add(MatmulOp.make([_transposed(a[0], add), a[1]])),
           lambda a, b: a.T @ b, "M"),
    TileOp("matmul_ksplit", "matmul_ksplit", ((("K", "M"), "f32"),) * 2
           + ((("K", "N"), "f32"),) * 2, _ksplit,
           lambda a0, a1, b0, b1: a0.T @ b0 + a1.T @ b1, "M"),
)}


# ---- building a candidate ---------------------------------------------------------------------
class _Builder:
    """The function of instructions a filling becomes: the spec's parameters, in HBM."""

    def __init__(self, spec: Spec, limits: TileLimits) -> None:
        self.spec = spec
        self.limits = limits
        self.block = Block(arg_types=[a.type for a in spec.func.body.block.args])
        self.ops: list[Operation] = []

    @property
    def args(self) -> list[SSAValue]:
        return list(self.block.args)

    def add(self, cls: type[nki.NkiOp], operands: Sequence[SSAValue], **attrs: Any) -> SSAValue:
        """The instruction `cls` over `operands`; Pruned when it cannot take them."""
        try:
            op = cls.make(list(operands), **{k: v for k, v in attrs.items() if v is not None})
        except (ShapeError, ValueError) as err:
            raise Pruned(f"{cls.name}: {err}") from None
        self.ops.append(op)
        return op.results[0]

    def load(self, index: int, layout: str = "none") -> SSAValue:
        """Parameter `index` in SBUF, transposed as `layout` says (TRANSPOSES)."""
        arg = self.args[index]
        if layout == "dma":
            return self.add(nki.DmaTransposeOp, [arg], buffer="sbuf")
        tile = self.add(nki.DmaCopyOp, [arg], buffer="sbuf")
        if layout == "tensor":
            moved = self.add(nki.NcTransposeOp, [tile], engine="tensor", buffer="psum")
            return self.add(nki.TensorCopyOp, [moved], buffer="sbuf")
        if layout == "vector":
            return self.add(nki.NcTransposeOp, [tile], engine="vector", buffer="sbuf")
        return tile

    def fill(self, value: float, shape: Sequence[IntExpr], dtype: str) -> SSAValue:
        return self.add(nki.MemsetOp, [], value=value, shape=[str(d) for d in shape],
                        dtype=dtype, buffer="sbuf")

    def finish(self, result: SSAValue) -> Candidate:
        """The candidate returning `result`, in SBUF and in the spec's result dtype."""
        (want,) = self.spec.func.function_type.outputs.data
        assert isinstance(want, TensorType)
        got = _type(result)
        if nki.buffer_of(result) != "sbuf" or got.dtype != want.dtype:
            result = self.add(nki.TensorCopyOp, [result], buffer="sbuf", dtype=want.dtype)
        self.block.add_ops([*self.ops, ReturnOp(result)])
        func = FuncOp(f"{self.spec.func.sym_name.data}_nki",
                      FunctionType.from_lists([a.type for a in self.args], [result.type]),
                      Region(self.block))
        return Candidate(func, conditions(func, self.limits, self.spec.assumptions))


def _type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def conditions(func: FuncOp, limits: TileLimits, known: Sequence[str] = ()) -> tuple[str, ...]:
    """The size conditions the instructions of `func` need on its symbolic dims (the op
    verifier checks constant dims only): on-chip tiles within the partitions and their
    buffer's room, a matmul's contraction and free sizes, a transpose's engine bound. Those
    `known` already implies (the same symbol bounded as tightly) are left out."""
    bounds: dict[str, int] = {}

    def at_most(dim: IntExpr, bound: int) -> None:
        if dim.is_const:
            return
        text = str(dim)
        bounds[text] = min(bound, bounds.get(text, bound))

    for op in func.walk():
        if not isinstance(op, nki.NkiOp):
            continue
        result = _type(op.results[0])
        buffer = op.buffer_name()
        if buffer in ("sbuf", "psum"):
            at_most(result.shape[0], limits.partitions)
            at_most(product(result.shape[1:]), limits.free_max(buffer, result.dtype))
        if isinstance(op, nki.NcMatmulOp):
            stationary, moving = _type(op.operands[0]), _type(op.operands[1])
            at_most(stationary.shape[0], limits.partitions)
            at_most(stationary.shape[1], limits.matmul_stationary_free_max)
            at_most(moving.shape[1], limits.matmul_moving_free_max)
        if isinstance(op, nki.NcTransposeOp):
            data = _type(op.operands[0])
            bound = limits.vector_transpose_max if op.engine_name() == "vector" \
                else min(limits.partitions, limits.matmul_stationary_free_max)
            at_most(data.shape[0], bound)
            at_most(product(data.shape[1:]), bound)
    stated = {}
    for text in known:
        lhs, _, rhs = text.partition(" <= ")
        if rhs.strip().isdigit():
            stated[lhs.strip()] = int(rhs)
    return tuple(f"{dim} <= {bound}" for dim, bound in bounds.items()
                 if not (dim in stated and stated[dim] <= bound))


def _spec_op(spec: Spec) -> Operation:
    """The spec's one computing op (the elementwise sketch lowers a single op)."""
    ops = [op for op in spec.func.body.block.ops if not isinstance(op, ReturnOp)]
    if len(ops) != 1:
        raise Pruned(f"the tile op is {len(ops)} ops; this sketch lowers one")
    return ops[0]


def _dtype(spec: Spec) -> str:
    (out,) = spec.func.function_type.outputs.data
    assert isinstance(out, TensorType)
    return out.dtype


# ---- the sketches -----------------------------------------------------------------------------
def _elementwise(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        op = _spec_op(spec)
        if type(op) not in ALU:
            raise Pruned(f"'{op.name}' is no ALU op")
        c = _Builder(spec, limits)
        loaded = [c.load(k) for k in range(2)]
        data = int(f["instr.data"])  # type: ignore[arg-type]
        operands = [loaded[data], loaded[1 - data]]
        if f["instr.instruction"] == "tensor_tensor":
            result = c.add(nki.TensorTensorOp, operands, op=ALU[type(op)],
                           engine=f["instr.engine"], buffer="sbuf", dtype=_dtype(spec))
        else:
            result = c.add(nki.TensorScalarOp, operands, op0=ALU[type(op)],
                           reverse0=f["instr.reverse"], engine=f["instr.engine"],
                           buffer="sbuf", dtype=_dtype(spec))
        return c.finish(result)

    return Sketch(
        "elementwise.alu", "elementwise",
        (Slot("instr", (Hole("instruction", ("tensor_tensor", "tensor_scalar")),
                        Hole("engine", ("vector", "scalar", "gpsimd")),
                        Hole("data", (0, 1)), Hole("reverse", (False, True)))),),
        build,
        (Constraint("tensor_tensor has no reverse flag (the data hole orders its operands)",
                    lambda s, f: not (f["instr.instruction"] == "tensor_tensor"
                                      and f["instr.reverse"])),),
        "one ALU instruction: tensor_tensor of two tiles, or tensor_scalar of a tile and a "
        "[P, 1] column")


def _tensor_reduce(kind: str, limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        return c.finish(c.add(nki.TensorReduceOp, [c.load(0)], op=f["reduce.op"], axes=(1,),
                              negate=f["reduce.negate"], keepdims=True, buffer="sbuf",
                              dtype="f32"))

    return Sketch(f"{kind}.tensor_reduce", kind,
                  (Slot("reduce", (Hole("op", ("add", "maximum", "minimum")),
                                   Hole("negate", (False, True)))),),
                  build, (), "tensor_reduce over the free dim (VectorE)")


def _activation_reduce(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        scale = float(f["act.scale"])  # type: ignore[arg-type]
        return c.finish(c.add(nki.ActivationReduceOp, [c.load(0)], func=f["act.func"],
                              scale=None if scale == 1.0 else scale, buffer="sbuf",
                              dtype="f32"))

    return Sketch("row_sum.activation_reduce", "row_sum",
                  (Slot("act", (Hole("func", ("copy", "abs", "square")),
                                Hole("scale", (1.0, -1.0)))),),
                  build, (), "the accumulated reduction of an activation (ScalarE)")


def _matmul_ones(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        data = c.load(0, str(f["layout.transpose"]))
        t = _type(data)
        ones = c.fill(1.0, [t.shape[0], IntExpr.const(1)], t.dtype)
        operands = [data, ones] if f["matmul.stationary"] == "data" else [ones, data]
        return c.finish(c.add(nki.NcMatmulOp, operands, buffer="psum"))

    return Sketch("row_sum.matmul_ones", "row_sum",
                  (Slot("layout", (Hole("transpose", TRANSPOSES),)),
                   Slot("matmul", (Hole("stationary", ("data", "ones")),))),
                  build, (), "nc_matmul of the (transposed) data against a ones column, in PSUM "
                  "(TensorE)")


def _matmul_ones_blocks(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        blocks = [c.load(k, str(f["layout.transpose"])) for k in range(2)]
        t = _type(blocks[0])
        ones = c.fill(1.0, [t.shape[0], IntExpr.const(1)], t.dtype)
        first = c.add(nki.NcMatmulOp, [blocks[0], ones], buffer="psum")
        accumulate = [first] if f["second.accumulate"] else []
        return c.finish(c.add(nki.NcMatmulOp, [blocks[1], ones, *accumulate], buffer="psum"))

    return Sketch("row_sum_blocks.matmul_ones", "row_sum_blocks",
                  (Slot("layout", (Hole("transpose", TRANSPOSES),)),
                   Slot("second", (Hole("accumulate", (True, False)),))),
                  build, (), "the row sum of two column blocks: nc_matmul of each transposed "
                  "block against a ones column, the second accumulating in PSUM")


_SCANS = ("add,add", "add,subtract", "maximum,maximum")


def _scan(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        x = c.load(0)
        zeros = c.fill(0.0, _type(x).shape, "f32")
        op0, op1 = str(f["scan.ops"]).split(",")
        operands = [zeros, x] if f["scan.data"] == "data1" else [x, zeros]
        return c.finish(c.add(nki.TensorTensorScanOp, operands, op0=op0, op1=op1,
                              initial=0.0, buffer="sbuf", dtype="f32"))

    return Sketch("cumsum.scan", "cumsum",
                  (Slot("scan", (Hole("ops", _SCANS), Hole("data", ("data1", "data0")))),),
                  build, (), "tensor_tensor_scan of the data and a zero tile (VectorE)")


def _triangular_matmul(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        data = c.load(0, str(f["layout.transpose"]))
        k = _type(data).shape[0]
        ones = c.fill(1.0, [k, k], _type(data).dtype)
        # mask[k, f] = 1 where channel_multiplier * k + f  cmp_op  0, else 0
        mask = c.add(nki.AffineSelectOp, [ones], pattern=(1,),
                     channel_multiplier=f["mask.channel_multiplier"], cmp_op=f["mask.cmp_op"],
                     on_false_value=0.0, buffer="sbuf")
        return c.finish(c.add(nki.NcMatmulOp, [data, mask], buffer="psum"))

    return Sketch("cumsum.triangular_matmul", "cumsum",
                  (Slot("layout", (Hole("transpose", TRANSPOSES),)),
                   Slot("mask", (Hole("cmp_op", ("greater_equal", "greater", "less_equal")),
                                 Hole("channel_multiplier", (-1, 1))))),
                  build, (), "nc_matmul of the transposed data by a triangular ones matrix built "
                  "by memset and affine_select")


def _transpose(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        how = f["move.instruction"]
        if how == "tensor_copy":
            return c.finish(c.add(nki.TensorCopyOp, [c.load(0)], buffer="sbuf"))
        return c.finish(c.load(0, str(how)))

    return Sketch("transpose.move", "transpose",
                  (Slot("move", (Hole("instruction", ("tensor", "vector", "dma",
                                                      "tensor_copy")),)),),
                  build, (), "one data movement: nc_transpose on TensorE (via PSUM) or VectorE, "
                  "dma_transpose, or a plain copy")


def _matmul(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        a = c.load(0, str(f["layout.transpose"]))
        b = c.load(1)
        operands = [a, b] if f["matmul.stationary"] == "left" else [b, a]
        return c.finish(c.add(nki.NcMatmulOp, operands, buffer="psum"))

    return Sketch("matmul.stationary", "matmul",
                  (Slot("layout", (Hole("transpose", TRANSPOSES),)),
                   Slot("matmul", (Hole("stationary", ("left", "right")),))),
                  build, (), "nc_matmul with the left operand as stationary, transposed or not")


def _ksplit_matmul(limits: TileLimits) -> Sketch:
    def build(spec: Spec, f: Filling) -> Candidate:
        c = _Builder(spec, limits)
        a0, a1, b0, b1 = (c.load(k) for k in range(4))
        first = c.add(nki.NcMatmulOp, [a0, b0], buffer="psum")
        second = c.add(nki.NcMatmulOp, [a1, b1, *([first] if f["second.accumulate"] else [])],
                       buffer="psum")
        how = f["combine.instruction"]
        if how == "none":
            return c.finish(second)
        if how == "copy_add":
            first = c.add(nki.TensorCopyOp, [first], buffer="sbuf", dtype="f32")
        return c.finish(c.add(nki.TensorTensorOp, [first, second], op="add", buffer="sbuf",
                              dtype="f32"))

    return Sketch("matmul_ksplit.accumulate", "matmul_ksplit",
                  (Slot("second", (Hole("accumulate", (True, False)),)),
                   Slot("combine", (Hole("instruction", ("none", "add", "copy_add")),))),
                  build, (), "two nc_matmuls over the two halves of the contraction, the second "
                  "accumulating in PSUM or the products added")


def sketches(profile: str) -> tuple[Sketch, ...]:
    """Every NKI sketch, its conditions read from the profile `profile`'s limits."""
    limits = tile_limits(profile)
    return (_elementwise(limits), _tensor_reduce("row_sum", limits),
            _activation_reduce(limits), _matmul_ones(limits), _matmul_ones_blocks(limits),
            _tensor_reduce("row_max", limits),
            _scan(limits), _triangular_matmul(limits), _transpose(limits), _matmul(limits),
            _ksplit_matmul(limits))


def sketch(profile: str, sketch_id: str) -> Sketch:
    """The NKI sketch called `sketch_id`; KeyError listing the ids otherwise."""
    found = {s.id: s for s in sketches(profile)}
    if sketch_id not in found:
        raise KeyError(f"no NKI sketch '{sketch_id}'; expected one of {', '.join(found)}")
    return found[sketch_id]


__all__ = ["ALU", "TILE_OPS", "TRANSPOSES", "TileLimits", "TileOp", "conditions",
           "sketch", "sketches", "tile_limits"]
