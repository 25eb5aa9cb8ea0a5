"""Cumulative sum over the last axis (nki-library's cumsum algorithm, current API):
out[i, j] = sum of x[i, 0..j].

Row tiles of `nl.tile_size.pmax`, columns in chunks of 512: tensor_tensor_scan with data0 = ones,
op0 = multiply, op1 = add runs r[j] = r[j-1] * 1 + x[j] along the chunk, in fp32; each chunk
starts from the last column of the one before (the carry).
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def cumsum(x):
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    chunk = 512
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    ones = nl.ndarray((pmax, chunk), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    for t in nl.affine_range((rows + pmax - 1) // pmax):
        n = min(pmax, rows - t * pmax)
        carry = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=carry[0:n], value=0.0)
        for c in nl.sequential_range((cols + chunk - 1) // chunk):
            w = min(chunk, cols - c * chunk)
            x_tile = nl.ndarray((pmax, chunk), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=x_tile[0:n, 0:w], src=x[t * pmax:t * pmax + n,
                                                      c * chunk:c * chunk + w])
            sums = nl.ndarray((pmax, chunk), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor_scan(dst=sums[0:n, 0:w], data0=ones[0:n, 0:w],
                                    data1=x_tile[0:n, 0:w], initial=carry[0:n],
                                    op0=nl.multiply, op1=nl.add)
            nisa.tensor_copy(dst=carry[0:n], src=sums[0:n, w - 1:w])
            y = nl.ndarray((pmax, chunk), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=y[0:n, 0:w], src=sums[0:n, 0:w])
            nisa.dma_copy(dst=out[t * pmax:t * pmax + n, c * chunk:c * chunk + w],
                          src=y[0:n, 0:w])
    return out
