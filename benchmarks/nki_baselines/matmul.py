"""Hand-written matmul baseline: out = x @ w, x [M, K] and w [K, N] in a 2-byte dtype.

The algorithm of the NKI matrix-multiplication tutorial: TensorE computes a [128, 512] block
of the result in one PSUM bank as the sum over the contraction's 128-row blocks of
`stationary.T @ moving`, the stationary operand a [K-block, M-block] tile of x transposed (by
the DMA on its way in) and the moving one a [K-block, N-block] tile of w. As in the tutorial's
"hoisted loads" step, the loops are ordered so that each operand block is loaded once per use
of it: for each column block of w (all of K, loaded once), every row block of x is loaded
transposed (all of K) and multiplied; each result block is copied out of PSUM in the output
dtype (alternately by VectorE and ScalarE) and stored. Every dim may end in a partial block.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul(x, w):
    rows, depth = x.shape
    depth_w, cols = w.shape
    assert depth == depth_w, f"matmul: x is {tuple(x.shape)} and w {tuple(w.shape)}; their " \
                             f"contracted dims differ"
    assert x.dtype.itemsize == 2 and w.dtype == x.dtype, \
        f"matmul: x and w must share a 2-byte dtype (the DMA transposes x), got " \
        f"{x.dtype} and {w.dtype}"
    bm = nl.tile_size.gemm_stationary_fmax
    bk = nl.tile_size.pmax
    bn = nl.tile_size.gemm_moving_fmax
    kt = (depth + bk - 1) // bk
    # per partition: a column block of w and a row block of x, both over all of K, and a result
    # block, twice each (a loop's new tile is allocated while the last one's is still held)
    need = 2 * (kt * (bn + bm) + bn) * x.dtype.itemsize
    assert need <= nl.tile_size.sbuf_fmax_bytes, \
        f"matmul: a contraction of {depth} needs {need} bytes per partition, more than SBUF's " \
        f"{nl.tile_size.sbuf_fmax_bytes}"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range((cols + bn - 1) // bn):
        c0 = j * bn
        nn = min(bn, cols - c0)
        wt = nl.ndarray((bk, kt, bn), dtype=w.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(kt):
            kk = min(bk, depth - k * bk)
            nisa.dma_copy(dst=wt[0:kk, k, 0:nn], src=w[k * bk:k * bk + kk, c0:c0 + nn])
        for i in nl.affine_range((rows + bm - 1) // bm):
            r0 = i * bm
            n = min(bm, rows - r0)
            xt = nl.ndarray((bk, kt, bm), dtype=x.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(kt):
                kk = min(bk, depth - k * bk)
                nisa.dma_transpose(dst=xt[0:kk, k, 0:n], src=x[r0:r0 + n, k * bk:k * bk + kk])
            acc = nl.ndarray((bm, bn), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(kt):
                kk = min(bk, depth - k * bk)
                nisa.nc_matmul(dst=acc[0:n, 0:nn], stationary=xt[0:kk, k, 0:n],
                               moving=wt[0:kk, k, 0:nn])
            result = nl.ndarray((bm, bn), dtype=x.dtype, buffer=nl.sbuf)
            if i % 2 == 0:
                nisa.tensor_copy(dst=result[0:n, 0:nn], src=acc[0:n, 0:nn])
            else:
                nisa.activation(dst=result[0:n, 0:nn], op=nl.copy, data=acc[0:n, 0:nn])
            nisa.dma_copy(dst=out[r0:r0 + n, c0:c0 + nn], src=result[0:n, 0:nn])
    return out
