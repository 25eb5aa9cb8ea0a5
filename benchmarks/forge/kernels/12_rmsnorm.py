"""Triton kernel for 12_rmsnorm, as a user writes it first: one program per row holding the whole
row (a block of next_power_of_2(N)), computing in float32, 4 warps whatever the row's length."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, eps, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    """y[row] = x[row] * rsqrt(mean(x[row]^2) + eps) * w, the whole row in one block."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    mask = offs < N
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride_ym + offs, (x / rms * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """The problem's Model with its forward as one Triton kernel."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x * rsqrt(mean(x^2, -1) + eps) * weight."""
        M, N = x.shape
        y = torch.empty_like(x)
        rmsnorm_kernel[(M,)](x, self.weight, y, N, self.eps, x.stride(0), y.stride(0),
                             BLOCK_N=triton.next_power_of_2(N), num_warps=4)
        return y
