"""RMSNorm + GEMM: y = rmsnorm(x) @ W^T, a pre-norm layer feeding a projection."""

import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
eps = 1e-6
dtype = torch.bfloat16


class Model(nn.Module):
    """RMSNorm of each row with a learned weight, then a linear layer without bias."""

    def __init__(self, in_features: int, out_features: int, eps: float) -> None:
        super().__init__()
        # a trained layer's scale (not all ones: a kernel that ignored it would show)
        self.norm_weight = nn.Parameter(1.0 + 0.1 * torch.randn(in_features))
        self.proj = nn.Linear(in_features, out_features, bias=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(x * rsqrt(mean(x^2, -1) + eps) * norm_weight) @ W^T."""
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.norm_weight
        return self.proj(h)


def get_inputs() -> list[torch.Tensor]:
    """A batch of activations [batch_size, in_features]."""
    return [torch.randn(batch_size, in_features, dtype=dtype)]


def get_init_inputs() -> list[int | float]:
    """The layer's sizes and the norm's epsilon."""
    return [in_features, out_features, eps]
