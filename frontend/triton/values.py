"""The values a Triton kernel's body computes, as the symbolic evaluation sees them.

Integers (program ids, `tl.arange` offsets, sizes, strides, and pointers, which are integers
in elements here) are `IndexValue`s: one `IntExpr` over the kernel's symbols, so pointer
arithmetic stays a polynomial the analysis can split into a base pointer, per-axis strides and
an origin. A block's lanes are symbols too: `lane<k>` is the position along axis k of the
value's own shape, so `tl.arange(0, B)` is `lane0` of shape `[B]`, `offs[:, None]` keeps
`lane0` at shape `[B, 1]` and `offs[None, :]` renames it `lane1` at shape `[1, B]`; numpy
broadcasting aligns shapes on the right and renames lanes to match.

A comparison of integers is a `MaskValue`, a conjunction of `Bound`s (`&` of masks
concatenates them). Everything else (loaded data, `tl.dot`, reductions, math, a mask that is
no conjunction) is a `DataValue`: a node of the value graph naming its Triton construct, its
operands and where it was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from axon.dialects.form.intexpr import IntExpr, IntLike

__all__ = ["BlockPtrValue", "Bound", "DataValue", "DtypeValue", "FloatValue", "IndexValue",
           "MaskValue", "NoneValue", "Shape", "StrValue", "TupleValue", "Value",
           "broadcast_shapes", "shape_text"]

#: a block's dims (constexpr block sizes or constants); () for a scalar
Shape = tuple[IntExpr, ...]
#: 1-based line and column
Loc = tuple[int, int]


def shape_text(shape: Shape) -> str:
    """`[BM, BK]`."""
    return "[" + ", ".join(map(str, shape)) + "]"


def broadcast_shapes(a: Shape, b: Shape) -> Shape | None:
    """numpy's broadcast of two shapes (aligned on the right, a dim of 1 stretches), or None."""
    rank = max(len(a), len(b))
    a = (IntExpr.const(1),) * (rank - len(a)) + a
    b = (IntExpr.const(1),) * (rank - len(b)) + b
    out: list[IntExpr] = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == IntExpr.const(1):
            out.append(x)
        elif x == IntExpr.const(1):
            out.append(y)
        else:
            return None
    return tuple(out)


@dataclass(eq=False)
class Value:
    """Something a kernel's expression evaluates to: its block shape and where it was made."""

    shape: Shape
    loc: Loc


@dataclass(eq=False)
class IndexValue(Value):
    """An integer or pointer (scalar or block) as a polynomial over the kernel's symbols."""

    expr: IntExpr


@dataclass(frozen=True)
class Bound:
    """One comparison `lhs op rhs` of integers (`op` one of < <= > >= == !=)."""

    lhs: IntExpr
    op: str
    rhs: IntExpr

    def __str__(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"

    def substitute(self, env: Mapping[str, IntLike]) -> Bound:
        """Both sides with symbols replaced."""
        return Bound(self.lhs.substitute(env), self.op, self.rhs.substitute(env))

    def truth(self) -> bool | None:
        """The comparison's value when both sides differ by a constant, else None."""
        diff = self.lhs - self.rhs
        if not diff.is_const:
            return None
        d = diff.value
        return {"<": d < 0, "<=": d <= 0, ">": d > 0, ">=": d >= 0, "==": d == 0,
                "!=": d != 0}[self.op]


@dataclass(eq=False)
class MaskValue(Value):
    """A conjunction of integer comparisons (a mask such as `offs < n`)."""

    bounds: tuple[Bound, ...]


@dataclass(eq=False)
class DataValue(Value):
    """A node of the value graph: Triton construct `op` (load, dot, reduce, exp, add, ...) of
    `operands`, with printable `attrs`; `number` orders the nodes of one kernel (`%3`),
    `loops` are the loops it is made in, outermost first."""

    op: str
    operands: tuple[Value, ...]
    attrs: dict[str, str] = field(default_factory=dict)
    number: int = -1
    loops: tuple[int, ...] = ()


@dataclass(eq=False)
class FloatValue(Value):
    """A floating-point constant (`0.0`, `-float("inf")`)."""

    value: float


@dataclass(eq=False)
class DtypeValue(Value):
    """A Triton dtype (`tl.float32`), named without its module."""

    name: str


@dataclass(eq=False)
class TupleValue(Value):
    """A tuple or list of values (a block shape, a block pointer's offsets)."""

    items: tuple[Value, ...]


@dataclass(eq=False)
class StrValue(Value):
    """A string constant (a padding option, an eviction policy)."""

    text: str


@dataclass(eq=False)
class NoneValue(Value):
    """`None` (an absent mask or `other`)."""


@dataclass(eq=False)
class BlockPtrValue(Value):
    """A block pointer (`tl.make_block_ptr`, moved by `tl.advance`) or a tensor descriptor
    (`tl.make_tensor_descriptor`, whose loads and stores name their offsets): a tensor of
    `dims` at `base` with `strides`, and a block of `shape` (the value's) at `offsets` (a
    descriptor's are zero; each access gives its own)."""

    base: IntExpr
    dims: tuple[IntExpr, ...]
    strides: tuple[IntExpr, ...]
    offsets: tuple[IntExpr, ...]
    order: tuple[int, ...]
    descriptor: bool = False

    def moved(self, offsets: tuple[IntExpr, ...]) -> BlockPtrValue:
        """The same block pointer at other offsets."""
        return BlockPtrValue(self.shape, self.loc, self.base, self.dims, self.strides, offsets,
                             self.order, self.descriptor)
