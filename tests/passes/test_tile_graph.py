"""`tile{emit="graph"}`: every proved kernel as a `tile.kernel` e-node of the result classes,
beside the untiled e-nodes of the nu-graph, each with its proof id, tiling, tile sizes and
modeled cost; the extraction marks the cheapest; the graph prints, parses back and is read
back with every kernel re-proved against the program its `nu.variant` names."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException

from axon.benchmarks.suite import PROGRAMS
from axon.dialects import nu
from axon.dialects.ax import TensorType
from axon.dialects.tile import KernelOp
from axon.interpreter import run_module
from axon.nugraph.kernels import TiledGraph
from axon.nugraph.nu_ir import GraphReadError, graph_function, read_tiled_graph
from axon.tools.embed import parse_mlir, parse_source, print_ir, run_pipeline
from axon.verifier.cache import ProofCache

CUBE = 'sizes="M=4096,N=4096,K=4096"'
MM_RELU = """
func.func @mm_relu(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>)
    -> !ax.tensor<[M, N], f32> {
  %y = ax.matmul %x, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>)
      -> !ax.tensor<[M, N], f32>
  %r = ax.relu %y : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32>
  func.return %r : !ax.tensor<[M, N], f32>
}
"""


def only_function(module: ModuleOp) -> FuncOp:
    (func,) = [f for f in module.ops if isinstance(f, FuncOp)]
    return func


def graph_of(func: FuncOp) -> nu.GraphOp:
    return next(op for op in func.body.block.ops if isinstance(op, nu.GraphOp))


def result_class(graph: nu.GraphOp) -> nu.ClassOp:
    terminator = graph.body.block.last_op
    assert isinstance(terminator, nu.YieldOp)
    cls = terminator.values[0].owner
    assert isinstance(cls, nu.ClassOp)
    return cls


class Tiled:
    """rmsnorm_matmul through `propagate{emit="graph"},tile{emit="graph"}`, with a cache."""

    def __init__(self, tmp: Path) -> None:
        self.cache = tmp / "proofs.json"
        self.module = parse_source(PROGRAMS["rmsnorm_matmul"].source, "program.py")
        self.original = parse_source(PROGRAMS["rmsnorm_matmul"].source, "program.py")
        report = io.StringIO()
        with contextlib.redirect_stderr(report):
            run_pipeline(self.module,
                         f'propagate{{emit="graph" {CUBE}}},'
                         f'tile{{emit="graph" profile=h200 {CUBE} cache="{self.cache}"}}')
        self.report = report.getvalue()
        self.text = print_ir(self.module)
        self.func = only_function(self.module)


@pytest.fixture(scope="module")
def rmsnorm_matmul(tmp_path_factory: pytest.TempPathFactory) -> Tiled:
    return Tiled(tmp_path_factory.mktemp("tile_graph"))


def test_kernels_are_e_nodes_of_the_result_class_beside_the_untiled_ones(
        rmsnorm_matmul: Tiled) -> None:
    graph = graph_of(rmsnorm_matmul.func)
    cls = result_class(graph)
    kernels = [v.owner for v in cls.nodes if isinstance(v.owner, KernelOp)]
    untiled = [v for v in cls.nodes if not isinstance(v.owner, KernelOp)]
    assert untiled and len(kernels) >= 4  # rows, blocks, each with a K loop, per variant
    proofs = graph.proof_ids()
    for kernel in kernels:
        proof = kernel.attributes[nu.PROOF_ATTR]
        assert proof.data in proofs  # type: ignore[attr-defined]
        assert kernel.attributes["axon.tiling"].data in (  # type: ignore[attr-defined]
            "rows", "rows_k", "blocks", "blocks_k")
        assert "axon.seconds" in kernel.attributes and "axon.hbm_bytes" in kernel.attributes
    # the kernels tile more than one untiled program: their variants differ
    variants = {str(k.attributes[nu.VARIANT_ATTR]) for k in kernels}
    assert len(variants) >= 2
    # and the best kernel's tile sizes say its warps
    best = cls.nodes[cls.best.data].owner  # type: ignore[union-attr]
    assert isinstance(best, KernelOp)
    assert re.match(r"BM=\d+ BN=\d+ BK=\d+ GROUP_M=\d+ num_warps=\d+: ",
                    best.attributes["axon.tile_sizes"].data[0].data)  # type: ignore[attr-defined]


def test_the_best_mark_is_the_ranked_best_kernel_and_the_reported_one(
        rmsnorm_matmul: Tiled) -> None:
    tiled = read_tiled_graph(only_function(parse_mlir(rmsnorm_matmul.text, "graph.mlir")),
                             cache=ProofCache(rmsnorm_matmul.cache))
    best = tiled.best_kernel()
    assert best is not None and best is tiled.ranked()[0]
    assert best.tiling == "blocks_k"  # the K loop accumulating matmul and sum of squares
    assert tiled.kernels_of(tiled.imported.results[0]) == tiled.ranked()
    assert tiled.kernels_of(tiled.imported.params[0]) == []
    seconds = [k.seconds for k in tiled.ranked()]
    assert seconds[0] == min(seconds)
    # the pass's report names the same kernel, by the proof the read-back found again
    assert f"best blocks_k of @rmsnorm_matmul (proof {best.proof_id})" in rmsnorm_matmul.report


def test_every_kernel_proof_is_in_the_cache(rmsnorm_matmul: Tiled) -> None:
    entries = json.loads(rmsnorm_matmul.cache.read_text())["entries"]
    cached = {e["proof_id"] for e in entries.values() if e["verdict"] == "proved"}
    kernels = [v.owner for v in result_class(graph_of(rmsnorm_matmul.func)).nodes
               if isinstance(v.owner, KernelOp)]
    assert kernels
    assert {k.attributes[nu.PROOF_ATTR].data for k in kernels} <= cached  # type: ignore[attr-defined]


def test_the_graph_round_trips(rmsnorm_matmul: Tiled) -> None:
    # print, parse (the dialect verifier runs), read back (each kernel re-proved, from the
    # cache here), print again: the same text
    parsed = parse_mlir(rmsnorm_matmul.text, "graph.mlir")
    assert print_ir(parsed) == rmsnorm_matmul.text
    tiled = read_tiled_graph(only_function(parsed), cache=ProofCache(rmsnorm_matmul.cache))
    again = ModuleOp([graph_function(tiled.graph, tiled.imported, tiled.untiled_best,
                                     tiled.kernels, tiled.marked)])
    reread = read_tiled_graph(only_function(parse_mlir(print_ir(again), "again.mlir")),
                              cache=ProofCache(rmsnorm_matmul.cache))
    assert same_kernels(reread, tiled) and reread.marked == tiled.marked is not None


def same_kernels(a: TiledGraph, b: TiledGraph) -> bool:
    def key(t: TiledGraph) -> list[tuple[str, str, tuple[str, ...], float, float]]:
        return [(k.proof_id, k.tiling, k.tile_sizes, k.seconds, k.hbm_bytes) for k in t.kernels]

    return key(a) == key(b) and a.graph.num_nodes == b.graph.num_nodes


def test_the_best_kernel_computes_the_program(rmsnorm_matmul: Tiled) -> None:
    tiled = read_tiled_graph(only_function(parse_mlir(rmsnorm_matmul.text, "graph.mlir")),
                             cache=ProofCache(rmsnorm_matmul.cache))
    best = tiled.best_kernel()
    assert best is not None
    module = ModuleOp([best.kernel.clone()])
    types = [t for t in only_function(rmsnorm_matmul.original).function_type.inputs.data
             if isinstance(t, TensorType)]
    rng = np.random.default_rng(0)
    sizes = {"M": 5, "N": 3, "K": 7}
    inputs = [rng.uniform(0.5, 1.5, tuple(d.evaluate(sizes) for d in t.shape)) for t in types]
    (want,) = run_module(rmsnorm_matmul.original, "rmsnorm_matmul", inputs, sizes, exact=True)
    (got,) = run_module(module, "rmsnorm_matmul", inputs,
                        {**sizes, "BM": 2, "BN": 2, "BK": 3}, exact=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_plain_function_is_tiled_in_its_own_graph() -> None:
    module = parse_mlir(MM_RELU, "mm_relu.mlir")
    run_pipeline(module, f'tile{{emit="graph" {CUBE}}}')
    cls = result_class(graph_of(only_function(module)))
    kernels = [v.owner for v in cls.nodes if isinstance(v.owner, KernelOp)]
    assert len(kernels) == 4
    # every kernel's variant is the program: the first e-node of each class
    assert all(list(k.attributes[nu.VARIANT_ATTR].get_values()) == [0, 0, 0, 0]  # type: ignore[attr-defined]
               for k in kernels)
    best = cls.nodes[cls.best.data].owner  # type: ignore[union-attr]
    assert isinstance(best, KernelOp) and best.attributes["axon.tiling"].data == "blocks_k"  # type: ignore[attr-defined]


def test_a_kernel_that_is_not_its_variant_is_refused_on_read_back() -> None:
    module = parse_mlir(MM_RELU, "mm_relu.mlir")
    run_pipeline(module, f'tile{{emit="graph" {CUBE}}}')
    text = print_ir(module)
    # the relu inside the kernels (deeper than the graph's e-nodes) becomes an exp
    tampered = re.sub(r"(\n {8,}%\d+ = )ax\.relu", r"\1ax.exp", text)
    assert tampered != text
    with pytest.raises(GraphReadError, match=r"kernel e-node \((rows|blocks)(_k)?, nu.proof = "
                                             r"\"[0-9a-f]+\"\) is not proved equal to the "
                                             r"program its nu.variant names: refuted"):
        read_tiled_graph(only_function(parse_mlir(tampered, "tampered.mlir")))


def test_variants_as_functions_are_refused_for_a_graph() -> None:
    module = parse_source(PROGRAMS["rmsnorm_matmul"].source, "program.py")
    with pytest.raises(DiagnosticException, match=r"tile: @rmsnorm_matmul_k1 is a variant of "
                                                  r"@rmsnorm_matmul .* run propagate\{emit="):
        run_pipeline(module, 'propagate{emit="top-k"},tile{emit="graph"}')


def test_a_graph_input_gives_its_programs_to_the_other_emits() -> None:
    module = parse_mlir(MM_RELU, "mm_relu.mlir")
    run_pipeline(module, f'propagate{{emit="graph"}},tile{{emit="best" {CUBE}}}')
    func = only_function(module)
    assert func.sym_name.data == "mm_relu" and "axon.proof_id" in func.attributes
    assert any(isinstance(op, KernelOp) for op in func.walk())
