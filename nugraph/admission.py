"""Admission by proof: the one way a candidate's equality enters the graph.

`admit` takes every move's candidate through the same steps: skip it when the graph holds it
already (or it was tried before), stop when a limit would be passed (the node budget, the run's
time), ask the prover (its numeric pre-test may only reject; only `Proved` admits, see
`prover.is_proved`), record the proof, insert the term, and merge the classes (`enter`). Refuted
and unknown candidates record nothing and change nothing. It returns what happened, which the
runner counts.

    admission = admit(g, prover, candidate, limits, tried)
    if admission.outcome is Outcome.PROVED and admission.merged: ...

`prove_and_record` and `enter` are the two halves, shared with reading a printed nu-graph back
(`nu_ir.py`), which searches its own claims before it enters an e-node.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

from axon.nugraph.candidates import Candidate
from axon.nugraph.egraph import EGraph, Proof
from axon.nugraph.prover import NumericRejection, Prover, is_proved
from axon.nugraph.term import Child, Term, insert_term, lookup_term
from axon.verifier import ProofBudget, Refuted, Unknown, Verdict

NODE_LIMIT = "node limit"
TIME_LIMIT = "time limit"


class Outcome(Enum):
    """What `admit` did with one candidate."""

    KNOWN = "known"
    """Already in the candidate's class, or tried before: nothing asked."""
    PROVED = "proved"
    REFUTED = "refuted"
    TESTED_OUT = "refuted by test"
    """Refuted by the numeric pre-test before the solver ran."""
    UNKNOWN = "unknown"
    NODE_LIMIT = NODE_LIMIT
    TIME_LIMIT = TIME_LIMIT


@dataclass(frozen=True)
class Limits:
    """What `admit` checks before it spends a proof: the node budget, and the run's clock."""

    max_nodes: int
    time_limit_s: float
    elapsed: Callable[[], float]
    """Seconds the run has taken so far."""

    def out_of_time(self) -> bool:
        return self.elapsed() > self.time_limit_s

    def remaining_s(self) -> float:
        """Seconds left on the run's clock (at least a millisecond)."""
        return max(0.001, self.time_limit_s - self.elapsed())


@dataclass(frozen=True)
class Admission:
    """The outcome of one candidate, the proof that admitted it, whether the union joined two
    classes (a proved candidate may already share its class), the classes of its `derived`
    terms, and the seconds spent proving."""

    outcome: Outcome
    proof_id: str | None = None
    merged: bool = False
    derived: tuple[int, ...] = ()
    seconds: float = 0.0


Tried = set[tuple[int, Term]]


def admit(g: EGraph, prover: Prover, candidate: Candidate, limits: Limits, tried: Tried
          ) -> Admission:
    """Admit `candidate` into `g` only on a proof that it equals its original; see the module
    docstring. `tried` remembers (class, term) pairs asked before, across the run."""
    cls = g.class_of(candidate.node)
    term = candidate.term.canonical(g)
    if lookup_term(g, term) == cls or (cls, term) in tried:
        return Admission(Outcome.KNOWN)
    tried.add((cls, term))
    if limits.out_of_time():
        return Admission(Outcome.TIME_LIMIT)
    if g.num_nodes + term.size() > limits.max_nodes:
        return Admission(Outcome.NODE_LIMIT)
    start = time.perf_counter()
    # a proof's safety net never outlasts the run's clock (what it cuts is Unknown.by_clock,
    # and the run is cut by its clock anyway)
    budget = replace(prover.budget, seconds=min(prover.budget.seconds, limits.remaining_s()))
    verdict, pid = prove_and_record(g, prover, candidate.move, candidate.original, term,
                                    candidate.extra_leaves, budget)
    seconds = time.perf_counter() - start
    if pid is None and isinstance(verdict, Unknown) and limits.out_of_time():
        return Admission(Outcome.TIME_LIMIT, seconds=seconds)  # cut by the clock, not undecided
    if pid is None:
        return Admission(_rejection(verdict), seconds=seconds)
    merged, derived = enter(g, candidate.node, term, pid, candidate.derived)
    return Admission(Outcome.PROVED, pid, merged, derived, seconds)


def prove_and_record(g: EGraph, prover: Prover, move: str, original: Term, candidate: Term,
                     extra_leaves: bool = False, budget: ProofBudget | None = None
                     ) -> tuple[Verdict | NumericRejection, str | None]:
    """Ask `prover` whether `original == candidate` (under `budget`, default the prover's
    own); on a proof, record it in `g` under a fresh proof id. Returns the verdict and that id
    (None when nothing was proved)."""
    verdict = prover(g, original, candidate, extra_leaves=extra_leaves, budget=budget)
    if not is_proved(verdict):
        return verdict, None
    pid = fresh_proof_id(g)
    g.record_proof(Proof(pid, move, original.text(), candidate.text(),
                         f"proved {getattr(verdict, 'proof_id', '')}".strip(), verdict.seconds))
    return verdict, pid


def enter(g: EGraph, node: int, term: Child, pid: str, derived: tuple[Term, ...] = ()
          ) -> tuple[bool, tuple[int, ...]]:
    """Insert `term` (and the `derived` terms) justified by the recorded proof `pid` and merge its
    class with e-node `node`'s. Returns whether the union joined two classes, and the derived
    terms' classes."""
    _, root = insert_term(g, term, pid)
    classes = tuple(insert_term(g, t, pid)[0] for t in derived)
    return g.union(node, root, pid), classes


def fresh_proof_id(g: EGraph) -> str:
    """The first `p<n>` (from the table's size on) that names no proof of `g` yet."""
    n = len(g.proofs) + 1
    while f"p{n}" in g.proofs:
        n += 1
    return f"p{n}"


def _rejection(verdict: Verdict | NumericRejection) -> Outcome:
    if isinstance(verdict, NumericRejection):
        return Outcome.TESTED_OUT
    if isinstance(verdict, Refuted):
        return Outcome.REFUTED
    return Outcome.UNKNOWN
