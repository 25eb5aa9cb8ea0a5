"""Hand-written fused RMSNorm + matmul baseline: out = rmsnorm(x, g) @ w, x [M, K], g [K],
w [K, N], in a 2-byte dtype; rmsnorm(x, g)[i, :] = x[i, :] * rsqrt(mean(x[i, :]^2) + 1e-6) * g.

The two tutorials' algorithms (rmsnorm, matrix multiplication) fused in one kernel, the
normalized rows never leaving the chip. The per-row factor rsqrt(mean + eps) is constant along
a row of the result, so it is applied last: out = diag(factor) ((x * g) @ w). For each block of
up to 128 rows: ScalarE computes the rows' sums of squares from x as loaded (rows on the
partitions) and VectorE and ScalarE the factor; x is also loaded transposed by the DMA (the
contraction on the partitions), and each [K-block, rows] tile multiplied by g's K-block as a
per-partition scalar into the matmul's stationary operand. TensorE then computes each [rows,
512] block of (x * g) @ w in one PSUM bank over the K blocks, and ScalarE copies it out of
PSUM scaled by the factor, in the output dtype. w is loaded per row block (once when M <= 128,
the decode shapes). Every dim may end in a partial block.
"""

import nki
import nki.isa as nisa
import nki.language as nl

EPS = 1e-6


@nki.jit
def rmsnorm_matmul(x, g, w):
    rows, depth = x.shape
    depth_w, cols = w.shape
    assert depth == depth_w and tuple(g.shape) == (depth,), \
        f"rmsnorm_matmul: x {tuple(x.shape)}, g {tuple(g.shape)} and w {tuple(w.shape)} do " \
        f"not agree on the contracted dim"
    assert x.dtype.itemsize == 2 and w.dtype == x.dtype, \
        f"rmsnorm_matmul: x and w must share a 2-byte dtype (the DMA transposes x), got " \
        f"{x.dtype} and {w.dtype}"
    bm = nl.tile_size.gemm_stationary_fmax
    bk = nl.tile_size.pmax
    bn = nl.tile_size.gemm_moving_fmax
    kt = (depth + bk - 1) // bk
    need = depth * (x.dtype.itemsize + 4) + kt * (2 * bm + bn) * 2 + 4 * kt + 2 * bn
    assert need <= nl.tile_size.sbuf_fmax_bytes, \
        f"rmsnorm_matmul: a contraction of {depth} needs {need} bytes per partition, more " \
        f"than SBUF's {nl.tile_size.sbuf_fmax_bytes}"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    # g by K blocks, one block per column: gcol[p, k] = g[k * bk + p]
    gcol = nl.ndarray((bk, kt), dtype=g.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(kt):
        kk = min(bk, depth - k * bk)
        nisa.dma_copy(dst=gcol[0:kk, k:k + 1], src=g.ap(pattern=[[1, kk], [1, 1]], offset=k * bk))
    for i in nl.affine_range((rows + bm - 1) // bm):
        r0 = i * bm
        n = min(bm, rows - r0)
        row = nl.ndarray((bm, depth), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=row[0:n], src=x[r0:r0 + n])
        squares = nl.ndarray((bm, depth), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((bm, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=squares[0:n], op=nl.square, data=row[0:n],
                               reduce_op=nl.add, reduce_res=total[0:n])
        factor = nl.ndarray((bm, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=factor[0:n], data=total[0:n], op0=nl.multiply,
                           operand0=1.0 / depth, op1=nl.add, operand1=EPS)
        nisa.activation(dst=factor[0:n], op=nl.rsqrt, data=factor[0:n])
        xt = nl.ndarray((bk, kt, bm), dtype=x.dtype, buffer=nl.sbuf)
        scaled = nl.ndarray((bk, kt, bm), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(kt):
            kk = min(bk, depth - k * bk)
            nisa.dma_transpose(dst=xt[0:kk, k, 0:n], src=x[r0:r0 + n, k * bk:k * bk + kk])
            nisa.tensor_scalar(dst=scaled[0:kk, k, 0:n], data=xt[0:kk, k, 0:n],
                               op0=nl.multiply, operand0=gcol[0:kk, k:k + 1])
        for j in nl.affine_range((cols + bn - 1) // bn):
            c0 = j * bn
            nn = min(bn, cols - c0)
            wt = nl.ndarray((bk, kt, bn), dtype=w.dtype, buffer=nl.sbuf)
            acc = nl.ndarray((bm, bn), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(kt):
                kk = min(bk, depth - k * bk)
                nisa.dma_copy(dst=wt[0:kk, k, 0:nn], src=w[k * bk:k * bk + kk, c0:c0 + nn])
                nisa.nc_matmul(dst=acc[0:n, 0:nn], stationary=scaled[0:kk, k, 0:n],
                               moving=wt[0:kk, k, 0:nn])
            result = nl.ndarray((bm, bn), dtype=x.dtype, buffer=nl.sbuf)
            nisa.activation(dst=result[0:n, 0:nn], op=nl.copy, data=acc[0:n, 0:nn],
                            scale=factor[0:n])
            nisa.dma_copy(dst=out[r0:r0 + n, c0:c0 + nn], src=result[0:n, 0:nn])
    return out
