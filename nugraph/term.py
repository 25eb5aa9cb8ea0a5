"""Terms: small op trees over e-classes, the shape in which a candidate is proposed and proved.

A term is an op (name and properties, as in an e-node) applied to sub-terms or to e-classes
(plain ints). `term_function` turns terms into a `func.func` over the classes they read, which is
what the verifier and the interpreter take; `insert_term` adds an admitted term to the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

from axon.dialects.ax.tensor_type import TensorType
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.ops import node_semantics, op_class

Child = Union["Term", int]


@dataclass(frozen=True)
class Term:
    """`op(children...)` with properties `attrs` (sorted by name); int children are classes."""

    op: str
    attrs: tuple[tuple[str, Any], ...]
    children: tuple[Child, ...]

    @staticmethod
    def of(node: ENode, children: Sequence[Child] | None = None) -> Term:
        return Term(node.op, node.attrs, tuple(node.children if children is None else children))

    def leaves(self) -> list[int]:
        """Classes read, in first-appearance order."""
        out: list[int] = []
        for c in self.children:
            for leaf in (c.leaves() if isinstance(c, Term) else [c]):
                if leaf not in out:
                    out.append(leaf)
        return out

    def canonical(self, g: EGraph) -> Term:
        return Term(self.op, self.attrs, tuple(
            c.canonical(g) if isinstance(c, Term) else g.find(c) for c in self.children))

    def size(self) -> int:
        return 1 + sum(c.size() for c in self.children if isinstance(c, Term))

    def text(self, names: dict[int, str] | None = None) -> str:
        """`ax.matmul(c3, ax.sum{axes=(1,)}(c5))`; classes as `c<id>` unless named."""
        node = ENode(self.op, self.attrs, ())
        args = [c.text(names) if isinstance(c, Term) else (names or {}).get(c, f"c{c}")
                for c in self.children]
        return f"{node.label()}({', '.join(args)})"

    def result_type(self, g: EGraph) -> TensorType:
        types = [c.result_type(g) if isinstance(c, Term) else g.type_of(c)
                 for c in self.children]
        result = node_semantics(ENode(self.op, self.attrs, ()), types).result_type
        # `Semantics` types it as any attribute; an op over tensors (every e-graph op) makes one
        assert isinstance(result, TensorType), f"'{self.op}' makes a non-tensor {result}"
        return result


def term_function(g: EGraph, terms: Sequence[Term], leaves: Sequence[int], name: str) -> FuncOp:
    """`func.func @name(leaves...) -> (terms...)`: each term built with `Op.make`."""
    leaf_types = [g.type_of(c) for c in leaves]
    block = Block(arg_types=leaf_types)
    values: dict[int, SSAValue] = {g.find(c): a for c, a in zip(leaves, block.args, strict=True)}
    memo: dict[Term, SSAValue] = {}

    def build(t: Child) -> SSAValue:
        if not isinstance(t, Term):
            return values[g.find(t)]
        if t in memo:
            return memo[t]
        op = op_class(t.op).make([build(c) for c in t.children], **dict(t.attrs))
        block.add_op(op)
        memo[t] = op.results[0]
        return memo[t]

    results = [build(t) for t in terms]
    block.add_op(ReturnOp(*results))
    return FuncOp(name, FunctionType.from_lists(leaf_types, [r.type for r in results]),
                  Region(block))


def lookup_term(g: EGraph, t: Child) -> int | None:
    """The class already holding term `t`, or None when some part of it is new."""
    if not isinstance(t, Term):
        return g.find(t)
    children: list[int] = []
    for c in t.children:
        cls = lookup_term(g, c)
        if cls is None:
            return None
        children.append(cls)
    return g.lookup(ENode(t.op, t.attrs, tuple(children)))


def insert_term(g: EGraph, t: Child, justification: str) -> tuple[int, int]:
    """Add `t` (new parts justified by `justification`); returns (class, root node id)."""
    if not isinstance(t, Term):
        cls = g.find(t)
        return cls, g.class_nodes(cls)[0]
    children = tuple(insert_term(g, c, justification)[0] for c in t.children)
    node = ENode(t.op, t.attrs, children)
    cls = g.add(node, justification)
    nid = g.node_id(node)
    assert nid is not None
    return cls, nid
