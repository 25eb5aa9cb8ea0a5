# layernorm: (x - mean(x, -1)) * rsqrt(var(x, -1) + 1e-5) * g + b
def layernorm(x: bf16[M, N], g: bf16[N], b: bf16[N]):
    mu = mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = mean(xc * xc, axis=-1, keepdims=True)
    return xc * rsqrt(var + 1e-5) * g + b
