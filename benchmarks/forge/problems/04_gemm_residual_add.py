"""GEMM + bias + residual add: y = x @ W^T + b + r, an output projection and its skip connection."""

import torch
import torch.nn as nn

batch_size = 4096
in_features = 2048
out_features = 2048
dtype = torch.bfloat16


class Model(nn.Module):
    """A linear layer whose result is added to a residual stream."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """residual + (x @ W^T + b)."""
        return residual + self.proj(x)


def get_inputs() -> list[torch.Tensor]:
    """Activations [batch_size, in_features] and the residual [batch_size, out_features]."""
    return [torch.randn(batch_size, in_features, dtype=dtype),
            torch.randn(batch_size, out_features, dtype=dtype)]


def get_init_inputs() -> list[int]:
    """The layer's sizes."""
    return [in_features, out_features]
