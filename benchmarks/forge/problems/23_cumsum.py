"""Cumulative sum along rows: y[i, j] = sum over t <= j of x[i, t]."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4096
dtype = torch.bfloat16


class Model(nn.Module):
    """An inclusive prefix sum over the last dim."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """cumsum(x, dim=1)."""
        return torch.cumsum(x, dim=1)


def get_inputs() -> list[torch.Tensor]:
    """Rows [batch_size, dim]."""
    return [torch.randn(batch_size, dim, dtype=dtype)]


def get_init_inputs() -> list[int]:
    """No parameters."""
    return []
