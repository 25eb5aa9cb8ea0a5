"""Admission by proof, shared by propagation and by reading a printed nu-graph back.

An equality enters the graph's proofs table only when the prover answers `Proved`; the record
names the verifier's proof and the two sides that were proved equal. A refuted or unknown
equality records nothing, and the caller admits nothing.

    verdict, pid = prove_and_record(g, prover, "split", original, candidate)
    if pid is not None:
        _, root = insert_term(g, candidate, pid)
"""

from __future__ import annotations

from axon.nugraph.egraph import EGraph, Proof
from axon.nugraph.prover import NumericRejection, Prover, is_proved
from axon.nugraph.term import Term
from axon.verifier import Verdict


def prove_and_record(g: EGraph, prover: Prover, move: str, original: Term, candidate: Term,
                     extra_leaves: bool = False) -> tuple[Verdict | NumericRejection, str | None]:
    """Ask `prover` whether `original == candidate`; on a proof, record it in `g` under a fresh
    proof id. Returns the verdict and that id (None when nothing was proved)."""
    verdict = prover(g, original, candidate, extra_leaves=extra_leaves)
    if not is_proved(verdict):
        return verdict, None
    pid = fresh_proof_id(g)
    g.record_proof(Proof(pid, move, original.text(), candidate.text(),
                         f"proved {getattr(verdict, 'proof_id', '')}".strip(), verdict.seconds))
    return verdict, pid


def fresh_proof_id(g: EGraph) -> str:
    """The first `p<n>` (from the table's size on) that names no proof of `g` yet."""
    n = len(g.proofs) + 1
    while f"p{n}" in g.proofs:
        n += 1
    return f"p{n}"
