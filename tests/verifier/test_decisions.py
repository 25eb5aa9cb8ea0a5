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


def test_tile_sum_weighted_by_column_strided_is_open() -> None:
    # open: the constant-length tile sum is spelled out only in z3 (encode.py), not in the
    # terms, so the strided sums on the right never meet the prefix function of the left
    assert unknown(TILE, TILE_IOTA, "sum(x[1::4]) + 2.0 * sum(x[2::4]) + 3.0 * sum(x[3::4])",
                   "none replayed")


def test_tile_sum_weighted_by_row_is_not_by_column() -> None:
    assert refutes(TILE, TILE_IOTA, "sum(reshape(x, (T, 4)) * iota((T, 4), 0, f32))")


# ---- 2. max / min: shifts and scales ----------------------------------------------------------
XM = "x: f32[M, N]"
XC = "x: f32[M, N], c: f32[M, 1]"


def test_max_shift_by_constant() -> None:
    assert proves(XM, "max(x + 1.0, axis=1)", "max(x, axis=1) + 1.0")


def test_max_shift_by_row_value() -> None:
    assert proves(XC, "max(x + c, axis=1, keepdims=True)", "max(x, axis=1, keepdims=True) + c")


def test_max_shift_by_wrong_multiple() -> None:
    assert refutes(XC, "max(x + c, axis=1, keepdims=True)",
                   "max(x, axis=1, keepdims=True) + 2.0 * c")


def test_max_shift_by_column_value_does_not_leave() -> None:
    assert refutes("x: f32[M, N], c: f32[N]", "max(x + c, axis=1)", "max(x, axis=1) + max(c)")


def test_min_shift() -> None:
    assert proves(XC, "min(x - c, axis=1, keepdims=True)", "min(x, axis=1, keepdims=True) - c")


def test_max_positive_scale() -> None:
    assert proves(XM, "max(2.0 * x, axis=1)", "2.0 * max(x, axis=1)")


def test_max_negative_scale_is_min() -> None:
    assert proves(XM, "max(-2.0 * x, axis=1)", "-2.0 * min(x, axis=1)")


def test_max_negative_scale_is_not_max() -> None:
    assert refutes(XM, "max(-2.0 * x, axis=1)", "-2.0 * max(x, axis=1)")


def test_max_scale_of_unknown_sign_does_not_leave() -> None:
    assert refutes(XC, "max(x * c, axis=1, keepdims=True)", "max(x, axis=1, keepdims=True) * c")


def test_max_scale_by_a_root_of_a_size_leaves() -> None:
    # attention's 1 / sqrt(D) and its like are > 0 for every size: the scale leaves the max
    assert proves(XM, "max(x / sqrt(N), axis=1)", "max(x, axis=1) / sqrt(N)")
    assert proves(XM, "max(x * rsqrt(2.0 * N), axis=1)", "max(x, axis=1) * rsqrt(2.0 * N)")
    assert proves(XM, "min(x * sqrt(N), axis=1)", "min(x, axis=1) * sqrt(N)")


def test_max_scale_by_a_root_of_unknown_sign_does_not_leave() -> None:
    # sqrt(N - 2) is no real number at N = 1 and its sign is not known: nothing is proved
    for params, a, b in [
            (XM, "max(x * sqrt(N - 2.0), axis=1)", "max(x, axis=1) * sqrt(N - 2.0)"),
            (XC, "max(x * sqrt(c), axis=1, keepdims=True)",
             "max(x, axis=1, keepdims=True) * sqrt(c)")]:
        assert not isinstance(_verdict(params, a, b), Proved)


def test_max_is_negated_min() -> None:
    assert proves(XM, "max(x, axis=1)", "-min(-x, axis=1)")


def test_softmax_is_shift_invariant() -> None:
    assert proves(XC, "softmax(x + c, axis=-1)", "softmax(x, axis=-1)")


# ---- 3. max / min over a concatenation -----------------------------------------------------------
AB = "a: f32[M, N], b: f32[M, P]"
CAT = "concatenate([a, b], axis=1)"


def test_max_of_concat() -> None:
    assert proves(AB, f"max({CAT}, axis=1)", "maximum(max(a, axis=1), max(b, axis=1))")


def test_min_of_concat() -> None:
    assert proves(AB, f"min({CAT}, axis=1)", "minimum(min(a, axis=1), min(b, axis=1))")


def test_max_of_concat_is_not_max_of_min() -> None:
    assert refutes(AB, f"max({CAT}, axis=1)", "maximum(max(a, axis=1), min(b, axis=1))")


