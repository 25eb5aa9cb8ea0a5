"""The e-graph: hash-consed e-nodes in e-classes, union with a recorded reason, congruence rebuild.

Every e-node has a justification: `input` for nodes of the program the graph was built from, or
the id of the proof (`Proof`) that admitted it. Every union records which two e-nodes it equated and
why (a proof id, or `congruence`), which is what `explain` walks to answer "why are these equal?".

    g = EGraph()
    x = g.add_input("x", TensorType(["M", "K"], "f32"))
    w = g.add_input("w", TensorType(["K", "N"], "f32"))
    y = g.add(ENode.make("ax.matmul", {}, (x, w)), INPUT_PROOF)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from axon.dialects.ax.tensor_type import TensorType
from axon.nugraph.analysis import Analysis, ClassType
from axon.nugraph.eclass import INPUT_OP, EClass, ENode
from axon.nugraph.union_find import UnionFind

INPUT_PROOF = "input"
CONGRUENCE = "congruence"


@lru_cache(maxsize=65536)
def type_symbols(type_: TensorType) -> frozenset[str]:
    """The size symbols of a tensor type's dims (cached: reading dims parses them)."""
    return frozenset(s for d in type_.shape for s in d.symbols())


@dataclass(frozen=True)
class Proof:
    """One admission: the verifier proved `original` (an e-node's term) equal to `candidate`."""

    id: str
    move: str
    original: str
    candidate: str
    verdict: str
    seconds: float
    recorded: str = ""
    """The summary as printed, for proofs read back from nu IR (nothing else is known of them)."""

    def summary(self) -> str:
        if self.recorded:
            return self.recorded
        return (f"{self.move}: {self.original} == {self.candidate} "
                f"[{self.verdict}, {self.seconds:.3f}s]")


@dataclass(frozen=True)
class UnionEdge:
    """e-node `a` equals e-node `b` because of `reason` (a proof id or `congruence`)."""

    a: int
    b: int
    reason: str


