"""Triton kernel for 11_layernorm, as a user writes it first (after the Triton tutorial): one
program per row, three passes over the row in blocks of 1024 (the mean, the variance, then the
normalized output), 4 warps."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, stride_xm, stride_ym,
                     BLOCK_N: tl.constexpr):
    """y[row] = (x[row] - mean) * rsqrt(var + eps) * w + b, one row a program."""
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        acc += tl.load(x_row + offs, mask=offs < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + offs, mask=offs < N, other=0.0).to(tl.float32)
        d = tl.where(offs < N, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """The problem's Model with its forward as one Triton kernel."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """layer_norm(x) over the last dim."""
        M, N = x.shape
        y = torch.empty_like(x)
        layernorm_kernel[(M,)](x, self.norm.weight, self.norm.bias, y, N, self.norm.eps,
                               x.stride(0), y.stride(0), BLOCK_N=1024, num_warps=4)
        return y
