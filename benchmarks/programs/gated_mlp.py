# gated_mlp: silu(x @ w1) * (x @ w2)
def gated_mlp(x: bf16[M, K], w1: bf16[K, N], w2: bf16[K, N]):
    return silu(x @ w1) * (x @ w2)