@dataclass
class EGraph:
    """Hash-consed e-nodes (by integer node id) partitioned into e-classes, each carrying the data
    of `analysis` (by default its tensor type)."""

    analysis: Analysis[Any] = field(default_factory=ClassType)
    uf: UnionFind = field(default_factory=UnionFind)
    classes: dict[int, EClass] = field(default_factory=dict)
    nodes: list[ENode] = field(default_factory=list)
    node_class: list[int] = field(default_factory=list)
    justification: list[str] = field(default_factory=list)
    proofs: dict[str, Proof] = field(default_factory=dict)
    edges: list[UnionEdge] = field(default_factory=list)
    _memo: dict[ENode, int] = field(default_factory=dict)
    _dirty: bool = False
    # derived from the above, kept up to date as the graph grows (asked for in inner loops)
    _node_count: int = 0
    _class_ids: list[int] | None = None
    _symbols: set[str] = field(default_factory=set)
    _frozen_symbols: frozenset[str] | None = None

    # ---- queries ------------------------------------------------------------------------------
    def find(self, cls: int) -> int:
        return self.uf.find(cls)

    def canonical(self, node: ENode) -> ENode:
        return node.map_children(self.find)

    def class_of(self, node_id: int) -> int:
        return self.find(self.node_class[node_id])

    def type_of(self, cls: int) -> TensorType:
        return self.classes[self.find(cls)].type

    def lookup(self, node: ENode) -> int | None:
        """The class holding `node` (children compared up to equality), if any."""
        nid = self._memo.get(self.canonical(node))
        return None if nid is None else self.class_of(nid)

    def node_id(self, node: ENode) -> int | None:
        return self._memo.get(self.canonical(node))

    def class_ids(self) -> list[int]:
        """The canonical class ids, ascending."""
        if self._class_ids is None:
            self._class_ids = sorted(self.classes)
        return list(self._class_ids)

    def class_nodes(self, cls: int) -> list[int]:
        return self.classes[self.find(cls)].nodes

    def enodes(self) -> Iterator[tuple[int, ENode]]:
        """(node id, canonical e-node) for every live e-node."""
        for c in self.class_ids():
            for nid in self.classes[c].nodes:
                yield nid, self.canonical(self.nodes[nid])

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def num_nodes(self) -> int:
        return self._node_count

    def size_symbols(self) -> frozenset[str]:
        """Every size symbol some class's type mentions (a union joins classes of one type, so
        these are the symbols of every class ever added)."""
        if self._frozen_symbols is None:
            self._frozen_symbols = frozenset(self._symbols)
        return self._frozen_symbols

    # ---- growth -------------------------------------------------------------------------------
    def add_input(self, name: str, type_: TensorType, index: int | None = None) -> int:
        """The class of a program parameter."""
        position = index if index is not None else sum(
            1 for n in self.nodes if n.op == INPUT_OP)
        return self._add(ENode.make(INPUT_OP, {"index": position, "name": name}, ()),
                         self.analysis.parameter(type_), INPUT_PROOF)

    def add(self, node: ENode, justification: str) -> int:
        """The class of `node`, adding it (its data made by the analysis) when it is new.

        A node that exists already keeps its first justification: hash-consing admits nothing.
        """
        existing = self.lookup(node)
        if existing is not None:
            return existing
        data = self.analysis.make(node, [self.classes[self.find(c)].data for c in node.children])
        return self._add(node, data, justification)

    def _add(self, node: ENode, data: Any, justification: str) -> int:
        node = self.canonical(node)
        existing = self._memo.get(node)
        if existing is not None:
            return self.class_of(existing)
        if justification != INPUT_PROOF and justification not in self.proofs:
            raise ValueError(f"e-node {node.label()} cites unknown proof '{justification}'")
        cls = self.uf.make_set()
        nid = len(self.nodes)
        self.nodes.append(node)
        self.node_class.append(cls)
        self.justification.append(justification)
        type_ = self.analysis.type_of(data)
        self.classes[cls] = EClass(cls, type_, data, [nid])
        self._memo[node] = nid
        self._node_count += 1
        if self._class_ids is not None:
            self._class_ids.append(cls)  # the newest id is the largest
        new = type_symbols(type_) - self._symbols
        if new:
            self._symbols |= new
            self._frozen_symbols = None
        return cls

    def record_proof(self, proof: Proof) -> None:
        self.proofs[proof.id] = proof

    def union(self, a_node: int, b_node: int, reason: str) -> bool:
        """Merge the classes of two e-nodes, recording why; False when already equal."""
        if reason not in (CONGRUENCE,) and reason not in self.proofs:
            raise ValueError(f"union cites unknown proof '{reason}'")
        ca, cb = self.class_of(a_node), self.class_of(b_node)
        if ca == cb:
            return False
        ta, tb = self.classes[ca].type, self.classes[cb].type
        if ta != tb:
            raise ValueError(f"cannot union classes of types {ta} and {tb}")
        data = self.analysis.merge(self.classes[ca].data, self.classes[cb].data)
        root = self.uf.union(ca, cb)
        other = cb if root == ca else ca
        self.classes[root].data = data
        self.classes[root].nodes.extend(self.classes.pop(other).nodes)
        self._class_ids = None
        self.edges.append(UnionEdge(a_node, b_node, reason))
        self._dirty = True
        return True

    def rebuild(self) -> int:
        """Restore hash-consing and congruence after unions; returns the congruence unions made.

        A full pass over the nodes (simple, and fast enough at nu-graph sizes): recanonicalize every
        node; two nodes that became identical are congruent, so their classes merge. Passes repeat
        until one merges nothing; only then are the congruent copies dropped from their classes
        (a pass's own unions change canonical forms it has already recorded).
        """
        merges = 0
        while self._dirty:
            self._dirty = False
            memo: dict[ENode, int] = {}
            for c in list(self.classes):
                if c not in self.classes:
                    continue
                for nid in list(self.classes[c].nodes):
                    node = self.canonical(self.nodes[nid])
                    first = memo.get(node)
                    if first is None:
                        memo[node] = nid
                    elif self.class_of(first) != self.class_of(nid):
                        self.union(first, nid, CONGRUENCE)
                        merges += 1
            self._memo = memo
            if self._dirty:
                continue  # the pass's unions changed canonical forms: `memo` is not final yet
            for eclass in self.classes.values():
                # keep one node per canonical form in each class (duplicates are congruent copies)
                kept: list[int] = []
                for nid in eclass.nodes:
                    if memo.get(self.canonical(self.nodes[nid])) == nid:
                        kept.append(nid)
                eclass.nodes = kept
            self._node_count = sum(len(c.nodes) for c in self.classes.values())
        return merges
