"""Grouped-query attention: each group of num_q_heads / num_kv_heads query heads shares one key
and value head; y = softmax(q @ k^T / sqrt(d)) @ v, written out as a model file would."""

import torch
import torch.nn as nn

batch_size = 4
num_q_heads = 32
num_kv_heads = 8
seq_len = 1024
head_dim = 128
dtype = torch.bfloat16


class Model(nn.Module):
    """Non-causal grouped-query attention, the key and value heads repeated to the query's."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """softmax(q @ repeat(k)^T / sqrt(d)) @ repeat(v), query head h reading kv head h // G."""
        group = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
        return torch.softmax(scores, dim=-1) @ v


def get_inputs() -> list[torch.Tensor]:
    """q [batch_size, num_q_heads, seq_len, head_dim]; k, v [batch_size, num_kv_heads, ...]."""
    return [torch.randn(batch_size, num_q_heads, seq_len, head_dim, dtype=dtype),
            torch.randn(batch_size, num_kv_heads, seq_len, head_dim, dtype=dtype),
            torch.randn(batch_size, num_kv_heads, seq_len, head_dim, dtype=dtype)]


def get_init_inputs() -> list[int]:
    """No parameters."""
    return []
