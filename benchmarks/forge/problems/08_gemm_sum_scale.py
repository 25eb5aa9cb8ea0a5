"""GEMM + row sum + scaling: y = s * sum over j of (x @ W^T + b)[:, j].

The sum of a GEMM's columns is a matrix-vector product in disguise:
y = s * (x @ W.sum(0) + b.sum()), `out_features` times less work.
"""

import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
scaling_factor = 0.5
dtype = torch.bfloat16


class Model(nn.Module):
    """A linear layer, the sum of each row, and a multiplication by a constant."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """scaling_factor * sum(x @ W^T + b, dim=1, keepdim=True): [batch_size, 1]."""
        return torch.sum(self.linear(x), dim=1, keepdim=True) * self.scaling_factor


def get_inputs() -> list[torch.Tensor]:
    """A batch of activations [batch_size, in_features]."""
    return [torch.randn(batch_size, in_features, dtype=dtype)]


def get_init_inputs() -> list[int | float]:
    """The layer's sizes and the scaling factor."""
    return [in_features, out_features, scaling_factor]
