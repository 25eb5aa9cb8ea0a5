"""GEMM + Swish + scaling: y = s * (z * sigmoid(z)) with z = x @ W^T + b."""

import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
scaling_factor = 2.0
dtype = torch.bfloat16


class Model(nn.Module):
    """A linear layer, a Swish (SiLU) and a multiplication by a constant."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """scaling_factor * swish(x @ W^T + b)."""
        z = self.linear(x)
        return z * torch.sigmoid(z) * self.scaling_factor


def get_inputs() -> list[torch.Tensor]:
    """A batch of activations [batch_size, in_features]."""
    return [torch.randn(batch_size, in_features, dtype=dtype)]


def get_init_inputs() -> list[int | float]:
    """The layer's sizes and the scaling factor."""
    return [in_features, out_features, scaling_factor]
