"""The proof cache and the limits: one proof per obligation per run, a versioned checksummed file,
and running out of time or resources gives Unknown, never Proved."""

import json
import warnings
from pathlib import Path

import pytest

from axon.benchmarks.verifier_corpus import IDENTITIES, NON_IDENTITIES, functions
from axon.verifier import ProofCache, Proved, Refuted, Unknown, prove_equivalent
from axon.verifier import cache as cache_module
from axon.verifier.cache import step_key

HARD = next(c for c in IDENTITIES if c.name == "softmax_max_invariance")
FALSE = next(c for c in NON_IDENTITIES if c.name == "max_subtraction_wrong_axis")


def test_resource_limit_gives_unknown_never_proved() -> None:
    verdict = prove_equivalent(*functions(HARD), rlimit=1)
    assert isinstance(verdict, Unknown)
    assert "resource" in verdict.reason


def test_tiny_timeout_never_proves_a_non_identity() -> None:
    verdict = prove_equivalent(*functions(FALSE), timeout_ms=1)
    assert not isinstance(verdict, Proved)


def test_same_obligation_is_proved_once() -> None:
    cache = ProofCache()
    first = prove_equivalent(*functions(HARD), cache=cache)
    again = prove_equivalent(*functions(HARD), cache=cache)  # freshly built IR, same obligation
    assert isinstance(first, Proved) and not first.cached
    assert isinstance(again, Proved) and again.cached and again.proof_id == first.proof_id
    assert (cache.hits, cache.misses) == (1, 1)


def test_unknown_is_not_cached() -> None:
    cache = ProofCache()
    assert isinstance(prove_equivalent(*functions(HARD), cache=cache, rlimit=1), Unknown)
    assert cache.entries == {}
    assert isinstance(prove_equivalent(*functions(HARD), cache=cache), Proved)


def test_persistence_round_trip(tmp_path) -> None:
    path = tmp_path / "proofs.json"
    cache = ProofCache(path)
    proved = prove_equivalent(*functions(HARD), cache=cache)
    refuted = prove_equivalent(*functions(FALSE), cache=cache)
    assert isinstance(proved, Proved) and isinstance(refuted, Refuted)
    cache.save()
    doc = json.loads(path.read_text())
    assert doc["format"] == "axon-proof-cache" and doc["version"] == 2 and len(doc["entries"]) == 2
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
    refuted_key = next(k for k in loaded.entries if k != proved.obligation)
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
    limited = prove_equivalent(*functions(HARD), rlimit=1)
    assert isinstance(limited, Unknown) and limited.limited
    timed = prove_equivalent(*functions(HARD), timeout_ms=1)
    assert isinstance(timed, Unknown) and timed.limited
    a, _ = functions(HARD)
    _, other = functions(next(c for c in IDENTITIES if c.name != HARD.name and
                              functions(c)[0].function_type != a.function_type))
    unsupported = prove_equivalent(a, other)  # parameters differ: no limit would change that
    assert isinstance(unsupported, Unknown) and not unsupported.limited
    assert "parameters differ" in unsupported.reason
