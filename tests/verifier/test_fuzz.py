"""A bounded, deterministic run of the verifier's differential fuzzer (benchmarks/verifier_fuzz.py):
no proof the interpreter disagrees with, no refutation that does not replay, and nearly every
meaning-preserving rewrite proved."""

from axon.benchmarks.verifier_fuzz import fuzz

PAIRS = 250


def test_fuzzed_pairs_are_judged_soundly() -> None:
    summary = fuzz(PAIRS, seed=0)
    assert summary.pairs == PAIRS
    assert not summary.unsound, "unsound proofs:\n" + "\n".join(summary.unsound)
    assert not summary.not_replayed, "non-replaying refutations:\n" + "\n".join(
        summary.not_replayed)
    # both kinds of verdict occur, and rewrites are proved but for a known few (Unknown)
    assert summary.proved > PAIRS // 4 and summary.refuted > PAIRS // 10
    assert summary.unproved_rewrites <= PAIRS // 50
