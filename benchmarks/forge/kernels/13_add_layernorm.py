"""Triton kernel for 13_add_layernorm, as a user writes it first: an elementwise add kernel that
writes x + residual to memory, then a LayerNorm kernel reading it back (one program per row, the
whole row in one block); the add not fused into the norm."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """y = a + b over flat contiguous buffers."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, a + b, mask=mask)


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, stride_xm, stride_ym,
                     BLOCK_N: tl.constexpr):
    """y[row] = layer_norm(x[row]) * w + b, the whole row in one block."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    mask = offs < N
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_ym + offs, (d * rstd * w + b).to(y_ptr.dtype.element_ty),
             mask=mask)


class ModelNew(nn.Module):
    """The problem's Model with its forward as a Triton add and a Triton LayerNorm."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.1)
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """layer_norm(x + residual) over the last dim."""
        x = x.contiguous()
        residual = residual.contiguous()
        M, N = x.shape
        h = torch.empty_like(x)
        add_kernel[(triton.cdiv(M * N, 1024),)](x, residual, h, M * N, BLOCK_SIZE=1024)
        y = torch.empty_like(x)
        layernorm_kernel[(M,)](h, self.norm.weight, self.norm.bias, y, N, self.norm.eps,
                               h.stride(0), y.stride(0), BLOCK_N=triton.next_power_of_2(N))
        return y
