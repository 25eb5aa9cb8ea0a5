"""Triton kernel for 04_gemm_residual_add, as a user writes it first: a GEMM + bias kernel whose
result goes to memory, then a separate elementwise kernel adding the residual (two launches and a
round trip through HBM); 64x64x32 blocks, row-major program order."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, z_ptr, M, N, K,
                  stride_xm, stride_xk, stride_wn, stride_wk, stride_zm, stride_zn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """z = x @ w^T + b, one tile a program, stored in z's dtype."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + k[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
    acc += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)[None, :].to(tl.float32)
    tl.store(z_ptr + offs_m[:, None] * stride_zm + offs_n[None, :] * stride_zn,
             acc.to(z_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def add_kernel(a_ptr, b_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """y = a + b over flat contiguous buffers."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (a + b).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """The problem's Model with its forward as a Triton GEMM and a Triton add."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """residual + (x @ W^T + b)."""
        w = self.proj.weight
        M, K = x.shape
        N = w.shape[0]
        z = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        linear_kernel[grid](x, w, self.proj.bias, z, M, N, K,
                            x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                            z.stride(0), z.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        residual = residual.contiguous()
        y = torch.empty_like(z)
        add_kernel[(triton.cdiv(M * N, 1024),)](z, residual, y, M * N, BLOCK_SIZE=1024)
        return y
