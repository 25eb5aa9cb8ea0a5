"""Triton kernel for 15_l2_normalize, as a user writes it first: one program per row, a pass for
the sum of squares and a pass dividing by the norm, in blocks of 1024, 4 warps."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2_normalize_kernel(x_ptr, y_ptr, N, eps, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    """y[row] = x[row] / max(||x[row]||_2, eps), one row a program."""
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + offs, mask=offs < N, other=0.0).to(tl.float32)
        acc += x * x
    norm = tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + offs, mask=offs < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_ym + offs, (x / norm).to(y_ptr.dtype.element_ty),
                 mask=offs < N)


class ModelNew(nn.Module):
    """The problem's Model with its forward as one Triton kernel."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """F.normalize(x, p=2, dim=1)."""
        M, N = x.shape
        y = torch.empty_like(x)
        l2_normalize_kernel[(M,)](x, y, N, 1e-12, x.stride(0), y.stride(0), BLOCK_N=1024,
                                  num_warps=4)
        return y
