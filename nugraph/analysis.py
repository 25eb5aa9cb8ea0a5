"""E-class analyses: the data a class carries, made from its e-nodes and merged on union (egg's
`Analysis`).

The graph asks its analysis for a new class's data (`make`, from the e-node and its children's
data; `parameter`, from a parameter's declared type) and for the data of two classes it unions
(`merge`). It reads each class's tensor type through `type_of`, because hash-consing, typed unions
and terms need the type whatever else an analysis tracks. The default, `ClassType`, carries the type
alone: the result type the op's semantics give (`ops.node_semantics`, the one definition of what
an op means).

    g = EGraph(analysis=ClassType())
    g.type_of(g.add(ENode.make("ax.matmul", {}, (x, w)), INPUT_PROOF))   # [M, N], from make()

A later level's analysis (a value range, a layout) carries its own data next to the type; when its
`merge` can change a class's data, the parents' data must be made again (egg's rebuild does that),
which `EGraph.rebuild` does not do yet: the default's data never changes on a union.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from axon.dialects.ax.tensor_type import TensorType
from axon.nugraph.eclass import ENode
from axon.nugraph.ops import node_semantics

D = TypeVar("D")


class Analysis(Protocol[D]):
    """The data of e-classes: made for a new class, merged when two classes become one."""

    def make(self, node: ENode, children: Sequence[D]) -> D:
        """The data of a new class holding the op e-node `node` over classes of `children` data."""
        ...

    def parameter(self, type_: TensorType) -> D:
        """The data of a program parameter's class, of declared type `type_`."""
        ...

    def merge(self, a: D, b: D) -> D:
        """The data of the union of classes with data `a` and `b` (of one type)."""
        ...

    def type_of(self, data: D) -> TensorType:
        """The tensor type of a class with `data`."""
        ...


class ClassType:
    """The default analysis: a class's data is its tensor type."""

    def make(self, node: ENode, children: Sequence[TensorType]) -> TensorType:
        result = node_semantics(node, children).result_type
        # `Semantics` types it as any attribute; an op over tensors (every e-graph op) makes one
        assert isinstance(result, TensorType), f"'{node.op}' makes a non-tensor {result}"
        return result

    def parameter(self, type_: TensorType) -> TensorType:
        return type_

    def merge(self, a: TensorType, b: TensorType) -> TensorType:
        # the graph refuses unions of different types before it merges data
        return a

    def type_of(self, data: TensorType) -> TensorType:
        return data
