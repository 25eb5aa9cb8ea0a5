"""Causal attention: y = softmax(q @ k^T / sqrt(d) + causal mask) @ v per batch and head."""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
num_heads = 16
seq_len = 2048
head_dim = 64
dtype = torch.bfloat16


class Model(nn.Module):
    """Causal multi-head attention (a decoder's self-attention) on projected q, k, v."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """scaled_dot_product_attention(q, k, v, is_causal=True)."""
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs() -> list[torch.Tensor]:
    """q, k, v, each [batch_size, num_heads, seq_len, head_dim]."""
    shape = (batch_size, num_heads, seq_len, head_dim)
    return [torch.randn(shape, dtype=dtype) for _ in range(3)]


def get_init_inputs() -> list[int]:
    """No parameters."""
    return []
