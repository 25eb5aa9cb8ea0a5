# linear_attention: q @ (k.T @ v), attention without softmax (keys and values summarized first)
def linear_attention(q: bf16[M, DK], k: bf16[L, DK], v: bf16[L, DV]):
    return q @ (k.T @ v)
