"""The proof cache and the budgets: one proof per obligation per run, a versioned checksummed
file, running out of a budget gives Unknown, never Proved, and an Unknown a budget's count
decided repeats exactly, so it is stored for that budget and served again."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import z3

from axon.benchmarks.verifier_corpus import IDENTITIES, NON_IDENTITIES, functions
from axon.verifier import ProofBudget, ProofCache, Proved, Refuted, Unknown, prove_equivalent
from axon.verifier import budget as budget_module
from axon.verifier import cache as cache_module
from axon.verifier import prove as prove_module
from axon.verifier.cache import step_key

HARD = next(c for c in IDENTITIES if c.name == "softmax_max_invariance")
FALSE = next(c for c in NON_IDENTITIES if c.name == "max_subtraction_wrong_axis")
#: a query whose normalization reuses `make_sum`'s and `subst`'s memos across runs
SUMS = next(c for c in IDENTITIES if c.name == "matmul_associative")
#: counts no query of the corpus comes near, and a clock it never reaches
AMPLE = ProofBudget(10**9, 10**9, 600.0)


def one_unit() -> ProofBudget:
    """A budget whose z3 calls run out at once (its normalization steps are ample)."""
    return ProofBudget(AMPLE.steps, 1, AMPLE.seconds)


def test_resource_limit_gives_unknown_never_proved() -> None:
    verdict = prove_equivalent(*functions(HARD), budget=one_unit())
    assert isinstance(verdict, Unknown) and verdict.limited and verdict.budget == "rlimit"
    assert "rlimit of 1 resource units" in verdict.reason


def test_tiny_safety_net_never_proves_a_non_identity() -> None:
    verdict = prove_equivalent(*functions(FALSE),
                               budget=ProofBudget(AMPLE.steps, AMPLE.rlimit, 0.001))
    assert not isinstance(verdict, Proved)


def test_same_obligation_is_proved_once() -> None:
    cache = ProofCache()
    first = prove_equivalent(*functions(HARD), cache=cache)
    again = prove_equivalent(*functions(HARD), cache=cache)  # freshly built IR, same obligation
    assert isinstance(first, Proved) and not first.cached
    assert isinstance(again, Proved) and again.cached and again.proof_id == first.proof_id
    assert (cache.hits, cache.misses) == (1, 1)


def test_a_bounded_cache_forgets_its_oldest_records() -> None:
    cache = ProofCache(max_entries=2)
    for key in ("a", "b", "c"):
        cache.put(key, {"verdict": "proved", "proof_id": key})
    assert list(cache.entries) == ["b", "c"]
    cache.put_result("r1", {"x": 1}, ["b"])
    cache.put_result("r2", {"x": 2}, ["c"])
    cache.put_result("r3", {"x": 3}, ["b", "c"])
    assert list(cache.results) == ["r2", "r3"] and cache.result("r3") is not None
    cache.put("d", {"verdict": "proved", "proof_id": "d"})  # "b" forgotten: r3 relied on it
    assert cache.result("r3") is None and cache.result("r2") is not None


def test_the_process_cache_is_one_bounded_cache_that_serves_a_second_proof() -> None:
    shared = cache_module.process_cache()
    assert shared is cache_module.process_cache()
    assert shared.path is None and shared.max_entries == cache_module.PROCESS_ENTRIES
    first = prove_equivalent(*functions(SUMS), cache=shared)
    again = prove_equivalent(*functions(SUMS), cache=shared)
    assert isinstance(first, Proved) and isinstance(again, Proved) and again.cached
    assert again.proof_id == first.proof_id


def spent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The (steps, rlimit) each later query spends, as the budget counted them."""
    record: list[tuple[int, int]] = []
    prove = prove_module._prove

    def counted(*args: Any, **kwargs: Any) -> object:
        try:
            return prove(*args, **kwargs)
        finally:
            record.append((budget_module.steps_spent(), budget_module.rlimit_spent()))

    monkeypatch.setattr(prove_module, "_prove", counted)
    return record


def test_a_query_spends_the_same_counts_whatever_the_process_proved_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    record = spent(monkeypatch)
    for _ in range(2):  # the second run meets the first one's memos
        assert isinstance(prove_equivalent(*functions(SUMS), budget=AMPLE), Proved)
    assert record[0] == record[1] and record[0][0] > 0 and record[0][1] > 0


