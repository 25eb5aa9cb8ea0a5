"""Softmax over rows: y = exp(x - max) / sum(exp(x - max)), per row."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 8192
dtype = torch.float32


class Model(nn.Module):
    """A softmax over the last dim."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """softmax(x, dim=1)."""
        return torch.softmax(x, dim=1)


def get_inputs() -> list[torch.Tensor]:
    """Logits [batch_size, dim]."""
    return [torch.randn(batch_size, dim, dtype=dtype) * 4.0]


def get_init_inputs() -> list[int]:
    """No parameters."""
    return []
