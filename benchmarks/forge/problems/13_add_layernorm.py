"""Residual add + LayerNorm: y = layer_norm(x + residual), a post-norm transformer block's end."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 4096
eps = 1e-5
dtype = torch.bfloat16


class Model(nn.Module):
    """Adds the residual, then nn.LayerNorm over rows of `dim` with trained parameters."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        with torch.no_grad():
            # a trained layer's parameters: a kernel that ignored them would show
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """layer_norm(x + residual) over the last dim."""
        return self.norm(x + residual)


def get_inputs() -> list[torch.Tensor]:
    """The block's output and the residual stream, both [batch_size, dim]."""
    return [torch.randn(batch_size, dim, dtype=dtype),
            torch.randn(batch_size, dim, dtype=dtype) + 1.0]


def get_init_inputs() -> list[int | float]:
    """The normalized size and epsilon."""
    return [dim, eps]
