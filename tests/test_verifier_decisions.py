"""Identities the verifier decides by the rules of `verifier/sums.py`, `terms.py`, `indices.py`
and `encode.py`, each next to a near miss that must still be refuted.

One line per claim: `proves(params, a, b)` / `refutes(params, a, b)` build both programs in the
NumPy subset (docs/language.md) and ask `prove_equivalent`. A claim the verifier cannot decide yet
is pinned with `unknown(...)` and the reason it gives.
"""

from __future__ import annotations

from axon.benchmarks.verifier_corpus import program
from axon.verifier import Proved, Refuted, Unknown, prove_equivalent


def _verdict(params: str, a: str, b: str):
    return prove_equivalent(program("a", params, a), program("b", params, b))


def proves(params: str, a: str, b: str) -> bool:
    verdict = _verdict(params, a, b)
    assert isinstance(verdict, Proved), verdict
    return True


def refutes(params: str, a: str, b: str) -> bool:
    verdict = _verdict(params, a, b)
    assert isinstance(verdict, Refuted), verdict
    return True


def unknown(params: str, a: str, b: str, reason: str) -> bool:
    verdict = _verdict(params, a, b)
    assert isinstance(verdict, Unknown) and reason in verdict.reason, verdict
    return True


# ---- 1. capture-avoiding substitution ------------------------------------------------------------
CHAIN = "a: f32[M, K], b: f32[K, N], c: f32[N, P], d: f32[P, Q], e: f32[Q, R]"
ROWS4 = "x: f32[M, N], y: f32[M, N], z: f32[M, N], w: f32[M, N]"
PROD4 = "sum(sum(x, axis=1) * sum(y, axis=1) * sum(z, axis=1) * sum(w, axis=1))"
TILE = "x: f32[4*T]"
TILE_IOTA = "sum(reshape(x, (T, 4)) * iota((T, 4), 1, f32))"


def test_five_chained_matmuls() -> None:
    assert proves(CHAIN, "(((a @ b) @ c) @ d) @ e", "a @ (b @ (c @ (d @ e)))")


def test_five_chained_matmuls_near_miss() -> None:
    assert refutes(CHAIN, "(((a @ b) @ c) @ d) @ e", "a @ (b @ (c @ (d @ (e + 1.0))))")


def test_product_of_four_row_sums() -> None:
    assert proves(ROWS4, PROD4,
                  "sum(sum(w, axis=1) * sum(z, axis=1) * sum(y, axis=1) * sum(x, axis=1))")


def test_product_of_four_row_sums_rearranged() -> None:
    assert proves(ROWS4, PROD4, "0.5 * sum(sum(2.0 * x, axis=1) * sum(z, axis=1) * "
                                "(sum(y, axis=1) * sum(w, axis=1)))")


def test_product_of_four_row_sums_near_miss() -> None:
    assert refutes(ROWS4, PROD4,
                   "sum(sum(w, axis=1) * sum(z, axis=1) * sum(y, axis=1) * sum(x * x, axis=1))")


def test_tile_sum_weighted_by_column() -> None:
    assert proves(TILE, TILE_IOTA, "sum(sum(reshape(x, (T, 4)) * iota((T, 4), 1, f32), axis=0))")


def test_tile_sum_weighted_by_row_is_not_by_column() -> None:
    assert refutes(TILE, TILE_IOTA, "sum(reshape(x, (T, 4)) * iota((T, 4), 0, f32))")
