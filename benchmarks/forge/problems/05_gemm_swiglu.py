"""Two GEMMs + SwiGLU: y = silu(x @ Wg^T) * (x @ Wu^T), the gated front half of a LLaMA MLP."""

import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 2048
hidden_size = 2048
intermediate_size = 5632
dtype = torch.bfloat16


class Model(nn.Module):
    """The gate and up projections of a gated MLP, combined by SiLU(gate) * up."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """silu(x @ Wg^T) * (x @ Wu^T)."""
        return F.silu(self.gate_proj(x)) * self.up_proj(x)


def get_inputs() -> list[torch.Tensor]:
    """Token activations [num_tokens, hidden_size]."""
    return [torch.randn(num_tokens, hidden_size, dtype=dtype)]


def get_init_inputs() -> list[int]:
    """The MLP's sizes."""
    return [hidden_size, intermediate_size]
