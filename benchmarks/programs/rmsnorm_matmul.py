# rmsnorm_matmul: (x * rsqrt(mean(x^2, -1) + 1e-6) * g) @ w
def rmsnorm_matmul(x: bf16[M, K], g: bf16[K], w: bf16[K, N]):
    ms = mean(x * x, axis=-1, keepdims=True)
    y = x * rsqrt(ms + 1e-6) * g
    return y @ w
