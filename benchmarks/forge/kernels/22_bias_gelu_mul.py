"""Triton kernel for 22_bias_gelu_mul, as a user writes it first: one elementwise kernel over the
flattened rows (the bias column found as offset % dim), computing in float32, blocks of 1024,
4 warps; tanh written through `tl.sigmoid` (tanh(t) = 2 sigmoid(2t) - 1)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_mul_kernel(x_ptr, bias_ptr, g_ptr, y_ptr, n_elements, N, BLOCK_SIZE: tl.constexpr):
    """y = gelu_tanh(x + bias[col]) * g over flat contiguous [rows, N] buffers."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = x + b
    t = 0.7978845608028654 * (u + 0.044715 * u * u * u)
    gelu = 0.5 * u * (1.0 + (2.0 * tl.sigmoid(2.0 * t) - 1.0))
    tl.store(y_ptr + offs, (gelu * g).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """The problem's Model with its forward as one Triton kernel."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """gelu(x + bias, approximate="tanh") * gate."""
        x = x.contiguous()
        gate = gate.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        bias_gelu_mul_kernel[(triton.cdiv(n, 1024),)](x, self.bias, gate, y, n, x.shape[-1],
                                                      BLOCK_SIZE=1024, num_warps=4)
        return y
