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

A tiled graph (`axon.nugraph.kernels.TiledGraph`) prints its kernels as `tile.kernel` e-nodes
of the result classes, just before the first of them (`graph_function(..., kernels=...)`);
`read_tiled_graph` reads one back, re-proving every class membership and every kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FileLineColLoc,
    FloatAttr,
    FunctionType,
    IntAttr,
    StringAttr,
    f64,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from axon.dialects import nu
from axon.dialects.form.interface import form_op, has_form
from axon.dialects.tile import KernelOp
from axon.nugraph.admission import enter, prove_and_record
from axon.nugraph.convert import ConvertError, Imported, OpBuilder, export_function
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import INPUT_PROOF, EGraph, Proof
from axon.nugraph.extract import reachable
from axon.nugraph.kernels import KernelNode, TiledGraph
from axon.nugraph.prover import NumericRejection, Prover
from axon.nugraph.term import Child, Term
from axon.nugraph.traversal import Nested, postorder, run_nested
from axon.verifier import ProofBudget, Proved, Refuted, Unknown, prove_equivalent
from axon.verifier.budget import SEARCH_BUDGET
from axon.verifier.cache import ProofCache

#: the most ops a read-back claim unfolds to (see `_Definitions.claim_depth`)
MAX_CLAIM_NODES = 64


def graph_function(g: EGraph, imported: Imported, best: dict[int, int] | None = None,
                   kernels: Sequence[KernelNode] = (), marked: int | None = None) -> FuncOp:
    """A `func.func` whose body is one `nu.graph` holding every class of `g`, and `kernels`
    as e-nodes of the result classes (their `best` is kernel #`marked`'s result, when given)."""
    param_types = [g.type_of(c) for c in imported.params]
    outer = Block(arg_types=param_types)
    for arg, name in zip(outer.args, imported.param_names, strict=True):
        arg.name_hint = name
    inner = Block()
    order = _class_order(g)
    build = OpBuilder()
    placeholders: dict[int, SSAValue] = {}
    class_ops: dict[int, nu.ClassOp] = {}
    # forward references: create a placeholder class op per class first, fill operands after
    for c in order:
        op = nu.ClassOp.create(operands=[], result_types=[g.type_of(c)])
        class_ops[c] = op
        placeholders[c] = op.result
        op.result.name_hint = f"c{c}"
    results = [g.find(r) for r in imported.results]
    kernel_ops: list[Operation] = []
    for c in order:
        if c in results and not kernel_ops:
            kernel_ops = [_kernel_op(g, imported, k, order, placeholders) for k in kernels]
            for kernel_op in kernel_ops:
                inner.add_op(kernel_op)
        operands: list[SSAValue] = []
        for nid in g.class_nodes(c):
            node = g.canonical(g.nodes[nid])
            if node.is_input:
                operands.append(outer.args[dict(node.attrs)["index"]])
                continue
            enode = build(node, [placeholders[ch] for ch in node.children])
            enode.attributes[nu.PROOF_ATTR] = StringAttr(g.justification[nid])
            inner.add_op(enode)
            operands.append(enode.results[0])
        cls_op = class_ops[c]
        if best is not None and c in best:
            cls_op.properties["best"] = IntAttr(g.class_nodes(c).index(best[c]))
        for n, kernel_op in enumerate(kernel_ops):
            for k, r in enumerate(results):
                if r == c:
                    if n == marked:
                        cls_op.properties["best"] = IntAttr(len(operands))
                    operands.append(kernel_op.results[k])
        cls_op.operands = operands
        inner.add_op(cls_op)
    result_types = [g.type_of(r) for r in imported.results]
    inner.add_op(nu.YieldOp(*[class_ops[g.find(r)].result for r in imported.results]))
    proofs = {pid: p.summary() for pid, p in g.proofs.items()}
    proofs.update({k.proof_id: f"verify-equivalence: the {k.tiling} kernel equals the program "
                   f"its {nu.VARIANT_ATTR} names" for k in kernels})
    graph = nu.GraphOp(result_types, Region(inner), proofs)
    outer.add_op(graph)
    outer.add_op(ReturnOp(*graph.results))
    return FuncOp(imported.name, FunctionType.from_lists(param_types, result_types),
                  Region(outer))