@pytest.mark.parametrize("count", ["steps", "rlimit"])
def test_a_query_a_count_stops_gives_the_same_unknown_every_time(
        monkeypatch: pytest.MonkeyPatch, count: str) -> None:
    record = spent(monkeypatch)
    prove_equivalent(*functions(SUMS), budget=AMPLE)
    steps, rlimit = record[0]
    # one short of what the proof takes: it stops, in this process and in another one
    short = ProofBudget(steps - 1, AMPLE.rlimit, AMPLE.seconds) if count == "steps" else \
        ProofBudget(AMPLE.steps, rlimit - 1, AMPLE.seconds)
    first = prove_equivalent(*functions(SUMS), budget=short)
    again = prove_equivalent(*functions(SUMS), budget=short)
    assert isinstance(first, Unknown) and isinstance(again, Unknown)
    assert first.limited and first.budget == count and not first.by_clock
    assert (again.reason, again.budget) == (first.reason, first.budget)
    assert f"steps={short.steps} rlimit={short.rlimit}" in first.reason
    script = ("from axon.benchmarks.verifier_corpus import IDENTITIES, functions\n"
              "from axon.verifier import ProofBudget, prove_equivalent\n"
              "case = next(c for c in IDENTITIES if c.name == 'matmul_associative')\n"
              f"budget = ProofBudget({short.steps}, {short.rlimit}, {short.seconds})\n"
              "v = prove_equivalent(*functions(case), budget=budget)\n"
              "print(v.verdict, v.budget, v.reason, sep='|')\n")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # another order of every set of strings
    other = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    assert other == f"unknown|{count}|{first.reason}"


