"""The search over a program's tilings: bounded by its budgets, counting what it skips; its
result kept in the cache and returned again only for the same inputs and proofs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.tile import ForOp
from axon.nugraph.stored import function_text
from axon.targets.profiles import load_profile
from axon.tiling import search
from axon.tools.embed import parse_mlir, parse_source
from axon.verifier import ProofBudget, ProofCache, Unknown
from axon.verifier import prove as prove_module

T = "!ax.tensor<[M, N], f32>"
ADD = f"""
func.func @f(%x: {T}, %y: {T}) -> {T} {{
  %z = ax.add %x, %y : ({T}, {T}) -> {T}
  func.return %z : {T}
}}
"""


def program(copies: int) -> list[FuncOp]:
    return [next(op for op in parse_mlir(ADD, "f.mlir").ops if isinstance(op, FuncOp))
            for _ in range(copies)]


def test_a_tiling_that_ran_out_of_budget_is_skipped_for_the_later_variants(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def out_of_budget(kernel: FuncOp, func: FuncOp, **_: object) -> Unknown:
        calls.append(kernel.sym_name.data)
        return Unknown("out of budget: z3 spent the query's rlimit of 1 resource units", 0.0,
                       limited=True, budget="rlimit")

    monkeypatch.setattr(search, "prove_equivalent", out_of_budget)
    result = search.tile_program(program(3), load_profile("h200"), {"M": 64, "N": 64})
    assert calls == ["f_rows", "f_blocks"]  # once per tiling, not once per variant
    assert [p.verdict for p in result.proposals] == ["unknown", "unknown", *["skipped"] * 4]
    assert "ran out of its proof budget" in result.proposals[-1].reason


def suite_function(name: str) -> FuncOp:
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


@pytest.mark.parametrize(("name", "profile", "sizes"), [
    ("softmax", "trn2", {"M": 512, "N": 4096}),
    ("matmul", "trn2", {"M": 512, "K": 4096, "N": 512}),  # nested K loops: skipped when bare fits
    ("rmsnorm_matmul", "h200", {"M": 256, "K": 512, "N": 256}),
])
def test_the_lazy_search_ranks_as_the_whole_search_and_proves_only_what_is_taken(
        name: str, profile: str, sizes: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    func, device = suite_function(name), load_profile(profile)
    whole = [(p.variant, p.tiling, p.proof_id)
             for p in search.tile_program([func], device, sizes).proved if p.candidates]
    calls = counted_proofs(monkeypatch)
    lazy = [(p.variant, p.tiling, p.proof_id)
            for p in search.proved_cheapest_first([func], device, sizes)]
    assert lazy == whole and whole
    calls.clear()
    first = next(search.proved_cheapest_first([func], device, sizes))
    assert (first.variant, first.tiling, first.proof_id) == whole[0]
    assert first.kernel is not None and first.verdict == "proved"
    assert len(calls) < len(search.tilings(func)), calls  # the rest never proved


def test_the_lazy_search_skips_a_kind_that_ran_out_as_the_whole_search_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the rows kernel of the first variant runs out of its budget: the rows kernels of the
    # later variants are skipped, though they are priced as cheap as any
    prove = search.prove_equivalent
    asked: list[str] = []

    def rows_run_out(kernel: FuncOp, func: FuncOp, **kwargs: Any) -> Any:
        asked.append(kernel.sym_name.data)
        if kernel.sym_name.data.endswith("_rows") and len(asked) == 1:
            return Unknown("out of budget: planted", 0.0, limited=True, budget="rlimit")
        return prove(kernel, func, **kwargs)

    monkeypatch.setattr(search, "prove_equivalent", rows_run_out)
    lazy = [(p.tiling.kind) for p in search.proved_cheapest_first(
        program(3), load_profile("h200"), {"M": 64, "N": 64})]
    assert asked[0] == "f_rows" and lazy == ["blocks"] * 3


def test_the_lazy_search_stops_at_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counted_proofs(monkeypatch)
    found = list(search.proved_cheapest_first(program(2), load_profile("h200"),
                                              {"M": 64, "N": 64}, time_limit_s=1e-9))
    assert found == [] and calls == []


def test_an_unknown_for_a_reason_is_not_taken_for_a_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def gave_up(kernel: FuncOp, func: FuncOp, **_: object) -> Unknown:  # no limit stopped it
        return Unknown("z3 found candidate counterexamples, but none replayed", 0.0)

    monkeypatch.setattr(search, "prove_equivalent", gave_up)
    result = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64})
    assert [p.verdict for p in result.proposals] == ["unknown"] * 4


def test_the_time_limit_leaves_the_rest_counted_as_not_tried() -> None:
    result = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                 time_limit_s=1e-9)
    assert result.proposals == [] and result.unproposed == 4


def test_sizes_not_given_are_priced_at_1024() -> None:
    result = search.tile_program(program(1), load_profile("h200"), {"M": 8})
    best = result.proved[0].candidates[0]
    assert best.cost.compulsory_bytes == 3 * 8 * 1024 * 4


@pytest.mark.parametrize("profile", ["h200", "trn2"])
def test_the_multi_pass_softmax_kernel_is_proved(profile: str) -> None:
    # a loop for the max, one for the sum of exponentials, a parallel pass writing the rows:
    # each loop's masked partial reductions recombine into the reduction over the whole row
    module = parse_source(PROGRAMS["softmax"].source, "softmax.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    result = search.tile_program([func], load_profile(profile), {"M": 4096, "N": 4096})
    (multipass,) = (p for p in result.proposals if p.tiling.kind == "rows_multipass")
    assert multipass.verdict == "proved", multipass.reason
    assert multipass.kernel is not None
    loops = [op.loop_kind for op in multipass.kernel.walk() if isinstance(op, ForOp)]
    assert loops == ["sequential", "sequential", "parallel"]


def proposals_text(result: search.Result) -> list[tuple[object, ...]]:
    """Everything a result says of its proposals, kernels as their printed text."""
    return [(p.variant, p.tiling, None if p.kernel is None else function_text(p.kernel),
             p.verdict, p.reason, p.proof_id, p.candidates, p.source_ops)
            for p in result.proposals]


def tile_results(cache: ProofCache) -> list[dict[str, Any]]:
    """The whole searches' results stored in `cache` (not the kernels' prices)."""
    return [r for r in cache.results.values() if "proposals" in r]


def no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proving or pricing a kernel fails the test."""
    def fail(*_: object, **__: object) -> None:
        raise AssertionError("searched again")

    monkeypatch.setattr(search, "prove_equivalent", fail)
    monkeypatch.setattr(search, "concretize", fail)