def _kernel_op(g: EGraph, imported: Imported, node: KernelNode, order: Sequence[int],
               placeholders: dict[int, SSAValue]) -> Operation:
    """The kernel e-node of `node`: its kernel over the parameters' classes, with its proof,
    its variant as one operand index per class of `order`, and its figures."""
    op = node.op().clone()
    op.operands = [placeholders[g.find(p)] for p in imported.params]
    variant = {g.class_of(n): n for n in node.variant}
    picks = [g.class_nodes(c).index(variant[c]) if c in variant else -1 for c in order]
    op.attributes[nu.PROOF_ATTR] = StringAttr(node.proof_id)
    op.attributes[nu.VARIANT_ATTR] = DenseArrayBase.from_list(i64, picks)
    op.attributes["axon.tiling"] = StringAttr(node.tiling)
    op.attributes["axon.tile_sizes"] = ArrayAttr([StringAttr(t) for t in node.tile_sizes])
    op.attributes["axon.seconds"] = FloatAttr(node.seconds, f64)
    op.attributes["axon.hbm_bytes"] = FloatAttr(node.hbm_bytes, f64)
    return op


def _class_order(g: EGraph) -> list[int]:
    """Classes children-first (depth-first over each class's nodes), cycles broken arbitrarily."""
    return postorder(g.class_ids(), lambda c: [g.find(ch) for nid in g.class_nodes(c)
                                               for ch in g.nodes[nid].children])


def read_graph(func_op: FuncOp, prover: Prover | None = None) -> tuple[EGraph, Imported]:
    """Rebuild an EGraph from a function holding one `nu.graph` (the inverse of graph_function).

    The printed graph is untrusted: its `nu.proof` marks and proofs table are claims, not proofs.
    Each class is defined by one e-node (`_defining_nodes`); every other e-node of the class is
    re-proved equal to that definition with `prover` (`_admit_member`). A proved e-node is
    justified by its fresh proof; the table's entries are kept only where they justify a defining
    e-node. GraphReadError, located at the offending op, when a membership is not proved.
    Kernel e-nodes are left out (`read_tiled_graph` reads them).
    """
    reading = _read(func_op, prover)
    return reading.g, reading.imported


@dataclass
class _Reading:
    """A printed graph read back: the graph, the program, and what maps printed to read."""

    g: EGraph
    imported: Imported
    graph: nu.GraphOp
    classes: list[nu.ClassOp]
    defs: _Definitions
    input_nodes: dict[SSAValue, int]
    """Each parameter's input e-node."""


def _read(func_op: FuncOp, prover: Prover | None) -> _Reading:
    prover = prover or Prover()
    block = func_op.body.blocks.first
    assert block is not None
    graph = next(op for op in block.ops if isinstance(op, nu.GraphOp))
    g = EGraph()
    for pid, text in (graph.proofs.data.items() if graph.proofs is not None else []):
        assert isinstance(text, StringAttr)
        g.record_proof(Proof(pid, "recorded", "", "", "as printed", 0.0, recorded=text.data))
    params = [g.add_input(arg.name_hint or f"arg{i}", arg.type, i)  # type: ignore[arg-type]
              for i, arg in enumerate(block.args)]
    input_nodes: dict[SSAValue, int] = {arg: g.class_nodes(p)[0]
                                        for arg, p in zip(block.args, params, strict=True)}
    classes = [op for op in graph.body.block.ops if isinstance(op, nu.ClassOp)]
    defining = _defining_nodes(classes, block)
    defs = _Definitions(g)
    for cls_op, v in defining:
        defs.define(cls_op, v, params[list(block.args).index(v)]  # type: ignore[arg-type]
                    if not has_form(v.owner) else None)
    for cls_op, v in defining:
        for other in _members(cls_op):
            if other is not v:
                _admit_member(g, prover, defs, cls_op, v, other)
    cited = {g.justification[n] for c in g.class_ids() for n in g.class_nodes(c)}
    for pid in [p for p, proof in g.proofs.items() if proof.recorded and p not in cited]:
        del g.proofs[pid]
    g.rebuild()
    terminator = graph.body.block.last_op
    assert isinstance(terminator, nu.YieldOp)
    results = [g.find(defs.class_id[v]) for v in terminator.values]
    names = [arg.name_hint or f"arg{i}" for i, arg in enumerate(block.args)]
    return _Reading(g, Imported(func_op.sym_name.data, params, names, results), graph, classes,
                    defs, input_nodes)


