"""The SMT verifier: prove or refute equivalence of tensor programs for all shapes and contents.

    from axon.verifier import prove_equivalent, Proved, Refuted, Unknown
    verdict = prove_equivalent(func_a, func_b, assumptions=["K mod 4 == 0"])
    verdict = prove_equivalent(func_a, func_b, budget=ProofBudget.nominal(2.0))

See docs/verifier.md for what a proof covers (real arithmetic) and what it does not (rounding).
"""

from axon.verifier.budget import ProofBudget
from axon.verifier.cache import ProofCache
from axon.verifier.prove import (
    Counterexample,
    Inconsistent,
    Proved,
    Refuted,
    Unknown,
    Verdict,
    prove_equivalent,
)

__all__ = ["Counterexample", "Inconsistent", "ProofBudget", "ProofCache", "Proved", "Refuted",
           "Unknown", "Verdict", "prove_equivalent"]
