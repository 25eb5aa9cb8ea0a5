"""Every non-identity of the corpus is refuted, and its counterexample replays in the reference
interpreter: at the reported dims and inputs the two results differ at the reported index."""

import numpy as np
import pytest

from axon.benchmarks.verifier_corpus import NON_IDENTITIES, Case, functions
from axon.dialects.ax import TensorType
from axon.interpreter import run_function
from axon.verifier import Refuted, prove_equivalent
from axon.verifier.replay import confirms


def refutes(case: Case) -> Refuted:
    a, b = functions(case)
    verdict = prove_equivalent(a, b, case.assumptions)
    assert isinstance(verdict, Refuted), f"{case.name}: {verdict}"
    return verdict


def test_corpus_is_large_enough() -> None:
    assert len(NON_IDENTITIES) >= 200


@pytest.mark.parametrize("case", NON_IDENTITIES, ids=[c.name for c in NON_IDENTITIES])
def test_non_identity_is_refuted_and_replays(case: Case) -> None:
    cex = refutes(case).counterexample
    a, b = functions(case)
    assert all(v >= 1 for v in cex.sizes.values())
    if cex.by_type:  # refuted by types: the interpreter's results differ in shape or dtype
        inputs = []
        for t in a.function_type.inputs.data:
            assert isinstance(t, TensorType)
            inputs.append(np.ones(tuple(d.evaluate(cex.sizes) for d in t.shape)))
        results_a = run_function(a, inputs, cex.sizes)
        results_b = run_function(b, inputs, cex.sizes)
        assert results_a[cex.output].shape == cex.shape_a
        assert results_b[cex.output].shape == cex.shape_b
        assert (cex.shape_a, cex.dtype_a) != (cex.shape_b, cex.dtype_b)
        return
    ra = run_function(a, cex.inputs, cex.sizes, exact=cex.exact)[cex.output]
    rb = run_function(b, cex.inputs, cex.sizes, exact=cex.exact)[cex.output]
    x, y = float(ra[cex.index]), float(rb[cex.index])
    assert (x, y) == pytest.approx((cex.value_a, cex.value_b), rel=1e-6, abs=1e-9)
    assert confirms(a, b, cex.sizes, cex.inputs, cex.output, cex.index, cex.exact)
    assert str(cex).startswith(", ".join(f"{k}={v}" for k, v in sorted(cex.sizes.items())))
