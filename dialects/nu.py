"""The `nu` dialect: a nu-graph (Axon's e-graph) as IR, printable, parsable and FileCheck-able.

Modelled on xDSL's `equivalence` dialect (see ../shared/reference/xdsl.md, section 3), with the
proof metadata that dialect lacks. A `nu.graph` region holds e-classes; each `nu.class` result is
one e-class, and its operands are the e-nodes (ordinary `ax` ops, or values from outside the graph
for the program's inputs). Every e-node op carries `nu.proof`: `"input"` for nodes of the program
the graph was built from, or the id of the proof that admitted it, listed in the graph's `proofs`.

    %r = nu.graph -> !ax.tensor<[M], f32> {
      %x = nu.class %arg0 : !ax.tensor<[M, K], f32>
      %w = nu.class %arg1 : !ax.tensor<[K, N], f32>
      %0 = ax.matmul %x, %w {nu.proof = "input"} : (...) -> !ax.tensor<[M, N], f32>
      %y = nu.class %0 : !ax.tensor<[M, N], f32>
      %1 = ax.sum %y {axes = array<i64: 1>, keepdims = false, nu.proof = "input"} : ...
      %2 = ax.matmul %x, %ws {nu.proof = "p1"} : ...
      %s = nu.class %1, %2 : !ax.tensor<[M], f32>
      ...
      nu.yield %s : !ax.tensor<[M], f32>
    } {proofs = {p1 = "..."}}

Cycles are allowed (an e-node may use its own class or a class defined later), so the region is a
graph region: extract a program (`axon.nugraph.extract`) before running passes that assume
def-before-use.

A *kernel e-node* is a `tile.kernel` (a fused, tiled program: `tile{emit="graph"}` adds them) in
the classes of the program's results, beside the untiled e-nodes; its operands are the classes
of the program's parameters, its region the kernel's body, and result #i an e-node of the class
the graph yields #i:

    %k:1 = tile.kernel %x, %w {..., nu.proof = "4430dc98b36e97ab",
                               nu.variant = array<i64: 0, 0, 0, -1, 1>,
                               axon.tiling = "blocks_k", axon.tile_sizes = [...],
                               axon.seconds = 2.38e-04 : f64, axon.hbm_bytes = ...} ({...})
    %s = nu.class %2, %k#0 {best = 1} : !ax.tensor<[M, N], f32>

Its proof (the tile pass's, by `verify-equivalence`) is against one untiled program of the
graph, its *variant*: `nu.variant` names it, one entry per class of the graph in order, the
index of the variant's e-node among the class's operands, or -1 for a class the variant does
not use (see `axon.nugraph.nu_ir.read_tiled_graph`).

Invariants checked by the verifier (the gaps of `equivalence` listed in the reference):
- each class has at least one e-node, and every e-node's type equals its class's type;
- an e-node is a single-result, region-free op whose result is used exactly once, by its
  class; a kernel e-node may have a region and several results, each used once, by a class;
- an e-node's operands are classes of the same graph (never another e-node, never an outside value);
- a class's operands are e-nodes of the graph or values defined outside it (the inputs);
- every e-node carries `nu.proof`, either "input" or a key of the graph's `proofs` table;
- no two e-nodes are identical (same op, properties and operand classes; a kernel: the same
  kernel, region included): the graph is hash-consed;
- a kernel e-node cites a proof (never "input") and a `nu.variant` of one entry per class, each
  -1 or the index of an e-node or a parameter (not a kernel) of that class;
- `nu.yield` yields classes of the graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator, Pure, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

PROOF_ATTR = "nu.proof"
"""The discardable attribute on every e-node: "input" or a proof id."""

INPUT_PROOF = "input"
"""The justification of e-nodes that come from the program the graph was built from."""

KERNEL_OP = "tile.kernel"
"""The op of a kernel e-node (named, not imported: the tile dialect is a level above)."""

VARIANT_ATTR = "nu.variant"
"""The attribute of a kernel e-node naming the untiled program its proof is against."""


def is_kernel(op: object) -> bool:
    """Whether `op` is a kernel e-node's op."""
    return isinstance(op, Operation) and op.name == KERNEL_OP