def test_a_second_search_with_the_cache_returns_the_first_result_without_proving(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    cold = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64}, cache=cache)
    cache.save()
    assert len(cold.proved) == 4 and len(tile_results(cache)) == 1
    with monkeypatch.context() as patched:
        no_search(patched)
        warm = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                   cache=ProofCache(path))
    assert proposals_text(warm) == proposals_text(cold)
    assert [p.proof_id for p in warm.proved] == [p.proof_id for p in cold.proved]
    # searched again without the stored result: the same (what was stored, a re-run computes)
    again = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                cache=ProofCache())
    assert proposals_text(again) == proposals_text(cold)


def test_a_stored_tiling_is_not_used_for_other_sizes_or_profiles_or_lost_proofs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ProofCache(tmp_path / "proofs.json")
    search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64}, cache=cache)
    calls = counted_proofs(monkeypatch)
    search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 128}, cache=cache)
    search.tile_program(program(1), load_profile("trn2"), {"M": 64, "N": 64}, cache=cache)
    assert len(calls) == 4 and len(tile_results(cache)) == 3
    cache.entries.clear()  # the proofs are gone: a stored result relies on them
    search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64}, cache=cache)
    assert len(calls) == 6


def test_a_stored_kernel_that_builds_otherwise_is_refused_when_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # other code (or an edited record) builds another kernel than the one proved: its query
    # is not the recorded one, so it is never handed out as proved
    cache = ProofCache(tmp_path / "proofs.json")
    search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64}, cache=cache)
    build = search._kernel

    def tampered(*args: Any) -> FuncOp:
        kernel = build(*args)
        search._kernel_op(kernel).assume_also(["M >= 1"])
        return kernel

    monkeypatch.setattr(search, "_kernel", tampered)
    warm = search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64},
                               cache=cache)
    with pytest.raises(search.StoredKernelMismatch, match="rows kernel of @f in a stored"):
        _ = warm.proved[0].kernel


