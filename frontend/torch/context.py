"""What the aten handlers share: the sizes at capture, and the two ways a handler stops (an
unsupported use, or a size to substitute before translating again)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from axon.dialects.ax.shapes import product
from axon.dialects.form.intexpr import IntExpr
from axon.frontend.builders import Tensor


class Unsupported(Exception):
    """An operator, or a use of one, outside the translation (the message says which)."""


class Substitute(Exception):
    """Torch's graph equates the input size `symbol` with `expr`: translate again with it."""

    def __init__(self, symbol: str, expr: IntExpr):
        super().__init__(f"{symbol} = {expr}")
        self.symbol = symbol
        self.expr = expr


class SizeContext:
    """What handlers need besides their arguments: the sizes at capture (symbol -> value)."""

    def __init__(self, sizes: dict[str, int]):
        self.sizes = sizes

    def extent(self, dim: IntExpr) -> int:
        """The value of `dim` at the capture's sizes."""
        return dim.evaluate(self.sizes)

    def dim_of(self, extent: int) -> IntExpr:
        """The size symbol of `extent` (the first of that value), or the constant."""
        if extent > 1:
            for name, value in self.sizes.items():
                if value == extent:
                    return IntExpr.sym(name)
        return IntExpr.const(extent)

    def unify(self, a: IntExpr, b: IntExpr) -> None:
        """Two dims torch requires equal: nothing when they are, a Substitute of a bare input
        symbol when their values agree, ShapeError otherwise (left to the builders to word)."""
        if a == b or self.extent(a) != self.extent(b):
            return
        for sym, other in ((a.as_symbol, b), (b.as_symbol, a)):
            if sym is not None and sym not in other.symbols():
                raise Substitute(sym, other)

    def broadcast(self, *values: Any) -> None:
        """Unify the right-aligned dims of tensors torch broadcasts together."""
        shapes = [v.shape for v in values if isinstance(v, Tensor)]
        for a, b in zip(shapes, shapes[1:], strict=False):
            for da, db in zip(reversed(a), reversed(b), strict=False):
                if da != IntExpr.const(1) and db != IntExpr.const(1):
                    self.unify(da, db)

    def reshape_dims(self, x: Tensor, target: Sequence[int]) -> list[IntExpr]:
        """The dims of `x` reshaped to the integer `target` (one -1 allowed): runs of x's dims
        whose extents multiply to a target extent become their product, the rest take the size
        symbol of their extent."""
        known = math.prod(self.extent(d) for d in x.shape)
        rest = math.prod(t for t in target if t != -1)
        extents = [known // rest if t == -1 and rest else t for t in target]
        out: list[IntExpr] = []
        pos = 0
        dims = list(x.shape)
        for extent in extents:
            while pos < len(dims) and self.extent(dims[pos]) == 1 and extent != 1:
                pos += 1
            run, value, end = [], 1, pos
            while end < len(dims) and value < extent:
                value *= self.extent(dims[end])
                run.append(dims[end])
                end += 1
            if extent == 1:
                out.append(IntExpr.const(1))
                if pos < len(dims) and self.extent(dims[pos]) == 1:
                    pos += 1
            elif value == extent and run:
                out.append(product(run))
                pos = end
            else:
                out.append(self.dim_of(extent))
                pos = len(dims)
        return out
