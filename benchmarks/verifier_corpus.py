"""The verifier's corpus: identities it must prove and non-identities it must refute.

Each case is two programs in the NumPy subset (docs/language.md) over the same parameters: a
return expression, or a multi-line body ending in `return`. The tests (tests/test_verifier_*.py)
and the benchmark (benchmarks/verifier.py) both read this list.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.func import FuncOp

from axon.frontend.source import parse_source


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
    # tiling
    Case("sum_tiles", "x: f32[4*T]", "sum(x)", "sum(sum(reshape(x, (T, 4)), axis=1))"),
    Case("sum_tiles_with_remainder", "x: f32[4*T + R]", "sum(x)",
         "sum(sum(reshape(x[0:4*T], (T, 4)), axis=1)) + sum(x[4*T:4*T + R])"),
    Case("sum_range_split", "x: f32[A + B]", "sum(x)", "sum(x[0:A]) + sum(x[A:A + B])"),
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
]

NON_IDENTITIES: list[Case] = [
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
]
