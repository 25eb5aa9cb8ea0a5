"""Every identity of the corpus (benchmarks/verifier_corpus.py) is proved: for all sizes and
real inputs."""

import pytest

from axon.benchmarks.verifier_corpus import IDENTITIES, Case, functions
from axon.verifier import Proved, prove_equivalent


def proves(case: Case) -> None:
    a, b = functions(case)
    verdict = prove_equivalent(a, b, case.assumptions)
    assert isinstance(verdict, Proved), f"{case.name}: {verdict}"
    assert len(verdict.proof_id) == 16


def test_corpus_is_large_enough() -> None:
    assert len(IDENTITIES) >= 100


@pytest.mark.parametrize("case", IDENTITIES, ids=[c.name for c in IDENTITIES])
def test_identity_is_proved(case: Case) -> None:
    proves(case)


def test_proof_id_is_stable() -> None:
    case = IDENTITIES[0]
    first = prove_equivalent(*functions(case))
    second = prove_equivalent(*functions(case))
    assert isinstance(first, Proved) and isinstance(second, Proved)
    assert first.proof_id == second.proof_id