def read_tiled_graph(func_op: FuncOp, prover: Prover | None = None, *,
                     budget: ProofBudget = SEARCH_BUDGET, cache: ProofCache | None = None
                     ) -> TiledGraph:
    """Read a graph with its kernel e-nodes back (the inverse of `graph_function` with
    kernels). The untiled classes are read as `read_graph` reads them; each kernel is proved
    again (`verify-equivalence`, under `budget`, with `cache`) equal to the program its
    `nu.variant` names, an extraction of the graph: a proved kernel is justified by its fresh
    proof. GraphReadError, located at the kernel, when the variant is no program of the
    results or the kernel is not proved equal to it."""
    reading = _read(func_op, prover)
    tiled = TiledGraph(reading.g, reading.imported)
    kernel_ops = [op for op in reading.graph.body.block.ops if nu.is_kernel(op)]
    for op in kernel_ops:
        assert isinstance(op, KernelOp)
        tiled.kernels.append(_read_kernel(reading, op, budget, cache))
    first = reading.graph.body.block.last_op
    assert isinstance(first, nu.YieldOp)
    if first.values:
        cls_op = first.values[0].owner
        assert isinstance(cls_op, nu.ClassOp)
        if cls_op.best is not None:
            owner = cls_op.nodes[cls_op.best.data].owner
            tiled.marked = kernel_ops.index(owner) if owner in kernel_ops else None
    return tiled


def _read_kernel(reading: _Reading, op: KernelOp, budget: ProofBudget,
                 cache: ProofCache | None) -> KernelNode:
    """One kernel e-node, proved equal to its variant."""
    g, imported = reading.g, reading.imported
    variant = op.attributes[nu.VARIANT_ATTR]
    assert isinstance(variant, DenseArrayBase)  # the dialect verified it
    nodes: list[int] = []
    for pick, cls_op in zip(variant.get_values(), reading.classes, strict=True):
        if isinstance(pick, int) and pick >= 0:
            v = cls_op.nodes[pick]
            if isinstance(v, BlockArgument):
                nodes.append(reading.input_nodes[v])
            else:
                nid = g.node_id(reading.defs.enode(v.owner))  # type: ignore[arg-type]
                assert nid is not None  # every printed e-node was read into the graph
                nodes.append(nid)
    choice = {g.class_of(n): n for n in nodes}
    tiling = _string(op, "axon.tiling")
    where = f"kernel e-node ({tiling}, {nu.PROOF_ATTR} = \"{_cited(op)}\")"
    if len(choice) != len(set(nodes)) or reachable(g, imported.results, choice) is None:
        raise GraphReadError(_located(op, f"{where}: its {nu.VARIANT_ATTR} is no program of "
                                      "the graph's results (a class it reaches has no entry, "
                                      "two entries fall in one class, or it is cyclic)"))
    node = KernelNode(_kernel_function(op, imported), tuple(nodes), "", tiling,
                      tuple(_strings(op, "axon.tile_sizes")), _float(op, "axon.seconds"),
                      _float(op, "axon.hbm_bytes"))
    program = export_function(g, node.variant_extraction(g, imported.results),
                              imported.name, imported.params, imported.param_names)
    verdict = prove_equivalent(node.kernel, program, budget=budget, cache=cache)
    if not isinstance(verdict, Proved):
        raise GraphReadError(_located(op, f"{where} is not proved equal to the program its "
                                      f"{nu.VARIANT_ATTR} names: {_why(verdict)}"))
    return replace(node, proof_id=verdict.proof_id)


