"""Hand-written row softmax baseline: out[i, :] = exp(x[i, :] - max x[i, :]) / sum of those.

The algorithm of the NKI fused-softmax tutorial: rows on the partitions, tiles of up to
`nl.tile_size.pmax` rows (the last cut by the end), the whole row in the free dim. Per tile:
VectorE takes the row max, negated; ScalarE computes exp(x - max) with that as its
per-partition bias and sums the exponentials in the same instruction; VectorE takes the
reciprocal of the sum and scales the exponentials by it, writing the output dtype.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax(x):
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    # per partition: the row, its fp32 exponentials and the output row, twice each (a loop's
    # new tile is allocated while the last iteration's is still held)
    need = 2 * cols * (2 * x.dtype.itemsize + 4)
    assert need <= nl.tile_size.sbuf_fmax_bytes, \
        f"softmax: a row of {cols} elements needs {need} bytes per partition, more than SBUF's " \
        f"{nl.tile_size.sbuf_fmax_bytes}"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range((rows + pmax - 1) // pmax):
        first = r * pmax
        n = min(pmax, rows - first)
        row = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=row[0:n], src=x[first:first + n])
        neg_max = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[0:n], op=nl.maximum, data=row[0:n], axis=1,
                           negate=True)
        exps = nl.ndarray((pmax, cols), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=exps[0:n], op=nl.exp, data=row[0:n], bias=neg_max[0:n],
                               reduce_op=nl.add, reduce_res=total[0:n])
        inv = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv[0:n], data=total[0:n], op0=nl.divide, operand0=1.0,
                           reverse0=True)
        result = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=result[0:n], data=exps[0:n], op0=nl.multiply, operand0=inv[0:n])
        nisa.dma_copy(dst=out[first:first + n], src=result[0:n])
    return out
