# mul: elementwise product z = x * y
def mul(x: bf16[M, N], y: bf16[M, N]):
    return x * y