@irdl_op_definition
class ClassOp(IRDLOperation):
    """One e-class: its result is the class, its operands are the equivalent e-nodes."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    name = "nu.class"
    nodes = var_operand_def(T)
    result = result_def(T)
    best = opt_prop_def(IntAttr)
    """Index of the e-node an extraction chose, when one has run."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$nodes attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, nodes: Sequence[SSAValue], result_type: Attribute | None = None):
        super().__init__(operands=[nodes],
                         result_types=[result_type if result_type is not None else nodes[0].type])

    def verify_(self) -> None:
        if not self.nodes:
            raise VerifyException("'nu.class' needs at least one e-node operand")
        graph = self.parent_op()
        for i, node in enumerate(self.nodes):
            owner = node.owner
            inside = isinstance(owner, Operation) and owner.parent_op() is graph
            if isinstance(owner, ClassOp):
                raise VerifyException(f"'nu.class' operand #{i} is another class; classes that "
                                      "are equal must be one class")
            if inside and is_kernel(owner) and node.uses.get_length() != 1:
                raise VerifyException(f"'nu.class' operand #{i} (a kernel's result) has "
                                      f"{node.uses.get_length()} uses; a kernel's result is "
                                      "used only by its class")
            if inside and node.uses.get_length() != 1:
                raise VerifyException(f"'nu.class' operand #{i} (an e-node) has "
                                      f"{node.uses.get_length()} uses; an e-node is used only "
                                      "by its class")
        if self.best is not None and not 0 <= self.best.data < len(self.nodes):
            raise VerifyException(f"'nu.class' best = {self.best.data} is not an operand index "
                                  f"(the class has {len(self.nodes)} e-nodes)")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The classes a `nu.graph` returns (the program's results)."""

    name = "nu.yield"
    values = var_operand_def()
    assembly_format = "$values attr-dict `:` type($values)"
    traits = lazy_traits_def(lambda: (HasParent(GraphOp), IsTerminator()))

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class GraphOp(IRDLOperation):
    """A region of e-classes and e-nodes; results are the yielded classes."""

    name = "nu.graph"
    outputs = var_result_def()
    body = region_def()
    proofs = opt_prop_def(DictionaryAttr)
    """Proof id -> what was proved and by what (a one-line record)."""

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "`->` type($outputs) $body attr-dict"
    traits = lazy_traits_def(lambda: (SingleBlockImplicitTerminator(YieldOp),))

    def __init__(self, result_types: Sequence[Attribute], body: Region,
                 proofs: dict[str, str] | None = None):
        props: dict[str, Attribute] = {}
        if proofs is not None:
            props["proofs"] = DictionaryAttr({k: StringAttr(v) for k, v in proofs.items()})
        super().__init__(result_types=[result_types], regions=[body], properties=props)

    def proof_ids(self) -> set[str]:
        return set(self.proofs.data) if self.proofs is not None else set()

    def verify_(self) -> None:
        known = self.proof_ids()
        seen: dict[tuple[object, ...], Operation] = {}
        classes = [op for op in self.body.block.ops if isinstance(op, ClassOp)]
        kernels: list[Operation] = []
        for op in self.body.block.ops:
            if is_kernel(op):
                _verify_kernel(op, self, known, classes)
                if any(op.is_structurally_equivalent(k) for k in kernels):
                    raise VerifyException(f"kernel e-node '{op.name}' appears twice; the graph "
                                          "must be hash-consed")
                kernels.append(op)
                continue
            if isinstance(op, (ClassOp, YieldOp)):
                if isinstance(op, YieldOp):
                    for i, v in enumerate(op.values):
                        if not isinstance(v.owner, ClassOp) or v.owner.parent_op() is not self:
                            raise VerifyException(f"'nu.yield' operand #{i} is not a class of "
                                                  "this graph")
                continue
            _verify_enode(op, self, known)
            key = (op.name, tuple(op.operands), tuple(sorted(
                (k, str(v)) for k, v in op.properties.items())),
                tuple(sorted((k, str(v)) for k, v in op.attributes.items() if k != PROOF_ATTR)))
            if key in seen:
                raise VerifyException(f"e-node '{op.name}' appears twice with the same operands "
                                      "and properties; the graph must be hash-consed")
            seen[key] = op


def _verify_kernel(op: Operation, graph: GraphOp, known: set[str],
                   classes: Sequence[ClassOp]) -> None:
    """A kernel e-node: each result in one class of its type, operands classes, a proof, and a
    `nu.variant` naming a non-kernel operand (or none) of every class."""
    for r in op.results:
        users = [u.operation for u in r.uses]
        if len(users) != 1 or not isinstance(users[0], ClassOp):
            raise VerifyException(f"kernel e-node result #{r.index} must be used exactly once, "
                                  "by a 'nu.class'")
        if users[0].result.type != r.type:
            raise VerifyException(f"kernel e-node result #{r.index} has type {r.type}, but its "
                                  f"class has type {users[0].result.type}")
    _verify_operands_and_proof(op, graph, known)
    if op.attributes.get(PROOF_ATTR) == StringAttr(INPUT_PROOF):
        raise VerifyException(f"kernel e-node '{op.name}' cites '{INPUT_PROOF}'; a kernel is "
                              "never part of the input program, it cites its proof")
    variant = op.attributes.get(VARIANT_ATTR)
    if not isinstance(variant, DenseArrayBase):
        raise VerifyException(f"kernel e-node '{op.name}' has no '{VARIANT_ATTR}' array; it "
                              "names the untiled program its proof is against")
    picks = variant.get_values()
    if len(picks) != len(classes):
        raise VerifyException(f"kernel e-node '{VARIANT_ATTR}' has {len(picks)} entries; the "
                              f"graph has {len(classes)} classes")
    for n, (pick, cls) in enumerate(zip(picks, classes, strict=True)):
        if not isinstance(pick, int) or not -1 <= pick < len(cls.nodes) or (
                pick >= 0 and is_kernel(cls.nodes[pick].owner)):
            raise VerifyException(f"kernel e-node '{VARIANT_ATTR}' entry #{n} = {pick} is "
                                  f"neither -1 nor the index of a non-kernel e-node of class "
                                  f"#{n} (it has {len(cls.nodes)} operands)")


def _verify_enode(op: Operation, graph: GraphOp, known: set[str]) -> None:
    if len(op.results) != 1:
        raise VerifyException(f"e-node '{op.name}' has {len(op.results)} results; e-nodes have "
                              "exactly one")
    if op.regions:
        raise VerifyException(f"e-node '{op.name}' has a region; e-nodes are region-free")
    result = op.results[0]
    users = [u.operation for u in result.uses]
    if len(users) != 1 or not isinstance(users[0], ClassOp):
        raise VerifyException(f"e-node '{op.name}' must be used exactly once, by a 'nu.class'")
    if users[0].result.type != result.type:
        raise VerifyException(f"e-node '{op.name}' has type {result.type}, but its class has "
                              f"type {users[0].result.type}")
    _verify_operands_and_proof(op, graph, known)


def _verify_operands_and_proof(op: Operation, graph: GraphOp, known: set[str]) -> None:
    for i, operand in enumerate(op.operands):
        owner = operand.owner
        if not isinstance(owner, ClassOp) or owner.parent_op() is not graph:
            raise VerifyException(f"e-node '{op.name}' operand #{i} is not a class of this graph")
    proof = op.attributes.get(PROOF_ATTR)
    if not isinstance(proof, StringAttr):
        raise VerifyException(f"e-node '{op.name}' has no '{PROOF_ATTR}' string attribute; "
                              "every e-node records what admitted it")
    if proof.data != INPUT_PROOF and proof.data not in known:
        raise VerifyException(f"e-node '{op.name}' cites proof '{proof.data}', which is not in "
                              "the graph's proofs table")


Nu = Dialect("nu", [GraphOp, ClassOp, YieldOp])

__all__ = ["INPUT_PROOF", "KERNEL_OP", "PROOF_ATTR", "VARIANT_ATTR", "ClassOp", "GraphOp", "Nu",
           "YieldOp", "is_kernel"]
