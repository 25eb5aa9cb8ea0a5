"""Kernel e-nodes: proved tiled kernels in a nu-graph, beside the untiled programs they compute.

`tile{emit="graph"}` tiles the best untiled programs of a graph (its *variants*, extractions of
the result classes) and adds every proved kernel to the classes of the program's results. A
kernel is not an e-graph node (it is a whole fused program, compared by the verifier, not by
the nu prover's terms): it lives beside the `EGraph`, in a `TiledGraph`, and is printed as a
`tile.kernel` e-node of the result classes (`axon.nugraph.nu_ir`, `dialects/nu.py`).

What a target reads (a Triton or NKI emitter picking kernels):

    tiled = read_tiled_graph(func_op)            # every kernel re-proved against its variant
    for node in tiled.kernels_of(tiled.imported.results[0]):   # cheapest first
        node.kernel, node.proof_id, node.tiling, node.tile_sizes, node.seconds
    tiled.best_kernel()                          # the one the `best` marks point at
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp

from axon.dialects.tile import KernelOp
from axon.nugraph.convert import Imported
from axon.nugraph.egraph import EGraph
from axon.nugraph.extract import Extraction


@dataclass(frozen=True)
class KernelNode:
    """One proved kernel of a graph's program: an e-node of every result class (result #i of
    the kernel in the class the program returns #i)."""

    kernel: FuncOp
    """A function over the program's parameters holding one `tile.kernel`."""
    variant: tuple[int, ...]
    """The e-nodes (ids in the graph) of the untiled program the kernel is proved equal to."""
    proof_id: str
    tiling: str
    """The tiling's kind (`rows`, `blocks_k`, ...: `axon.tiling.kernels.Tiling`)."""
    tile_sizes: tuple[str, ...]
    """Its best concrete tile sizes at the pass's sizes, cheapest first, each with its modeled
    time and traffic (`BM=128 BN=256 BK=64 GROUP_M=1 num_warps=8: 0.238 ms, ...`)."""
    seconds: float
    """Modeled time of the best tile sizes (inf when none fits at these sizes)."""
    hbm_bytes: float

    def op(self) -> KernelOp:
        """The kernel op of `kernel`."""
        return next(o for o in self.kernel.body.block.ops if isinstance(o, KernelOp))

    def rank_key(self) -> tuple[float, float]:
        """Cheapest first: modeled time (within the model's 3 digits a tie), then traffic; the
        tile pass ranks its proposals by the same key."""
        if math.isinf(self.seconds):
            return (math.inf, math.inf)
        return (float(f"{self.seconds:.3g}"), self.hbm_bytes)

    def variant_extraction(self, g: EGraph, roots: Sequence[int]) -> Extraction:
        """The variant as an extraction of `g` (for `export_function`)."""
        choice = tuple(sorted((g.class_of(n), n) for n in self.variant))
        return Extraction(tuple(g.find(r) for r in roots), choice, 0.0)


@dataclass
class TiledGraph:
    """A nu-graph with its kernel e-nodes: the untiled classes (`graph`), the program's
    parameters and results (`imported`), the kernels, and which kernel the extraction marks."""

    graph: EGraph
    imported: Imported
    kernels: list[KernelNode] = field(default_factory=list)
    marked: int | None = None
    """Index in `kernels` of the kernel the result classes' `best` marks point at."""
    untiled_best: dict[int, int] | None = None
    """The best untiled program's choice (class -> e-node), marked on the other classes."""

    def result_classes(self) -> list[int]:
        return [self.graph.find(r) for r in self.imported.results]

    def kernels_of(self, cls: int) -> list[KernelNode]:
        """The kernels in class `cls`, cheapest first (`KernelNode.rank_key`): every kernel
        for a class the program returns, none for another."""
        return self.ranked() if self.graph.find(cls) in self.result_classes() else []

    def ranked(self) -> list[KernelNode]:
        """Every kernel, cheapest first (ties keep their order)."""
        return sorted(self.kernels, key=KernelNode.rank_key)

    def best_kernel(self) -> KernelNode | None:
        """The kernel the extraction marks (the tiled cost model's pick), if any."""
        return None if self.marked is None else self.kernels[self.marked]
