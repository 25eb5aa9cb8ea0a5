"""Building functions of `nki` instructions for the tests: arguments in HBM, the body's
instructions added in order, the last value returned."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.ax import TensorType
from axon.dialects.nki import DmaCopyOp

#: adds an op to the function being built and gives its result
Add = Callable[[Operation], SSAValue]


def function(name: str, params: Sequence[TensorType],
             build: Callable[[list[SSAValue], Add], SSAValue]) -> FuncOp:
    """`func.func @name(params) { build(...); return }`."""
    block = Block(arg_types=list(params))
    ops: list[Operation] = []

    def add(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    result = build(list(block.args), add)
    block.add_ops([*ops, ReturnOp(result)])
    return FuncOp(name, FunctionType.from_lists(list(params), [result.type]), Region(block))


def to_sbuf(add: Add, value: SSAValue, **attrs: Any) -> SSAValue:
    """`value` DMA-copied into SBUF."""
    return add(DmaCopyOp.make([value], buffer="sbuf", **attrs))
