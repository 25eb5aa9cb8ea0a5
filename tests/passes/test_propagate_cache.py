"""`propagate{cache=...}` keeps each function's result with the proofs: a second run prints what
the first printed without searching, and a stale or foreign stored result is never used."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from axon.frontend.numpy_subset import parse_source
from axon.nugraph.session import Session
from axon.tools.embed import print_ir, run_pipeline
from axon.verifier import cache as cache_module
from axon.verifier import prove as prove_module

SUM_OF_MATMUL = "def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x @ w, axis=1)\n"
RMSNORM_MATMUL = ("def f(x: f32[M, K], g: f32[K], w: f32[K, N]):\n"
                  "    return (x / sqrt(mean(x * x, axis=1, keepdims=True) + 1e-6) * g) @ w\n")


def propagate(source: str, cache: Path, options: str = "") -> str:
    module = parse_source(source, "<test>")
    run_pipeline(module, f'propagate{{cache="{cache}" {options}}}')
    return print_ir(module)


def untimed(text: str) -> str:
    """`text` without the proof times a nu.graph's proofs table prints."""
    return re.sub(r", [0-9.]+s\]", ", _s]", text)


def stored(cache: Path) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = json.loads(cache.read_text())["results"]
    return results


class Searches:
    """Counts the searches `Session.run` does."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        run = Session.run

        def counted(session: Session, *args: object, **kwargs: object) -> object:
            self.count += 1
            return run(session, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Session, "run", counted)


@pytest.mark.parametrize("emit", ["best", "top-k", "graph"])
def test_a_second_run_prints_the_first_runs_result_without_searching(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emit: str) -> None:
    cache = tmp_path / "proofs.json"
    options = f'emit="{emit}" top_k=2'
    searches = Searches(monkeypatch)
    cold = propagate(RMSNORM_MATMUL, cache, options)
    assert searches.count == 1 and len(stored(cache)) == 1
    assert propagate(RMSNORM_MATMUL, cache, options) == cold
    assert searches.count == 1
    # the search, run again without the stored result, finds the same: what was stored is
    # what a re-run computes (but for the seconds each proof took, which a graph prints)
    doc = json.loads(cache.read_text())
    doc["results"] = {}
    doc["sha256"] = cache_module._checksum(doc["entries"], doc["results"])
    cache.write_text(json.dumps(doc))
    assert untimed(propagate(RMSNORM_MATMUL, cache, options)) == untimed(cold)
    assert searches.count == 2


def test_a_stored_result_lists_the_proofs_it_relies_on(tmp_path: Path) -> None:
    cache = tmp_path / "proofs.json"
    propagate(SUM_OF_MATMUL, cache)
    doc = json.loads(cache.read_text())
    (record,) = doc["results"].values()
    assert record["proofs"]
    assert all(doc["entries"][k]["verdict"] == "proved" for k in record["proofs"])


def test_a_result_whose_proof_left_the_cache_is_searched_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proofs.json"
    cold = propagate(SUM_OF_MATMUL, cache)
    doc = json.loads(cache.read_text())
    (record,) = doc["results"].values()
    del doc["entries"][record["proofs"][0]]  # e.g. a verdict of an older encoding, dropped
    doc["sha256"] = cache_module._checksum(doc["entries"], doc["results"])
    cache.write_text(json.dumps(doc))
    searches = Searches(monkeypatch)
    assert propagate(SUM_OF_MATMUL, cache) == cold
    assert searches.count == 1


def test_other_options_or_other_code_do_not_take_a_stored_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proofs.json"
    propagate(SUM_OF_MATMUL, cache)
    searches = Searches(monkeypatch)
    propagate(SUM_OF_MATMUL, cache, 'sizes="M=4,N=4096,K=4"')
    propagate(SUM_OF_MATMUL, cache, "device=trn2")
    assert searches.count == 2 and len(stored(cache)) == 3
    monkeypatch.setattr(cache_module, "code_fingerprint", lambda: "another version of Axon")
    propagate(SUM_OF_MATMUL, cache)
    assert searches.count == 3


def test_a_result_stored_under_another_program_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proofs.json"
    propagate(SUM_OF_MATMUL, cache)
    other = SUM_OF_MATMUL.replace("axis=1", "axis=0")
    searches = Searches(monkeypatch)
    assert "ax.sum %w" not in propagate(other, cache)
    assert searches.count == 1


def test_a_search_cut_by_its_clock_is_not_stored(tmp_path: Path) -> None:
    cache = tmp_path / "proofs.json"
    propagate(SUM_OF_MATMUL, cache, "time_limit=0.000001")
    assert stored(cache) == {}


def test_a_report_always_searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "proofs.json"
    propagate(SUM_OF_MATMUL, cache)
    searches = Searches(monkeypatch)
    propagate(SUM_OF_MATMUL, cache, "report=true")
    assert searches.count == 1 and "candidates" in capsys.readouterr().err


def test_a_search_with_a_proof_its_safety_net_decided_is_not_stored(tmp_path: Path) -> None:
    cache = tmp_path / "proofs.json"
    propagate(RMSNORM_MATMUL, cache, "proof_seconds=0.000001")
    assert stored(cache) == {}


def test_a_search_whose_proofs_a_count_stopped_is_stored_and_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proofs.json"
    cold = propagate(RMSNORM_MATMUL, cache, "proof_rlimit=1")  # every z3 call runs out
    assert len(stored(cache)) == 1
    unknowns = [r for r in json.loads(cache.read_text())["entries"].values()
                if r["verdict"] == "unknown"]
    assert unknowns and all(r["budget"] == "rlimit" for r in unknowns)
    searches = Searches(monkeypatch)
    assert propagate(RMSNORM_MATMUL, cache, "proof_rlimit=1") == cold and searches.count == 0
    propagate(RMSNORM_MATMUL, cache)  # another budget: another key, searched again
    assert searches.count == 1


def test_a_stored_program_that_does_not_prove_again_is_not_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the stored text is rewritten into another program and the file saved through the cache
    # (so its checksum holds): the program is read back, proved against the input again, fails,
    # and the search runs again
    cache = tmp_path / "proofs.json"
    cold = propagate(SUM_OF_MATMUL, cache, 'emit="best"')
    proofs = cache_module.ProofCache(cache)
    (key, record), = proofs.results.items()
    (text,) = record["functions"]
    assert "ax.sum" in text or "add over" in text
    wrong = text.replace("ax.matmul", "ax.mul") if "ax.matmul" in text else text.replace(
        " * ", " + ", 1)
    assert wrong != text
    proofs.put_result(key, {"functions": [wrong]}, record["proofs"])
    proofs.save()
    searches = Searches(monkeypatch)
    with pytest.warns(UserWarning, match="not proved again"):
        assert propagate(SUM_OF_MATMUL, cache, 'emit="best"') == cold
    assert searches.count == 1


def test_a_search_its_proof_count_cut_is_stored_and_served_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proofs.json"
    cold = propagate(RMSNORM_MATMUL, cache, "max_proofs=3")
    assert len(stored(cache)) == 1  # a count cut it: a re-run is cut at the same place
    searches = Searches(monkeypatch)
    assert propagate(RMSNORM_MATMUL, cache, "max_proofs=3") == cold and searches.count == 0
    # the same search again without the stored result stops where the cold one did
    doc = json.loads(cache.read_text())
    doc["results"] = {}
    doc["sha256"] = cache_module._checksum(doc["entries"], doc["results"])
    cache.write_text(json.dumps(doc))
    assert propagate(RMSNORM_MATMUL, cache, "max_proofs=3") == cold and searches.count == 1
    assert propagate(RMSNORM_MATMUL, cache) != cold  # uncut, it finds more


def test_a_served_result_is_checked_without_normalizing_or_solving(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proofs.json"
    cold = propagate(RMSNORM_MATMUL, cache, 'emit="top-k" top_k=3')
    normalized: list[str] = []
    inline = prove_module.inline_function

    def counted(func: object, *args: object) -> object:
        normalized.append(str(func))
        return inline(func, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(prove_module, "inline_function", counted)
    monkeypatch.setattr(prove_module, "_check", _no_solver)
    searches = Searches(monkeypatch)
    assert propagate(RMSNORM_MATMUL, cache, 'emit="top-k" top_k=3') == cold
    assert searches.count == 0 and normalized == []


def _no_solver(*_: object, **__: object) -> None:
    raise AssertionError("a solver was called")
