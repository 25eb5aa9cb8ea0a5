# matmul: x @ w
def matmul(x: bf16[M, K], w: bf16[K, N]):
    return x @ w
