"""Matmul blocked on all dimensions (the NKI tutorial's `nki_matmul_fully_optimized_` algorithm,
current API): out[M, N] = lhsT[K, M].T @ rhs[K, N].

For each block of 2 x 512 output columns, partial sums of the whole M range stay in SBUF
(`result_tiles`, zeroed first). For each block of 8 x 128 rows of K, the rhs block is loaded
with 2 KiB rows, then for each block of 16 x 128 columns of lhsT (4 KiB rows) each output tile
accumulates its 8 matmuls in PSUM and VectorE adds them into SBUF. The finished column block
goes to HBM one 128 x 1024 row strip at a time. M must be a multiple of 2048, N of 1024, K of
1024.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILES_IN_BLOCK_M = 16
TILES_IN_BLOCK_N = 2
TILES_IN_BLOCK_K = 8


@nki.jit
def matmul_optimized(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "lhsT and rhs must have the same contraction size"
    tile_m = nl.tile_size.gemm_stationary_fmax
    tile_k = nl.tile_size.pmax
    tile_n = nl.tile_size.gemm_moving_fmax
    block_m = tile_m * TILES_IN_BLOCK_M
    block_n = tile_n * TILES_IN_BLOCK_N
    block_k = tile_k * TILES_IN_BLOCK_K
    assert M % block_m == 0 and N % block_n == 0 and K % block_k == 0, \
        "M, N, K must be multiples of the blocks"
    blocks_m = M // block_m
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // block_n):
        result_tiles = nl.zeros((tile_m, blocks_m, TILES_IN_BLOCK_M, TILES_IN_BLOCK_N, tile_n),
                                dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.sequential_range(K // block_k):
            rhs_tiles = nl.ndarray((tile_k, TILES_IN_BLOCK_K, block_n), dtype=rhs.dtype,
                                   buffer=nl.sbuf)
            for bk in nl.affine_range(TILES_IN_BLOCK_K):
                row = (TILES_IN_BLOCK_K * k + bk) * tile_k
                nisa.dma_copy(dst=rhs_tiles[:, bk, :],
                              src=rhs[row:row + tile_k, n * block_n:(n + 1) * block_n])
            for m in nl.affine_range(blocks_m):
                lhsT_tiles = nl.ndarray((tile_k, TILES_IN_BLOCK_K, block_m), dtype=lhsT.dtype,
                                        buffer=nl.sbuf)
                for bk in nl.affine_range(TILES_IN_BLOCK_K):
                    row = (TILES_IN_BLOCK_K * k + bk) * tile_k
                    nisa.dma_copy(dst=lhsT_tiles[:, bk, :],
                                  src=lhsT[row:row + tile_k, m * block_m:(m + 1) * block_m])
                for bn in nl.affine_range(TILES_IN_BLOCK_N):
                    for bm in nl.affine_range(TILES_IN_BLOCK_M):
                        acc = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(TILES_IN_BLOCK_K):
                            nisa.nc_matmul(
                                dst=acc,
                                stationary=lhsT_tiles[:, bk, bm * tile_m:(bm + 1) * tile_m],
                                moving=rhs_tiles[:, bk, bn * tile_n:(bn + 1) * tile_n])
                        partial = result_tiles[:, m, bm, bn, :]
                        nisa.tensor_tensor(dst=partial, data1=partial, data2=acc, op=nl.add)
                del lhsT_tiles
            del rhs_tiles
        for m in nl.affine_range(blocks_m):
            for bm in nl.affine_range(TILES_IN_BLOCK_M):
                packed = nl.ndarray((tile_k, block_n), dtype=out.dtype, buffer=nl.sbuf)
                for bn in nl.affine_range(TILES_IN_BLOCK_N):
                    nisa.tensor_copy(dst=packed[:, bn * tile_n:(bn + 1) * tile_n],
                                     src=result_tiles[:, m, bm, bn, :])
                row = (TILES_IN_BLOCK_M * m + bm) * tile_m
                nisa.dma_copy(dst=out[row:row + tile_m, n * block_n:(n + 1) * block_n],
                              src=packed)
        del result_tiles
    return out
