"""`verify-equivalence`: check pairs of functions marked in the IR with the SMT verifier.

A `func.func` carrying `axon.equivalent_to = @other` is checked against `@other` (same parameters,
results compared position by position); `axon.assume = ["K mod 4 == 0", ...]` adds integer facts
over size symbols. The pass writes the verdict onto the marked function:

    axon.verdict = "proved"   + axon.proof_id = "<16 hex digits>"
    axon.verdict = "refuted"  + axon.counterexample = "K=2, M=1: result #0[0, 0] is 1.5 vs 2"
    axon.verdict = "unknown"  + axon.reason = "out of budget: z3 spent the query's rlimit ..."
    axon.verdict = "inconsistent" + axon.reason = "no sizes satisfy the assumptions (N < 1) ..."

and prints a report to stderr (one line per pair, then tried/proved/refuted/unknown and time).
Unknown and inconsistent (assumptions no sizes satisfy) never count as proved. Options:
`proof_steps`, `proof_rlimit` (the budget of each pair's query: normalization steps and z3
resource units, counts of work that stop a query at the same point in every run) and
`proof_seconds` (a safety-net clock; a verdict it decides is not stored), `cache` (a
proof-cache file, read and written; empty for none; it keeps an Unknown the counts decided,
for the same budget), `fail_on_refuted` (after annotating and reporting, fail with a
diagnostic, so the command exits non-zero, when some pair is refuted).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import PassFailedException

from axon.tools.pass_options import CheckedPass, option
from axon.verifier import ProofBudget, ProofCache, Proved, Refuted, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET

MARK = "axon.equivalent_to"
ASSUME = "axon.assume"


@dataclass(frozen=True)
class VerifyEquivalencePass(CheckedPass):
    """Prove or refute every marked pair of functions; annotate them and report."""

    name = "verify-equivalence"

    proof_steps: int = option(DEFAULT_BUDGET.steps, "normalization steps for one pair's query",
                              at_least=1)
    proof_rlimit: int = option(DEFAULT_BUDGET.rlimit,
                               "z3 resource units (rlimit) for one pair's query", at_least=1)
    proof_seconds: float = option(DEFAULT_BUDGET.seconds,
                                  "seconds after which one pair's query stops whatever its counts "
                                  "(its verdict is then not stored)", above=0)
    cache: str = option("", "a proof-cache file to read and write; empty for none")
    fail_on_refuted: bool = option(False, "fail (a non-zero exit) when some pair is refuted")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in op.walk() if isinstance(f, FuncOp)}
        cache = ProofCache(self.cache or None)
        counts = {"proved": 0, "refuted": 0, "unknown": 0, "inconsistent": 0}
        start = time.perf_counter()
        lines = []
        refuted = []
        for name, func in funcs.items():
            mark = func.attributes.get(MARK)
            if mark is None:
                continue
            if not isinstance(mark, SymbolRefAttr):
                raise PassFailedException(f"verify-equivalence: @{name}: {MARK} must be a symbol "
                                          "reference like @other")
            other_name = mark.root_reference.data
            if other_name not in funcs:
                raise PassFailedException(f"verify-equivalence: @{name}: {MARK} names "
                                          f"@{other_name}, which is not a function "
                                          "of this module")
            assumptions = _assumptions(func)
            verdict = prove_equivalent(func, funcs[other_name], assumptions,
                                       ProofBudget(self.proof_steps, self.proof_rlimit,
                                                   self.proof_seconds), cache)
            counts[verdict.verdict] += 1
            func.attributes["axon.verdict"] = StringAttr(verdict.verdict)
            if isinstance(verdict, Proved):
                detail = f"proof {verdict.proof_id}"
                func.attributes["axon.proof_id"] = StringAttr(verdict.proof_id)
            elif isinstance(verdict, Refuted):
                detail = str(verdict.counterexample)
                func.attributes["axon.counterexample"] = StringAttr(detail)
                refuted.append(f"@{name} vs @{other_name} ({detail})")
            else:
                detail = verdict.reason
                func.attributes["axon.reason"] = StringAttr(detail)
            lines.append(f"verify-equivalence: @{name} vs @{other_name}: {verdict.verdict} "
                         f"({detail}) in {verdict.seconds:.3f}s")
        if self.cache:
            cache.save()
        tried = sum(counts.values())
        lines.append(f"verify-equivalence: tried {tried}, proved {counts['proved']}, refuted "
                     f"{counts['refuted']}, unknown {counts['unknown']}, inconsistent "
                     f"{counts['inconsistent']} in "
                     f"{time.perf_counter() - start:.3f}s")
        print("\n".join(lines), file=sys.stderr)
        if self.fail_on_refuted and refuted:
            raise PassFailedException(f"verify-equivalence: refuted: {'; '.join(refuted)}")


def _assumptions(func: FuncOp) -> list[str]:
    attr = func.attributes.get(ASSUME)
    if attr is None:
        return []
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, StringAttr) for a in attr.data):
        raise PassFailedException(f"verify-equivalence: @{func.sym_name.data}: {ASSUME} must "
                                  "be an array of strings")
    return [a.data for a in attr.data]  # type: ignore[union-attr]
