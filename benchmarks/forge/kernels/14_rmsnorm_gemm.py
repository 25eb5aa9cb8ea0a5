"""Triton kernel for 14_rmsnorm_gemm, as a user writes it first: an RMSNorm kernel writing the
normalized rows to memory (in the input's dtype), then a GEMM kernel reading them back; the norm
not folded into the GEMM's prologue; 64x64x32 GEMM blocks, row-major program order."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, h_ptr, N, eps, stride_xm, stride_hm, BLOCK_N: tl.constexpr):
    """h[row] = x[row] * rsqrt(mean(x[row]^2) + eps) * w, the whole row in one block."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    mask = offs < N
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(h_ptr + row * stride_hm + offs, (x * rstd * w).to(h_ptr.dtype.element_ty), mask=mask)


@triton.jit
def matmul_nt_kernel(x_ptr, w_ptr, y_ptr, M, N, K,
                     stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y = x @ w^T, one tile a program."""
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
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn,
             acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    """The problem's Model with its forward as a Triton RMSNorm and a Triton GEMM."""

    def __init__(self, in_features: int, out_features: int, eps: float) -> None:
        super().__init__()
        self.norm_weight = nn.Parameter(1.0 + 0.1 * torch.randn(in_features))
        self.proj = nn.Linear(in_features, out_features, bias=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """rmsnorm(x) @ W^T."""
        M, K = x.shape
        h = torch.empty((M, K), device=x.device, dtype=x.dtype)
        rmsnorm_kernel[(M,)](x, self.norm_weight, h, K, self.eps, x.stride(0), h.stride(0),
                             BLOCK_N=triton.next_power_of_2(K))
        w = self.proj.weight
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_nt_kernel[grid](h, w, y, M, N, K, h.stride(0), h.stride(1),
                               w.stride(0), w.stride(1), y.stride(0), y.stride(1),
                               BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        return y
