# silu_matmul: silu(x) @ w
def silu_matmul(x: bf16[M, K], w: bf16[K, N]):
    return silu(x) @ w
