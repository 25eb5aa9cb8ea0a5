"""Triton kernel for 16_softmax, as a user writes it first: one program per row, three passes over
the row in blocks of 1024 (the maximum, the sum of exponentials, the output), 4 warps; no online
max-and-sum, so the row is read three times."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    """y[row] = exp(x[row] - max) / sum(exp(x[row] - max)), one row a program."""
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_xm
    running = tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + offs, mask=offs < N, other=float("-inf")).to(tl.float32)
        running = tl.maximum(running, x)
    m = tl.max(running, axis=0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + offs, mask=offs < N, other=float("-inf")).to(tl.float32)
        acc += tl.exp(x - m)
    total = tl.sum(acc, axis=0)
    for n0 in range(0, N, BLOCK_N):
        offs = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + offs, mask=offs < N, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + row * stride_ym + offs, (tl.exp(x - m) / total).to(y_ptr.dtype.element_ty),
                 mask=offs < N)


class ModelNew(nn.Module):
    """The problem's Model with its forward as one Triton kernel."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """softmax(x, dim=1)."""
        M, N = x.shape
        y = torch.empty_like(x)
        softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK_N=1024, num_warps=4)
        return y
