# gemm_sum_scale: y[i] = sum_j((x @ w)[i, j] / 2) * s (equal to (x @ rowsum(w)) / 2 * s)
def gemm_sum_scale(x: bf16[M, K], w: bf16[K, N], s: bf16[]):
    return sum((x @ w) / 2, axis=-1) * s
