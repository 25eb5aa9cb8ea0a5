# relu_matmul: relu(x) @ w
def relu_matmul(x: bf16[M, K], w: bf16[K, N]):
    return relu(x) @ w