def _kernel_function(op: KernelOp, imported: Imported) -> FuncOp:
    """A function over the program's parameters holding a copy of the kernel e-node (its graph
    attributes left out)."""
    types = [v.type for v in op.operands]
    block = Block(arg_types=types)
    for arg, name in zip(block.args, imported.param_names, strict=True):
        arg.name_hint = name
    kernel = op.clone()
    kernel.operands = list(block.args)
    for key in (nu.PROOF_ATTR, nu.VARIANT_ATTR, "axon.tiling", "axon.tile_sizes",
                "axon.seconds", "axon.hbm_bytes"):
        kernel.attributes.pop(key, None)
    block.add_op(kernel)
    block.add_op(ReturnOp(*kernel.results))
    return FuncOp(imported.name, FunctionType.from_lists(types, [r.type for r in kernel.results]),
                  Region(block))


def _string(op: Operation, key: str) -> str:
    value = op.attributes.get(key)
    if not isinstance(value, StringAttr):
        raise GraphReadError(_located(op, f"kernel e-node has no '{key}' string"))
    return value.data


def _strings(op: Operation, key: str) -> list[str]:
    value = op.attributes.get(key)
    if not isinstance(value, ArrayAttr) or not all(isinstance(v, StringAttr) for v in value):
        raise GraphReadError(_located(op, f"kernel e-node has no '{key}' array of strings"))
    return [v.data for v in value]  # type: ignore[attr-defined]


def _float(op: Operation, key: str) -> float:
    value = op.attributes.get(key)
    if not isinstance(value, FloatAttr):
        raise GraphReadError(_located(op, f"kernel e-node has no '{key}' float"))
    return float(value.value.data)


def _members(cls_op: nu.ClassOp) -> list[SSAValue]:
    """A class's untiled e-nodes (and parameters): its operands but kernels' results."""
    return [v for v in cls_op.nodes if not nu.is_kernel(v.owner)]


class GraphReadError(ConvertError):
    """A printed `nu.graph` that does not check: a class with no definable e-node, or an e-node
    not proved equal to its class. The message starts with the op's location when it has one."""


def _is_input(v: SSAValue) -> bool:
    """A parameter, or an e-node marked as part of the input program."""
    if not has_form(v.owner):
        return True
    proof = v.owner.attributes.get(nu.PROOF_ATTR)
    return isinstance(proof, StringAttr) and proof.data == INPUT_PROOF


def _defining_nodes(classes: list[nu.ClassOp], block: Block) -> list[tuple[nu.ClassOp, SSAValue]]:
    """One defining e-node per class, children's classes defined first (so the definitions form a
    DAG): a class's first input e-node, or, for a class with none (made by a move), its first
    e-node whose children are already defined."""
    defined: set[SSAValue] = set()
    order: list[tuple[nu.ClassOp, SSAValue]] = []
    args = set(block.args)
    pending = list(classes)
    while pending:
        waiting: list[nu.ClassOp] = []  # pending after this pass, in order
        for cls_op in pending:
            members = _members(cls_op)
            inputs = [v for v in members if _is_input(v)]
            for v in inputs[:1] or members:
                owner = v.owner
                if not has_form(owner) and v not in args:
                    raise GraphReadError(_located(cls_op, f"{_class_name(cls_op)}: operand "
                                                  f"{_node_name(v)} is neither an e-node of the "
                                                  "graph nor a parameter of the function"))
                if not has_form(owner) or all(o in defined for o in owner.operands):
                    order.append((cls_op, v))
                    defined.add(cls_op.result)
                    break
            else:
                waiting.append(cls_op)
        progressed = len(waiting) < len(pending)
        pending = waiting
        if not progressed:
            cls_op = pending[0]
            raise GraphReadError(_located(cls_op, f"{_class_name(cls_op)}: no e-node of the class "
                                          "can define it (each reads a class that is not defined "
                                          "without it)"))
    return order