def z3_calls(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """One entry per z3 check from now on."""
    calls: list[None] = []
    check = z3.Solver.check

    def counted(solver: z3.Solver, *args: Any) -> z3.CheckSatResult:
        calls.append(None)
        return check(solver, *args)

    monkeypatch.setattr(z3.Solver, "check", counted)
    return calls


def test_an_unknown_a_count_decided_is_stored_and_served_without_z3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    calls = z3_calls(monkeypatch)
    cold = prove_equivalent(*functions(HARD), cache=cache, budget=one_unit())
    assert isinstance(cold, Unknown) and cold.budget == "rlimit" and not cold.cached
    assert calls and not cache.holds_proofs(cache.entries)  # stored, and no proof
    cache.save()
    calls.clear()
    loaded = ProofCache(path)
    warm = prove_equivalent(*functions(HARD), cache=loaded, budget=one_unit())
    assert isinstance(warm, Unknown) and warm.cached and calls == []
    assert (warm.reason, warm.budget, warm.limited) == (cold.reason, cold.budget, True)
    assert loaded.hits == 1
    # a larger budget is another key: it tries again, proves, and is never served the Unknown
    larger = prove_equivalent(*functions(HARD), cache=loaded, budget=AMPLE)
    assert isinstance(larger, Proved) and not larger.cached and calls
    # the small budget now meets the proof its stored Unknown's obligation got since
    calls.clear()
    small = prove_equivalent(*functions(HARD), cache=loaded, budget=one_unit())
    assert isinstance(small, Proved) and small.cached and calls == []


def test_an_unknown_of_normalization_steps_is_served_without_normalizing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ProofCache()
    budget = ProofBudget(1, AMPLE.rlimit, AMPLE.seconds)
    cold = prove_equivalent(*functions(SUMS), cache=cache, budget=budget)
    assert isinstance(cold, Unknown) and cold.budget == "steps"

    def fail(*_: object) -> None:
        raise AssertionError("normalized again")

    monkeypatch.setattr(prove_module, "inline_function", fail)
    warm = prove_equivalent(*functions(SUMS), cache=cache, budget=budget)
    assert isinstance(warm, Unknown) and warm.cached and warm.reason == cold.reason


def test_an_unknown_the_clock_decided_is_not_stored() -> None:
    cache = ProofCache()
    verdict = prove_equivalent(*functions(HARD), cache=cache,
                               budget=ProofBudget(AMPLE.steps, AMPLE.rlimit, 1e-6))
    assert isinstance(verdict, Unknown) and verdict.by_clock and verdict.limited
    assert cache.entries == {}
    assert isinstance(prove_equivalent(*functions(HARD), cache=cache), Proved)


def test_a_stored_unknown_is_never_taken_for_a_proof() -> None:
    cache = ProofCache()
    prove_equivalent(*functions(HARD), cache=cache, budget=one_unit())
    (key,) = cache.entries
    assert cache.entries[key]["verdict"] == "unknown" and not cache.holds_proofs([key])
    cache.put_result("k", {"answer": 42}, [key])
    assert cache.result("k") is None


def test_persistence_round_trip(tmp_path) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    proved = prove_equivalent(*functions(HARD), cache=cache)
    refuted = prove_equivalent(*functions(FALSE), cache=cache)
    assert isinstance(proved, Proved) and isinstance(refuted, Refuted)
    cache.save()
    doc = json.loads(path.read_text())
    verdicts = sorted(r["verdict"] for r in doc["entries"].values())
    assert doc["format"] == "axon-proof-cache" and doc["version"] == 3
    assert verdicts == ["answered", "answered", "proved", "refuted"]  # each query and its key
    loaded = ProofCache(path)
    again_p = prove_equivalent(*functions(HARD), cache=loaded)
    again_r = prove_equivalent(*functions(FALSE), cache=loaded)
    assert isinstance(again_p, Proved) and again_p.cached and again_p.proof_id == proved.proof_id
    assert isinstance(again_r, Refuted) and again_r.cached
    assert again_r.counterexample.sizes == refuted.counterexample.sizes
    assert again_r.counterexample.index == refuted.counterexample.index
    assert loaded.hits == 2


def test_corrupted_file_is_ignored_with_a_warning(tmp_path) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    prove_equivalent(*functions(HARD), cache=cache)
    cache.save()
    doc = json.loads(path.read_text())
    for record in doc["entries"].values():
        record["verdict"] = "refuted"  # tampered: the checksum no longer matches
    path.write_text(json.dumps(doc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = ProofCache(path)
    assert loaded.entries == {} and any("checksum" in str(w.message) for w in caught)
    path.write_text("{not json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ProofCache(path).entries == {}
    assert caught


def test_other_version_is_ignored(tmp_path) -> None:
    path = tmp_path / "proofs.json"
    path.write_text(json.dumps({"format": "axon-proof-cache", "version": 99, "entries": {},
                                "sha256": ""}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ProofCache(path).entries == {}
    assert any("version" in str(w.message) for w in caught)


def test_a_new_encoding_revision_does_not_reuse_old_verdicts(monkeypatch) -> None:
    from axon.verifier import prove

    cache = ProofCache()
    first = prove_equivalent(*functions(HARD), cache=cache)
    assert isinstance(first, Proved)
    monkeypatch.setattr(prove, "ENCODING_REVISION", prove.ENCODING_REVISION + 1)
    again = prove_equivalent(*functions(HARD), cache=cache)
    assert isinstance(again, Proved) and not again.cached
    assert again.proof_id != first.proof_id and (cache.hits, cache.misses) == (0, 2)


def test_an_internal_verifier_failure_is_unknown_never_proved(monkeypatch) -> None:
    from axon.verifier import prove

    def broken(*_: object) -> None:
        raise AssertionError("capture of bound variable")

    monkeypatch.setattr(prove, "inline_function", broken)
    verdict = prove_equivalent(*functions(HARD))
    assert isinstance(verdict, Unknown)
    assert verdict.reason.startswith("internal verifier error") and "capture" in verdict.reason


def test_a_cache_file_in_a_missing_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="its folder does not exist"):
        ProofCache(tmp_path / "missing" / "proofs.json")


def test_a_version_1_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "proofs.json"
    entries = {"k": {"verdict": "proved", "proof_id": "k"}}
    path.write_text(json.dumps({"format": "axon-proof-cache", "version": 1, "entries": entries,
                                "sha256": cache_module._checksum(entries)}))
    loaded = ProofCache(path)
    assert loaded.entries == entries and loaded.results == {}


def test_a_step_result_is_served_only_while_its_proofs_are_proved(tmp_path: Path) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    proved = prove_equivalent(*functions(HARD), cache=cache)
    refuted = prove_equivalent(*functions(FALSE), cache=cache)
    assert isinstance(proved, Proved) and isinstance(refuted, Refuted)
    assert proved.obligation in cache.entries and proved.proof_id == proved.obligation[:16]
    key = step_key("step", "its input")
    cache.put_result(key, {"answer": 42}, [proved.obligation])
    cache.save()
    loaded = ProofCache(path)
    assert loaded.result(key) == {"answer": 42, "proofs": [proved.obligation]}
    assert loaded.result(step_key("step", "another input")) is None
    refuted_key = next(k for k, r in loaded.entries.items() if r["verdict"] == "refuted")
    loaded.put_result(key, {"answer": 43}, [proved.obligation, refuted_key])
    assert loaded.result(key) is None  # relies on a verdict that is no proof
    loaded.put_result(key, {"answer": 44}, [proved.obligation])
    del loaded.entries[proved.obligation]
    assert loaded.result(key) is None


def test_a_result_relying_on_a_proof_outside_the_cache_is_not_stored() -> None:
    cache = ProofCache()
    verdict = prove_equivalent(*functions(HARD))  # no cache: the proof is nowhere to check
    assert isinstance(verdict, Proved)
    cache.put_result("k", {"answer": 42}, [""])
    assert cache.results == {}


def test_a_tampered_result_ignores_the_file(tmp_path: Path) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    cache.put_result("k", {"answer": 42}, [])
    cache.save()
    doc = json.loads(path.read_text())
    doc["results"]["k"]["answer"] = 41
    path.write_text(json.dumps(doc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = ProofCache(path)
    assert loaded.results == {} and any("checksum" in str(w.message) for w in caught)


def test_step_keys_depend_on_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    key = step_key("step", "input")
    assert step_key("step", "input") == key and step_key("step", "other") != key
    monkeypatch.setattr(cache_module, "code_fingerprint", lambda: "another version")
    assert step_key("step", "input") != key


def test_an_identical_pair_is_proved_once_and_cached() -> None:
    a, _ = functions(HARD)
    cache = ProofCache()
    first = prove_equivalent(a, a.clone(), assumptions=["M >= 2"], cache=cache)
    again = prove_equivalent(a, a.clone(), assumptions=["M >= 2"], cache=cache)
    other = prove_equivalent(a, a.clone(), assumptions=["M >= 3"], cache=cache)
    assert isinstance(first, Proved) and first.obligation in cache.entries
    assert isinstance(again, Proved) and again.cached and again.obligation == first.obligation
    assert isinstance(other, Proved) and not other.cached


def test_an_unknown_a_limit_decided_says_so() -> None:
    limited = prove_equivalent(*functions(HARD), budget=one_unit())
    assert isinstance(limited, Unknown) and limited.limited and not limited.by_clock
    timed = prove_equivalent(*functions(HARD),
                             budget=ProofBudget(AMPLE.steps, AMPLE.rlimit, 1e-6))
    assert isinstance(timed, Unknown) and timed.limited and timed.by_clock
    a, _ = functions(HARD)
    _, other = functions(next(c for c in IDENTITIES if c.name != HARD.name and
                              functions(c)[0].function_type != a.function_type))
    unsupported = prove_equivalent(a, other)  # parameters differ: no limit would change that
    assert isinstance(unsupported, Unknown) and not unsupported.limited
    assert "parameters differ" in unsupported.reason


def inlinings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions the verifier normalizes from now on (`inline_function` calls)."""
    calls: list[str] = []
    inline = prove_module.inline_function

    def counted(func: Any, *args: Any) -> Any:
        calls.append(func.sym_name.data)
        return inline(func, *args)

    monkeypatch.setattr(prove_module, "inline_function", counted)
    return calls


def test_a_query_asked_again_is_served_its_obligations_verdict_without_normalizing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    proved = prove_equivalent(*functions(HARD), cache=cache)
    refuted = prove_equivalent(*functions(FALSE), cache=cache)
    cache.save()
    calls = inlinings(monkeypatch)
    loaded = ProofCache(path)
    again_p = prove_equivalent(*functions(HARD), cache=loaded)
    again_r = prove_equivalent(*functions(FALSE), cache=loaded)
    assert calls == [] and loaded.misses == 0
    assert isinstance(proved, Proved) and isinstance(again_p, Proved)
    assert again_p.cached and again_p.obligation == proved.obligation
    assert isinstance(refuted, Refuted) and isinstance(again_r, Refuted)
    assert again_r.counterexample.sizes == refuted.counterexample.sizes
    # another budget is another query: normalized, then met at its obligation
    larger = prove_equivalent(*functions(HARD), budget=AMPLE, cache=loaded)
    assert isinstance(larger, Proved) and larger.cached and len(calls) == 2


def test_a_query_whose_obligation_left_the_cache_is_normalized_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ProofCache()
    proved = prove_equivalent(*functions(HARD), cache=cache)
    assert isinstance(proved, Proved)
    del cache.entries[proved.obligation]  # the answered record alone proves nothing
    calls = inlinings(monkeypatch)
    again = prove_equivalent(*functions(HARD), cache=cache)
    assert isinstance(again, Proved) and not again.cached and len(calls) == 2


def test_an_answered_query_is_not_served_to_other_code_or_other_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ProofCache()
    prove_equivalent(*functions(HARD), cache=cache)
    calls = inlinings(monkeypatch)
    a, b = functions(HARD)
    b.sym_name = type(b.sym_name)("renamed")  # the same obligation, another text
    prove_equivalent(a, b, cache=cache)
    assert len(calls) == 2
    monkeypatch.setattr(prove_module, "code_fingerprint", lambda: "another version")
    prove_equivalent(*functions(HARD), cache=cache)
    assert len(calls) == 4
