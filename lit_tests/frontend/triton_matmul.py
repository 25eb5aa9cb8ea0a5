# RUN: python -m axon.frontend.triton %s | filecheck %s
# A Triton matmul read without running it: pointers as base + strides, masks as bounds, the K loop's
# carried pointers and accumulator, and the launch.

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K),
                    other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a, b, c):
    M, K = a.shape
    _, N = b.shape
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]), triton.cdiv(N, META["BLOCK_N"]))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                        num_warps=4, num_stages=3)

# CHECK-LABEL: kernel matmul_kernel at {{.*}}triton_matmul.py:10:1
# CHECK-NEXT:    params: a_ptr (pointer), b_ptr (pointer), c_ptr (pointer), M (scalar), N (scalar), K (scalar), stride_am (scalar), stride_ak (scalar), stride_bk (scalar), stride_bn (scalar), stride_cm (scalar), stride_cn (scalar), BLOCK_M (constexpr), BLOCK_N (constexpr), BLOCK_K (constexpr)
# CHECK-NEXT:    program ids: pid0 = tl.program_id(0), pid1 = tl.program_id(1)
# CHECK-NEXT:    loop 0 at 19:5: k in range(0, (BLOCK_K + K - 1) floordiv BLOCK_K, 1); iteration k, trip (BLOCK_K + K - 1) floordiv BLOCK_K
# CHECK-NEXT:      carries acc: data [BLOCK_M, BLOCK_N], init %0, entry %1, next %5
# CHECK-NEXT:      carries a_ptrs: integer, += BLOCK_K*stride_ak per iteration
# CHECK-NEXT:      carries b_ptrs: integer, += BLOCK_K*stride_bk per iteration
# CHECK-NEXT:    load #0 at 20:13 in loop 0: base a_ptr, block [BLOCK_M, BLOCK_K]
# CHECK-NEXT:      offset: BLOCK_K*k*stride_ak + BLOCK_M*pid0*stride_am + lane0*stride_am + lane1*stride_ak
# CHECK-NEXT:      origin: BLOCK_K*k*stride_ak + BLOCK_M*pid0*stride_am; strides: axis 0: stride_am, axis 1: stride_ak
# CHECK-NEXT:      mask: BLOCK_M*pid0 + lane0 < M (axes 0); lane1 < K - BLOCK_K*k (axes 1)
# CHECK-NEXT:      other: 0.0
# CHECK-NEXT:      affine: yes
# CHECK-NEXT:    load #1 at 22:13 in loop 0: base b_ptr, block [BLOCK_K, BLOCK_N]
# CHECK:           origin: BLOCK_K*k*stride_bk + BLOCK_N*pid1*stride_bn; strides: axis 0: stride_bk, axis 1: stride_bn
# CHECK:         store #2 at 28:5: base c_ptr, block [BLOCK_M, BLOCK_N]
# CHECK-NEXT:      offset: BLOCK_M*pid0*stride_cm + BLOCK_N*pid1*stride_cn + lane0*stride_cm + lane1*stride_cn
# CHECK:           mask: BLOCK_M*pid0 + lane0 < M (axes 0); BLOCK_N*pid1 + lane1 < N (axes 1)
# CHECK-NEXT:      value: %7
# CHECK-NEXT:      affine: yes
# CHECK-NEXT:    raises to xt: yes
# CHECK-NEXT:    values:
# CHECK-NEXT:      %0 = full() value=0 dtype=float32 : [BLOCK_M, BLOCK_N] at 18:11
# CHECK-NEXT:      %1 = carried(%0) name=acc loop=0 : [BLOCK_M, BLOCK_N] at 19:5
# CHECK-NEXT:      %2 = load(BLOCK_K*k*stride_ak + BLOCK_M*pid0*stride_am + a_ptr + lane0*stride_am + lane1*stride_ak, (BLOCK_M*pid0 + lane0 < M) & (lane1 < K - BLOCK_K*k), 0.0) access=0 : [BLOCK_M, BLOCK_K] at 20:13
# CHECK:           %4 = dot(%2, %3) : [BLOCK_M, BLOCK_N] at 24:16
# CHECK-NEXT:      %5 = add(%1, %4) : [BLOCK_M, BLOCK_N] at 24:9
# CHECK-NEXT:      %6 = loop_out(%5) name=acc loop=0 : [BLOCK_M, BLOCK_N] at 19:5
# CHECK-NEXT:      %7 = to(%6) dtype=float16 : [BLOCK_M, BLOCK_N] at 28:22
# CHECK-LABEL: launch of matmul_kernel at 35:5 in matmul()
# CHECK-NEXT:    grid (name): lambda META: (triton.cdiv(M, META["BLOCK_M"]), triton.cdiv(N, META["BLOCK_N"]))
# CHECK-NEXT:    grid dims: triton.cdiv(M, META["BLOCK_M"]); triton.cdiv(N, META["BLOCK_N"])
# CHECK-NEXT:    args: a_ptr=a, b_ptr=b, c_ptr=c, M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1), stride_bk=b.stride(0), stride_bn=b.stride(1), stride_cm=c.stride(0), stride_cn=c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32
# CHECK-NEXT:    options: num_warps=4, num_stages=3
