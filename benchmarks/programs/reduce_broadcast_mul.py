# reduce_broadcast_mul: (x * broadcast(sum(y, -1))) @ w, each row of x scaled by the row sum of y
def reduce_broadcast_mul(x: bf16[M, K], y: bf16[M, K], w: bf16[K, N]):
    row_sum = sum(y, axis=-1, keepdims=True)
    return (x * broadcast_to(row_sum, [M, K])) @ w
