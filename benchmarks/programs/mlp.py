# mlp: (silu(x @ w1) * (x @ w2)) @ w3, a gated MLP with its down projection
def mlp(x: bf16[M, K], w1: bf16[K, F], w2: bf16[K, F], w3: bf16[F, N]):
    h = silu(x @ w1) * (x @ w2)
    return h @ w3
