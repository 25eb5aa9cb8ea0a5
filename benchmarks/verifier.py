"""Benchmark of the SMT verifier over its whole corpus (benchmarks/verifier_corpus.py); not a test.

    python -m axon.benchmarks.verifier [--proof-rlimit 1000000 --proof-steps 50000]

Prints proved / refuted / unknown counts (and how many cases got the verdict they should) and the
per-query median and p95 wall time, cold (fresh cache) and warm (a second pass over the same cache,
with the programs parsed and inlined afresh, so a warm query costs inlining plus a lookup). Then,
apart and untimed, the PENDING cases: each one's verdict now, the verdict it should get and why
it does not yet.
"""

from __future__ import annotations

import argparse
import statistics
import time

from axon.benchmarks import proof_budget
from axon.benchmarks.verifier_corpus import (
    IDENTITIES,
    NON_IDENTITIES,
    PENDING,
    Case,
    functions,
)
from axon.verifier import ProofBudget, ProofCache, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET


def _pass(cases: list[tuple[str, Case]], cache: ProofCache, budget: ProofBudget
          ) -> tuple[dict[str, int], int, list[float], list[str]]:
    counts = {"proved": 0, "refuted": 0, "unknown": 0}
    right, times, wrong = 0, [], []
    for want, case in cases:
        a, b = functions(case)
        start = time.perf_counter()
        verdict = prove_equivalent(a, b, case.assumptions, budget, cache)
        times.append(time.perf_counter() - start)
        counts[verdict.verdict] += 1
        if verdict.verdict == want:
            right += 1
        else:
            wrong.append(f"{case.name}: {verdict.verdict}, expected {want}")
    return counts, right, times, wrong


def _p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    proof_budget.add_arguments(parser, DEFAULT_BUDGET)
    args = parser.parse_args()
    budget = proof_budget.from_arguments(args)
    cases = [("proved", c) for c in IDENTITIES] + [("refuted", c) for c in NON_IDENTITIES]
    cache = ProofCache()
    print(f"corpus: {len(IDENTITIES)} identities, {len(NON_IDENTITIES)} non-identities")
    for label in ("cold", "warm"):
        counts, right, times, wrong = _pass(cases, cache, budget)
        print(f"{label}: proved {counts['proved']}, refuted {counts['refuted']}, unknown "
              f"{counts['unknown']}; as expected {right}/{len(cases)}; per query median "
              f"{statistics.median(times):.3f}s, p95 {_p95(times):.3f}s, max {max(times):.3f}s, "
              f"total {sum(times):.1f}s")
        for line in wrong:
            print(f"  unexpected: {line}")
    print(f"cache: {cache.hits} hits, {cache.misses} misses")
    print(f"pending: {len(PENDING)} cases the verifier does not yet decide as it should")
    for pending in PENDING:
        a, b = functions(pending.case)
        verdict = prove_equivalent(a, b, pending.case.assumptions, budget)
        print(f"  {pending.case.name}: {verdict.verdict} (should be {pending.expected}): "
              f"{pending.why}")


if __name__ == "__main__":
    main()