def test_max_of_concat_slice_may_take_an_empty_max() -> None:
    # N = 1 leaves a[:, 1:] empty: its max is -inf, not a real, so nothing is claimed
    assert unknown(AB, f"max({CAT}[:, 1:], axis=1)",
                   "maximum(max(a[:, 1:], axis=1), max(b, axis=1))", "none replayed")


# ---- 4. log of products and quotients of positive factors ----------------------------------------
XY = "x: f32[N], y: f32[N]"


def test_log_of_exp_quotient() -> None:
    assert proves(XY, "log(exp(x) / exp(y))", "x - y")


def test_log_of_exp_quotient_near_miss() -> None:
    assert refutes(XY, "log(exp(x) / exp(y))", "x + y")


def test_log_softmax_composite() -> None:
    assert proves(XM, "log_softmax(x, axis=-1)", "x - log(sum(exp(x), axis=-1, keepdims=True))")


def test_log_softmax_is_max_free() -> None:
    assert proves(XM, "log(softmax(x, axis=-1))",
                  "x - max(x, axis=-1, keepdims=True) - log(sum(exp(x - max(x, axis=-1, "
                  "keepdims=True)), axis=-1, keepdims=True))")


def test_log_softmax_wrong_axis() -> None:
    assert refutes(XM, "log_softmax(x, axis=-1)", "x - log(sum(exp(x), axis=0, keepdims=True))")


def test_log_of_product_of_unknown_signs_stays() -> None:
    assert unknown(XY, "log(x * y)", "log(x) + log(y)", "none replayed")


# ---- 5. sums over ranges of constant length ----------------------------------------------------
def test_pair_sums() -> None:
    assert proves("x: f32[2*T]", "sum(reshape(x, (T, 2)), axis=1)", "x[0::2] + x[1::2]")


def test_pair_sums_near_miss() -> None:
    assert refutes("x: f32[2*T]", "sum(reshape(x, (T, 2)), axis=1)", "x[0::2] + x[0::2]")


def test_three_columns() -> None:
    assert proves("x: f32[M, 3]", "sum(x, axis=1)", "x[:, 0] + x[:, 1] + x[:, 2]")


def test_three_columns_near_miss() -> None:
    assert refutes("x: f32[M, 3]", "sum(x, axis=1)", "x[:, 0] + x[:, 1] + x[:, 1]")


# ---- 6. triangular sums over shifted slices, nested cumsums -------------------------------------
X1 = "x: f32[N + 1]"
XN = "x: f32[N]"
LOWER = "iota((N, N), 1, i32) <= iota((N, N), 0, i32)"


def test_cumsum_of_shifted_slice() -> None:
    assert proves(X1, "cumsum(x[1:])", "cumsum(x)[1:] - x[0]")


def test_cumsum_of_shifted_slice_near_miss() -> None:
    assert refutes(X1, "cumsum(x[1:])", "cumsum(x)[1:] - x[1]")


def test_sum_of_cumsum_of_shifted_slice_is_open() -> None:
    # open: shifting sum_k x[k + 1] * k to read x[k] turns idx(k) into idx(k) - 1, which splits
    # the monomial, so the shift is skipped and the two sides keep different bodies
    assert unknown(X1, "sum(cumsum(x[1:]))", "sum(x[1:] * (N - iota((N,), 0, f32)))",
                   "none replayed")


def test_sum_of_cumsum_of_shifted_slice_near_miss() -> None:
    assert refutes(X1, "sum(cumsum(x[1:]))", "sum(x[1:] * (N + 1 - iota((N,), 0, f32)))")


def test_cumsum_is_a_masked_row_sum() -> None:
    assert proves(XN, "cumsum(x)", f"sum(where({LOWER}, reshape(x, (1, N)), 0.0), axis=1)")


def test_nested_cumsum_closed_form() -> None:
    assert proves(XN, "cumsum(cumsum(x))",
                  f"sum(where({LOWER}, reshape(x, (1, N)) * (iota((N, N), 0, f32) - "
                  "iota((N, N), 1, f32) + 1.0), 0.0), axis=1)")


def test_nested_cumsum_closed_form_off_by_one() -> None:
    assert refutes(XN, "cumsum(cumsum(x))",
                   f"sum(where({LOWER}, reshape(x, (1, N)) * (iota((N, N), 0, f32) - "
                   "iota((N, N), 1, f32)), 0.0), axis=1)")


def test_cumsums_along_two_axes_commute() -> None:
    assert proves(XM, "cumsum(cumsum(x, axis=0), axis=1)", "cumsum(cumsum(x, axis=1), axis=0)")


