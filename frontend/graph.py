"""Where builder functions put their ops: one `GraphBuilder` per function being built.

Ops with tensor operands go to the block their operands live in; ops without (constants, iota)
go to the builder made active with `GraphBuilder.active()`. `build_function` wraps a body callback
into a `func.func`, which both frontends use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialects import func
from xdsl.ir import Block, Region, SSAValue

from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.ax.tensor_type import TensorType

_ACTIVE: ContextVar[GraphBuilder | None] = ContextVar("axon_active_graph_builder", default=None)


class GraphBuilder:
    """Appends ops to one block (the body of the function being built)."""

    def __init__(self, block: Block):
        self.block = block

    def insert(self, op: TensorOp) -> SSAValue:
        """Append `op` and return its result."""
        self.block.add_op(op)
        return op.results[0]

    @contextmanager
    def active(self) -> Iterator[GraphBuilder]:
        """Make this the builder that operand-less ops (constants, iota) go to."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


def current_builder() -> GraphBuilder:
    """The active builder; ShapeError when no function is being built."""
    builder = _ACTIVE.get()
    if builder is None:
        raise ShapeError("no function is being built: call builders inside a traced function")
    return builder


def build_function(name: str, arg_types: Sequence[TensorType],
                   body: Callable[[GraphBuilder, list[SSAValue]], Sequence[SSAValue]],
                   arg_names: Sequence[str] = ()) -> func.FuncOp:
    """A `func.func @name` whose body `body(builder, args)` builds, returning its results.

    `arg_names` (the parameter names) become the printed names of the block arguments."""
    block = Block(arg_types=list(arg_types))
    for arg, arg_name in zip(block.args, arg_names, strict=False):
        arg.name_hint = arg_name
    builder = GraphBuilder(block)
    with builder.active():
        results = list(body(builder, list(block.args)))
    block.add_op(func.ReturnOp(*results))
    return func.FuncOp(name, (list(arg_types), [r.type for r in results]), Region(block))
