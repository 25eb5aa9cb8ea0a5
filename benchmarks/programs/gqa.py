# gqa: softmax(q k^T / sqrt(D)) v per query head, query head h reading kv head h // G
# (G query heads per kv head), the kv heads repeated by reshape + broadcast
def gqa(q: bf16[B, HKV*G, S, D], k: bf16[B, HKV, L, D], v: bf16[B, HKV, L, D]):
    k_rep = reshape(broadcast_to(reshape(k, [B, HKV, 1, L, D]), [B, HKV, G, L, D]), [B, HKV*G, L, D])
    v_rep = reshape(broadcast_to(reshape(v, [B, HKV, 1, L, D]), [B, HKV, G, L, D]), [B, HKV*G, L, D])
    scores = (q @ transpose(k_rep, (0, 1, 3, 2))) / sqrt(D)
    return softmax(scores, axis=-1) @ v_rep