def test_cumsum_twice_along_one_axis_is_not_both() -> None:
    assert refutes(XM, "cumsum(cumsum(x, axis=0), axis=1)", "cumsum(cumsum(x, axis=1), axis=1)")


# ---- 7. masks from an i32 iota -------------------------------------------------------------------
def test_i32_iota_mask() -> None:
    assert proves(XN, "where(iota((N,), 0, i32) < 3, x, 0.0)",
                  "where(iota((N,), 0, f32) < 3.0, x, 0.0)")


def test_i32_iota_mask_near_miss() -> None:
    assert refutes(XN, "where(iota((N,), 0, i32) < 3, x, 0.0)",
                   "where(iota((N,), 0, f32) <= 3.0, x, 0.0)")


def test_causal_mask_i32_vs_f32() -> None:
    assert proves("x: f32[N, N]", f"where({LOWER}, x, 0.0)",
                  "where(iota((N, N), 1, f32) <= iota((N, N), 0, f32), x, 0.0)")


def test_causal_mask_strict_is_not_causal() -> None:
    assert refutes("x: f32[N, N]", f"where({LOWER}, x, 0.0)",
                   "where(iota((N, N), 1, f32) < iota((N, N), 0, f32), x, 0.0)")


# ---- 8. reshape round trips through products of sizes -------------------------------------------
XMNK = "x: f32[M, N, K]"


def test_reshape_round_trip_through_flat() -> None:
    assert proves(XMNK, "reshape(reshape(x, (M*N*K,)), (M, N, K))", "x")


def test_reshape_through_merged_rows() -> None:
    assert proves(XMNK, "reshape(reshape(x, (M*N, K)), (M, N*K))", "reshape(x, (M, N*K))")


def test_reshape_round_trip_through_merged_rows() -> None:
    assert proves("x: f32[M, N*K]", "reshape(reshape(x, (M*N, K)), (M, N*K))", "x")


def test_reshape_round_trip_is_not_a_transpose() -> None:
    assert refutes(XMNK, "reshape(reshape(x, (M*N*K,)), (M, N, K))",
                   "transpose(reshape(reshape(x, (M*N*K,)), (M, K, N)), (0, 2, 1))")


def test_a_reduction_over_a_flattened_index_is_the_double_reduction() -> None:
    """A sum over t in [0, M*N) reading x[t floordiv N, t mod N] (a reshape's reads) is the
    double sum over (t floordiv N, t mod N); three flattened dims split twice; a max too."""
    assert proves("x: f32[M, N]", "sum(reshape(x, (M*N,)))", "sum(x)")
    assert proves("x: f32[M, N, P]", "sum(reshape(x, (M*N*P,)))", "sum(x)")
    assert proves("x: f32[M, N, P]", "sum(reshape(x, (M, N*P)), axis=1)",
                  "sum(sum(x, axis=2), axis=1)")
    assert proves("x: f32[M, N]", "max(reshape(x, (M*N,)))", "max(max(x, axis=1))")


def test_a_flattened_reduction_pairs_only_what_the_reshapes_pair() -> None:
    """Two operands flattened in different orders are not the product of the unflattened ones,
    a max over part of the flattened index is not the whole max. A flat index read as itself
    too (a weight by position) reads its row times N plus its column: the row-major weight
    proved, the column-major one refuted."""
    assert refutes("x: f32[M, N], y: f32[N, M]",
                   "sum(reshape(x, (M*N,)) * reshape(y, (M*N,)))", "sum(x * transpose(y))")
    assert refutes("x: f32[M, N]", "max(reshape(x, (M*N,)))", "max(reshape(x, (M*N,))[0:N])")
    weighted = "sum(reshape(x, (M*N,)) * iota((M*N,), 0, f32))"
    assert proves("x: f32[M, N]", weighted,
                  "sum(x * (iota((M, N), 0, f32) * N + iota((M, N), 1, f32)))")
    assert refutes("x: f32[M, N]", weighted,
                   "sum(x * (iota((M, N), 1, f32) * M + iota((M, N), 0, f32)))")


def test_division_by_sqrt_is_multiplication_by_rsqrt() -> None:
    """sqrt(t) rsqrt(t) = 1 for t > 0, and a sum of squares plus eps is positive."""
    rms = "mean(x * x, axis=-1, keepdims=True) + 1e-6"
    assert proves("x: f32[M, N]", f"x / sqrt({rms})", f"x * rsqrt({rms})")
    assert refutes("x: f32[M, N]", f"x / sqrt({rms})", f"x * sqrt({rms})")
