"""GEMM + row max: y = max over j of (x @ W^T + b)[:, j], keeping the reduced dim."""

import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
dtype = torch.bfloat16


class Model(nn.Module):
    """A linear layer followed by the maximum of each row."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """max(x @ W^T + b, dim=1, keepdim=True): [batch_size, 1]."""
        return torch.max(self.linear(x), dim=1, keepdim=True).values


def get_inputs() -> list[torch.Tensor]:
    """A batch of activations [batch_size, in_features]."""
    return [torch.randn(batch_size, in_features, dtype=dtype)]


def get_init_inputs() -> list[int]:
    """The layer's sizes."""
    return [in_features, out_features]
