"""Matmul blocked on both free dimensions (the NKI tutorial's `nki_matmul_block_free_dimension_`
algorithm, current API): out[M, N] = lhsT[K, M].T @ rhs[K, N].

Blocks of 2 x 128 columns of lhsT and 2 x 512 columns of rhs are loaded whole (every K tile);
each of the 2 x 2 output tiles of a block pair accumulates its K matmuls in one PSUM bank and
goes through SBUF to HBM. M must be a multiple of 256, N of 1024, K of 128.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILES_IN_BLOCK_M = 2
TILES_IN_BLOCK_N = 2


@nki.jit
def matmul_block_free(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "lhsT and rhs must have the same contraction size"
    tile_m = nl.tile_size.gemm_stationary_fmax
    tile_k = nl.tile_size.pmax
    tile_n = nl.tile_size.gemm_moving_fmax
    block_m = tile_m * TILES_IN_BLOCK_M
    block_n = tile_n * TILES_IN_BLOCK_N
    assert M % block_m == 0 and N % block_n == 0, "M, N must be multiples of the blocks"
    k_tiles = K // tile_k
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // block_m):
        lhsT_tiles = nl.ndarray((tile_k, TILES_IN_BLOCK_M, k_tiles, tile_m), dtype=lhsT.dtype,
                                buffer=nl.sbuf)
        for bm in nl.affine_range(TILES_IN_BLOCK_M):
            col = (m * TILES_IN_BLOCK_M + bm) * tile_m
            for k in nl.affine_range(k_tiles):
                nisa.dma_copy(dst=lhsT_tiles[:, bm, k, :],
                              src=lhsT[k * tile_k:(k + 1) * tile_k, col:col + tile_m])
        for n in nl.affine_range(N // block_n):
            rhs_tiles = nl.ndarray((tile_k, TILES_IN_BLOCK_N, k_tiles, tile_n), dtype=rhs.dtype,
                                   buffer=nl.sbuf)
            for bn in nl.affine_range(TILES_IN_BLOCK_N):
                col = (n * TILES_IN_BLOCK_N + bn) * tile_n
                for k in nl.affine_range(k_tiles):
                    nisa.dma_copy(dst=rhs_tiles[:, bn, k, :],
                                  src=rhs[k * tile_k:(k + 1) * tile_k, col:col + tile_n])
            for bm in nl.affine_range(TILES_IN_BLOCK_M):
                for bn in nl.affine_range(TILES_IN_BLOCK_N):
                    acc = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(k_tiles):
                        nisa.nc_matmul(dst=acc, stationary=lhsT_tiles[:, bm, k, :],
                                       moving=rhs_tiles[:, bn, k, :])
                    result = nl.ndarray((tile_m, tile_n), dtype=out.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=result, src=acc)
                    row = (m * TILES_IN_BLOCK_M + bm) * tile_m
                    col = (n * TILES_IN_BLOCK_N + bn) * tile_n
                    nisa.dma_copy(dst=out[row:row + tile_m, col:col + tile_n], src=result)
            # release the block before the next one is allocated: two would not fit in SBUF
            del rhs_tiles
        del lhsT_tiles
    return out