@pytest.mark.parametrize("edit", ["query", "answered"])
def test_a_stored_kernel_whose_proof_is_not_answered_is_refused_and_searched_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    cache = ProofCache(tmp_path / "proofs.json")
    cold = search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64},
                               cache=cache)
    (record,) = tile_results(cache)
    assert cache.holds_proofs(record["proofs"])
    if edit == "query":
        record["proposals"][0]["query"] = "0" * 64
    else:
        for key in [k for k, r in cache.entries.items() if r["verdict"] == "answered"]:
            del cache.entries[key]  # the proofs stay; no query is linked to them
    calls = counted_proofs(monkeypatch)
    with pytest.warns(UserWarning, match="the proof of the rows kernel of @f is not in"):
        again = search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64},
                                    cache=cache)
    assert len(calls) == 2 and proposals_text(again) == proposals_text(cold)


def counted_proofs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kernels the search asks the verifier for from now on."""
    calls: list[str] = []
    prove = search.prove_equivalent

    def counted(kernel: FuncOp, func: FuncOp, **kwargs: Any) -> object:
        calls.append(kernel.sym_name.data)
        return prove(kernel, func, **kwargs)

    monkeypatch.setattr(search, "prove_equivalent", counted)
    return calls


def test_a_served_result_normalizes_and_solves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    cold = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64}, cache=cache)
    cache.save()

    def no_inlining(*_: object, **__: object) -> None:
        raise AssertionError("a function was normalized")

    def no_solver(*_: object, **__: object) -> None:
        raise AssertionError("a solver was called")

    monkeypatch.setattr(prove_module, "inline_function", no_inlining)
    monkeypatch.setattr(prove_module, "_check", no_solver)
    warm = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                               cache=ProofCache(path))
    assert [p._kernel for p in warm.proposals] == [None] * 4  # built when read
    assert proposals_text(warm) == proposals_text(cold)


def test_a_stored_kernel_not_proved_is_built_when_read_and_checked(tmp_path: Path) -> None:
    tiny = ProofBudget(25_000, 1, 50.0)  # every proof runs out: no kernel is proved
    cache = ProofCache(tmp_path / "proofs.json")
    cold = search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64},
                               budget=tiny, cache=cache)
    (record,) = tile_results(cache)
    record["proposals"][0]["kernel"] = "0" * 64  # an edited record
    warm = search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64},
                               budget=tiny, cache=cache)
    assert [p._kernel for p in warm.proposals] == [None, None]  # not built yet
    built, first = warm.proposals[1].kernel, cold.proposals[1].kernel
    assert built is not None and first is not None
    assert function_text(built) == function_text(first)
    with pytest.raises(search.StoredKernelMismatch, match="rows kernel of @f in a stored"):
        _ = warm.proposals[0].kernel


def test_a_search_its_proof_count_cut_is_stored_and_served_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    cold = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                               max_proofs=3, cache=cache)
    cache.save()
    assert [p.verdict for p in cold.proposals] == ["proved"] * 3 and cold.unproposed == 1
    assert len(tile_results(cache)) == 1  # a count cut it: it repeats
    with monkeypatch.context() as patched:
        no_search(patched)
        warm = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                   max_proofs=3, cache=ProofCache(path))
    assert proposals_text(warm) == proposals_text(cold) and warm.unproposed == 1
    again = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                max_proofs=3, cache=ProofCache())
    assert proposals_text(again) == proposals_text(cold) and again.unproposed == 1


def test_a_search_whose_proofs_a_count_stopped_is_stored_for_that_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proofs.json"
    tiny = ProofBudget(25_000, 1, 50.0)  # one z3 resource unit: every proof runs out
    cache = ProofCache(path)
    cold = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                               budget=tiny, cache=cache)
    cache.save()
    assert [p.verdict for p in cold.proposals] == ["unknown", "unknown", "skipped", "skipped"]
    assert "rlimit of 1 resource units" in cold.proposals[0].reason
    assert len(tile_results(cache)) == 1  # a count, not a clock, shaped it: it repeats
    with monkeypatch.context() as patched:
        no_search(patched)
        warm = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                   budget=tiny, cache=ProofCache(path))
    assert proposals_text(warm) == proposals_text(cold)
    larger = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                 cache=ProofCache(path))  # the default budget tries again
    assert len(larger.proved) == 4


def test_a_search_a_clock_shaped_is_not_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_time(kernel: FuncOp, func: FuncOp, **_: object) -> Unknown:
        return Unknown("out of budget: the query ran past its safety net", 0.0, limited=True,
                       budget="seconds")

    monkeypatch.setattr(search, "prove_equivalent", out_of_time)
    cache = ProofCache()
    search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64}, cache=cache)
    assert cache.results == {}
    search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64}, cache=cache,
                        time_limit_s=1e-9)
    assert cache.results == {}


def test_a_kernel_is_priced_once_even_when_its_search_is_not_stored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    prove = search.prove_equivalent

    def blocks_time_out(kernel: FuncOp, func: FuncOp, **kwargs: Any) -> object:
        if kernel.sym_name.data.endswith("_blocks"):
            return Unknown("out of budget: the query ran past its safety net", 0.0,
                           limited=True, budget="seconds")
        return prove(kernel, func, **kwargs)

    priced: list[str] = []
    concretize = search.concretize

    def counted(kernel: Any, *args: Any) -> object:
        priced.append(kernel.parent_op().sym_name.data)
        return concretize(kernel, *args)

    monkeypatch.setattr(search, "prove_equivalent", blocks_time_out)
    monkeypatch.setattr(search, "concretize", counted)
    cache = ProofCache()
    first = search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64},
                                cache=cache)
    second = search.tile_program(program(1), load_profile("h200"), {"M": 64, "N": 64},
                                 cache=cache)
    assert tile_results(cache) == [] and priced == ["f_rows"]
    assert proposals_text(second) == proposals_text(first)


def test_a_gpu_row_kernel_takes_whole_rows_or_long_blocks_not_many_short_iterations() -> None:
    # rmsnorm 1024x4096 on the H200: rows_multipass at BK = 4 (2 x 1024 iterations of an 8x4
    # tile) took 0.222 ms, the rows kernel about 0.009 ms: the loop latency floor prices
    # short blocks out
    (func,) = [op for op in parse_source(PROGRAMS["rmsnorm"].source, "rmsnorm.py").ops
               if isinstance(op, FuncOp)]
    result = search.tile_program([func], load_profile("h200"), {"M": 1024, "N": 4096})
    best = result.proved[0]
    assert best.tiling.kind == "rows", [(p.tiling.kind, p.candidates[:1]) for p in result.proved]
    multipass = [c for p in result.proved if p.tiling.kind == "rows_multipass"
                 for c in p.candidates]
    assert multipass and all(c.params["BK"] >= 256 for c in multipass)
    assert best.candidates[0].cost.seconds < 1.05 * min(c.cost.seconds for c in multipass)
