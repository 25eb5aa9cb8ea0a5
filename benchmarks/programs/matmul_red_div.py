# matmul_red_div: (x / sum(y, -1)) @ w, each row of x divided by the row sum of y
def matmul_red_div(x: bf16[M, K], y: bf16[M, K], w: bf16[K, N]):
    return (x / sum(y, axis=-1, keepdims=True)) @ w
