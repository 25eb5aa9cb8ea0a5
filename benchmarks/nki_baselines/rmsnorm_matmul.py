"""Hand-written fused RMSNorm + matmul baseline: out = rmsnorm(x, g) @ w, x [M, K], g [K],
w [K, N], in a 2-byte dtype; rmsnorm(x, g)[i, :] = x[i, :] * rsqrt(mean(x[i, :]^2) + 1e-6) * g.

The two tutorials' algorithms (rmsnorm, matrix multiplication) fused in one kernel, the
normalized rows never leaving the chip. The per-row factor rsqrt(mean + eps) is constant along
a row of the result, so it is applied last: out = diag(factor) ((x * g) @ w). The rows go in
groups of 128-row blocks, as many blocks as `GROUP_BYTES` of SBUF per partition hold. For each
block of a group: ScalarE computes the rows' sums of squares from x as loaded (rows on the
partitions) and VectorE and ScalarE the factor; x is also loaded transposed by the DMA (the
contraction on the partitions), and each [K-block, rows] tile multiplied by g's K-block as a
per-partition scalar into the matmul's stationary operand. Then for each 512-column block of w
(loaded once per group, as the tutorial hoists its loads), TensorE computes each block's
[rows, 512] result in one PSUM bank over the K blocks, and ScalarE copies it out of PSUM
scaled by the factor, in the output dtype. Every dim may end in a partial block.
"""

import nki
import nki.isa as nisa
import nki.language as nl

EPS = 1e-6
#: SBUF bytes per partition for a group's normalized, transposed rows
GROUP_BYTES = 48 * 1024


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
    mt = (rows + bm - 1) // bm
    block_bytes = kt * bm * x.dtype.itemsize  # a block of rows, transposed and scaled
    per_group = max(1, min(mt, GROUP_BYTES // block_bytes))
    # per partition: the group's blocks and factors; a row block, w's column block, twice each
    # (a loop's new tile is allocated while the last iteration's is still held)
    need = per_group * (block_bytes + 4) + 2 * (depth * x.dtype.itemsize
                                               + kt * bn * w.dtype.itemsize) \
        + 2 * kt + 4 * bn + 2 * bm * x.dtype.itemsize
    assert need <= nl.tile_size.sbuf_fmax_bytes, \
        f"rmsnorm_matmul: a contraction of {depth} needs {need} bytes per partition, more " \
        f"than SBUF's {nl.tile_size.sbuf_fmax_bytes}"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    # g by K blocks, one block per column: gcol[p, k] = g[k * bk + p]
    gcol = nl.ndarray((bk, kt), dtype=g.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(kt):
        kk = min(bk, depth - k * bk)
        nisa.dma_copy(dst=gcol[0:kk, k:k + 1], src=g.ap(pattern=[[1, kk], [1, 1]], offset=k * bk))
    # the group's tiles, allocated once (a new group's in a fragmented SBUF may not fit)
    factor = nl.ndarray((bm, per_group), dtype=nl.float32, buffer=nl.sbuf)
    scaled = nl.ndarray((bk, per_group, kt, bm), dtype=x.dtype, buffer=nl.sbuf)
    for group in nl.sequential_range((mt + per_group - 1) // per_group):
        blocks = min(per_group, mt - group * per_group)
        for b in nl.affine_range(blocks):
            r0 = (group * per_group + b) * bm
            n = min(bm, rows - r0)
            row = nl.ndarray((bm, depth), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=row[0:n], src=x[r0:r0 + n])
            total = nl.ndarray((bm, 1), dtype=nl.float32, buffer=nl.sbuf)
            # the squares themselves are not needed: written over the row, read only here
            nisa.activation_reduce(dst=row[0:n], op=nl.square, data=row[0:n],
                                   reduce_op=nl.add, reduce_res=total[0:n])
            nisa.tensor_scalar(dst=factor[0:n, b:b + 1], data=total[0:n], op0=nl.multiply,
                               operand0=1.0 / depth, op1=nl.add, operand1=EPS)
            nisa.activation(dst=factor[0:n, b:b + 1], op=nl.rsqrt, data=factor[0:n, b:b + 1])
            for k in nl.affine_range(kt):
                kk = min(bk, depth - k * bk)
                xt = nl.ndarray((bk, bm), dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_transpose(dst=xt[0:kk, 0:n], src=x[r0:r0 + n, k * bk:k * bk + kk])
                nisa.tensor_scalar(dst=scaled[0:kk, b, k, 0:n], data=xt[0:kk, 0:n],
                                   op0=nl.multiply, operand0=gcol[0:kk, k:k + 1])
        for j in nl.affine_range((cols + bn - 1) // bn):
            c0 = j * bn
            nn = min(bn, cols - c0)
            wt = nl.ndarray((bk, kt, bn), dtype=w.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(kt):
                kk = min(bk, depth - k * bk)
                nisa.dma_copy(dst=wt[0:kk, k, 0:nn], src=w[k * bk:k * bk + kk, c0:c0 + nn])
            for b in nl.affine_range(blocks):
                r0 = (group * per_group + b) * bm
                n = min(bm, rows - r0)
                acc = nl.ndarray((bm, bn), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(kt):
                    kk = min(bk, depth - k * bk)
                    nisa.nc_matmul(dst=acc[0:n, 0:nn], stationary=scaled[0:kk, b, k, 0:n],
                                   moving=wt[0:kk, k, 0:nn])
                result = nl.ndarray((bm, bn), dtype=x.dtype, buffer=nl.sbuf)
                nisa.activation(dst=result[0:n, 0:nn], op=nl.copy, data=acc[0:n, 0:nn],
                                scale=factor[0:n, b:b + 1])
                nisa.dma_copy(dst=out[r0:r0 + n, c0:c0 + nn], src=result[0:n, 0:nn])
    return out
