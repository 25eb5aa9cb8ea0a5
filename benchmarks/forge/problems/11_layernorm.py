"""LayerNorm over the last dim: y = (x - mean) / sqrt(var + eps) * gamma + beta, per row."""

import torch
import torch.nn as nn

batch_size = 4096
dim = 8192
eps = 1e-5
dtype = torch.float32


class Model(nn.Module):
    """nn.LayerNorm over rows of `dim`, with trained (not unit) affine parameters."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        with torch.no_grad():
            # a trained layer's parameters: a kernel that ignored them would show
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """layer_norm(x) over the last dim."""
        return self.norm(x)


def get_inputs() -> list[torch.Tensor]:
    """Rows [batch_size, dim], off-centre so that the mean matters."""
    return [torch.randn(batch_size, dim, dtype=dtype) * 2.0 + 0.5]


def get_init_inputs() -> list[int | float]:
    """The normalized size and epsilon."""
    return [dim, eps]
