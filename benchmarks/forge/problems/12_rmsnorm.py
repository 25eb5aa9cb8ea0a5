"""RMSNorm over the last dim: y = x / sqrt(mean(x^2) + eps) * weight, per row (LLaMA's norm)."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4096
eps = 1e-6
dtype = torch.bfloat16


class Model(nn.Module):
    """Root-mean-square normalization of each row, scaled by a learned weight."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        # a trained layer's scale (not all ones: a kernel that ignored it would show)
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x * rsqrt(mean(x^2, -1) + eps) * weight."""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def get_inputs() -> list[torch.Tensor]:
    """Rows [batch_size, dim]."""
    return [torch.randn(batch_size, dim, dtype=dtype)]


def get_init_inputs() -> list[int | float]:
    """The normalized size and epsilon."""
    return [dim, eps]
