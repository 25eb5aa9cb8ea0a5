"""LayerNorm, version 2 (the NKI tutorial's `nki_layernorm_kernel_v2` algorithm, current API):
out[i, :] = (x[i, :] - mean(x[i, :])) / sqrt(var(x[i, :]) + eps) * gamma + beta.

As version 1, with the tutorial's two changes: the statistics come from VectorE's batch-norm
instructions, `bn_stats` on each chunk of `nl.tile_size.bn_stats_fmax` columns and one
`bn_aggr` of their results (the mean and the population variance in one pass over the tile),
and the shift and the scale are one tensor_scalar instruction (subtract, then multiply).
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def layernorm_v2(x, gamma, beta, eps=1e-5):
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    fmax = nl.tile_size.bn_stats_fmax
    chunks = (cols + fmax - 1) // fmax
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    gamma_tile = nl.ndarray((pmax, cols), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=gamma_tile, src=gamma.ap(pattern=[[0, pmax], [1, cols]], offset=0))
    beta_tile = nl.ndarray((pmax, cols), dtype=beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=beta_tile, src=beta.ap(pattern=[[0, pmax], [1, cols]], offset=0))
    for t in nl.affine_range((rows + pmax - 1) // pmax):
        n = min(pmax, rows - t * pmax)
        x_tile = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile[0:n], src=x[t * pmax:t * pmax + n])
        stats = nl.ndarray((pmax, chunks, 6), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(chunks):
            end = min(cols, (c + 1) * fmax)
            nisa.bn_stats(dst=stats[0:n, c, :], data=x_tile[0:n, c * fmax:end])
        moments = nl.ndarray((pmax, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=moments[0:n], data=stats[0:n])
        # 1 / sqrt(var + eps)
        rstd = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[0:n], data=moments[0:n, 1:2], op0=nl.add, operand0=eps)
        nisa.activation(dst=rstd[0:n], op=nl.rsqrt, data=rstd[0:n])
        y = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:n], data=x_tile[0:n], op0=nl.subtract,
                           operand0=moments[0:n, 0:1], op1=nl.multiply, operand1=rstd[0:n])
        nisa.tensor_tensor(dst=y[0:n], data1=y[0:n], data2=gamma_tile[0:n], op=nl.multiply)
        nisa.tensor_tensor(dst=y[0:n], data1=y[0:n], data2=beta_tile[0:n], op=nl.add)
        nisa.dma_copy(dst=out[t * pmax:t * pmax + n], src=y[0:n])
        # release this tile's buffers before the next tile allocates its own (SBUF capacity)
        del x_tile, y
    return out
