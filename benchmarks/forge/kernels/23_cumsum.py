"""Triton kernel for 23_cumsum, as a user writes it first: one program per row, walking the row in
blocks of 1024 with `tl.cumsum` in each block and a float32 carry between blocks (the rows are
long and few programs run: one per row), 4 warps."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, N, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    """y[row, j] = sum over t <= j of x[row, t], one row a program."""
    row = tl.program_id(0)
    carry = tl.zeros((1,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_xm + offs, mask=offs < N, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * stride_ym + offs, y.to(y_ptr.dtype.element_ty), mask=offs < N)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    """The problem's Model with its forward as one Triton kernel."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """cumsum(x, dim=1)."""
        M, N = x.shape
        y = torch.empty_like(x)
        cumsum_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK_N=1024, num_warps=4)
        return y
