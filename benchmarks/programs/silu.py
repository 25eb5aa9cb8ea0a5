# silu: elementwise x * sigmoid(x)
def silu(x: bf16[M, N]):
    return ax.silu(x)