class _Definitions:
    """The printed classes read so far: each one's class in the graph and its defining e-node,
    through which a class is expanded into the value it denotes."""

    def __init__(self, g: EGraph) -> None:
        self.g = g
        self.class_id: dict[SSAValue, int] = {}
        self.node: dict[SSAValue, tuple[ENode, tuple[SSAValue, ...]] | None] = {}

    def define(self, cls_op: nu.ClassOp, v: SSAValue, param: int | None) -> None:
        """Add the defining e-node `v` (no proof needed: it is what its class means), or the
        parameter class `param`."""
        if param is not None:
            self.class_id[cls_op.result], self.node[cls_op.result] = param, None
            return
        assert has_form(v.owner)
        node = self.enode(v.owner)
        self.class_id[cls_op.result] = self.g.add(node, _cited(v.owner))
        self.node[cls_op.result] = (node, tuple(v.owner.operands))

    def enode(self, op: Operation) -> ENode:
        return ENode.make(op.name, form_op(op).attrs(), tuple(self.g.find(self.class_id[o])
                                                     for o in op.operands))

    def claim_depth(self, cls: SSAValue, operands: Sequence[SSAValue]) -> int:
        """How deep a claim that `cls` equals an e-node over `operands` unfolds: everything (the
        claim is then over the parameters) when that fits `MAX_CLAIM_NODES` ops, else the
        deepest unfolding that does (at least one level). Terms are trees: in a deep program
        that reuses values, unfolding everything would repeat them exponentially often."""
        sizes: dict[tuple[SSAValue, int], tuple[int, bool]] = {}

        def size(v: SSAValue, depth: int) -> Nested[tuple[int, bool]]:
            """(ops of `expand(v, depth)`, whether only parameters are left as leaves)."""
            if (v, depth) not in sizes:
                definition = self.node[v]
                if definition is None:
                    sizes[v, depth] = (0, True)
                elif depth == 0:
                    sizes[v, depth] = (0, False)
                else:
                    total, complete = 1, True
                    for o in definition[1]:
                        n, c = yield size(o, depth - 1)
                        total, complete = total + n, complete and c
                        if total > MAX_CLAIM_NODES:
                            break
                    sizes[v, depth] = (total, complete)
            return sizes[v, depth]

        def claim(depth: int) -> Nested[tuple[int, bool]]:
            total, complete = yield size(cls, depth)
            total += 1
            for o in operands:
                n, c = yield size(o, depth - 1)
                total, complete = total + n, complete and c
            return total, complete

        for depth in range(1, len(self.node) + 1):
            total, complete = run_nested(claim(depth))
            if total > MAX_CLAIM_NODES:
                return max(depth - 1, 1)
            if complete:
                return depth  # deeper unfoldings are the same claim
        return max(len(self.node), 1)

    def expand(self, cls: SSAValue, depth: int) -> Child:
        """The class's value with `depth` levels of defining e-nodes unfolded (parameters and the
        classes at that depth stay classes)."""
        definition = self.node[cls]
        if definition is None or depth == 0:
            return self.class_id[cls]
        node, operands = definition
        return Term(node.op, node.attrs, tuple(self.expand(o, depth - 1) for o in operands))


