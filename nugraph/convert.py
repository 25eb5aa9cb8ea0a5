"""Between `ax` functions and the nu-graph: import a function's ops as e-nodes justified `input`,
and export an extraction as a new `func.func` of `ax` ops."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.interface import form_op, has_form
from axon.nugraph.eclass import Attrs, ENode
from axon.nugraph.egraph import INPUT_PROOF, EGraph
from axon.nugraph.extract import Extraction
from axon.nugraph.ops import op_class
from axon.nugraph.traversal import postorder


class ConvertError(ValueError):
    """A function the nu-graph cannot hold (an op that is not a tensor-level op, ...)."""


@dataclass
class Imported:
    """A function held in a graph: its parameter classes and its result classes."""

    name: str
    params: list[int]
    param_names: list[str]
    results: list[int]


def import_function(g: EGraph, func_op: FuncOp) -> Imported:
    """Add the function's ops to `g`; returns where its parameters and results are."""
    block = func_op.body.blocks.first
    if block is None:
        raise ConvertError(f"function '{func_op.sym_name.data}' has no body")
    values: dict[SSAValue, int] = {}
    params, names = [], []
    for i, arg in enumerate(block.args):
        if not isinstance(arg.type, TensorType):
            raise ConvertError(f"parameter #{i} of '{func_op.sym_name.data}' is not an !ax.tensor")
        name = arg.name_hint or f"arg{i}"
        values[arg] = g.add_input(name, arg.type, i)
        params.append(values[arg])
        names.append(name)
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return Imported(func_op.sym_name.data, params, names,
                            [g.find(values[v]) for v in op.arguments])
        if not has_form(op):
            raise ConvertError(f"'{op.name}' has no generic form; the nu-graph holds only ops "
                               "that state their meaning as one")
        node = ENode.make(op.name, form_op(op).attrs(), tuple(values[v] for v in op.operands))
        values[op.results[0]] = g.add(node, INPUT_PROOF)
    raise ConvertError(f"function '{func_op.sym_name.data}' ends without func.return")


class OpBuilder:
    """Builds the op of an e-node over given operands. The first op of each kind (op, properties,
    operand types) is made by its class's `make`, which derives its result type from its
    semantics; later ones are copies of it over their own operands: a large program repeats a
    few kinds of op thousands of times, and deriving semantics is what building costs."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, Attrs, tuple[Attribute, ...]], Operation] = {}

    def __call__(self, node: ENode, operands: Sequence[SSAValue]) -> Operation:
        key = (node.op, node.attrs, tuple(v.type for v in operands))
        first = self._made.get(key)
        if first is None:
            op: Operation = op_class(node.op).make(operands, **node.attr_dict())
            if not op.regions:
                self._made[key] = op
            return op
        copy = first.clone_without_regions(clone_operands=False, clone_name_hints=False)
        copy.operands = tuple(operands)
        return copy


def export_function(g: EGraph, extraction: Extraction, name: str,
                    param_classes: Sequence[int], param_names: Sequence[str] | None = None
                    ) -> FuncOp:
    """A `func.func` computing the extracted program; parameters in the order of `param_classes`."""
    param_types = [g.type_of(c) for c in param_classes]
    block = Block(arg_types=param_types)
    values: dict[int, SSAValue] = {}
    for i, (c, arg) in enumerate(zip(param_classes, block.args, strict=True)):
        values[g.find(c)] = arg
        if param_names is not None:
            arg.name_hint = param_names[i]
    choice = extraction.chosen()

    def operands(c: int) -> list[int]:
        if c in values:
            return []
        node = g.nodes[choice[c]]
        if node.is_input:
            raise ConvertError(f"extracted program reads input class {c}, which is not among "
                               "the parameters")
        return [g.find(ch) for ch in node.children]

    roots = [g.find(r) for r in extraction.roots]
    build = OpBuilder()
    # operands before their users, in the order a recursive walk from the roots emits them
    for c in postorder(roots, operands, on_cycle="raise"):
        if c not in values:
            node = g.nodes[choice[c]]
            op = build(node, [values[g.find(ch)] for ch in node.children])
            block.add_op(op)
            values[c] = op.results[0]
    results = [values[r] for r in roots]
    block.add_op(ReturnOp(*results))
    return FuncOp(name, FunctionType.from_lists(param_types, [v.type for v in results]),
                  Region(block))


def find_function(g: EGraph, func_op: FuncOp, params: Sequence[int]) -> list[int] | None:
    """The classes holding the function's results, when every op of it is already in `g`
    (parameters bound to `params`); None when some op is not. Adds nothing to the graph."""
    nodes = find_nodes(g, func_op, params)
    return None if nodes is None else [g.class_of(n) for n in nodes]


def find_nodes(g: EGraph, func_op: FuncOp, params: Sequence[int]) -> list[int] | None:
    """The e-node ids computing the function's results (see find_function)."""
    block = func_op.body.blocks.first
    if block is None:
        return None
    values: dict[SSAValue, int] = {}
    for arg, p in zip(block.args, params, strict=True):
        values[arg] = g.class_nodes(p)[0]
    for op in block.ops:
        if isinstance(op, ReturnOp):
            return [values[v] for v in op.arguments]
        if not has_form(op):
            return None
        node = ENode.make(op.name, form_op(op).attrs(),
                          tuple(g.class_of(values[v]) for v in op.operands))
        nid = g.node_id(node)
        if nid is None:
            return None
        values[op.results[0]] = nid
    return None
