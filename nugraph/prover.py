"""Admission: a candidate enters the graph only when the SMT verifier proves it equal.

The obligation is one `func.func` per side over the same parameters (the classes the original
term reads): the consumer with its producers expanded, and the candidate term. `Proved` admits;
`Refuted` and `Unknown` (including a timeout) admit nothing. The decision procedure is injectable
so tests can force a timeout; the default is `axon.verifier.prove_equivalent`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp

from axon.nugraph.egraph import EGraph
from axon.nugraph.term import Term, term_function
from axon.verifier import ProofCache, Proved, Refuted, Unknown, Verdict, prove_equivalent

Decide = Callable[..., Verdict]


@dataclass
class Prover:
    """Decides candidate equalities with the SMT verifier (a shared cache across runs)."""

    timeout_ms: int = 5_000
    assumptions: tuple[str, ...] = ()
    cache: ProofCache = field(default_factory=ProofCache)
    decide: Decide = prove_equivalent

    def obligation(self, g: EGraph, original: Term, candidate: Term) -> tuple[FuncOp, FuncOp]:
        leaves = original.leaves()
        stray = set(candidate.leaves()) - set(leaves)
        if stray:
            raise ValueError(f"candidate reads classes {sorted(stray)} the original does not")
        return (term_function(g, [original], leaves, "original"),
                term_function(g, [candidate], leaves, "candidate"))

    def __call__(self, g: EGraph, original: Term, candidate: Term) -> Verdict:
        a, b = self.obligation(g, original, candidate)
        return self.decide(a, b, assumptions=self.assumptions, timeout_ms=self.timeout_ms,
                           cache=self.cache)


def is_proved(verdict: Verdict) -> bool:
    """Only a proof admits; anything else (refuted, unknown, timeout) never merges classes."""
    return isinstance(verdict, Proved)


__all__: Sequence[str] = ["Decide", "Prover", "Proved", "Refuted", "Unknown", "is_proved"]
