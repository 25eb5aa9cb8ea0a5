"""NKI sketches through `synth`: several proved lowerings per tile op (a row sum by
tensor_reduce, by activation_reduce and by nc_matmul against a ones column; cumsum by
tensor_tensor_scan and by a triangular matmul), the profile's limits as the candidates' size
conditions, planted wrong fillings (a wrong transpose, operand order, accumulate flag, reduce
op) refuted with a counterexample that replays and never admitted, a second run served from
the cache without the prover, every admitted lowering run on the NKI simulator over a grid of
tiles (remainder tiles included) against numpy (a second check, never the proof), and the
lowerings entered into the tile op's e-class of the nu-graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from axon.dialects import nki
from axon.dialects.form.dtypes import DTYPES
from axon.nugraph.convert import import_function
from axon.nugraph.egraph import EGraph
from axon.nugraph.explain import explain
from axon.nugraph.nu_ir import graph_function, read_graph
from axon.synth import Admitted, Rejected, SynthesisReport, admit, synthesize
from axon.synth.nu import enter_lowerings
from axon.targets.nki.sketch_run import emit_lowering, run_lowering
from axon.targets.nki.sketches import TILE_OPS, sketch, sketches, tile_limits
from axon.verifier import ProofCache, Refuted, Verdict, prove_equivalent

PROFILE = "trn2"
LIMITS = tile_limits(PROFILE)
SKETCHES = sketches(PROFILE)


def synth(name: str, **kwargs: Any) -> SynthesisReport:
    return synthesize(TILE_OPS[name].spec(LIMITS), SKETCHES, PROFILE, **kwargs)


def admitted(report: SynthesisReport) -> set[tuple[str, tuple[tuple[str, Any], ...]]]:
    return {(a.sketch, tuple(sorted(a.filling.items()))) for a in report.lowerings}


def instructions(lowering: Admitted) -> list[str]:
    return [op.name.removeprefix("nki.") for op in lowering.func.walk()
            if isinstance(op, nki.NkiOp)]


def test_a_row_sum_has_several_proved_lowerings() -> None:
    report = synth("row_sum")
    by_sketch = {a.sketch: a for a in report.lowerings}
    assert set(by_sketch) == {"row_sum.tensor_reduce", "row_sum.activation_reduce",
                              "row_sum.matmul_ones"}
    assert instructions(by_sketch["row_sum.tensor_reduce"]) == ["dma_copy", "tensor_reduce"]
    assert instructions(by_sketch["row_sum.activation_reduce"]) == ["dma_copy",
                                                                    "activation_reduce"]
    ones = [a for a in report.lowerings if a.sketch == "row_sum.matmul_ones"]
    assert {a.filling["layout.transpose"] for a in ones} == {"tensor", "vector"}
    assert all(a.filling["matmul.stationary"] == "data" for a in ones)
    c = report.counts
    assert (c.tried, c.admitted, c.unknown) == (20, 4, 0)
    assert c.pruned + c.refuted == 16 and c.refuted >= 10
    assert report.summary().startswith("synth row_sum @ trn2: 3 sketches (0 from cache), 20 "
                                       "tried, 6 pruned, 4 admitted, 10 refuted, 0 unknown")


def test_the_profile_limits_become_each_lowering_s_size_conditions() -> None:
    spec = TILE_OPS["row_sum"].spec(LIMITS)
    assert spec.assumptions == ("P <= 128", "F <= 53246")  # an SBUF partition holds F f32
    conditions = {a.filling.get("layout.transpose", a.sketch): a.candidate.conditions
                  for a in synth("row_sum").lowerings}
    assert conditions["row_sum.tensor_reduce"] == ()
    assert conditions["tensor"] == ("F <= 128",)  # the contraction and the TensorE transpose
    assert conditions["vector"] == ("P <= 32", "F <= 32")  # a VectorE transpose
    # trn1 states the same limits: the conditions are read from its profile, not assumed
    trn1 = synthesize(TILE_OPS["row_sum"].spec(tile_limits("trn1")), sketches("trn1"), "trn1")
    assert admitted(trn1) == admitted(synth("row_sum"))


def test_a_row_sum_over_two_blocks_accumulates_the_second_matmul_in_psum() -> None:
    report = synth("row_sum_blocks")
    assert {(a.filling["layout.transpose"], a.filling["second.accumulate"])
            for a in report.lowerings} == {("tensor", True), ("vector", True)}
    assert report.counts.refuted == 2  # the accumulate flag off, on either engine
    assert instructions(report.lowerings[0]).count("nc_matmul") == 2


def test_a_bf16_row_sum_may_also_transpose_by_dma() -> None:
    layouts = {a.filling["layout.transpose"] for a in synth("row_sum_bf16").lowerings
               if a.sketch == "row_sum.matmul_ones"}
    assert layouts == {"tensor", "vector", "dma"}


def test_a_row_max_is_a_max_reduction_only() -> None:
    report = synth("row_max")
    assert admitted(report) == {("row_max.tensor_reduce",
                                 (("reduce.negate", False), ("reduce.op", "maximum")))}
    assert report.counts.refuted == 5


def test_cumsum_by_a_scan_and_by_a_triangular_matmul() -> None:
    report = synth("cumsum")
    scans = {(a.filling["scan.ops"], a.filling["scan.data"]) for a in report.lowerings
             if a.sketch == "cumsum.scan"}
    # (add, add) either way round, and (add, subtract) with the zeros subtracted
    assert scans == {("add,add", "data1"), ("add,add", "data0"), ("add,subtract", "data0")}
    triangular = [a for a in report.lowerings if a.sketch == "cumsum.triangular_matmul"]
    assert {(a.filling["layout.transpose"], a.filling["mask.cmp_op"],
             a.filling["mask.channel_multiplier"]) for a in triangular} == {
        ("tensor", "greater_equal", -1), ("vector", "greater_equal", -1)}
    assert instructions(triangular[0]) == ["dma_copy", "nc_transpose", "tensor_copy", "memset",
                                           "affine_select", "nc_matmul", "tensor_copy"]
    assert report.counts.unknown == 0


def test_elementwise_tensor_tensor_for_two_tiles_tensor_scalar_for_a_column() -> None:
    both = {(a.filling["instr.instruction"], a.filling["instr.engine"], a.filling["instr.data"])
            for a in synth("add").lowerings}
    assert both == {("tensor_tensor", e, d) for e in ("vector", "gpsimd") for d in (0, 1)}
    column = synth("sub_column")
    assert {(a.filling["instr.instruction"], a.filling["instr.engine"],
             a.filling["instr.reverse"]) for a in column.lowerings} == {
        ("tensor_scalar", "vector", False), ("tensor_scalar", "gpsimd", False)}
    # the Scalar engine's tensor_scalar adds and multiplies only: pruned for a subtraction,
    # admitted for a product
    assert any("Scalar engine" in r.reason for r in column.rejected("pruned"))
    assert any(a.filling["instr.engine"] == "scalar" for a in synth("mul_column").lowerings)


def test_a_transpose_on_either_engine_or_by_dma() -> None:
    report = synth("transpose")
    assert {a.filling["move.instruction"]: a.candidate.conditions
            for a in report.lowerings} == {"tensor": ("F <= 128",),
                                           "vector": ("P <= 32", "F <= 32"),
                                           "dma": ("F <= 128",)}


def test_a_matmul_transposes_its_stationary_operand_unless_it_is_given_transposed() -> None:
    plain = {a.filling["layout.transpose"] for a in synth("matmul").lowerings}
    assert plain == {"tensor", "vector"}
    assert admitted(synth("transpose_matmul")) == {
        ("matmul.stationary", (("layout.transpose", "none"), ("matmul.stationary", "left")))}


def test_a_k_split_matmul_accumulates_in_psum_or_adds_a_copied_product() -> None:
    report = synth("matmul_ksplit")
    assert {(a.filling["second.accumulate"], a.filling["combine.instruction"])
            for a in report.lowerings} == {(True, "none"), (False, "copy_add")}
    # adding two PSUM tiles breaks an NKI rule: pruned by the op verifier, never proved
    assert all("both inputs are in PSUM" in r.reason for r in report.rejected("pruned"))


#: planted wrong fillings: (tile op, sketch, filling, what is wrong)
PLANTED = [
    ("row_sum_square", "row_sum.matmul_ones",
     {"layout.transpose": "none", "matmul.stationary": "data"}, "no transpose"),
    ("matmul_square", "matmul.stationary",
     {"layout.transpose": "none", "matmul.stationary": "left"}, "no transpose"),
    ("matmul_square", "matmul.stationary",
     {"layout.transpose": "tensor", "matmul.stationary": "right"}, "operands swapped"),
    ("transpose_square", "transpose.move", {"move.instruction": "tensor_copy"}, "a copy"),
    ("cumsum_square", "cumsum.triangular_matmul",
     {"layout.transpose": "none", "mask.cmp_op": "greater_equal",
      "mask.channel_multiplier": -1}, "no transpose"),
    ("matmul_ksplit", "matmul_ksplit.accumulate",
     {"second.accumulate": False, "combine.instruction": "none"}, "accumulate flag off"),
    ("matmul_ksplit", "matmul_ksplit.accumulate",
     {"second.accumulate": True, "combine.instruction": "copy_add"}, "accumulated twice"),
    ("row_sum_blocks", "row_sum_blocks.matmul_ones",
     {"layout.transpose": "tensor", "second.accumulate": False}, "accumulate flag off"),
    ("row_sum", "row_sum.tensor_reduce", {"reduce.op": "maximum", "reduce.negate": False},
     "reduce op"),
    ("row_max", "row_max.tensor_reduce", {"reduce.op": "add", "reduce.negate": False},
     "reduce op"),
    ("row_sum", "row_sum.tensor_reduce", {"reduce.op": "add", "reduce.negate": True},
     "negate flag"),
    ("cumsum", "cumsum.triangular_matmul",
     {"layout.transpose": "tensor", "mask.cmp_op": "greater", "mask.channel_multiplier": -1},
     "an exclusive mask"),
    ("cumsum", "cumsum.scan", {"scan.ops": "add,subtract", "scan.data": "data1"},
     "the data subtracted"),
]


@pytest.mark.parametrize(("name", "sketch_id", "filling", "wrong"), PLANTED,
                         ids=[f"{p[0]}-{p[3]}" for p in PLANTED])
def test_a_planted_wrong_filling_is_refuted_and_never_admitted(
        name: str, sketch_id: str, filling: dict[str, Any], wrong: str) -> None:
    spec = TILE_OPS[name].spec(LIMITS)
    chosen = sketch(PROFILE, sketch_id)
    decided = admit(spec, chosen, filling)
    assert isinstance(decided, Rejected) and decided.outcome == "refuted", (wrong, decided)
    assert isinstance(decided.verdict, Refuted)
    candidate = chosen.build(spec, filling).func
    assert decided.verdict.counterexample.shows_in(candidate, spec.func)
    assert (sketch_id, tuple(sorted(filling.items()))) not in admitted(synth(name))


def test_a_second_run_is_served_from_the_cache_and_never_asks_the_prover() -> None:
    calls = []

    def prover(*args: Any, **kwargs: Any) -> Verdict:
        calls.append(args)
        return prove_equivalent(*args, **kwargs)

    cache = ProofCache()
    first = synth("row_sum", cache=cache, prove=prover)
    asked = len(calls)
    assert asked == first.counts.admitted + first.counts.refuted == 14
    second = synth("row_sum", cache=cache, prove=prover)
    assert len(calls) == asked
    assert admitted(second) == admitted(first)
    assert all(a.cached for a in second.lowerings)
    assert "3 sketches (3 from cache), 0 tried, 0 pruned, 4 admitted" in second.summary()
    # the rebuilt candidates are the proved ones
    assert [instructions(a) for a in second.lowerings] == \
        [instructions(a) for a in first.lowerings]


def _sizes(lowering: Admitted, grid: str, dims: set[str], rng: np.random.Generator
           ) -> tuple[dict[str, int], int]:
    """Sizes within the lowering's conditions (the grid dim any, no multiple of the tile) and
    the tile of the grid dim."""
    bound = {d: 100 for d in dims}
    for text in lowering.candidate.conditions:
        dim, _, value = text.partition(" <= ")
        bound[dim] = min(bound.get(dim, int(value)), int(value))
    tile = min(bound.pop(grid, 128), 128)
    sizes = {d: int(rng.integers(1, b + 1)) for d, b in bound.items()}
    sizes[grid] = int(rng.integers(0, 3)) * tile + int(rng.integers(1, tile))
    return sizes, tile


RUN = [name for name, op in TILE_OPS.items() if op.grid is not None]


@pytest.mark.parametrize("name", RUN)
def test_every_admitted_lowering_runs_on_the_simulator(name: str, tmp_path: Path) -> None:
    tile_op = TILE_OPS[name]
    assert tile_op.grid is not None
    dims = {d for shape, _ in tile_op.params for d in shape if not d.isdigit()}
    rng = np.random.default_rng(sum(map(ord, name)))
    report = synth(name)
    assert report.lowerings
    for k, lowering in enumerate(report.lowerings):
        sizes, tile = _sizes(lowering, tile_op.grid, dims, rng)
        assert sizes[tile_op.grid] % tile != 0
        got, want = run_lowering(tile_op, sketch(PROFILE, lowering.sketch), lowering.filling,
                                 PROFILE, sizes, tile, tmp_path, seed=k)
        dtype = tile_op.params[0][1]
        rtol, atol = DTYPES[dtype].tolerance
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol,
                                   atol=atol * scale, err_msg=f"{lowering.sketch} "
                                   f"{dict(lowering.filling)} at {sizes}, tile {tile}")


def test_the_emitted_lowering_prints_the_synthesized_instructions() -> None:
    report = synth("matmul_ksplit")
    chosen = sketch(PROFILE, "matmul_ksplit.accumulate")
    (accumulating,) = [a for a in report.lowerings if a.filling["second.accumulate"]]
    text = emit_lowering(TILE_OPS["matmul_ksplit"], chosen, accumulating.filling, PROFILE,
                         128).text
    # two matmuls in each of the kernel's two grids (its loads ahead of the grid, or not)
    assert "accumulate=True" in text and text.count("nisa.nc_matmul(") == 4
    cumsum = synth("cumsum")
    (tensor,) = [a for a in cumsum.lowerings if a.sketch == "cumsum.triangular_matmul"
                 and a.filling["layout.transpose"] == "tensor"]
    text = emit_lowering(TILE_OPS["cumsum"], sketch(PROFILE, tensor.sketch), tensor.filling,
                         PROFILE, 128).text
    assert "nisa.affine_select(" in text and "cmp_op=nl.greater_equal" in text
    assert 'assert F <= 128, "cumsum_cumsum_triangular_matmul: assumes F <= 128"' in text


def test_the_lowerings_enter_the_tile_op_s_class_in_the_nu_graph() -> None:
    spec = TILE_OPS["row_sum"].spec(LIMITS)
    report = synth("row_sum")
    g = EGraph()
    imported = import_function(g, spec.func)
    (cls,) = imported.results
    held = enter_lowerings(g, cls, imported.params, report, spec,
                           assumptions=["P <= 128", "F <= 128"])
    # the VectorE transpose needs P <= 32, which the graph's sizes do not meet
    assert [(h.lowering.filling.get("layout.transpose"), h.needs) for h in held] == [
        ("vector", "P <= 32")]
    nodes = g.class_nodes(g.find(cls))
    assert sorted(g.nodes[n].op for n in nodes) == [
        "ax.sum", "nki.activation_reduce", "nki.tensor_copy", "nki.tensor_reduce"]
    entered = {g.proofs[g.justification[n]].move for n in nodes if g.justification[n] != "input"}
    assert entered == {"synthesize-isa row_sum.tensor_reduce",
                       "synthesize-isa row_sum.activation_reduce",
                       "synthesize-isa row_sum.matmul_ones"}
    (matmul,) = [n for n in nodes if g.nodes[n].op == "nki.tensor_copy"]
    (step,) = explain(g, nodes[0], matmul)
    assert "by p" in step.describe(g) and "synthesize-isa row_sum.matmul_ones" in \
        step.describe(g)
    # the printed graph reads back, each class's claims proved again by the reader
    again, back = read_graph(graph_function(g, imported))
    assert len(again.class_nodes(again.find(back.results[0]))) == 4
    # with the VectorE bound stated, all four lowerings enter
    g = EGraph()
    imported = import_function(g, spec.func)
    assert enter_lowerings(g, imported.results[0], imported.params, report, spec,
                           ["P <= 32", "F <= 32"]) == []
    assert len(g.class_nodes(g.find(imported.results[0]))) == 5
