"""Tiling the programs of a nu-graph: the untiled variants a graph gives, and the tiled graph
that holds their proved kernels as e-nodes beside them (`tile{emit="graph"}`).

A function holding a `nu.graph` (`propagate{emit="graph"}`) is read back (every membership
re-proved, see `axon.nugraph.nu_ir.read_graph`), and its `count` cheapest programs that pass the
float-error check (`Session.checked_top_k`, as `propagate{emit="top-k"}` picks them) are the
variants to tile, each an extraction of the graph. A plain function is its own graph (no
propagation) and its only variant. Every proved kernel then becomes a `KernelNode` of the
result classes, its variant the extraction it was proved against; the extraction marks the
cheapest kernel (`TiledGraph.ranked`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.dialects.func import FuncOp

from axon.dialects import nu
from axon.nugraph.cost import RooflineCost
from axon.nugraph.extract import Extraction
from axon.nugraph.kernels import KernelNode, TiledGraph
from axon.nugraph.nu_ir import graph_function
from axon.nugraph.prover import Prover
from axon.nugraph.session import Session
from axon.targets.profiles import DeviceProfile
from axon.tiling.concretize import describe
from axon.tiling.search import Result


@dataclass
class GraphVariants:
    """A graph's program and the untiled variants taken from it, as functions to tile."""

    session: Session
    extractions: list[Extraction]
    functions: list[FuncOp]
    """`extractions` exported: the program's name first, then `<name>_k1`, ... marked
    `axon.variant_of` it (what `propagate{emit="top-k"}` prints)."""


def holds_graph(func: FuncOp) -> bool:
    """Whether `func` holds a `nu.graph` (rather than a program of ops)."""
    return any(isinstance(op, nu.GraphOp) for op in func.body.block.ops)


def graph_variants(func: FuncOp, profile: DeviceProfile, sizes: Mapping[str, int], count: int,
                   prover: Prover) -> GraphVariants:
    """The program of `func` (a graph function, or a plain one: its own graph) and up to
    `count` of its cheapest untiled variants under `profile`'s roofline at `sizes`.
    GraphReadError (a ConvertError) when a printed graph does not check; ConvertError when a
    plain function is not made of tensor ops."""
    cost = RooflineCost(profile, dict(sizes))
    if holds_graph(func):
        session = Session.from_graph_function(func, cost, prover)
        extractions = [c.extraction for c in session.checked_top_k(count)]
    else:
        session = Session.from_function(func, cost)
        extractions = [session.input_extraction()]
    name = session.imported.name
    functions = [session.export(e, name if i == 0 else f"{name}_k{i}")
                 for i, e in enumerate(extractions)]
    for variant in functions[1:]:
        variant.attributes["axon.variant_of"] = SymbolRefAttr(name)
    return GraphVariants(session, extractions, functions)


def tiled_graph(variants: GraphVariants, result: Result) -> TiledGraph:
    """The graph of `variants` with every proved kernel of `result` as a kernel e-node (its
    variant the extraction it was proved against), the cheapest marked."""
    session = variants.session
    by_name = {f.sym_name.data: e for f, e in zip(variants.functions, variants.extractions,
                                                  strict=True)}
    kernels = []
    for proposal in result.proved:
        assert proposal.kernel is not None
        extraction = by_name[proposal.variant]
        best = proposal.candidates[0].cost if proposal.candidates else None
        kernels.append(KernelNode(
            proposal.kernel, tuple(n for _, n in extraction.choice), proposal.proof_id,
            proposal.tiling.kind, tuple(describe(c) for c in proposal.candidates),
            best.seconds if best is not None else math.inf,
            best.hbm_bytes if best is not None else math.inf))
    tiled = TiledGraph(session.graph, session.imported, kernels,
                       untiled_best=variants.extractions[0].chosen())
    ranked = tiled.ranked()
    tiled.marked = kernels.index(ranked[0]) if ranked else None
    return tiled


def tiled_graph_function(tiled: TiledGraph) -> FuncOp:
    """The tiled graph as a function holding its `nu.graph` (kernels as e-nodes)."""
    return graph_function(tiled.graph, tiled.imported, tiled.untiled_best, tiled.kernels,
                          tiled.marked)
