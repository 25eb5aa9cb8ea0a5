# softmax: row softmax with max subtraction, exp(x - max_j x) / sum_j exp(x - max_j x)
def softmax(x: bf16[M, N]):
    m = max(x, axis=-1, keepdims=True)
    e = exp(x - m)
    return e / sum(e, axis=-1, keepdims=True)
