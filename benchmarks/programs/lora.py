# lora: x @ w + (x @ a) @ b, a low-rank (rank R) update beside a dense weight
def lora(x: bf16[M, K], w: bf16[K, N], a: bf16[K, R], b: bf16[R, N]):
    return x @ w + (x @ a) @ b
