"""Triton kernel for 05_gemm_swiglu, as a user writes it first: one GEMM kernel launched twice (the
gate and the up projection, each reading x again) into float32 buffers, then an elementwise
SiLU(gate) * up kernel; 64x64x32 blocks, row-major program order."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_nt_kernel(x_ptr, w_ptr, z_ptr, M, N, K,
                     stride_xm, stride_xk, stride_wn, stride_wk, stride_zm, stride_zn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """z = x @ w^T in float32, one tile a program."""
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
    tl.store(z_ptr + offs_m[:, None] * stride_zm + offs_n[None, :] * stride_zn, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def silu_mul_kernel(g_ptr, u_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """y = g * sigmoid(g) * u over flat contiguous buffers."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    g = tl.load(g_ptr + offs, mask=mask, other=0.0)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, (g * tl.sigmoid(g) * u).to(y_ptr.dtype.element_ty), mask=mask)


def _matmul_nt(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    M, K = x.shape
    N = w.shape[0]
    z = torch.empty((M, N), device=x.device, dtype=torch.float32)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    matmul_nt_kernel[grid](x, w, z, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                           z.stride(0), z.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return z


class ModelNew(nn.Module):
    """The problem's Model with its forward as two Triton GEMMs and a Triton SwiGLU."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """silu(x @ Wg^T) * (x @ Wu^T)."""
        gate = _matmul_nt(x, self.gate_proj.weight)
        up = _matmul_nt(x, self.up_proj.weight)
        y = torch.empty(gate.shape, device=x.device, dtype=x.dtype)
        n = gate.numel()
        silu_mul_kernel[(triton.cdiv(n, 1024),)](gate, up, y, n, BLOCK_SIZE=1024)
        return y
