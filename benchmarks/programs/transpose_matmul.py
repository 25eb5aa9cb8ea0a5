# transpose_matmul: x.T @ w (x stored K-major)
def transpose_matmul(x: bf16[K, M], w: bf16[K, N]):
    return x.T @ w
