# rmsnorm: x * rsqrt(mean(x^2, -1) + 1e-6) * g
def rmsnorm(x: bf16[M, N], g: bf16[N]):
    ms = mean(x * x, axis=-1, keepdims=True)
    return x * rsqrt(ms + 1e-6) * g
