"""Batched GEMM + scaling: y[b] = alpha * (a[b] @ c[b]) for each of a batch of matrices."""

import torch
import torch.nn as nn

batch_size = 16
m = 1024
k = 1024
n = 1024
alpha = 0.125
dtype = torch.bfloat16


class Model(nn.Module):
    """A batched matrix product scaled by a constant."""

    def __init__(self, alpha: float) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """alpha * bmm(a, c)."""
        return torch.bmm(a, c) * self.alpha


def get_inputs() -> list[torch.Tensor]:
    """a [batch_size, m, k] and c [batch_size, k, n]."""
    return [torch.randn(batch_size, m, k, dtype=dtype), torch.randn(batch_size, k, n, dtype=dtype)]


def get_init_inputs() -> list[float]:
    """The scale."""
    return [alpha]
