"""Selection: candidates are programs x tilings x launch configurations, priced and bounded;
a selection on the CPU checks them all and picks one whose module runs; the chosen candidates
make a bundle in the harness's format, and a GPU run's winners are filed in the winner cache;
a program whose kernels do not lower is a skipped case, with the lowering's reason."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects import xt
from axon.nugraph.stored import functions_from_texts
from axon.selection.cache import WinnerCache
from axon.selection.executor import LocalExecutor
from axon.selection.space import ranked_bounded
from axon.targets.xe_triton.bundle import (
    BundleCandidate,
    bundle_case,
    kept_candidates,
    merge_bundles,
    record_winners,
    suite_bundle,
    write_bundle,
)
from axon.targets.xe_triton.harness.bundle import BundleError, read_bundle
from axon.targets.xe_triton.kb import load_device
from axon.targets.xe_triton.lower import lower_function
from axon.targets.xe_triton.select import (
    ONE_BLOCK,
    Candidate,
    Selection,
    SelectOptions,
    cost_profile,
    enumerate_candidates,
    kernel_facts,
    one_block_a_stretch,
    program_variants,
    select_kernel,
    staged_candidates,
)
from axon.tiling.search import all_sizes, tile_program
from axon.tools.embed import parse_source

SMALL = {"M": 48, "N": 40}


def program(name: str) -> FuncOp:
    (func,) = [op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp)]
    return func


@pytest.fixture(scope="module")
def selection() -> Selection:
    executor = LocalExecutor(workers=1)
    try:
        return select_kernel(program("mul"), SelectOptions(sizes=SMALL, max_candidates=2),
                             executor, program="mul")
    finally:
        executor.close()


def test_candidates_are_programs_by_tilings_by_configs() -> None:
    func = program("rmsnorm_matmul")
    device = load_device("h200")
    profile = cost_profile(device)
    sizes = all_sizes(func, {"M": 4096, "N": 4096, "K": 4096})
    funcs = program_variants(func, "h200", sizes, 3)
    assert len(funcs) > 1  # the nu-graph's runners-up, each marked a variant of the program
    assert all("axon.variant_of" in f.attributes for f in funcs[1:])
    result = tile_program(funcs, profile, sizes, top_k=3)
    skipped: list[tuple[str, str]] = []
    found = enumerate_candidates(result.proved, device, profile, sizes,
                                 SelectOptions(tilings=3, configs=3), skipped)
    assert len({c.id for c in found}) == len(found)
    # "registers": a launch whose tiles overflow its warps' registers, at more warps
    assert {"tile sizes", "autotune"} <= {c.origin for c in found} <= {
        "tile sizes", "autotune", "registers"}
    for wider in (c for c in found if c.origin == "registers"):
        same = {k: v for k, v in wider.kwargs.items() if k != "num_warps"}
        assert any({k: v for k, v in c.kwargs.items() if k != "num_warps"} == same
                   and c.kwargs["num_warps"] < wider.kwargs["num_warps"] for c in found)
    assert len({(c.variant, c.tiling) for c in found}) >= 2
    priced = [c for c in found if c.modeled_ms != float("inf")]
    assert priced and all(c.kwargs["num_warps"] in device.num_warps for c in found)
    kept = ranked_bounded(found, lambda c: c.modeled_ms, lambda c: (c.variant, c.tiling), 4)
    assert len(kept.chosen) == min(4, len(priced)) and kept.space == len(found)


def test_a_launch_the_device_refuses_is_pruned_before_the_cascade() -> None:
    # M = 8 rows: the cost model's best blocks hold 8, under the H200 dot's 16
    func = program("gated_mlp")
    device = load_device("h200")
    profile = cost_profile(device)
    sizes = all_sizes(func, {"M": 8, "K": 4096, "N": 4096})
    result = tile_program([func], profile, sizes, top_k=3)
    found = enumerate_candidates(result.proved, device, profile, sizes, SelectOptions(), [])
    assert any(c.kwargs.get("BM") == 8 for c in found)
    assert all(c.modeled_ms == float("inf") for c in found if c.kwargs.get("BM", 16) < 16)
    assert any(c.modeled_ms < float("inf") for c in found)


def _offered(name: str, sizes: dict[str, int]) -> tuple[list[Candidate], int]:
    """The blocks_k candidates of suite program `name` at `sizes` in rank order (the launchable
    ones), and the dots its lowered kernel runs as the KB sees them."""
    func = program(name)
    device = load_device("h200")
    profile = cost_profile(device)
    bound = all_sizes(func, sizes)
    result = tile_program([func], profile, bound, top_k=3)
    found = enumerate_candidates(result.proved, device, profile, bound, SelectOptions(), [])
    ranked = ranked_bounded([c for c in found if c.tiling == "blocks_k"], lambda c: c.modeled_ms,
                            lambda c: (c.variant, c.tiling), len(found)).chosen
    proposal = next(p for p in result.proved if p.tiling.kind == "blocks_k")
    assert proposal.kernel is not None
    lowered = lower_function(proposal.kernel)
    (kernel,) = [op for op in lowered.body.block.ops if isinstance(op, xt.KernelOp)]
    return ranked, kernel_facts(kernel, bound).dots


def _launch(c: Candidate) -> tuple[int, ...]:
    return tuple(c.kwargs.get(k, 0) for k in ("BM", "BN", "BK", "num_warps", "num_stages"))


def test_a_gemm_of_two_accumulators_is_offered_half_the_columns_first() -> None:
    # gated_mlp at problem 05's shape: two BMxBN fp32 accumulators in one K loop; measured on
    # an H100, 128x64x64 w4 s3 (0.1661 ms) beat the one-accumulator grid's 128x128x64 w8 s3
    # (0.1893), so the KB's grid for two dots (cuda_multi_accumulator_gemm_grid) leads with it
    # and the cost model, which prices it below 128x128, ranks it first
    gated, dots = _offered("gated_mlp", {"M": 2048, "K": 2048, "N": 5632})
    assert dots == 2
    assert _launch(gated[0]) == (128, 64, 64, 4, 3) and gated[0].origin == "autotune"
    assert gated[0].kwargs["GROUP_M"] == 8
    assert {(128, 64, 64, 4, 4), (128, 64, 64, 8, 3)} <= {_launch(c) for c in gated}
    # every launch offered holds the two accumulators in at most 128 values a thread
    assert all(2 * c.kwargs["BM"] * c.kwargs["BN"] <= 128 * 32 * c.kwargs["num_warps"]
               for c in gated)
    # one accumulator (matmul at problem 14's GEMM shape) keeps the wide tiles at 8 warps
    one, dots = _offered("matmul", {"M": 2048, "K": 4096, "N": 4096})
    assert dots == 1
    assert _launch(one[0]) == (128, 256, 64, 8, 3)
    assert all(c.kwargs["BN"] >= 128 for c in one)
    assert (128, 64, 64, 4, 3) not in {_launch(c) for c in one}


def test_a_selection_checks_every_kept_candidate_and_its_pick_runs(
        selection: Selection) -> None:
    assert len(selection.verdicts) == len(selection.candidates) == 2
    assert selection.chosen is not None and selection.verdict is not None
    assert selection.verdict.passed
    assert selection.verdict.timing == "timing skipped: no GPU"
    passed = [c.id for c in selection.passed()]
    assert selection.chosen.id == passed[0]
    emitted = selection.module
    assert emitted is not None
    os.environ["TRITON_INTERPRET"] = "1"  # the CPU interpreter: no GPU here
    run = _load(emitted.text, emitted.name)
    x, y = torch.randn(48, 40).bfloat16(), torch.randn(48, 40).bfloat16()
    got = run(x, y, **{k: v for k, v in selection.chosen.kwargs.items()})
    assert torch.allclose(got.float(), (x.float() * y.float()), rtol=3e-2, atol=8e-3)


#: gemm_sum_scale as propagation rewrites it (`x @ rowsum(w)`), in bf16
ROWSUM = """
func.func @gss(%x: !ax.tensor<[M, K], bf16>, %w: !ax.tensor<[K, N], bf16>,
               %s: !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16> {
  %0 = ax.sum %w {axes = array<i64: 1>, keepdims = false}
      : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[K], bf16>
  %1 = ax.matmul %x, %0 : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16>
  %2 = ax.mul %1, %s : (!ax.tensor<[M], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16>
  func.return %2 : !ax.tensor<[M], bf16>
}
"""


def test_a_staged_candidate_sums_w_once_and_passes_the_cascade() -> None:
    (func,) = functions_from_texts([ROWSUM])
    executor = LocalExecutor(workers=1)
    try:
        chosen = select_kernel(func, SelectOptions(sizes={"M": 1024, "K": 8192, "N": 8192},
                                                   programs=1, max_candidates=3),
                               executor, program="")
    finally:
        executor.close()
    staged = [c for c in chosen.candidates if c.origin == "staged"]
    device = load_device("h200")
    profile = cost_profile(device)
    sizes = all_sizes(func, {"M": 1024, "K": 8192, "N": 8192})
    whole = enumerate_candidates(tile_program([func], profile, sizes, top_k=3).proved, device,
                                 profile, sizes, SelectOptions(), [])
    assert staged and whole
    # one kernel re-sums w for every row block of x: 64 MB a block against w's 128 MB once
    assert min(c.modeled_ms for c in staged) * 5 < min(c.modeled_ms for c in whole)
    assert chosen.chosen is not None and chosen.chosen.origin == "staged"
    assert chosen.verdict is not None and chosen.verdict.passed  # steps 1-3 on the CPU
    module = chosen.module
    assert module is not None and module.name == "gss_staged" and module.defaults == {}
    assert module.text.count("@triton.jit\ndef gss_stage") == 2
    os.environ["TRITON_INTERPRET"] = "1"
    run = _load(module.text.replace("bfloat16", "float32"), module.name)
    x, w, s = torch.rand(5, 7), torch.rand(7, 9), torch.tensor(1.5)
    torch.testing.assert_close(run(x, w, s), (x @ w.sum(1)) * s, rtol=1e-5, atol=1e-5)
    out = torch.empty(5)  # the consumer's result written into the caller's tensor
    assert run(x, w, s, out=(out,)) is out
    torch.testing.assert_close(out, (x @ w.sum(1)) * s, rtol=1e-5, atol=1e-5)


def test_a_staged_plan_pairs_the_kb_launches_where_the_cost_model_ties() -> None:
    # rmsnorm_matmul 1024^3: the row stage and the GEMM stage price alike at several launches
    # (bandwidth- and matrix-bound); the KB's measured launches (one row a program at 8 warps;
    # the small-GEMM grid's 64x128x128 at 4 stages) make the best pair, not an arbitrary tie
    func = program("rmsnorm_matmul")
    device = load_device("h200")
    profile = cost_profile(device)
    sizes = all_sizes(func, {"M": 1024, "N": 1024, "K": 1024})
    found = staged_candidates([func], device, profile, sizes, SelectOptions(), None, [],
                              lambda _: None)
    best = min(found, key=lambda c: c.modeled_ms)
    assert [stage.origin for stage in best.stages] == ["autotune", "autotune"]
    producer, consumer = best.stages
    assert (producer.kwargs["BM"], producer.kwargs["num_warps"]) == (1, 8)
    assert {k: consumer.kwargs[k] for k in ("BM", "BN", "BK", "num_stages")} == {
        "BM": 64, "BN": 128, "BK": 128, "num_stages": 4}


def test_a_cut_whose_intermediate_alone_costs_more_than_one_launch_is_not_tiled() -> None:
    (func,) = functions_from_texts([ROWSUM])
    device = load_device("h200")
    profile = cost_profile(device)
    sizes = all_sizes(func, {"M": 1024, "K": 8192, "N": 8192})
    skipped: list[tuple[str, str]] = []
    # rowsum(w) is 8192 values, kept in f32 (a bf16 sum feeding the mat-vec): 32 KiB written
    # and read back, 1.52e-05 ms at 4.3 TB/s
    assert staged_candidates([func], device, profile, sizes, SelectOptions(), None, skipped,
                             lambda _: None, bound_ms=1e-5) == []
    (where, why), = skipped
    assert (where, why) == ("@gss cut at ax.sum#0", "its intermediate takes 1.52e-05 ms to "
                            "write and read back, over the best single launch's 1e-05 ms")
    lines: list[str] = []
    assert staged_candidates([func], device, profile, sizes, SelectOptions(), None, [],
                             lines.append, bound_ms=2e-5)
    (line,) = lines
    assert line.startswith("staged: @gss cut at ax.sum#0 (kept in f32: a bf16 ax.sum result "
                           "that feeds arithmetic): "), line


def _load(text: str, name: str) -> Callable[..., Any]:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{name}_chosen.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"chosen_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        run: Callable[..., Any] = getattr(module, name)
        return run


def test_the_bundle_and_the_winners_of_its_gpu_run(selection: Selection, tmp_path: Path
                                                   ) -> None:
    func = program("mul")
    case = bundle_case(PROGRAMS["mul"], SMALL, "h200", func)
    for c in selection.passed():
        emitted = selection.emitted[c.id]
        case.candidates.append(BundleCandidate(c.id, emitted.name, c.kwargs, c.tiling,
                                               c.proof_id, c.modeled_ms, emitted.text))
    bundle = tmp_path / "bundle"
    manifest = json.loads(write_bundle(bundle, [case], "h200").read_text())
    assert {k: manifest[k] for k in ("format", "version", "profile", "seed")} == {
        "format": "axon-bundle", "version": 1, "profile": "h200", "seed": 0}
    (record,) = manifest["cases"]
    assert record["case"] == "mul_48x40" and record["tier"] == 1
    assert record["tolerance"] == [0.03, 0.008]
    assert (record["flops"], record["bytes"]) == (48 * 40, 3 * 48 * 40 * 2)
    assert record["inputs"][0] == {"name": "x", "shape": [48, 40], "dtype": "bf16",
                                   "init": {"kind": "normal", "low": 0.0, "high": 1.0,
                                            "scale": 1.0}}
    assert record["outputs"] == [{"shape": [48, 40], "dtype": "bf16"}]
    harness = read_bundle(bundle)  # what axon-bench reads on the GPU machine
    assert [c.case for c in harness.cases] == ["mul_48x40"]
    assert len(harness.cases[0].candidates) == len(record["candidates"])
    first = record["candidates"][0]
    assert (bundle / first["module"]).read_text() == selection.emitted[first["id"]].text
    assert set(first) == {"id", "module", "function", "kwargs", "tiling", "proof_id",
                          "modeled_ms"}
    results = tmp_path / "winners.json"
    results.write_text(json.dumps({"profile": "h200", "axon_version": manifest["axon_version"],
                                   "winners": [{"case": "mul_48x40", "program": "mul",
                                                "sizes": SMALL, "dtype": "bf16",
                                                "candidate": first["id"],
                                                "kwargs": first["kwargs"], "axon_ms": 0.01,
                                                "baseline_ms": 0.02,
                                                "baseline": "torch eager"}]}))
    cache = WinnerCache(tmp_path / "cache.json")
    assert record_winners(results, bundle, cache) == 1
    winner = WinnerCache(tmp_path / "cache.json").get(record["key"])
    assert winner is not None and winner.candidate == first["id"]
    assert winner.module_text == (bundle / first["module"]).read_text()
    assert (winner.axon_ms, winner.baseline_ms, winner.baseline) == (0.01, 0.02, "torch eager")
    results.write_text(json.dumps({"winners": [{"case": "mul_48x40", "candidate": first["id"],
                                                "axon_ms": None, "baseline": None}]}))
    assert record_winners(results, bundle, cache) == 1  # a later run replaces the winner
    winner = WinnerCache(tmp_path / "cache.json").get(record["key"])
    assert winner is not None and (winner.axon_ms, winner.baseline) == (None, "")
    results.write_text(json.dumps({"winners": [{"case": "nope", "candidate": "x"}]}))
    with pytest.raises(ValueError, match=r"winners\[0\]: case 'nope' is not in"):
        record_winners(results, bundle, cache)


@pytest.mark.parametrize(("name", "launch"), [
    ("softmax", {"BM": 1, "num_warps": 8}),  # cuda_row_kernel_grid
    ("rmsnorm", {"BM": 1, "num_warps": 8}),
    ("mul", {"BM": 1, "num_warps": 4}),  # cuda_elementwise_grid
])
def test_a_row_kernel_is_offered_the_kb_launch_of_one_row_a_program(
        name: str, launch: dict[str, int]) -> None:
    # the tile search prices whole-row kernels alike at any rows a program (bandwidth-bound);
    # the KB's launch, measured on the H200, is one row a program over many programs
    func = program(name)
    device = load_device("h200")
    profile = cost_profile(device)
    sizes = all_sizes(func, {"M": 4096, "N": 4096})
    result = tile_program([func], profile, sizes, top_k=3)
    found = enumerate_candidates(result.proved, device, profile, sizes, SelectOptions(), [])
    rows = [c for c in found if c.tiling == "rows" and c.origin == "autotune"]
    assert any({k: c.kwargs.get(k) for k in launch} == launch for c in rows), (
        [c.id for c in found])
    # and a bundle of the case keeps a KB launch of its best tiling
    kept = kept_candidates([c for c in found if c.modeled_ms < float("inf")], 4)
    assert any(c.origin == "autotune" and c.tiling == kept[0].tiling for c in kept)


def test_long_rows_are_offered_at_the_warps_their_registers_need() -> None:
    # cumsum's rows kernel holds whole rows: a row of 32768 f32 lanes is 128 KiB, 256
    # registers a thread at the tile search's 4 warps (past the H200's 255), so each size
    # gets a candidate at the fewest warps that hold it, and every case bundles
    executor = LocalExecutor(workers=1)
    try:
        cases, skipped = suite_bundle("h200", executor, names=["cumsum"], say=lambda _: None)
    finally:
        executor.close()
    assert skipped == []
    assert [c.case for c in cases] == ["cumsum_1024x1024", "cumsum_128x32768",
                                       "cumsum_4096x4096"]
    (long,) = [c for c in cases if c.case == "cumsum_128x32768"]
    assert long.candidates
    for c in long.candidates:  # BM rows of 32768 f32 lanes, within 255 registers a thread
        assert c.kwargs["BM"] * 32768 <= c.kwargs["num_warps"] * 32 * 255


def _candidate(variant: str, tiling: str, ms: float, origin: str, n: int) -> Candidate:
    return Candidate(f"{variant}.{tiling}.{origin}{n}", variant, tiling, "", {}, ms, origin,
                     program("mul"))


def test_a_case_keeps_a_kb_launch_of_its_best_tiling() -> None:
    # the cost model prices the KB's launch like its own tile sizes (stages and block I/O are
    # not in it): ranked by price alone, one candidate a tiling, the KB's would never be kept
    passed = [_candidate("p", "blocks_k", 1.0, "tile sizes", 0),
              _candidate("p", "blocks_k", 1.0, "autotune", 1),
              _candidate("p", "blocks_k", 1.0, "autotune", 2),
              _candidate("p", "blocks", 1.2, "tile sizes", 3),
              _candidate("p", "rows_k", 1.4, "tile sizes", 4),
              _candidate("p", "rows_k", 0.9, "autotune", 5)]
    ranked = ranked_bounded(passed, lambda c: c.modeled_ms, lambda c: (c.variant, c.tiling), 3)
    assert [c.id for c in ranked.chosen] == [
        "p.rows_k.autotune5", "p.blocks_k.tile sizes0", "p.blocks.tile sizes3"]
    # rows_k is the best tiling and its KB launch is kept: nothing changes
    assert kept_candidates(passed, 3) == ranked.chosen
    passed = passed[:5]
    assert [c.id for c in kept_candidates(passed, 3)] == [
        "p.blocks_k.tile sizes0", "p.blocks.tile sizes3", "p.blocks_k.autotune1"]
    assert [c.id for c in kept_candidates(passed, 4)] == [
        "p.blocks_k.tile sizes0", "p.blocks.tile sizes3", "p.rows_k.tile sizes4",
        "p.blocks_k.autotune1"]
    assert [c.id for c in kept_candidates(passed, 1)] == ["p.blocks_k.tile sizes0"]
    # no KB launch of the best tiling passed: the ranking alone
    assert kept_candidates([c for c in passed if c.origin != "autotune"], 3) == (
        ranked_bounded([c for c in passed if c.origin != "autotune"], lambda c: c.modeled_ms,
                       lambda c: (c.variant, c.tiling), 3).chosen)


def test_a_case_keeps_the_best_of_the_other_plan_and_its_kb_launch() -> None:
    # softmax_matmul 1024^3 at stop 23: the staged plan ranked first and the fused kernel was
    # not timed; rmsnorm_matmul 4096^3: the other way round
    staged = [_candidate("p", "staged(rows+blocks_k)", 1.0, "staged", 0),
              _candidate("p", "staged(rows+rows_k)", 1.1, "staged", 1),
              _candidate("p", "staged(rows+blocks)", 1.2, "staged", 2)]
    fused = [_candidate("p", "blocks_k", 1.5, "tile sizes", 3),
             _candidate("p", "blocks_k", 1.5, "autotune", 4),
             _candidate("p", "rows_k", 1.6, "tile sizes", 5)]
    assert [c.id for c in kept_candidates(staged + fused, 3)] == [
        "p.staged(rows+blocks_k).staged0", "p.blocks_k.tile sizes3", "p.blocks_k.autotune4"]
    assert [c.id for c in kept_candidates(staged + fused, 4)] == [
        "p.staged(rows+blocks_k).staged0", "p.staged(rows+rows_k).staged1",
        "p.blocks_k.tile sizes3", "p.blocks_k.autotune4"]
    # one kernel first: its KB launch, then the best staged plan
    cheap = [_candidate("p", "blocks_k", 0.5, "tile sizes", 6),
             _candidate("p", "blocks_k", 0.5, "autotune", 7),
             _candidate("p", "blocks", 0.6, "tile sizes", 8),
             _candidate("p", "rows_k", 0.7, "tile sizes", 9)]
    assert [c.id for c in kept_candidates(cheap + staged, 3)] == [
        "p.blocks_k.tile sizes6", "p.blocks_k.autotune7", "p.staged(rows+blocks_k).staged0"]
    # two places: the KB launch first
    assert [c.id for c in kept_candidates(cheap + staged, 2)] == [
        "p.blocks_k.tile sizes6", "p.blocks_k.autotune7"]
    # two cuts of the same tilings are two plans (softmax_matmul: the normalized rows in
    # memory, cut0, and the row statistics, cut1): each is timed before either's runner-up
    cuts = [_candidate("p", "staged(cut1: rows+blocks_k)", 1.0, "staged", 10),
            _candidate("p", "staged(cut1: rows+blocks_k)", 1.0, "staged", 11),
            _candidate("p", "staged(cut0: rows+blocks_k)", 1.05, "staged", 12)]
    assert [c.id for c in kept_candidates(cuts + fused, 4)] == [
        "p.staged(cut1: rows+blocks_k).staged10", "p.staged(cut0: rows+blocks_k).staged12",
        "p.blocks_k.tile sizes3", "p.blocks_k.autotune4"]


def test_a_case_keeps_no_candidate_priced_far_above_its_best() -> None:
    passed = [_candidate("p", "rows", 1.0, "tile sizes", 0),
              _candidate("p", "rows_k", 2.9, "tile sizes", 1),
              _candidate("p", "blocks", 3.1, "tile sizes", 2),
              _candidate("p", "blocks_k", float("inf"), "tile sizes", 3)]
    # within KEPT_BAND (3x) of the best only, however many places are left
    assert [c.id for c in kept_candidates(passed, 4)] == ["p.rows.tile sizes0",
                                                          "p.rows_k.tile sizes1"]


def test_the_1024_cube_matmul_bundles_the_kb_small_gemm_launch_with_host_descriptors() -> None:
    executor = LocalExecutor(workers=1)
    try:
        cases, skipped = suite_bundle("h200", executor, per_case=3, names=["matmul"],
                                      say=lambda _: None)
    finally:
        executor.close()
    (case,) = [c for c in cases if c.case == "matmul_1024x1024x1024"]
    # the KB's small-GEMM grid starts at 64x128x128, 4 warps, 4 stages (cuda_small_gemm_grid)
    small_gemm = [c for c in case.candidates
                  if {k: c.kwargs.get(k) for k in ("BM", "BN", "BK", "num_warps", "num_stages")}
                  == {"BM": 64, "BN": 128, "BK": 128, "num_warps": 4, "num_stages": 4}]
    assert small_gemm, [c.id for c in case.candidates]
    assert any(".stages4." in c.id for c in small_gemm)  # the KB's launch, by its id
    for c in small_gemm:
        assert c.kwargs["block_io"] == "host_descriptor"
        assert "block_io='host_descriptor'" in c.text  # the module's default
    # and no candidate of the case runs a K loop of BK = 16 (64 iterations of one small MMA)
    assert all(c.kwargs["BK"] >= 64 for c in case.candidates if c.tiling == "blocks_k")


@pytest.mark.parametrize(("argv", "message"), [
    (["--record", "w.json"], "bundle: error: --record needs --bundle DIR"),
    (["--suite"], "bundle: error: --suite needs -o DIR"),
    (["--merge", "a"], "bundle: error: --merge needs -o DIR"),
    (["--merge", "missing", "-o", "out"],
     "bundle: error: missing: not a directory (expected a bundle holding manifest.json)"),
    (["--suite", "-o", "b", "--profile", "h100"], "bundle: error: unknown profile 'h100'"),
    (["--suite", "-o", "b", "--programs", "mul,nope"], "bundle: error: unknown program(s) nope"),
    (["--record", "missing.json", "--bundle", "."],
     "bundle: error: missing.json: cannot read: No such file or directory"),
])
def test_the_bundle_command_refuses_bad_input(argv: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from axon.targets.xe_triton import bundle

    with pytest.raises(SystemExit) as stop:
        bundle.main(argv)
    assert stop.value.code == 1
    assert capsys.readouterr().err.startswith(message)


def test_a_scan_case_is_bundled_with_the_tolerance_of_its_length() -> None:
    suite_program = PROGRAMS["cumsum_f32"]
    for sizes in ({"M": 1024, "N": 1024}, {"M": 8, "N": 16}):
        case = bundle_case(suite_program, sizes, "h200", program("cumsum_f32"))
        assert case.tolerance == suite_program.tolerance_at(sizes)
    assert case.tolerance[1] < bundle_case(suite_program, {"M": 1024, "N": 1024}, "h200",
                                           program("cumsum_f32")).tolerance[1]


def _one_case_bundle(root: Path, sizes: dict[str, int], text: str, profile: str = "h200"
                     ) -> Path:
    case = bundle_case(PROGRAMS["mul"], sizes, profile, program("mul"))
    case.candidates.append(BundleCandidate("mul.rows.BM1.w4", "mul", {"BM": 1, "num_warps": 4},
                                           "rows", "p0", 0.01, text))
    write_bundle(root, [case], profile)
    return root


def test_bundles_made_side_by_side_merge_into_one(tmp_path: Path) -> None:
    small = _one_case_bundle(tmp_path / "a", {"M": 8, "N": 8}, "# first\n")
    large = _one_case_bundle(tmp_path / "b", {"M": 16, "N": 16}, "# second\n")
    again = _one_case_bundle(tmp_path / "c", {"M": 8, "N": 8}, "# replaced\n")
    path, replaced = merge_bundles([small, large, again], tmp_path / "all")
    merged = read_bundle(path.parent)
    assert [c.case for c in merged.cases] == ["mul_8x8", "mul_16x16"]
    assert replaced == ["mul_8x8"]
    texts = [merged.module_path(c.candidates[0]).read_text() for c in merged.cases]
    assert texts == ["# replaced\n", "# second\n"]  # a later bundle's case wins
    # a bundle already there is never overwritten; bundles of two profiles do not mix
    with pytest.raises(BundleError, match="holds a bundle already"):
        merge_bundles([small], tmp_path / "all")
    other = _one_case_bundle(tmp_path / "d", {"M": 8, "N": 8}, "# b70\n", profile="b70")
    with pytest.raises(BundleError, match="profile b70"):
        merge_bundles([small, other], tmp_path / "mixed")


def test_a_launch_another_variant_holds_comes_after_every_new_launch() -> None:
    # rmsnorm_1024x1024 at stop 23: three of four places held rows BM8 w4 of three variants
    def launch(variant: str, bm: int, n: int) -> Candidate:
        c = _candidate(variant, "rows", 1.0, "tile sizes", n)
        c.kwargs = {"BM": bm, "num_warps": 4}
        return c

    passed = [launch("p", 8, 0), launch("p_k1", 8, 1), launch("p_k2", 8, 2), launch("p", 1, 3),
              launch("p", 2, 4)]
    assert [c.id for c in kept_candidates(passed, 3)] == [
        "p.rows.tile sizes0", "p.rows.tile sizes3", "p.rows.tile sizes4"]


def _split_candidate(ms: float, origin: str, nb: int, n: int) -> Candidate:
    partials = Candidate(f"p.split.{n}", "p", "batched_rows_k_online_split", "",
                         {"BM": 16, "BK": 256, "NB": nb, "num_warps": 4}, ms, origin,
                         program("mul"))
    return Candidate(partials.id, "p", partials.tiling, "", {}, ms, origin, program("mul"),
                     (partials, partials))


def test_a_split_loop_is_timed_atone_block_a_stretch_too() -> None:
    # qknorm_gqa's decode on the H200: the model chose two blocks a stretch, one ran twice as
    # fast; the GPU times the launch at one block a stretch in place of the last ranked one
    passed = [_split_candidate(1.0, "tile sizes", 2, 0),
              _split_candidate(1.05, "tile sizes", 4, 1),
              _candidate("p", "batched_rows_k_online", 1.1, "tile sizes", 2),
              _candidate("p", "batched_rows_k_online", 1.2, "autotune", 3),
              _split_candidate(1.3, ONE_BLOCK, 1, 4)]
    assert [c.id for c in kept_candidates(passed, 3)] == [
        "p.split.0", "p.batched_rows_k_online.tile sizes2", "p.split.4"]
    # the best already at one block a stretch: nothing is added
    assert "p.split.4" not in [c.id for c in kept_candidates(passed[1:4], 3)]


def test_each_split_launch_is_offered_atone_block_a_stretch() -> None:
    settings = [({"BK": 256, "NB": 2, "num_warps": 4}, "tile sizes"),
                ({"BK": 256, "NB": 1, "num_warps": 8}, "tile sizes"),
                ({"BK": 128, "NB": 4, "num_warps": 4}, "autotune")]
    assert one_block_a_stretch(settings) == [
        ({"BK": 256, "NB": 1, "num_warps": 4}, ONE_BLOCK),
        ({"BK": 128, "NB": 1, "num_warps": 4}, ONE_BLOCK)]
