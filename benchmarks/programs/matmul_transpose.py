# matmul_transpose: (x @ w).T
def matmul_transpose(x: bf16[M, K], w: bf16[K, N]):
    return (x @ w).T
