# ntrans: rmsnorm(x + alpha * (rmsnorm(h, g_h) + x), g_out), the normalized-transformer residual update
def ntrans(x: bf16[M, N], h: bf16[M, N], alpha: bf16[N], g_h: bf16[N], g_out: bf16[N]):
    return rmsnorm(x + alpha * (rmsnorm(h, g_h) + x), g_out)