def _admit_member(g: EGraph, prover: Prover, defs: _Definitions, cls_op: nu.ClassOp,
                  defining: SSAValue, other: SSAValue) -> None:
    """Prove e-node `other` equal to its class's defining e-node and merge it in on that proof.

    The claim is over the parameters: both sides unfolded through defining e-nodes all the way
    (or as deep as `MAX_CLAIM_NODES` ops allow: a claim over free classes). When the solver
    cannot decide it in time, shallower unfoldings are tried, one level at a time: a move's proof
    compared a consumer over its producers with a small term, so a shallow claim often states it
    again, and one over more free classes is only stronger. A refutation of the first claim is
    final (every shallower claim is stronger, hence false too; a first claim over free classes is
    not unfolded further, which would pass `MAX_CLAIM_NODES`).
    """
    owner = other.owner
    if not has_form(owner) or defs.node[cls_op.result] is None:
        # the prover compares op terms; a parameter is not one, and no move makes this
        raise GraphReadError(_located(cls_op, f"{_class_name(cls_op)}: a parameter's class holds "
                                      f"another e-node ({_node_name(other)} with "
                                      f"{_node_name(defining)}); that is not re-provable"))
    node = defs.enode(owner)

    def claim(depth: int) -> tuple[Term, Term]:
        original = defs.expand(cls_op.result, depth)
        assert isinstance(original, Term)
        return original, Term(node.op, node.attrs, tuple(defs.expand(o, depth - 1)
                                                         for o in owner.operands))

    original, candidate = claim(defs.claim_depth(cls_op.result, owner.operands))
    verdict, pid = prove_and_record(g, prover, "read-back", original, candidate,
                                    extra_leaves=True)
    depth = 1
    while pid is None and isinstance(verdict, Unknown) and claim(depth) != (original, candidate):
        _, pid = prove_and_record(g, prover, "read-back", *claim(depth), extra_leaves=True)
        depth += 1
    why = _why(verdict)
    if pid is None and isinstance(verdict, NumericRejection):
        # the numeric test only rejects: the solver alone decides, and may give a counterexample
        solver, pid = prove_and_record(g, replace(prover, numeric_test=False), "read-back",
                                       original, candidate, extra_leaves=True)
        if isinstance(solver, Refuted):
            why = _why(solver)
        else:
            why = f"refuted by a numeric test on random inputs (the solver: {_why(solver)})"
    if pid is None:
        raise GraphReadError(_located(owner, f"{_class_name(cls_op)}: {_node_name(other)} is not "
                                      f"proved equal to its class (defined by "
                                      f"{_node_name(defining)}): {why}"))
    enter(g, g.class_nodes(defs.class_id[cls_op.result])[0], Term.of(node), pid)


def _cited(op: Operation) -> str:
    """The `nu.proof` an e-node op carries (the dialect verifier checks it names a proof)."""
    proof = op.attributes.get(nu.PROOF_ATTR)
    if not isinstance(proof, StringAttr):
        raise GraphReadError(_located(op, f"e-node '{op.name}' has no '{nu.PROOF_ATTR}'"))
    return proof.data


def _class_name(cls_op: nu.ClassOp) -> str:
    hint = cls_op.result.name_hint
    return f"nu.class %{hint}" if hint else "nu.class"


def _node_name(v: SSAValue) -> str:
    if has_form(v.owner):
        return f"e-node '{v.owner.name}' ({nu.PROOF_ATTR} = \"{_cited(v.owner)}\")"
    return f"parameter %{v.name_hint}" if v.name_hint else "a parameter"


def _why(verdict: object) -> str:
    if isinstance(verdict, Refuted):
        return f"refuted: {verdict.counterexample}"
    reason = getattr(verdict, "reason", "")
    return f"{getattr(verdict, 'verdict', 'not proved')}: {reason}" if reason else \
        getattr(verdict, "verdict", "not proved")


def _located(op: Operation, message: str) -> str:
    """`file:line:col: error: message` when `op` was parsed from a file, else the message."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}: error: {message}"
    return message
