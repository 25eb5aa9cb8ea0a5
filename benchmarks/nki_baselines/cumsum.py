"""Hand-written row prefix-sum baseline: out[i, j] = x[i, 0] + ... + x[i, j].

The algorithm of nki-samples' cumsum (neuron-team kernels): rows on the partitions, tiles of
up to `nl.tile_size.pmax` rows; along each row, chunks of `CHUNK` columns, each one VectorE
`tensor_tensor_scan` computing r[j] = 1 * r[j-1] + x[j] in fp32, started from the last sum of
the chunk before (its last column, read in place as the scan's [P, 1] initial value). The
fp32 sums are converted to the output dtype on ScalarE (nothing to convert for fp32 inputs).
"""

import nki
import nki.isa as nisa
import nki.language as nl

#: columns per scan: four PSUM-bank widths, so a chunk's DMA moves long rows
CHUNK = 2048


@nki.jit
def cumsum(x):
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    ones = nl.ndarray((pmax, CHUNK), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    convert = x.dtype != nl.float32
    for r in nl.affine_range((rows + pmax - 1) // pmax):
        first = r * pmax
        n = min(pmax, rows - first)
        carry = 0.0
        for c in nl.sequential_range((cols + CHUNK - 1) // CHUNK):
            start = c * CHUNK
            w = min(CHUNK, cols - start)
            chunk = nl.ndarray((pmax, CHUNK), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=chunk[0:n, 0:w], src=x[first:first + n, start:start + w])
            sums = nl.ndarray((pmax, CHUNK), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor_scan(dst=sums[0:n, 0:w], data0=ones[0:n, 0:w],
                                    data1=chunk[0:n, 0:w], initial=carry, op0=nl.multiply,
                                    op1=nl.add)
            carry = sums[0:n, w - 1:w]
            result = sums
            if convert:
                result = nl.ndarray((pmax, CHUNK), dtype=x.dtype, buffer=nl.sbuf)
                nisa.activation(dst=result[0:n, 0:w], op=nl.copy, data=sums[0:n, 0:w])
            nisa.dma_copy(dst=out[first:first + n, start:start + w], src=result[0:n, 0:w])
    return out
