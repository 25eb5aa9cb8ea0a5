"""Tiled matmul (the NKI tutorial's `nki_matmul_tiled_` algorithm, current API):
out[M, N] = lhsT[K, M].T @ rhs[K, N].

Output tiles of 128 x 512 accumulate their K tiles of 128 in one PSUM bank (nc_matmul's default
accumulate: the first matmul overwrites, the next ones add), then go through SBUF to HBM. M and K
must be multiples of 128 and N of 512.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "lhsT and rhs must have the same contraction size"
    tile_m = nl.tile_size.gemm_stationary_fmax
    tile_k = nl.tile_size.pmax
    tile_n = nl.tile_size.gemm_moving_fmax
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // tile_m):
        for n in nl.affine_range(N // tile_n):
            acc = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // tile_k):
                lhsT_tile = nl.ndarray((tile_k, tile_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((tile_k, tile_n), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile, src=lhsT[k * tile_k:(k + 1) * tile_k,
                                                      m * tile_m:(m + 1) * tile_m])
                nisa.dma_copy(dst=rhs_tile, src=rhs[k * tile_k:(k + 1) * tile_k,
                                                    n * tile_n:(n + 1) * tile_n])
                nisa.nc_matmul(dst=acc, stationary=lhsT_tile, moving=rhs_tile)
            result = nl.ndarray((tile_m, tile_n), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result, src=acc)
            nisa.dma_copy(dst=out[m * tile_m:(m + 1) * tile_m, n * tile_n:(n + 1) * tile_n],
                          src=result)
    return out
