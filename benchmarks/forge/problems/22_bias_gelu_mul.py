"""Elementwise chain: y = gelu_tanh(x + bias) * g, a bias, a tanh-approximated GELU and a gate."""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 8192
dtype = torch.bfloat16


class Model(nn.Module):
    """Adds a learned bias over the last dim, applies GELU (tanh form), multiplies by a gate."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """gelu(x + bias, approximate="tanh") * gate."""
        return F.gelu(x + self.bias, approximate="tanh") * gate


def get_inputs() -> list[torch.Tensor]:
    """x and the gate, both [batch_size, dim]."""
    return [torch.randn(batch_size, dim, dtype=dtype), torch.randn(batch_size, dim, dtype=dtype)]


def get_init_inputs() -> list[int]:
    """The size of the bias."""
    return [dim]
