"""Property tests: random small programs and random changes of them, drawn by hypothesis.

The generator, the mutations, the rewrites and the checks are the fuzzer's
(benchmarks/verifier_fuzz.py); here hypothesis makes every choice, so a failure shrinks and is
replayed from its database. Whenever the verifier says proved, the reference interpreter agrees at
several sizes (ones, unequal, random) on random inputs; whenever it says refuted, the counterexample
reproduces. Unknown is allowed (it claims nothing); rewrites are never refuted.

Example counts (run in CI with the rest of the suite): `test_mutations_are_judged_soundly` runs
150 (program, mutant) pairs, `test_rewrites_are_never_refuted` 60 meaning-preserving rewrites.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from axon.benchmarks.verifier_corpus import program
from axon.benchmarks.verifier_fuzz import (
    PARAMS,
    Chooser,
    disagreement,
    mutate,
    random_tree,
    replays,
    rewrite,
    shape,
    text,
)
from axon.verifier import Proved, Refuted, prove_equivalent


def chooser(data: st.DataObject) -> Chooser:
    return Chooser(lambda options: data.draw(st.sampled_from(options)))


SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                           HealthCheck.data_too_large])


def _judge(tree: tuple, other: tuple, data: st.DataObject) -> Proved | Refuted | None:
    a, b = program("a", PARAMS, text(tree)), program("b", PARAMS, text(other))
    verdict = prove_equivalent(a, b)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    if isinstance(verdict, Proved):
        assert disagreement(a, b, rng) is None, ("unsound proof", text(tree), text(other))
    elif isinstance(verdict, Refuted):
        assert replays(a, b, verdict), (text(tree), text(other), verdict)
    return verdict if isinstance(verdict, Proved | Refuted) else None


@settings(SETTINGS, max_examples=150)
@given(st.data())
def test_mutations_are_judged_soundly(data: st.DataObject) -> None:
    ch = chooser(data)
    tree = random_tree(ch, depth=2)
    mutant = mutate(tree, ch)
    assume(shape(mutant) is not None)
    _judge(tree, mutant, data)


@settings(SETTINGS, max_examples=60)
@given(st.data())
def test_rewrites_are_never_refuted(data: st.DataObject) -> None:
    ch = chooser(data)
    tree = random_tree(ch, depth=2)
    other = rewrite(tree, ch)
    assume(shape(other) is not None)
    assert not isinstance(_judge(tree, other, data), Refuted), (text(tree), text(other))
