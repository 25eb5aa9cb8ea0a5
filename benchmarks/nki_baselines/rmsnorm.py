"""Hand-written RMSNorm baseline: out[i, :] = x[i, :] * rsqrt(mean(x[i, :]^2) + 1e-6) * g.

The algorithm of the NKI rmsnorm tutorial: rows on the partitions, one tile of up to
`nl.tile_size.pmax` rows at a time (the last one cut by the end), the whole row in the free dim;
the weight loaded once, broadcast over the partitions by the DMA (a zero partition stride).
Per tile: ScalarE squares the row and sums the squares in the same instruction; VectorE turns
the sum into mean + eps; ScalarE takes the rsqrt, then scales the row by it (activation `copy`
with a per-partition scale); VectorE multiplies by the weight, writing the output dtype.
"""

import nki
import nki.isa as nisa
import nki.language as nl

EPS = 1e-6


@nki.jit
def rmsnorm(x, g):
    rows, cols = x.shape
    assert tuple(g.shape) == (cols,), f"rmsnorm: g is {tuple(g.shape)}, expected ({cols},)"
    pmax = nl.tile_size.pmax
    # per partition: the weight; a row tile in x's dtype, one fp32 scratch row and the output
    # row, twice each (a loop's new tile is allocated while the last iteration's is held)
    need = cols * (g.dtype.itemsize + 2 * (2 * x.dtype.itemsize + 4))
    assert need <= nl.tile_size.sbuf_fmax_bytes, \
        f"rmsnorm: a row of {cols} elements needs {need} bytes per partition, more than SBUF's " \
        f"{nl.tile_size.sbuf_fmax_bytes}"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    weight = nl.ndarray((pmax, cols), dtype=g.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=weight, src=g.ap(pattern=[[0, pmax], [1, cols]], offset=0))
    for r in nl.affine_range((rows + pmax - 1) // pmax):
        first = r * pmax
        n = min(pmax, rows - first)
        row = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=row[0:n], src=x[first:first + n])
        scratch = nl.ndarray((pmax, cols), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=scratch[0:n], op=nl.square, data=row[0:n],
                               reduce_op=nl.add, reduce_res=total[0:n])
        inv = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv[0:n], data=total[0:n], op0=nl.multiply,
                           operand0=1.0 / cols, op1=nl.add, operand1=EPS)
        nisa.activation(dst=inv[0:n], op=nl.rsqrt, data=inv[0:n])
        nisa.activation(dst=scratch[0:n], op=nl.copy, data=row[0:n], scale=inv[0:n])
        result = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=result[0:n], data1=scratch[0:n], data2=weight[0:n],
                           op=nl.multiply)
        nisa.dma_copy(dst=out[first:first + n], src=result[0:n])
    return out
