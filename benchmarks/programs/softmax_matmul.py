# softmax_matmul: softmax(x, -1) @ w, the softmax with max subtraction (the composite)
def softmax_matmul(x: bf16[M, K], w: bf16[K, N]):
    return softmax(x, axis=-1) @ w
