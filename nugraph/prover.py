"""Admission: a candidate enters the graph only when the SMT verifier proves it equal.

The obligation is one `func.func` per side over the same parameters (the classes the original
term reads): the consumer with its producers expanded, and the candidate term. `Proved` admits;
`Refuted` and `Unknown` (including one out of its budget) admit nothing. The decision procedure
is injectable so tests can force a timeout; the default is `axon.verifier.prove_equivalent`.

Before the solver, a numeric test runs both sides in the reference interpreter on small random
inputs: a clear difference rejects the candidate at once (z3 is slow to find counterexamples, and
most pushed candidates are false). The test only ever rejects; it never admits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.dialects.form.interface import generic_form, has_form
from axon.interpreter import StrayReadError, run_function
from axon.nugraph.egraph import EGraph
from axon.nugraph.shrink import plan
from axon.nugraph.term import Term, term_function
from axon.verifier import (
    ProofBudget,
    ProofCache,
    Proved,
    Refuted,
    Unknown,
    Verdict,
    prove_equivalent,
)
from axon.verifier.budget import SEARCH_BUDGET

Decide = Callable[..., Verdict]


@dataclass
class Prover:
    """Decides candidate equalities with the SMT verifier (a shared cache across runs).

    It keeps what a stored result of its run needs: the obligation keys of the proofs it found
    (`proofs`), and how many verdicts a clock decided (`by_clock`: Unknown because a proof ran
    past its safety net, `Unknown.by_clock`; another run may decide them). An Unknown a
    budget's count decided repeats, so it does not keep a result from being stored."""

    budget: ProofBudget = SEARCH_BUDGET
    assumptions: tuple[str, ...] = ()
    cache: ProofCache = field(default_factory=ProofCache)
    decide: Decide = prove_equivalent
    numeric_test: bool = True
    proofs: list[str] = field(default_factory=list)
    by_clock: int = 0

    def obligation(self, g: EGraph, original: Term, candidate: Term,
                   extra_leaves: bool = False) -> tuple[FuncOp, FuncOp]:
        """Both sides as functions of the classes the original reads.

        A candidate reading other classes is a bug in a move, except where the move says so
        (`extra_leaves`: a merged computation sliced back reads the other operand it was merged
        with). Those classes become further parameters that the original ignores: the equality is
        then proved for every value of them, which is stronger, never weaker.
        """
        leaves = original.leaves()
        stray = [c for c in candidate.leaves() if c not in leaves]
        if stray and not extra_leaves:
            raise ValueError(f"candidate reads classes {sorted(stray)} the original does not")
        leaves = leaves + stray
        return (term_function(g, [original], leaves, "original"),
                term_function(g, [candidate], leaves, "candidate"))

    def __call__(self, g: EGraph, original: Term, candidate: Term, extra_leaves: bool = False,
                 budget: ProofBudget | None = None) -> Verdict | NumericRejection:
        """The verdict on `original == candidate` under `budget` (default the prover's own)."""
        a, b = self.obligation(g, original, candidate, extra_leaves)
        # sizes the obligation's parameters do not carry (a broadcast's `G` in gqa) are still the
        # program's own when some class of the graph has them in its type
        stray = unbound_sizes(b) - g.size_symbols()
        if stray:
            # a move built a form whose index maps use a loop variable it never bound: the solver
            # would read it as one more size, but no program with it could run
            return Unknown(f"candidate uses size symbol(s) {', '.join(sorted(stray))} that no "
                           "parameter binds", 0.0)
        if self.numeric_test and differs_numerically(a, b):
            return NumericRejection()
        verdict = self.decide(a, b, assumptions=self.assumptions,
                              budget=self.budget if budget is None else budget,
                              cache=self.cache)
        if isinstance(verdict, Proved):
            self.proofs.append(verdict.obligation)
        elif isinstance(verdict, Unknown) and verdict.by_clock:
            self.by_clock += 1
        return verdict


@dataclass(frozen=True)
class NumericRejection:
    """The interpreter found the two sides clearly different on random inputs (not a proof of
    anything; it only keeps a false candidate away from the solver)."""

    seconds: float = 0.0
    verdict: str = "refuted by test"


# distinct small primes: sizes that coincide by accident would hide shape-dependent errors
_TEST_SIZES = (3, 5, 7, 2, 11, 13, 17, 19, 23)
#: the largest concrete dim the test runs at; larger ones are scaled down (`shrink.plan`)
_MAX_TEST_DIM = 64


def differs_numerically(a: FuncOp, b: FuncOp, seed: int = 0) -> bool:
    """True when `a` and `b` give clearly different finite results on positive random inputs,
    at small sizes of the test's own (concrete dims too: see `shrink`; a pair whose concrete
    dims do not shrink is not tested)."""
    planned = plan([a, b], _MAX_TEST_DIM)
    if isinstance(planned, str):
        return False
    a, b = planned[1]
    types = [arg.type for arg in a.body.blocks.first.args]  # type: ignore[union-attr]
    symbols = sorted({s for t in types for d in t.shape for s in d.symbols()})  # type: ignore
    sizes = dict(zip(symbols, _TEST_SIZES, strict=False))
    rng = np.random.default_rng(seed)
    try:
        inputs = [rng.uniform(0.5, 1.5, tuple(d.evaluate(sizes) for d in t.shape))  # type: ignore
                  .astype(np.float32) for t in types]
        ra = run_function(a, inputs, sizes)
    except Exception:  # noqa: BLE001 - any failure means no evidence; the solver decides
        return False
    try:
        rb = run_function(b, inputs, sizes)
    except StrayReadError:
        return True  # the candidate reads outside an operand where the original has a value
    except Exception:  # noqa: BLE001 - as above
        return False
    for x, y in zip(ra, rb, strict=True):
        x64, y64 = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if x64.shape != y64.shape:
            return True
        if not (np.all(np.isfinite(x64)) and np.all(np.isfinite(y64))):
            return False
        # far beyond bf16 rounding of reassociated sums: only a real difference trips this
        if np.any(np.abs(x64 - y64) > 0.1 * (np.abs(x64) + np.abs(y64)) + 0.1):
            return True
    return False


def unbound_sizes(func_op: FuncOp) -> set[str]:
    """Size symbols an op of `func_op` mentions that none of its parameter types binds."""
    def sizes(t: object) -> set[str]:
        return {s for d in t.shape for s in d.symbols()} if isinstance(t, TensorType) else set()

    bound = set().union(*(sizes(t) for t in func_op.function_type.inputs.data))
    used: set[str] = set()
    for op in func_op.walk():
        if has_form(op):
            used |= generic_form(op).size_symbols() | sizes(op.results[0].type)
    return used - bound


def is_proved(verdict: Verdict | NumericRejection) -> bool:
    """Only a proof admits; anything else (refuted, unknown, timeout) never merges classes."""
    return isinstance(verdict, Proved)


__all__: Sequence[str] = ["Decide", "NumericRejection", "Proved", "Prover", "Refuted", "Unknown",
                          "is_proved"]
