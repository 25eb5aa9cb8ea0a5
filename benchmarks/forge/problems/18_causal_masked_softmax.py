"""Scaled, causally masked softmax of attention scores: y = softmax(mask(scale * s)) over keys,
where the mask sets key positions after the query's to -inf."""

import torch
import torch.nn as nn

batch_size = 2
num_heads = 16
seq_len = 2048
scale = 0.125
dtype = torch.bfloat16


class Model(nn.Module):
    """The softmax step of causal attention, on precomputed scores."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        """softmax(scale * scores with scores[..., i, j > i] = -inf, dim=-1)."""
        length = scores.shape[-1]
        future = torch.triu(torch.ones(length, length, dtype=torch.bool, device=scores.device),
                            diagonal=1)
        return torch.softmax((scores * self.scale).masked_fill(future, float("-inf")), dim=-1)


def get_inputs() -> list[torch.Tensor]:
    """Scores [batch_size, num_heads, seq_len, seq_len]."""
    return [torch.randn(batch_size, num_heads, seq_len, seq_len, dtype=dtype) * 8.0]


def get_init_inputs() -> list[float]:
    """The scale of the scores."""
    return [scale]
