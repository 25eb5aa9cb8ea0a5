"""The nu-graph as `nu` dialect IR: print a graph for FileCheck and read one back.

    func.func @f(%x: ...) -> ... {
      %r = nu.graph -> ... {
        %c0 = nu.class %x : ...
        %0 = ax.matmul %c0, %c1 {nu.proof = "input"} ...
        %c2 = nu.class %0, %1 : ...
        nu.yield %c2 : ...
      } {proofs = {...}}
      func.return %r : ...
    }

Classes are printed children first where the graph allows it; a class inside a cycle is
referenced before its definition (the region is a graph region, see dialects/nu.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import FunctionType, IntAttr, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

from axon.dialects import nu
from axon.dialects.ax import TensorOp
from axon.nugraph.convert import Imported
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph, Proof
from axon.nugraph.ops import op_class

_READ_BACK = "read-back"
"""The reason recorded for unions read back from printed IR (the printed graph was verified)."""


def graph_function(g: EGraph, imported: Imported, best: dict[int, int] | None = None) -> FuncOp:
    """A `func.func` whose body is one `nu.graph` holding every class of `g`."""
    param_types = [g.type_of(c) for c in imported.params]
    outer = Block(arg_types=param_types)
    for arg, name in zip(outer.args, imported.param_names, strict=True):
        arg.name_hint = name
    inner = Block()
    order = _class_order(g)
    placeholders: dict[int, SSAValue] = {}
    class_ops: dict[int, nu.ClassOp] = {}
    # forward references: create a placeholder class op per class first, fill operands after
    for c in order:
        op = nu.ClassOp.create(operands=[], result_types=[g.type_of(c)])
        class_ops[c] = op
        placeholders[c] = op.result
        op.result.name_hint = f"c{c}"
    for c in order:
        operands: list[SSAValue] = []
        for nid in g.class_nodes(c):
            node = g.canonical(g.nodes[nid])
            if node.is_input:
                operands.append(outer.args[dict(node.attrs)["index"]])
                continue
            enode = op_class(node.op).make([placeholders[ch] for ch in node.children],
                                           **node.attr_dict())
            enode.attributes[nu.PROOF_ATTR] = StringAttr(g.justification[nid])
            inner.add_op(enode)
            operands.append(enode.results[0])
        cls_op = class_ops[c]
        cls_op.operands = operands
        if best is not None and c in best:
            cls_op.properties["best"] = IntAttr(g.class_nodes(c).index(best[c]))
        inner.add_op(cls_op)
    result_types = [g.type_of(r) for r in imported.results]
    inner.add_op(nu.YieldOp(*[class_ops[g.find(r)].result for r in imported.results]))
    proofs = {pid: p.summary() for pid, p in g.proofs.items()}
    graph = nu.GraphOp(result_types, Region(inner), proofs)
    outer.add_op(graph)
    outer.add_op(ReturnOp(*graph.results))
    return FuncOp(imported.name, FunctionType.from_lists(param_types, result_types),
                  Region(outer))


def _class_order(g: EGraph) -> list[int]:
    """Classes children-first (depth-first over each class's nodes), cycles broken arbitrarily."""
    order: list[int] = []
    state: dict[int, int] = {}

    def visit(c: int) -> None:
        c = g.find(c)
        if c in state:
            return
        state[c] = 1
        for nid in g.class_nodes(c):
            for ch in g.nodes[nid].children:
                visit(ch)
        order.append(c)

    for c in g.class_ids():
        visit(c)
    return order


def read_graph(func_op: FuncOp) -> tuple[EGraph, Imported]:
    """Rebuild an EGraph from a function holding one `nu.graph` (the inverse of graph_function).

    The proofs table is read back as records whose text is the printed summary; the e-nodes of
    one printed class are merged under the reason "read-back" (the printed graph verified).
    """
    block = func_op.body.blocks.first
    assert block is not None
    graph = next(op for op in block.ops if isinstance(op, nu.GraphOp))
    g = EGraph()
    for pid, text in (graph.proofs.data.items() if graph.proofs is not None else []):
        assert isinstance(text, StringAttr)
        g.record_proof(Proof(pid, "recorded", "", "", "as printed", 0.0, recorded=text.data))
    params = [g.add_input(arg.name_hint or f"arg{i}", arg.type, i)  # type: ignore[arg-type]
              for i, arg in enumerate(block.args)]
    classes = [op for op in graph.body.block.ops if isinstance(op, nu.ClassOp)]
    # a class is known once one of its nodes has known children; iterate to a fixed point
    class_id: dict[SSAValue, int] = {}
    pending = list(classes)
    while pending:
        progressed = False
        for cls_op in list(pending):
            for v in cls_op.nodes:
                owner = v.owner
                if not isinstance(owner, TensorOp):
                    index = list(block.args).index(v)  # type: ignore[arg-type]
                    _merge_into(g, class_id, cls_op, params[index])
                    continue
                if all(o in class_id for o in owner.operands):
                    node = ENode.make(owner.name, owner.attrs(),
                                      tuple(class_id[o] for o in owner.operands))
                    proof = owner.attributes[nu.PROOF_ATTR]
                    assert isinstance(proof, StringAttr)
                    c = g.add(node, proof.data)
                    _merge_into(g, class_id, cls_op, c)
            if cls_op.result in class_id:
                pending.remove(cls_op)
                progressed = True
        if not progressed:
            raise ValueError("nu.graph has a class none of whose e-nodes can be built")
    g.rebuild()
    terminator = graph.body.block.last_op
    assert isinstance(terminator, nu.YieldOp)
    results = [g.find(class_id[v]) for v in terminator.values]
    names = [arg.name_hint or f"arg{i}" for i, arg in enumerate(block.args)]
    return g, Imported(func_op.sym_name.data, params, names, results)


def _merge_into(g: EGraph, class_id: dict[SSAValue, int], cls_op: nu.ClassOp, c: int) -> None:
    known = class_id.get(cls_op.result)
    if known is None:
        class_id[cls_op.result] = c
    elif g.find(known) != g.find(c):
        if _READ_BACK not in g.proofs:
            g.record_proof(Proof(_READ_BACK, "read back", "", "", "as printed", 0.0,
                                 recorded="classes as printed in nu IR"))
        g.union(g.class_nodes(known)[0], g.class_nodes(c)[0], _READ_BACK)
        class_id[cls_op.result] = g.find(known)


