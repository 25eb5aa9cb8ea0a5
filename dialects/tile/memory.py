"""Moving tiles: `tile.load` reads a tile of a global tensor, `tile.full` makes an on-chip tile of
one value, `tile.store` writes a tile into a kernel's result.

Offsets are integer expressions over sizes, tile parameters and the names a kernel or a loop
binds (`i*BM`, `k*BK`); a tile's shape is over sizes and tile parameters. A tile that reaches
past the end of its tensor (a size that is not a multiple of the tile) is masked: a load reads
`pad` there, a store writes nothing there. `space` names where the tile lives, from the
profile's memory spaces (`sbuf`, `psum` on a NeuronCore; `registers`, `shared` on a GPU).

The two tile-making ops are form ops: a load's meaning is a guarded read, and `tile.full` means
what `ax.constant` means (its semantics is that op's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import I64, ArrayAttr, FloatAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import ConstantOp, TensorType
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Index, Read, ScalarExpr, call


def dim_exprs(values: Sequence[Any], what: str, rank: int) -> list[IntExpr]:
    """A dim-list attribute's integer expressions, one per dim of a rank-`rank` tensor."""
    exprs = [IntExpr.lift(v) for v in values]
    if len(exprs) != rank:
        raise ShapeError(f"{what} needs {rank} entries (one per dim), got {len(exprs)}")
    return exprs


def _check_space(attrs: Mapping[str, Any]) -> None:
    space = attrs.get("space", "")
    if not isinstance(space, str) or not space.isidentifier():
        raise ShapeError(f"space '{space}' is not a memory space name")


@irdl_op_definition
class LoadOp(TensorOp):
    """A tile of `shape` read from the global tensor at `offsets`; `pad` past its end.

        out[t0 < BM, t1 < BK] = select(o0 + t0 < M and o1 + t1 < K, in0[o0 + t0, o1 + t1], pad)
    """

    name = "tile.load"
    ATTRS: ClassVar[dict[str, str]] = {"offsets": "dims", "shape": "dims", "pad": "float",
                                       "space": "text"}
    DEFAULTS: ClassVar[dict[str, Any]] = {"pad": 0.0}
    source = operand_def(TensorType)
    offsets = prop_def(ArrayAttr[StringAttr])
    shape = prop_def(ArrayAttr[StringAttr])
    pad = prop_def(FloatAttr)
    space = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        offsets = dim_exprs(attrs.get("offsets", ()), "offsets", x.rank)
        shape = dim_exprs(attrs.get("shape", ()), "shape", x.rank)
        _check_space(attrs)
        return guarded_read(x, offsets, shape, float(attrs.get("pad", 0.0)))


def guarded_read(x: TensorType, offsets: Sequence[IntExpr], shape: Sequence[IntExpr],
                 other: float, extents: Sequence[IntExpr] | None = None) -> Semantics:
    """A block of `shape` read from `x` at `offsets`, `other` past `x`'s end and, per dim,
    past the first `extents` lanes (where an extent is not the block's): the meaning of
    `tile.load` and of the Triton level's masked `xt.load`, stated once.

        out[t0 < B0, t1 < B1] = select(o0 + t0 < M and o1 + t1 < N, in0[o0 + t0, o1 + t1], other)
    """
    avoid = {s for e in (*offsets, *shape, *(extents or ()), *x.shape) for s in e.symbols()}
    names = fresh_names("t", x.rank, avoid)
    index = [o + IntExpr.sym(n) for o, n in zip(offsets, names, strict=True)]
    guard: ScalarExpr | None = None
    for k, (n, at, size) in enumerate(zip(names, index, x.shape, strict=True)):
        conds = [call("lt", Index(at), Index(size))]
        if extents is not None and extents[k] != shape[k]:
            conds.insert(0, call("lt", Index(IntExpr.sym(n)), Index(extents[k])))
        for cond in conds:
            guard = cond if guard is None else call("and", guard, cond)
    body: ScalarExpr = Read(0, tuple(index))
    if guard is not None:
        body = call("select", guard, body, Const(other))
    par = tuple(LoopDim(n, IntExpr.const(0), e) for n, e in zip(names, shape, strict=True))
    form = GenericForm(par, body, 1)
    return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class FullOp(TensorOp):
    """An on-chip tile of `shape` holding `value` in memory space `space` (an accumulator's
    start); its meaning is `ax.constant`'s."""

    name = "tile.full"
    ATTRS: ClassVar[dict[str, str]] = {"value": "float", "shape": "dims", "dtype": "dtype",
                                       "space": "text"}
    value = prop_def(FloatAttr)
    shape = prop_def(ArrayAttr[StringAttr])
    dtype = prop_def(TypeAttribute)
    space = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())
    assembly_format = "attr-dict `:` type($result)"

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        _check_space(attrs)
        return ConstantOp.semantics(operand_types, {k: v for k, v in attrs.items()
                                                    if k != "space"})


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Write a tile into result #`result` of the enclosing kernel at `offsets`; the part of the
    tile past the result's end is not written (the mask of a remainder tile)."""

    name = "tile.store"
    value = operand_def(TensorType)
    result = prop_def(IntegerAttr[I64])
    offsets = prop_def(ArrayAttr[StringAttr])
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: Any, result: int, offsets: Sequence[Any]) -> None:
        super().__init__(operands=[value], properties={
            "result": IntegerAttr(result, i64),
            "offsets": ArrayAttr([StringAttr(str(IntExpr.lift(o))) for o in offsets])})

    def offset_exprs(self) -> list[IntExpr]:
        return [IntExpr.lift(s.data) for s in self.offsets.data]

    def verify_(self) -> None:
        try:
            offsets = self.offset_exprs()
        except ValueError as err:
            raise VerifyException(f"'tile.store': offset: {err}") from None
        value = self.value.type
        assert isinstance(value, TensorType)
        if len(offsets) != value.rank:
            raise VerifyException(f"'tile.store': {len(offsets)} offsets for a tile of rank "
                                  f"{value.rank}")
