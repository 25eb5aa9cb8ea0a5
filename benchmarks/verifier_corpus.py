"""The verifier's corpus: identities it must prove and non-identities it must refute.

Each case is two programs in the NumPy subset (docs/language.md) over the same parameters: a
return expression, or a multi-line body ending in `return`. The tests (tests/verifier/)
and the benchmark (benchmarks/verifier.py) both read these lists. The non-identities are the
mistakes a rewrite engine makes (wrong axes, off-by-one bounds, transposed operands, dtype changes,
identities that hold only for special shapes, ...); families over axes or offsets are generated.
PENDING holds cases the current verifier does not yet decide as it should, each with the reason;
only the benchmark reads it.

This lives outside `axon.verifier` because it needs the source frontend, which the verifier must
not import.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.func import FuncOp

from axon.frontend.numpy_subset import parse_source


@dataclass(frozen=True)
class Case:
    name: str
    params: str
    a: str
    b: str
    assumptions: tuple[str, ...] = ()


def program(name: str, params: str, body: str) -> FuncOp:
    """A func.func from a return expression or a body (lines, the last one a `return`)."""
    lines = body.strip().splitlines() if "return" in body else [f"return {body}"]
    text = f"def {name}({params}):\n" + "".join(f"    {ln.strip()}\n" for ln in lines)
    module = parse_source(text, f"<{name}>")
    (func,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    return func


def functions(case: Case) -> tuple[FuncOp, FuncOp]:
    return program("a", case.params, case.a), program("b", case.params, case.b)


MM = "x: f32[M, K], w: f32[K, N]"
SOFTMAX_ROWS = "exp(x - max(x, axis=1, keepdims=True)) / sum(exp(x - max(x, axis=1, " \
               "keepdims=True)), axis=1, keepdims=True)"
RMS = "rsqrt(mean(x * x, axis=-1, keepdims=True) + 1e-6)"
BLOCKED_CUMSUM = """
xr = reshape(x, (T, 4))
tiles = sum(xr, axis=1)
carry = cumsum(tiles, axis=0) - tiles
return reshape(cumsum(xr, axis=1) + reshape(carry, (T, 1)), (4*T,))
"""
BLOCKED_CUMSUM_OFF = """
xr = reshape(x, (T, 4))
tiles = sum(xr, axis=1)
carry = cumsum(tiles, axis=0)
return reshape(cumsum(xr, axis=1) + reshape(carry, (T, 1)), (4*T,))
"""
IOTA_N = "iota((N,), 0, f32)"
TILED_MATMUL = "sum(matmul(transpose(reshape(x, (M, T, 4)), (1, 0, 2)), " \
               "reshape(w, (T, 4, N))), axis=0)"
#: tile sums taken over strided instead of contiguous tiles
BLOCKED_CUMSUM_TRANSPOSED = """
xr = reshape(x, (T, 4))
tiles = sum(reshape(x, (4, T)), axis=0)
carry = cumsum(tiles, axis=0) - tiles
return reshape(cumsum(xr, axis=1) + reshape(carry, (T, 1)), (4*T,))
"""
QK = "q: f32[M, D], k: f32[N, D]"
QKV = QK + ", v: f32[N, D]"
ABC = "a: f32[M, K], b: f32[K, N], c: f32[N, P]"
AB = "a: f32[A], b: f32[B]"
XY = "x: f32[N], y: f32[N]"
XYZ = XY + ", z: f32[N]"
#: square operands: a transposed operand changes the values, not the shape
SQ = "x: f32[N, N], w: f32[N, N]"
ROW, COL = "iota((N, N), 0, f32)", "iota((N, N), 1, f32)"
CENTERED = "(x - mean(x, axis=-1, keepdims=True))"
IDENTITIES: list[Case] = [
    # moving scales across a matmul
    Case("row_scale_after_matmul", MM + ", s: f32[M, 1]", "(x * s) @ w", "s * (x @ w)"),
    Case("col_scale_to_output", MM + ", c: f32[N]", "x @ (w * c)", "(x @ w) * c"),
    Case("scalar_scale_through_matmul", MM, "(x * 0.5) @ w", "(x @ w) * 0.5"),
    Case("contracted_scale_to_other_side", MM + ", s: f32[K], t: f32[K, 1]",
         "(x * s) @ (w * t)", "(x * (s * reshape(t, (K,)))) @ w"),
    Case("divide_rows_after_matmul", MM + ", d: f32[M, 1]", "(x / d) @ w", "(x @ w) / d"),
    # transposes and matmul algebra
    Case("transpose_of_matmul", MM, "(x @ w).T", "w.T @ x.T"),
    Case("double_transpose", "x: f32[M, N]", "x.T.T", "x"),
    Case("transpose_3d_round_trip", "x: f32[M, N, P]",
         "transpose(transpose(x, (1, 2, 0)), (2, 0, 1))", "x"),
    Case("matmul_distributes_rhs", MM + ", v: f32[K, N]", "x @ (w + v)", "x @ w + x @ v"),
    Case("matmul_distributes_lhs", MM + ", y: f32[M, K]", "(x + y) @ w", "x @ w + y @ w"),
    Case("matmul_difference", MM + ", v: f32[K, N]", "x @ w - x @ v", "x @ (w - v)"),
    Case("matmul_associative", MM + ", v: f32[N, P]", "(x @ w) @ v", "x @ (w @ v)"),
    Case("batched_matmul_transpose", "a: f32[B, M, K], b: f32[B, K, N]",
         "transpose(a @ b, (0, 2, 1))", "transpose(b, (0, 2, 1)) @ transpose(a, (0, 2, 1))"),
    Case("matvec_is_matmul", "x: f32[M, K], v: f32[K]", "x @ v",
         "reshape(x @ reshape(v, (K, 1)), (M,))"),
    # sums
    Case("constant_out_of_sum", "x: f32[M, N]", "sum(2.0 * x, axis=1)", "2.0 * sum(x, axis=1)"),
    Case("sum_of_matmul_columns", MM, "sum(x @ w, axis=1)", "x @ sum(w, axis=1)"),
    Case("sum_of_matmul_rows", MM, "sum(x @ w, axis=0)", "sum(x, axis=0) @ w"),
    Case("sum_linear", "x: f32[M, N], y: f32[M, N]", "sum(x + y, axis=1)",
         "sum(x, axis=1) + sum(y, axis=1)"),
    Case("sum_axes_commute", "x: f32[M, N]", "sum(sum(x, axis=0))", "sum(sum(x, axis=1))"),
    Case("sum_all_axes", "x: f32[M, N]", "sum(x, axis=(0, 1))", "sum(sum(x, axis=1))"),
    Case("sum_of_transpose", "x: f32[M, N]", "sum(x.T, axis=0)", "sum(x, axis=1)"),
    Case("sum_of_outer_product", "a: f32[M], b: f32[N]",
         "sum(reshape(a, (M, 1)) * reshape(b, (1, N)))", "sum(a) * sum(b)"),
    Case("mean_is_sum_over_n", "x: f32[M, N]", "mean(x, axis=1)", "sum(x, axis=1) / N"),
    Case("centered_rows_sum_to_zero", "x: f32[M, N]",
         "sum(x - mean(x, axis=1, keepdims=True), axis=1)", "sum(x, axis=1) * 0.0"),
    Case("row_scale_out_of_sum", "x: f32[M, N], c: f32[M, 1]",
         "sum(x * c, axis=1, keepdims=True)", "sum(x, axis=1, keepdims=True) * c"),
    # normalizers moved after a matmul
    Case("rmsnorm_normalizer_after_matmul", MM, f"(x * {RMS}) @ w", f"{RMS} * (x @ w)"),
    Case("rmsnorm_gain_into_weight", MM + ", g: f32[K]",
         f"(x * {RMS} * g) @ w", f"{RMS} * (x @ (w * reshape(g, (K, 1))))"),
    Case("softmax_normalizer_after_matmul", "x: f32[M, N], v: f32[N, P]",
         "(exp(x) / sum(exp(x), axis=1, keepdims=True)) @ v",
         "(exp(x) @ v) / sum(exp(x), axis=1, keepdims=True)"),
    Case("softmax_max_invariance", "x: f32[M, N]", SOFTMAX_ROWS,
         "exp(x) / sum(exp(x), axis=1, keepdims=True)"),
    Case("softmax_composite", "x: f32[M, N]", "softmax(x, axis=-1)",
         "exp(x) / sum(exp(x), axis=-1, keepdims=True)"),
    Case("softmax_shift_invariance", "x: f32[M, N], c: f32[M, 1]",
         "softmax(x + c, axis=-1)", "softmax(x, axis=-1)"),
    Case("exp_of_sum", "x: f32[N], y: f32[N]", "exp(x + y)", "exp(x) * exp(y)"),
    Case("exp_of_difference", "x: f32[N], y: f32[N]", "exp(x - y)", "exp(x) / exp(y)"),
    Case("log_of_exp", "x: f32[N]", "log(exp(x))", "x"),
    Case("log_of_exp_product", XY, "log(exp(x) * exp(y))", "x + y"),
    # tiling
    Case("sum_tiles", "x: f32[4*T]", "sum(x)", "sum(sum(reshape(x, (T, 4)), axis=1))"),
    Case("sum_tiles_with_remainder", "x: f32[4*T + R]", "sum(x)",
         "sum(sum(reshape(x[0:4*T], (T, 4)), axis=1)) + sum(x[4*T:4*T + R])"),
    Case("sum_range_split", "x: f32[A + B]", "sum(x)", "sum(x[0:A]) + sum(x[A:A + B])"),
    # a reduction over a flattened index: sum over t in [0, M*N) of x[t div N, t mod N] is the
    # double reduction over (t div N, t mod N)
    Case("sum_of_flattened", "x: f32[M, N]", "sum(reshape(x, (M*N,)))", "sum(x)"),
    Case("mean_of_flattened", "x: f32[M, N]", "mean(reshape(x, (M*N,)))", "mean(x)"),
    Case("row_sums_of_merged_dims", "x: f32[M, N, P]", "sum(reshape(x, (M, N*P)), axis=1)",
         "sum(sum(x, axis=2), axis=1)"),
    Case("max_of_flattened", "x: f32[M, N]", "max(reshape(x, (M*N,)))", "max(max(x, axis=1))"),
    Case("sum_of_flattened_3d", "x: f32[M, N, P]", "sum(reshape(x, (M*N*P,)))", "sum(x)"),
    Case("weighted_flattened_sum", "x: f32[M, N]",
         "sum(reshape(x, (M*N,)) * iota((M*N,), 0, f32))",
         "sum(x * (iota((M, N), 0, f32) * N + iota((M, N), 1, f32)))"),
    Case("dot_of_flattened", "x: f32[M, N], y: f32[M, N]",
         "sum(reshape(x, (M*N,)) * reshape(y, (M*N,)))", "sum(x * y)"),
    Case("tiled_matmul", "x: f32[M, 4*T], w: f32[4*T, N]", TILED_MATMUL, "x @ w"),
    Case("blocked_cumsum", "x: f32[4*T]", BLOCKED_CUMSUM, "cumsum(x)"),
    Case("cumsum_last_is_sum", "x: f32[N]", "cumsum(x)[N-1:N]", "sum(x, keepdims=True)"),
    Case("cumsum_difference", "x: f32[N + 1]", "cumsum(x)[1:N + 1] - cumsum(x)[0:N]",
         "x[1:N + 1]"),
    # exchanging a triangular double sum: sum_j sum_{k <= j} x[k] = sum_k (N - k) x[k]
    Case("sum_of_cumsum", "x: f32[N]", "sum(cumsum(x, axis=0), axis=0)",
         f"sum(x * (N - {IOTA_N}))"),
    Case("sum_of_suffix_sums", "x: f32[N]", "sum(sum(x) - cumsum(x) + x)",
         f"sum(x * ({IOTA_N} + 1.0))"),
    Case("row_sums_of_cumsum", "x: f32[M, N]", "sum(cumsum(x, axis=1), axis=1)",
         "sum(x * (N - iota((M, N), 1, f32)), axis=1)"),
    Case("column_sums_of_cumsum", "x: f32[M, N]", "sum(cumsum(x, axis=0), axis=0)",
         "sum(x * (M - iota((M, N), 0, f32)), axis=0)"),
    Case("sum_of_cumsum_of_slice", "x: f32[N + 1]", "sum(cumsum(x[0:N]))",
         f"sum(x[0:N] * (N - {IOTA_N}))"),
    # reshape, slice, concat, broadcast
    Case("reshape_round_trip", "x: f32[M, N]", "reshape(reshape(x, (M*N,)), (M, N))", "x"),
    Case("reshape_round_trip_3d", "x: f32[M, N, P]",
         "reshape(reshape(x, (M*N*P,)), (M, N, P))", "x"),
    Case("reshape_split_merge", "x: f32[M, N, P]",
         "reshape(reshape(x, (M*N, P)), (M, N, P))", "x"),
    Case("concat_slice_first", "a: f32[M, K], b: f32[N, K]",
         "concatenate([a, b], axis=0)[0:M]", "a"),
    Case("concat_slice_second", "a: f32[M, K], b: f32[N, K]",
         "concatenate([a, b], axis=0)[M:M + N]", "b"),
    Case("slice_of_slice", "x: f32[N + 3]", "x[1:N + 3][1:N + 2]", "x[2:N + 3]"),
    # factoring a common operand: one contraction over concatenated weights (the concat's select
    # leaves the sum; the slice's range settles the concat's condition)
    Case("concat_of_matmuls", "x: f32[M, K], w: f32[K, N], v: f32[K, P]",
         "concatenate([x @ w, x @ v], axis=1)", "x @ concatenate([w, v], axis=1)"),
    Case("merged_matmul_slice_first", "x: f32[M, K], w: f32[K, N], v: f32[K, P]",
         "(x @ concatenate([w, v], axis=1))[0:M, 0:N]", "x @ w"),
    Case("merged_matmul_slice_second", "x: f32[M, K], w: f32[K, N], v: f32[K, P]",
         "(x @ concatenate([w, v], axis=1))[0:M, N:N + P]", "x @ v"),
    Case("max_of_concat_columns", "a: f32[M, N], b: f32[M, P]",
         "max(concatenate([a, b], axis=1), axis=0)",
         "concatenate([max(a, axis=0), max(b, axis=0)], axis=0)"),
    Case("broadcast_to_explicit", "x: f32[M, N], b: f32[N]",
         "x + broadcast_to(b, (M, N))", "x + b"),
    Case("broadcast_distributes", "x: f32[M, N], b: f32[N], c: f32[N]",
         "(x + b) * c", "x * c + b * c"),
    Case("sum_of_broadcast", "b: f32[N], y: f32[M]", "sum(broadcast_to(b, (M, N)), axis=0)",
         "b * M"),
    # derived functions
    Case("silu_expansion", "x: f32[N]", "silu(x)", "x * sigmoid(x)"),
    Case("relu_is_max", "x: f32[N]", "relu(x)", "maximum(x, 0.0)"),
    Case("square_is_product", "x: f32[N]", "square(x)", "x * x"),
    Case("reciprocal_is_division", "x: f32[N]", "reciprocal(x) * 3.0", "3.0 / x"),
    # more scales across a matmul: negation, weight scales, both sides, a bias row
    Case("negation_through_matmul", MM, "(-x) @ w", "-(x @ w)"),
    Case("weight_scale_to_output", MM, "x @ (w * 0.25)", "(x @ w) * 0.25"),
    Case("row_and_column_scales", MM + ", s: f32[M, 1], c: f32[N]", "(x * s) @ (w * c)",
         "s * (x @ w) * c"),
    Case("divide_columns_after_matmul", MM + ", c: f32[N]", "x @ (w / c)", "(x @ w) / c"),
    Case("contracted_scale_to_weight_rows", MM + ", s: f32[K]", "(x * s) @ w",
         "x @ (w * reshape(s, (K, 1)))"),
    Case("bias_through_matmul", MM + ", b: f32[K]", "(x + b) @ w",
         "x @ w + reshape(b, (1, K)) @ w"),
    # attention: the logit scale moves between the query, the key and the logits
    Case("attention_scale_on_query", QK, "(q * 0.125) @ k.T", "(q @ k.T) * 0.125"),
    Case("attention_scale_on_key", QK, "q @ (k * 0.125).T", "(q @ k.T) * 0.125"),
    Case("attention_sqrt_head_dim_scale", QK, "(q / sqrt(D)) @ k.T", "(q @ k.T) / sqrt(D)"),
    Case("attention_scale_inside_softmax", QKV, "softmax((q * 0.5) @ k.T, axis=-1) @ v",
         "softmax((q @ k.T) * 0.5, axis=-1) @ v"),
    Case("attention_composite", QKV, "attention(q, k, v, scale=0.5)",
         "softmax((q @ k.T) * 0.5, axis=-1) @ v"),
    # transposes of products and sums, associativity
    Case("transpose_of_triple_product", ABC, "(a @ b @ c).T", "c.T @ b.T @ a.T"),
    Case("transpose_of_sum", "x: f32[M, N], y: f32[M, N]", "(x + y).T", "x.T + y.T"),
    Case("transpose_commutes_with_exp", "x: f32[M, N]", "exp(x).T", "exp(x.T)"),
    Case("matmul_associative_with_scale", ABC, "((a @ b) * 2.0) @ c", "a @ (b @ (c * 2.0))"),
    Case("gram_matrix_is_symmetric", "a: f32[M, N]", "(a @ a.T).T", "a @ a.T"),
    Case("matmul_through_transposed_operands", MM, "(w.T @ x.T).T", "x @ w"),
    Case("batched_matmul_associative",
         "a: f32[B, M, K], b: f32[B, K, N], c: f32[B, N, P]", "(a @ b) @ c", "a @ (b @ c)"),
    # elementwise algebra: distributivity, max/min, selects
    Case("multiply_distributes", XYZ, "x * (y + z)", "x * y + x * z"),
    Case("difference_of_squares", XY, "(x + y) * (x - y)", "x * x - y * y"),
    Case("square_of_sum_expanded", XY, "square(x + y)", "x * x + 2.0 * x * y + y * y"),
    Case("max_plus_min_is_sum", XY, "maximum(x, y) + minimum(x, y)", "x + y"),
    Case("abs_is_max_of_negation", "x: f32[N]", "abs(x)", "maximum(x, -x)"),
    Case("relu_is_where_positive", "x: f32[N]", "where(x > 0.0, x, 0.0)", "relu(x)"),
    Case("relu_is_where_nonnegative", "x: f32[N]", "where(x >= 0.0, x, 0.0)", "relu(x)"),
    Case("where_greater_is_maximum", XY, "where(x > y, x, y)", "maximum(x, y)"),
    Case("where_negated_condition", XY, "where(x > 0.0, x, y)", "where(x <= 0.0, y, x)"),
    Case("where_both_ways_sum", XY, "where(x > y, x, y) + where(x > y, y, x)", "x + y"),
    Case("mask_cast_is_select", XY, "astype(x > y, f32)", "where(x > y, 1.0, 0.0)"),
    # means and normalizers
    Case("mean_of_row_means", "x: f32[M, N]", "mean(mean(x, axis=1))", "mean(x)"),
    Case("mean_of_shifted_rows", "x: f32[M, N]", "mean(x + 3.0, axis=1)",
         "mean(x, axis=1) + 3.0"),
    Case("keepdims_is_reshape", "x: f32[M, N]", "x - mean(x, axis=1, keepdims=True)",
         "x - reshape(mean(x, axis=1), (M, 1))"),
    Case("variance_two_ways", "x: f32[M, N]",
         "rsqrt(mean(x * x, axis=1) - mean(x, axis=1) * mean(x, axis=1) + 1e-5)",
         "rsqrt(mean((x - mean(x, axis=1, keepdims=True)) ** 2, axis=1) + 1e-5)"),
    Case("eps_inside_mean", "x: f32[M, N]", "rsqrt(mean(x * x + 1e-6, axis=-1))",
         "rsqrt(mean(x * x, axis=-1) + 1e-6)"),
    Case("rmsnorm_composite", "x: f32[M, N], g: f32[N]", "rmsnorm(x, g)", f"x * {RMS} * g"),
    Case("layernorm_composite", "x: f32[M, N], g: f32[N], b: f32[N]", "layernorm(x, g, b)",
         f"{CENTERED} * rsqrt(mean({CENTERED} ** 2, axis=-1, keepdims=True) + 1e-5) * g + b"),
    Case("softmax_rows_sum_to_one", "x: f32[M, N]", "sum(softmax(x, axis=-1), axis=-1)",
         "ones((M,), f32)"),
    Case("softmax_of_transpose", "x: f32[M, N]", "softmax(x.T, axis=0)", "softmax(x, axis=1).T"),
    Case("softmax_min_shift", "x: f32[M, N]",
         "exp(x - min(x, axis=1, keepdims=True)) / sum(exp(x - min(x, axis=1, keepdims=True)), "
         "axis=1, keepdims=True)", "softmax(x, axis=1)"),
    # reductions over reshapes
    Case("row_sums_of_split_rows", "x: f32[M, 4*T]", "sum(reshape(x, (M, T, 4)), axis=(1, 2))",
         "sum(x, axis=1)"),
    # tiling with a remainder, splitting the contracted dim
    Case("matmul_tiles_with_remainder", "x: f32[M, 4*T + R], w: f32[4*T + R, N]", "x @ w",
         "x[:, 0:4*T] @ w[0:4*T] + x[:, 4*T:4*T + R] @ w[4*T:4*T + R]"),
    Case("matmul_split_contraction", "x: f32[M, A + B], w: f32[A + B, N]", "x @ w",
         "x[:, 0:A] @ w[0:A] + x[:, A:A + B] @ w[A:A + B]"),
    Case("mean_of_tile_means", "x: f32[4*T]", "mean(x)",
         "mean(mean(reshape(x, (T, 4)), axis=1))"),
    Case("stacked_rows_matmul", "a: f32[M, K], b: f32[N, K], w: f32[K, P]",
         "concatenate([a, b], axis=0) @ w", "concatenate([a @ w, b @ w], axis=0)"),
    # scans
    Case("cumsum_linear", XY, "cumsum(x + y)", "cumsum(x) + cumsum(y)"),
    Case("cumsum_scaled", "x: f32[N]", "cumsum(3.0 * x)", "3.0 * cumsum(x)"),
    Case("exclusive_scan_via_concat", "x: f32[N + 1]", "cumsum(x) - x",
         "concatenate([zeros((1,), f32), cumsum(x[0:N])], axis=0)"),
    Case("row_cumsum_last_column", "x: f32[M, N]", "cumsum(x, axis=1)[:, N - 1:N]",
         "sum(x, axis=1, keepdims=True)"),
    Case("cumsum_of_transpose", "x: f32[M, N]", "cumsum(x.T, axis=0)", "cumsum(x, axis=1).T"),
    # concat and slice algebra
    Case("concat_of_halves", "x: f32[A + B]", "concatenate([x[0:A], x[A:A + B]], axis=0)", "x"),
    Case("concat_of_column_halves", "x: f32[M, A + B]",
         "concatenate([x[:, 0:A], x[:, A:A + B]], axis=1)", "x"),
    Case("transpose_of_row_concat", "a: f32[M, K], b: f32[N, K]",
         "concatenate([a, b], axis=0).T", "concatenate([a.T, b.T], axis=1)"),
    Case("concat_commutes_with_add", "a: f32[A], b: f32[B], c: f32[A], d: f32[B]",
         "concatenate([a, b], axis=0) + concatenate([c, d], axis=0)",
         "concatenate([a + c, b + d], axis=0)"),
    Case("concat_associative", "a: f32[A], b: f32[B], c: f32[C]",
         "concatenate([concatenate([a, b], axis=0), c], axis=0)",
         "concatenate([a, concatenate([b, c], axis=0)], axis=0)"),
    Case("exp_of_concat", AB, "exp(concatenate([a, b], axis=0))",
         "concatenate([exp(a), exp(b)], axis=0)"),
    Case("slice_of_transpose", "x: f32[M, N + 1]", "x.T[1:N + 1]", "x[:, 1:N + 1].T"),
    # identities that hold because a dim is 1
    Case("sum_over_unit_axis", "x: f32[M, 1]", "sum(x, axis=1)", "reshape(x, (M,))"),
    Case("mean_over_unit_axis", "x: f32[M, 1]", "mean(x, axis=1)", "reshape(x, (M,))"),
    Case("cumsum_over_unit_axis", "x: f32[M, 1]", "cumsum(x, axis=1)", "x"),
    Case("transpose_of_column_is_reshape", "x: f32[N, 1]", "x.T", "reshape(x, (1, N))"),
    Case("unit_contraction_is_outer_product", "a: f32[M, 1], b: f32[1, N]", "a @ b", "a * b"),
    Case("softmax_over_unit_axis", "x: f32[M, 1]", "softmax(x, axis=-1)", "ones((M, 1), f32)"),
    # sums over a concat split at its boundary, max/min algebra, logs of positive products, sqrt
    Case("sum_over_concat", AB, "sum(concatenate([a, b], axis=0))", "sum(a) + sum(b)"),
    Case("cumsum_of_concat_head", AB, "cumsum(concatenate([a, b], axis=0))[0:A]",
         "cumsum(a)"),
    Case("cumsum_of_concat_tail", AB, "cumsum(concatenate([a, b], axis=0))[A:A + B]",
         "cumsum(b) + sum(a)"),
    Case("max_is_negated_min", "x: f32[M, N]", "max(x, axis=1)", "-min(-x, axis=1)"),
    Case("max_of_shifted_rows", "x: f32[M, N], c: f32[M, 1]",
         "max(x + c, axis=1, keepdims=True)", "max(x, axis=1, keepdims=True) + c"),
    Case("log_softmax_composite", "x: f32[M, N]", "log_softmax(x, axis=-1)",
         "x - log(sum(exp(x), axis=-1, keepdims=True))"),
    Case("divide_by_sqrt_is_rsqrt", "x: f32[M, N]",
         "x / sqrt(mean(x * x, axis=-1, keepdims=True) + 1e-6)", f"x * {RMS}"),
]

NON_IDENTITIES: list[Case] = [
    # flattened reductions: both operands must be flattened the same way
    Case("dot_of_flattened_transposed", "x: f32[M, N], y: f32[N, M]",
         "sum(reshape(x, (M*N,)) * reshape(y, (M*N,)))", "sum(x * transpose(y))"),
    Case("max_of_flattened_first_row", "x: f32[M, N]", "max(reshape(x, (M*N,)))",
         "max(reshape(x, (M*N,))[0:N])"),
    # scales along the contracted dim cannot leave the matmul
    Case("contracted_scale_moved_out", MM + ", s: f32[K]", "(x * s) @ w", "(x @ w) * sum(s)"),
    Case("contracted_scale_as_row_scale", MM + ", s: f32[K]", "(x * s) @ w",
         "(x @ w) * mean(s)"),
    Case("contracted_scale_on_wrong_side", "x: f32[M, K], w: f32[K, K], s: f32[K]",
         "(x * s) @ w", "x @ (w * s)"),
    Case("rmsnorm_gain_to_output", "x: f32[M, K], w: f32[K, K], g: f32[K]",
         f"(x * {RMS} * g) @ w", f"({RMS} * (x @ w)) * g"),
    # wrong axes
    Case("sum_wrong_axis", "x: f32[N, N]", "sum(x, axis=0)", "sum(x, axis=1)"),
    Case("mean_wrong_axis", "x: f32[N, N]", "mean(x, axis=0)", "mean(x, axis=1)"),
    Case("max_wrong_axis", "x: f32[N, N]", "max(x, axis=0)", "max(x, axis=1)"),
    Case("softmax_wrong_axis", "x: f32[N, N]", "softmax(x, axis=0)", "softmax(x, axis=1)"),
    Case("max_subtraction_wrong_axis", "x: f32[M, N]",
         "exp(x - max(x, axis=0, keepdims=True)) / sum(exp(x - max(x, axis=0, keepdims=True)), "
         "axis=1, keepdims=True)", "exp(x) / sum(exp(x), axis=1, keepdims=True)"),
    Case("max_subtraction_unnormalized", "x: f32[M, N]",
         "exp(x - max(x, axis=1, keepdims=True))", "exp(x)"),
    Case("cumsum_wrong_axis", "x: f32[N, N]", "cumsum(x, axis=0)", "cumsum(x, axis=1)"),
    Case("sum_of_matmul_wrong_operand", "x: f32[M, K], w: f32[K, K]", "sum(x @ w, axis=1)",
         "x @ sum(w, axis=0)"),
    # off by one
    Case("cumsum_exclusive_vs_inclusive", "x: f32[N]", "cumsum(x)", "cumsum(x) - x"),
    Case("sum_drops_last", "x: f32[N + 1]", "sum(x[0:N])", "sum(x[0:N + 1])"),
    Case("sum_drops_first", "x: f32[N + 1]", "sum(x[1:N + 1])", "sum(x[0:N + 1])"),
    Case("tiles_miss_remainder", "x: f32[4*T + R]", "sum(x)",
         "sum(sum(reshape(x[0:4*T], (T, 4)), axis=1))"),
    Case("range_split_overlap", "x: f32[A + B]", "sum(x)",
         "sum(x[0:A]) + sum(x[A - 1:A + B])", ()),
    Case("blocked_cumsum_inclusive_carry", "x: f32[4*T]", BLOCKED_CUMSUM_OFF, "cumsum(x)"),
    Case("slice_shifted", "x: f32[N + 1]", "x[1:N + 1]", "x[0:N]"),
    Case("cumsum_difference_shifted", "x: f32[N + 1]",
         "cumsum(x)[1:N + 1] - cumsum(x)[0:N]", "x[0:N]"),
    # triangular sums with the wrong weights
    Case("sum_of_cumsum_count_off_by_one", "x: f32[N]", "sum(cumsum(x, axis=0), axis=0)",
         f"sum(x * (N - {IOTA_N} + 1.0))"),
    Case("sum_of_cumsum_wrong_direction", "x: f32[N]", "sum(cumsum(x, axis=0), axis=0)",
         f"sum(x * ({IOTA_N} + 1.0))"),
    Case("sum_of_suffix_sums_as_prefix_weights", "x: f32[N]", "sum(sum(x) - cumsum(x) + x)",
         f"sum(x * (N - {IOTA_N}))"),
    # transcendental functions are not linear
    Case("exp_through_sum", "x: f32[N]", "exp(sum(x))", "sum(exp(x))"),
    Case("exp_through_add", "x: f32[N], y: f32[N]", "exp(x + y)", "exp(x) + exp(y)"),
    Case("log_through_mul", "x: f32[N], y: f32[N]", "log(x * y)", "log(x) * log(y)"),
    Case("rsqrt_through_mean", "x: f32[M, N]", "rsqrt(mean(x * x, axis=1))",
         "mean(rsqrt(x * x), axis=1)"),
    Case("square_of_sum", "x: f32[N]", "square(sum(x))", "sum(square(x))"),
    Case("max_through_sum", "x: f32[M, N], y: f32[M, N]", "max(x + y, axis=1)",
         "max(x, axis=1) + max(y, axis=1)"),
    Case("relu_through_sum", "x: f32[N]", "relu(sum(x))", "sum(relu(x))"),
    # transposes with swapped index maps
    Case("transpose_swapped_perm", "x: f32[N, N, N]", "transpose(x, (1, 0, 2))",
         "transpose(x, (0, 2, 1))"),
    Case("transpose_not_identity", "x: f32[N, N]", "x.T", "x"),
    Case("matmul_transpose_wrong_order", "a: f32[N, N], b: f32[N, N]", "(a @ b).T",
         "a.T @ b.T"),
    Case("matmul_not_commutative", "a: f32[N, N], b: f32[N, N]", "a @ b", "b @ a"),
    Case("transpose_3d_wrong_inverse", "x: f32[N, N, N]",
         "transpose(transpose(x, (1, 2, 0)), (1, 2, 0))", "x"),
    # identities only for special shapes
    Case("reshape_is_not_transpose", "x: f32[M, K]", "reshape(x, (K, M))", "x.T"),
    Case("mean_is_first_column_only_if_n1", "x: f32[M, N]", "mean(x, axis=1)",
         "reshape(x[0:M, 0:1], (M,))"),
    Case("sum_is_not_max", "x: f32[M, N]", "sum(x, axis=1)", "max(x, axis=1)"),
    Case("mean_is_not_sum", "x: f32[M, N]", "mean(x, axis=1)", "sum(x, axis=1)"),
    Case("square_matmul_not_symmetric", "a: f32[N, N]", "a @ a.T", "a.T @ a"),
    Case("reshape_square_not_transpose", "x: f32[N, N]", "reshape(x, (N, N))", "x.T"),
    # broadcast and concat mistakes
    Case("broadcast_wrong_axis", "x: f32[N, N], b: f32[N]", "x + b",
         "x + reshape(b, (N, 1))"),
    Case("concat_slice_wrong_part", "a: f32[N, K], b: f32[N, K]",
         "concatenate([a, b], axis=0)[0:N]", "b"),
    Case("concat_order", "a: f32[N], b: f32[N]", "concatenate([a, b], axis=0)",
         "concatenate([b, a], axis=0)"),
    Case("concat_of_matmuls_swapped", "x: f32[M, K], w: f32[K, N], v: f32[K, N]",
         "concatenate([x @ v, x @ w], axis=1)", "x @ concatenate([w, v], axis=1)"),
    Case("merged_matmul_slice_wrong_offset", "x: f32[M, K], w: f32[K, N], v: f32[K, P]",
         "(x @ concatenate([w, v], axis=1))[0:M, 1:N + 1]", "x @ w"),
    Case("merged_matmul_slice_wrong_half", "x: f32[M, K], w: f32[K, N], v: f32[K, N]",
         "(x @ concatenate([w, v], axis=1))[0:M, N:2*N]", "x @ w"),
    Case("max_of_concat_swapped", "a: f32[M, N], b: f32[M, N]",
         "max(concatenate([a, b], axis=1), axis=0)",
         "concatenate([max(b, axis=0), max(a, axis=0)], axis=0)"),
    Case("sum_of_broadcast_wrong_count", "b: f32[N], y: f32[M]",
         "sum(broadcast_to(b, (M, N)), axis=0)", "b * N"),
    Case("softmax_normalizer_wrong_axis_after_matmul", "x: f32[N, N], v: f32[N, P]",
         "(exp(x) / sum(exp(x), axis=0, keepdims=True)) @ v",
         "(exp(x) @ v) / reshape(sum(exp(x), axis=0), (N, 1))"),
    Case("different_shapes", "x: f32[M, N]", "sum(x, axis=0)", "sum(x, axis=1)"),
    # a reduction over the wrong axis of a cube (every pair of axes, every reduction)
    *[Case(f"{red}_over_axis_{i}_not_{j}", "x: f32[N, N, N]", f"{red}(x, axis={i})",
           f"{red}(x, axis={j})")
      for red in ("sum", "mean", "max", "min", "prod") for i, j in ((0, 1), (0, 2), (1, 2))],
    *[Case(f"{fn}_along_axis_{i}_not_{j}", "x: f32[N, N, N]", f"{fn}(x, axis={i})",
           f"{fn}(x, axis={j})")
      for fn in ("cumsum", "softmax") for i, j in ((0, 1), (0, 2), (1, 2))],
    # a keepdims statistic taken along the wrong axis, then broadcast back
    *[Case(f"subtract_{red}_along_wrong_axis", "x: f32[N, N]",
           f"x - {red}(x, axis=0, keepdims=True)", f"x - {red}(x, axis=1, keepdims=True)")
      for red in ("sum", "mean", "max", "min")],
    Case("log_softmax_wrong_axis", "x: f32[N, N]", "log_softmax(x, axis=0)",
         "log_softmax(x, axis=1)"),
    # one reduction swapped for another
    *[Case(f"{r1}_is_not_{r2}_along_axis_{ax}", "x: f32[M, N]", f"{r1}(x, axis={ax})",
           f"{r2}(x, axis={ax})")
      for r1, r2 in (("max", "min"), ("min", "mean"), ("prod", "sum"), ("max", "mean"))
      for ax in (0, 1)],
    Case("mean_pooling_is_not_sum_pooling", MM, "mean(x @ w, axis=0)", "sum(x @ w, axis=0)"),
    Case("max_pool_tiles_is_not_min_pool", "x: f32[4*T]", "max(reshape(x, (T, 4)), axis=1)",
         "min(reshape(x, (T, 4)), axis=1)"),
    Case("max_shift_is_not_min_shift", "x: f32[M, N]", "exp(x - max(x, axis=1, keepdims=True))",
         "exp(x - min(x, axis=1, keepdims=True))"),
    Case("mean_of_concat_is_not_mean_of_means", "a: f32[A], b: f32[B]",
         "mean(concatenate([a, b], axis=0), keepdims=True)",
         "(mean(a, keepdims=True) + mean(b, keepdims=True)) * 0.5"),
    # off-by-one windows and strides
    *[Case(f"window_at_{i}_not_{j}", "x: f32[N + 2]", f"x[{i}:N + {i}]", f"x[{j}:N + {j}]")
      for i, j in ((0, 1), (0, 2), (1, 2))],
    *[Case(f"window_sum_at_{i}_not_{j}", "x: f32[N + 2]", f"sum(x[{i}:N + {i}])",
           f"sum(x[{j}:N + {j}])")
      for i, j in ((0, 1), (0, 2), (1, 2))],
    Case("rows_shifted_by_one", "x: f32[M + 1, N]", "x[1:M + 1, :]", "x[0:M, :]"),
    Case("columns_shifted_by_one", "x: f32[M, N + 1]", "x[:, 1:N + 1]", "x[:, 0:N]"),
    Case("even_is_not_odd", "x: f32[2*N]", "x[0:2*N:2]", "x[1:2*N:2]"),
    Case("strided_is_not_contiguous", "x: f32[2*N]", "x[0:2*N:2]", "x[0:N]"),
    Case("halves_skip_an_element", "x: f32[A + B + 1]",
         "concatenate([x[0:A], x[A + 1:A + B + 1]], axis=0)", "x[0:A + B]"),
    Case("cumsum_of_shifted_window", "x: f32[N + 1]", "cumsum(x[1:N + 1])", "cumsum(x[0:N])"),
    Case("tile_sums_start_one_late", "x: f32[4*T + 1]",
         "sum(reshape(x[1:4*T + 1], (T, 4)), axis=1)",
         "sum(reshape(x[0:4*T], (T, 4)), axis=1)"),
    Case("remainder_tile_off_by_one", "x: f32[4*T + R + 1]", "sum(x[0:4*T + R])",
         "sum(sum(reshape(x[0:4*T], (T, 4)), axis=1)) + sum(x[4*T + 1:4*T + R + 1])"),
    Case("split_matmul_overlaps", "x: f32[M, A + B], w: f32[A + B, N]", "x @ w",
         "x[:, 0:A] @ w[0:A] + x[:, A - 1:A + B - 1] @ w[A:A + B]"),
    # masks: thresholds and causal masks with the wrong comparison
    *[Case(f"mask_{n1}_is_not_{n2}", "x: f32[N]", f"where({IOTA_N} {o1} 2.0, x, 0.0)",
           f"where({IOTA_N} {o2} 2.0, x, 0.0)")
      for (n1, o1), (n2, o2) in ((("lt", "<"), ("le", "<=")), (("lt", "<"), ("gt", ">")),
                                 (("le", "<="), ("ge", ">=")), (("gt", ">"), ("ge", ">=")))],
    *[Case(f"causal_mask_{n1}_is_not_{n2}", "x: f32[N, N]",
           f"where({COL} {o1} {ROW}, x, 0.0)", f"where({COL} {o2} {ROW}, x, 0.0)")
      for (n1, o1), (n2, o2) in ((("le", "<="), ("lt", "<")), (("le", "<="), ("ge", ">=")),
                                 (("lt", "<"), ("gt", ">")))],
    Case("causal_softmax_masks_the_diagonal", "x: f32[N, N]",
         f"softmax(where({COL} <= {ROW}, x, -30.0), axis=-1)",
         f"softmax(where({COL} < {ROW}, x, -30.0), axis=-1)"),
    Case("causal_attention_is_not_full_attention", "q: f32[N, D], k: f32[N, D], v: f32[N, D]",
         "attention(q, k, v, scale=0.5, causal=True)", "attention(q, k, v, scale=0.5)"),
    # transposed operands (square, so only the values can tell)
    Case("square_weight_transposed", SQ, "x @ w.T", "x @ w"),
    Case("square_input_transposed", SQ, "x.T @ w", "x @ w"),
    Case("transpose_moved_to_other_operand", SQ, "x @ w.T", "x.T @ w"),
    Case("transposed_product_without_transposes", SQ, "(x @ w).T", "w @ x"),
    Case("transposed_product_reversed_transposes", SQ, "x.T @ w", "w.T @ x"),
    Case("batched_transpose_of_batch_dims", "a: f32[N, N, N], b: f32[N, N, N]",
         "transpose(a, (1, 0, 2)) @ b", "a @ b"),
    Case("batched_transpose_of_last_dims", "a: f32[B, N, N], b: f32[B, N, N]",
         "transpose(a, (0, 2, 1)) @ b", "a @ b"),
    Case("keys_not_transposed", "q: f32[N, N], k: f32[N, N]", "q @ k.T", "q @ k"),
    Case("square_matmul_is_not_elementwise", SQ, "x @ w", "x * w"),
    # dtype changes of the result (the values agree; the dtypes do not)
    *[Case(f"matmul_result_cast_to_{dt}", MM, f"astype(x @ w, {dt})", "x @ w")
      for dt in ("i32", "bf16", "f16")],
    Case("mask_is_not_its_values", "x: f32[N]", "x != 0.0", "x"),
    Case("comparison_is_not_select", XY, "x > y", "where(x > y, 1.0, 0.0)"),
    Case("sum_in_i32", "x: f32[M, N]", "astype(sum(x, axis=1), i32)", "sum(x, axis=1)"),
    Case("relu_result_in_bf16", "x: f32[N]", "astype(relu(x), bf16)", "relu(x)"),
    # identities that hold only when a dim is 1
    Case("column_sum_is_first_row_only_if_m1", "x: f32[M, N]",
         "sum(x, axis=0, keepdims=True)", "x[0:1, :]"),
    Case("row_sum_is_first_column_only_if_n1", "x: f32[M, N]", "sum(x, axis=1)",
         "reshape(x[:, 0:1], (M,))"),
    Case("cumsum_is_identity_only_if_n1", "x: f32[M, N]", "cumsum(x, axis=1)", "x"),
    Case("softmax_is_one_only_if_n1", "x: f32[M, N]", "softmax(x, axis=-1)",
         "ones((M, N), f32)"),
    Case("max_is_sum_only_if_n1", "x: f32[M, N]", "max(x, axis=1)", "sum(x, axis=1)"),
    Case("matmul_is_outer_product_only_if_k1", "a: f32[M, K], b: f32[K, N]", "a @ b",
         "reshape(sum(a, axis=1), (M, 1)) * sum(b, axis=0)"),
    Case("transpose_is_reshape_only_for_a_vector", "x: f32[N, M]", "x.T", "reshape(x, (M, N))"),
    # inclusive and exclusive scans, prefix and suffix
    *[Case(f"exclusive_scan_along_axis_{ax}", "x: f32[M, N]", f"cumsum(x, axis={ax})",
           f"cumsum(x, axis={ax}) - x")
      for ax in (0, 1)],
    Case("suffix_scan_is_not_prefix_scan", "x: f32[N]", "sum(x) - cumsum(x)",
         "cumsum(x) - x"),
    Case("exclusive_scan_via_concat_is_not_inclusive", "x: f32[N + 1]", "cumsum(x)",
         "concatenate([zeros((1,), f32), cumsum(x[0:N])], axis=0)"),
    Case("cumsum_of_concat_tail_misses_carry", AB,
         "cumsum(concatenate([a, b], axis=0))[A:A + B]", "cumsum(b)"),
    Case("cumsum_of_sum_is_not_cumsum_plus_term", XY, "cumsum(x + y)", "cumsum(x) + y"),
    Case("cumsum_of_transpose_wrong_axis", "x: f32[N, N]", "cumsum(x.T, axis=0)",
         "cumsum(x, axis=0).T"),
    Case("scan_last_is_not_sum_of_head", "x: f32[N + 1]", "cumsum(x)[N:N + 1]",
         "sum(x[0:N], keepdims=True)"),
    # concat order and placement
    Case("row_concat_order", "a: f32[N, K], b: f32[N, K]", "concatenate([a, b], axis=0)",
         "concatenate([b, a], axis=0)"),
    Case("column_concat_order", "a: f32[M, N], b: f32[M, N]", "concatenate([a, b], axis=1)",
         "concatenate([b, a], axis=1)"),
    Case("halves_rotated", "x: f32[A + B]", "concatenate([x[A:A + B], x[0:A]], axis=0)", "x"),
    Case("stacked_rows_matmul_swapped", "a: f32[N, K], b: f32[N, K], w: f32[K, P]",
         "concatenate([a, b], axis=0) @ w", "concatenate([b @ w, a @ w], axis=0)"),
    Case("exp_of_concat_swapped", "a: f32[N], b: f32[N]", "exp(concatenate([a, b], axis=0))",
         "concatenate([exp(b), exp(a)], axis=0)"),
    Case("transpose_of_concat_swapped", "a: f32[N, N], b: f32[N, N]",
         "concatenate([a, b], axis=0).T", "concatenate([b.T, a.T], axis=1)"),
    # eps misplaced (a large eps, so that the difference is visible in floating point)
    Case("eps_outside_rsqrt", "x: f32[M, N]", "rsqrt(mean(x * x, axis=-1) + 0.1)",
         "rsqrt(mean(x * x, axis=-1)) + 0.1"),
    Case("eps_added_to_sum_not_mean", "x: f32[M, N]", "rsqrt(mean(x * x, axis=-1) + 0.1)",
         "rsqrt(sum(x * x, axis=-1) + 0.1)"),
    Case("eps_squared", "x: f32[M, N]", "rsqrt(mean(x * x, axis=-1) + 0.5)",
         "rsqrt(mean(x * x, axis=-1) + 0.25)"),
    Case("sqrt_instead_of_rsqrt", "x: f32[M, N]", "x * sqrt(mean(x * x, axis=-1, keepdims=True) "
         "+ 0.1)", "x * rsqrt(mean(x * x, axis=-1, keepdims=True) + 0.1)"),
    Case("eps_added_to_std", "x: f32[M, N]",
         f"{CENTERED} / (sqrt(mean({CENTERED} ** 2, axis=-1, keepdims=True)) + 0.5)",
         f"{CENTERED} * rsqrt(mean({CENTERED} ** 2, axis=-1, keepdims=True) + 0.5)"),
    Case("eps_added_after_gain", "x: f32[M, N], g: f32[N]", "rmsnorm(x, g, eps=0.1)",
         f"x * {RMS} * g + 0.1"),
    # layernorm and rmsnorm variants
    Case("layernorm_without_centering", "x: f32[M, N], g: f32[N], b: f32[N]",
         "layernorm(x, g, b, eps=0.1)",
         "x * rsqrt(mean(x * x, axis=-1, keepdims=True) + 0.1) * g + b"),
    Case("layernorm_is_not_rmsnorm_plus_bias", "x: f32[M, N], g: f32[N], b: f32[N]",
         "layernorm(x, g, b, eps=0.1)", "rmsnorm(x, g, eps=0.1) + b"),
    Case("rmsnorm_gain_on_rows", "x: f32[N, N], g: f32[N]", "rmsnorm(x, g, eps=0.1)",
         "x * rsqrt(mean(x * x, axis=-1, keepdims=True) + 0.1) * reshape(g, (N, 1))"),
    Case("rmsnorm_statistic_over_rows", "x: f32[N, N], g: f32[N]", "rmsnorm(x, g, eps=0.1)",
         "x * rsqrt(mean(x * x, axis=0, keepdims=True) + 0.1) * g"),
    Case("rmsnorm_sum_instead_of_mean", "x: f32[M, N], g: f32[N]", "rmsnorm(x, g, eps=0.1)",
         "x * rsqrt(sum(x * x, axis=-1, keepdims=True) + 0.1) * g"),
    Case("layernorm_bias_before_gain", "x: f32[M, N], g: f32[N], b: f32[N]",
         "layernorm(x, g, b, eps=0.1)",
         f"({CENTERED} * rsqrt(mean({CENTERED} ** 2, axis=-1, keepdims=True) + 0.1) + b) * g"),
    Case("variance_sign_flipped", "x: f32[M, N]",
         "rsqrt(mean(x * x, axis=1) - mean(x, axis=1) * mean(x, axis=1) + 1.0)",
         "rsqrt(mean(x, axis=1) * mean(x, axis=1) - mean(x * x, axis=1) + 1.0)"),
    Case("rmsnorm_uses_abs_mean", "x: f32[M, N], g: f32[N]", "rmsnorm(x, g, eps=0.1)",
         "x * rsqrt(mean(abs(x), axis=-1, keepdims=True) + 0.1) * g"),
    # softmax variants
    Case("softmax_denominator_wrong_axis", "x: f32[N, N]", "softmax(x, axis=1)",
         "exp(x) / sum(exp(x), axis=0, keepdims=True)"),
    Case("softmax_unnormalized", "x: f32[M, N]", "softmax(x, axis=-1)", "exp(x)"),
    Case("softmax_normalized_by_max", "x: f32[M, N]", "softmax(x, axis=-1)",
         "exp(x) / max(exp(x), axis=-1, keepdims=True)"),
    Case("softmax_temperature_dropped", "x: f32[M, N]", "softmax(x * 2.0, axis=-1)",
         "softmax(x, axis=-1)"),
    Case("softmax_of_transpose_same_axis", "x: f32[N, N]", "softmax(x.T, axis=1)",
         "softmax(x, axis=1).T"),
    Case("softmax_is_not_sigmoid", "x: f32[M, N]", "softmax(x, axis=-1)", "sigmoid(x)"),
    # attention with the scale, the mask or the operands misplaced
    Case("attention_scale_after_values", QKV, "softmax((q @ k.T) * 0.5, axis=-1) @ v",
         "(softmax(q @ k.T, axis=-1) @ v) * 0.5"),
    Case("attention_scale_on_values", QKV, "softmax((q @ k.T) * 0.5, axis=-1) @ v",
         "softmax(q @ k.T, axis=-1) @ (v * 0.5)"),
    Case("attention_scale_after_softmax", QKV, "softmax((q @ k.T) * 0.5, axis=-1) @ v",
         "(softmax(q @ k.T, axis=-1) * 0.5) @ v"),
    Case("attention_scale_squared", QKV, "attention(q, k, v, scale=0.5)",
         "softmax((q * 0.5) @ (k * 0.5).T, axis=-1) @ v"),
    Case("attention_softmax_over_queries", "q: f32[N, D], k: f32[N, D], v: f32[N, D]",
         "softmax(q @ k.T, axis=-1) @ v", "softmax(q @ k.T, axis=0) @ v"),
    Case("attention_keys_and_values_swapped", "q: f32[M, D], k: f32[N, D], v: f32[N, D]",
         "attention(q, k, v, scale=0.5)", "attention(q, v, k, scale=0.5)"),
    Case("attention_default_scale_is_not_one", "q: f32[M, D], k: f32[N, D], v: f32[N, D]",
         "attention(q, k, v)", "attention(q, k, v, scale=1.0)"),
    # activation functions mixed up
    *[Case(f"{f}_is_not_{g}", "x: f32[N]", f"{f}(x)", f"{g}(x)")
      for f, g in (("silu", "gelu"), ("gelu", "gelu_tanh"), ("silu", "sigmoid"),
                   ("relu", "abs"), ("tanh", "sigmoid"), ("gelu", "relu"), ("relu", "silu"))],
    Case("sigmoid_sign_flipped", "x: f32[N]", "silu(x)", "x * sigmoid(-x)"),
    Case("gelu_is_not_sigmoid_approximation", "x: f32[N]", "gelu(x)", "x * sigmoid(x)"),
    Case("swiglu_gate_on_wrong_branch", "x: f32[M, K], w1: f32[K, N], w2: f32[K, N]",
         "silu(x @ w1) * (x @ w2)", "(x @ w1) * silu(x @ w2)"),
    Case("swiglu_gate_on_product", "x: f32[M, K], w1: f32[K, N], w2: f32[K, N]",
         "silu(x @ w1) * (x @ w2)", "silu((x @ w1) * (x @ w2))"),
    # reshape orders
    Case("tiles_row_major_not_column_major", "x: f32[4*T]", "reshape(x, (T, 4))",
         "reshape(x, (4, T)).T"),
    Case("flatten_of_transpose", "x: f32[N, N]", "reshape(x.T, (N*N,))", "reshape(x, (N*N,))"),
    Case("merge_of_permuted_dims", "x: f32[M, N, N]", "reshape(x, (M, N*N))",
         "reshape(transpose(x, (0, 2, 1)), (M, N*N))"),
    Case("strided_tiles_are_not_contiguous_tiles", "x: f32[4*T]",
         "sum(reshape(x, (T, 4)), axis=0)", "sum(reshape(x, (4, T)), axis=1)"),
    Case("split_rows_wrong_order", "x: f32[M, 4*T]", "reshape(x, (M, T, 4))",
         "transpose(reshape(x, (M, 4, T)), (0, 2, 1))"),
    # broadcast along the wrong dim
    Case("scale_columns_not_rows", "x: f32[N, N], s: f32[N]", "x * reshape(s, (N, 1))",
         "x * reshape(s, (1, N))"),
    Case("matmul_bias_on_rows", SQ + ", b: f32[N]", "x @ w + b", "x @ w + reshape(b, (N, 1))"),
    Case("broadcast_to_wrong_dim", "b: f32[N]", "broadcast_to(b, (N, N))",
         "broadcast_to(reshape(b, (N, 1)), (N, N))"),
    Case("bias_inside_matmul", MM + ", b: f32[N]", "x @ w + b", "x @ (w + b)"),
    Case("row_scale_applied_to_weight", "x: f32[N, N], w: f32[N, N], s: f32[N, 1]",
         "(x * s) @ w", "x @ (w * s)"),
    Case("mean_broadcast_over_wrong_dim", "x: f32[N, N]",
         "x - mean(x, axis=1, keepdims=True)", "x - mean(x, axis=1)"),
    # constants changed
    *[Case(f"scale_{name}_not_moved_exactly", MM, f"(x * {c1}) @ w", f"(x @ w) * {c2}")
      for name, c1, c2 in (("inverted", "0.5", "2.0"), ("negated", "1.5", "-1.5"),
                           ("off", "2.0", "3.0"))],
    Case("gelu_tanh_constant_changed", "x: f32[N]", "gelu_tanh(x)",
         "0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.44715 * x * x * x)))"),
    Case("mean_divides_by_n_minus_one", "x: f32[M, N + 1]", "mean(x, axis=1)",
         "sum(x, axis=1) / N"),
    # distributivity and linearity misapplied
    Case("multiply_distributes_to_one_term", XYZ, "x * (y + z)", "x * y + z"),
    Case("square_of_sum_without_cross_term", XY, "square(x + y)", "x * x + y * y"),
    Case("elementwise_square_through_matmul", MM, "(x @ w) * (x @ w)", "(x * x) @ (w * w)"),
    Case("product_of_sums_through_matmul", MM + ", y: f32[M, K], v: f32[K, N]",
         "(x + y) @ (w + v)", "x @ w + y @ v"),
    Case("exp_of_double", "x: f32[N]", "exp(2.0 * x)", "2.0 * exp(x)"),
    Case("division_distributes_to_one_term", XYZ, "(x + y) / z", "x / z + y"),
    Case("sum_of_products_is_not_product_of_sums", "x: f32[M, N], y: f32[M, N]",
         "sum(x * y, axis=1)", "sum(x, axis=1) * sum(y, axis=1)"),
    # selects and comparisons
    Case("where_branches_swapped", XY, "where(x > 0.0, x, y)", "where(x > 0.0, y, x)"),
    Case("where_greater_is_not_minimum", XY, "where(x > y, x, y)", "minimum(x, y)"),
    Case("maximum_is_not_minimum", XY, "maximum(x, y)", "minimum(x, y)"),
    Case("relu_threshold_one", "x: f32[N]", "relu(x)", "maximum(x, 1.0)"),
    Case("where_condition_reversed", "x: f32[N]", "where(x > 0.0, x, 0.0)",
         "where(x < 0.0, x, 0.0)"),
    Case("clip_bounds_swapped", "x: f32[N]", "minimum(maximum(x, -1.0), 1.0)",
         "maximum(minimum(x, -1.0), 1.0)"),
    Case("strict_is_not_weak_comparison", XY, "x > y", "x >= y"),
    Case("abs_is_not_relu_twice", "x: f32[N]", "abs(x)", "relu(x) * 2.0"),
    # matmul and reduction mixups
    Case("sum_of_matmul_is_not_product_of_sums", MM, "sum(x @ w)", "sum(x) * sum(w)"),
    Case("tiled_matmul_wrong_tile_order", "x: f32[M, 4*T], w: f32[4*T, N]",
         "sum(matmul(transpose(reshape(x, (M, 4, T)), (2, 0, 1)), reshape(w, (T, 4, N))), "
         "axis=0)", "x @ w"),
    Case("tiled_matmul_misses_remainder", "x: f32[M, 4*T + R], w: f32[4*T + R, N]", "x @ w",
         "x[:, 0:4*T] @ w[0:4*T]"),
    Case("matmul_drops_last_contraction", "x: f32[M, K + 1], w: f32[K + 1, N]", "x @ w",
         "x[:, 0:K] @ w[0:K]"),
    Case("matvec_with_row_sum", "x: f32[N, N], v: f32[N]", "x @ v", "sum(x, axis=0) * v"),
    # a misplaced tiny eps (confirmed in exact arithmetic); tile sums over strided tiles
    Case("eps_outside_rsqrt_tiny", "x: f32[M, N]", "rsqrt(mean(x * x, axis=-1) + 1e-6)",
         "rsqrt(mean(x * x, axis=-1)) + 1e-6"),
    Case("blocked_cumsum_carry_from_wrong_tiles", "x: f32[4*T]",
         BLOCKED_CUMSUM_TRANSPOSED, "cumsum(x)"),
]


@dataclass(frozen=True)
class Pending:
    """A case the current verifier does not yet decide as it should (`expected`), and why.

    The benchmark reports these apart and no test asserts on them; when the verifier learns to
    decide one, move its case into IDENTITIES or NON_IDENTITIES.
    """

    case: Case
    expected: str
    why: str


PENDING: list[Pending] = [
    # a max over a flattened index of three dims: split once into rows of the flattened first
    # two dims, whose index is flattened again inside the inner max; no exchange rule orders a
    # max of maxes so that the split reaches it
    Pending(Case("max_of_flattened_3d", "x: f32[M, N, P]", "max(reshape(x, (M*N*P,)))",
                 "max(max(max(x, axis=2), axis=1))"),
            "proved", "unknown: the inner index of a max over a flattened index of three dims "
                      "is not split again"),
]
