"""Elementwise chain: y = tanh(x * scale) + residual, a soft-capping step on a residual stream."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 8192
scale = 0.5
dtype = torch.float32


class Model(nn.Module):
    """Scales, squashes with tanh, and adds the residual."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """tanh(x * scale) + residual."""
        return torch.tanh(x * self.scale) + residual


def get_inputs() -> list[torch.Tensor]:
    """x and the residual, both [batch_size, dim]."""
    return [torch.randn(batch_size, dim, dtype=dtype) * 3.0,
            torch.randn(batch_size, dim, dtype=dtype)]


def get_init_inputs() -> list[float]:
    """The scale."""
    return [scale]
