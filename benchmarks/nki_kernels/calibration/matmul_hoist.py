"""Matmul with hoisted loads (the NKI tutorial's `nki_matmul_hoist_load_` algorithm, current API):
out[M, N] = lhsT[K, M].T @ rhs[K, N].

For each 128-column strip of lhsT, its K tiles are loaded once; for each 512-column strip of rhs,
its K tiles are loaded once per lhsT strip; the K matmuls of an output tile accumulate in one PSUM
bank, which goes through SBUF to HBM. M and K must be multiples of 128 and N of 512.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_hoist(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "lhsT and rhs must have the same contraction size"
    tile_m = nl.tile_size.gemm_stationary_fmax
    tile_k = nl.tile_size.pmax
    tile_n = nl.tile_size.gemm_moving_fmax
    k_tiles = K // tile_k
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // tile_m):
        lhsT_tiles = nl.ndarray((tile_k, k_tiles, tile_m), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(k_tiles):
            nisa.dma_copy(dst=lhsT_tiles[:, k, :],
                          src=lhsT[k * tile_k:(k + 1) * tile_k, m * tile_m:(m + 1) * tile_m])
        for n in nl.affine_range(N // tile_n):
            rhs_tiles = nl.ndarray((tile_k, k_tiles, tile_n), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(k_tiles):
                nisa.dma_copy(dst=rhs_tiles[:, k, :],
                              src=rhs[k * tile_k:(k + 1) * tile_k, n * tile_n:(n + 1) * tile_n])
            acc = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_tiles):
                nisa.nc_matmul(dst=acc, stationary=lhsT_tiles[:, k, :],
                               moving=rhs_tiles[:, k, :])
            result = nl.ndarray((tile_m, tile_n), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result, src=acc)
            nisa.dma_copy(dst=out[m * tile_m:(m + 1) * tile_m, n * tile_n:(n + 1) * tile_n],
                          src=result)
            # release the strip before the next one is allocated: two would not fit in SBUF
            del rhs_tiles
    return out
