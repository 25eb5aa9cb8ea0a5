# qknorm_gqa: rmsnorm over D of q (gain g_q) and of k (gain g_k), then gqa:
# softmax(q k^T / sqrt(D)) v with G query heads per kv head
def qknorm_gqa(q: bf16[B, HKV*G, S, D], k: bf16[B, HKV, L, D], v: bf16[B, HKV, L, D], g_q: bf16[D], g_k: bf16[D]):
    qn = rmsnorm(q, g_q)
    kn = rmsnorm(k, g_k)
    k_rep = reshape(broadcast_to(reshape(kn, [B, HKV, 1, L, D]), [B, HKV, G, L, D]), [B, HKV*G, L, D])
    v_rep = reshape(broadcast_to(reshape(v, [B, HKV, 1, L, D]), [B, HKV, G, L, D]), [B, HKV*G, L, D])
    scores = (qn @ transpose(k_rep, (0, 1, 3, 2))) / sqrt(D)
    return softmax(scores, axis=-1) @ v_rep
