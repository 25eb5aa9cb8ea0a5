"""Mamba selective scan, version 3 (the NKI fused-Mamba tutorial's `mamba_v3` algorithm,
current API): what `mamba_v1.py` computes, with version 2's loop order and the sequence tiled.

Loops batch > channel tile > state > sequence tile of 512 (the tutorial's `seq_len_fsize`, found
by its profiling): every step works on [P, 512] pieces of the channel tile's delta, u and
accumulator, which are loaded (stored) whole, once per channel tile. The scan of a piece starts
from the last column of the previous piece's (`initial`, a [P, 1] carry), so the pieces of one
state run in order. delta * u is computed once per channel tile, as in version 2 (see there).
"""

import nki
import nki.isa as nisa
import nki.language as nl


def times_row(dst, data, row, ones):
    """`dst = data * row`, the row broadcast over the partitions by TensorE (mamba_v1.py's:
    a kernel file imports nothing but nki, so each version carries its own copy)."""
    pmax, length = data.shape
    piece = nl.tile_size.gemm_moving_fmax
    for j in nl.affine_range((length + piece - 1) // piece):
        w = min(piece, length - j * piece)
        cols = slice(j * piece, j * piece + w)
        full = nl.ndarray((pmax, piece), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=full[:, 0:w], stationary=ones, moving=row[:, cols],
                       accumulate=False)
        nisa.tensor_tensor(dst=dst[:, cols], data1=data[:, cols], data2=full[:, 0:w],
                           op=nl.multiply)


@nki.jit
def mamba_v3(delta, u, A, B, C):
    batch, channels, length = delta.shape
    states = A.shape[1]
    pmax = nl.tile_size.pmax
    piece = 512
    pieces = (length + piece - 1) // piece
    assert channels % pmax == 0, "channels must be a multiple of the partition count"
    out = nl.ndarray((batch, channels, length), dtype=delta.dtype, buffer=nl.shared_hbm)
    ones = nl.ndarray((1, pmax), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    for b in nl.affine_range(batch):
        for t in nl.affine_range(channels // pmax):
            rows = slice(t * pmax, (t + 1) * pmax)
            accum = nl.ndarray((pmax, length), dtype=delta.dtype, buffer=nl.sbuf)
            nisa.memset(dst=accum, value=0.0)
            delta_t = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=delta_t, src=delta[b, rows, 0:length])
            u_t = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=u_t, src=u[b, rows, 0:length])
            delta_u = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
            for j in nl.affine_range(pieces):
                cols = slice(j * piece, min(length, (j + 1) * piece))
                nisa.tensor_tensor(dst=delta_u[:, cols], data1=delta_t[:, cols],
                                   data2=u_t[:, cols], op=nl.multiply)
            for s in nl.affine_range(states):
                a_col = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=a_col, src=A[rows, s:s + 1])
                carry = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.memset(dst=carry, value=0.0)
                for j in nl.sequential_range(pieces):
                    w = min(piece, length - j * piece)
                    cols = slice(j * piece, j * piece + w)
                    decay = nl.ndarray((pmax, piece), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.activation(dst=decay[:, 0:w], op=nl.exp, data=delta_t[:, cols],
                                    scale=a_col)
                    b_row = nl.ndarray((1, piece), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.dma_copy(dst=b_row[:, 0:w], src=B[b, s:s + 1, cols])
                    drive = nl.ndarray((pmax, piece), dtype=nl.float32, buffer=nl.sbuf)
                    times_row(drive[:, 0:w], delta_u[:, cols], b_row[:, 0:w], ones)
                    h = nl.ndarray((pmax, piece), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_tensor_scan(dst=h[:, 0:w], data0=decay[:, 0:w],
                                            data1=drive[:, 0:w], initial=carry,
                                            op0=nl.multiply, op1=nl.add)
                    nisa.tensor_copy(dst=carry, src=h[:, w - 1:w])
                    c_row = nl.ndarray((1, piece), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.dma_copy(dst=c_row[:, 0:w], src=C[b, s:s + 1, cols])
                    times_row(h[:, 0:w], h[:, 0:w], c_row[:, 0:w], ones)
                    nisa.tensor_tensor(dst=accum[:, cols], data1=accum[:, cols],
                                       data2=h[:, 0:w], op=nl.add)
                    del decay, drive, h
            nisa.dma_copy(dst=out[b, rows, 0:length], src=accum)
            del accum, delta_t, u_t, delta_u
    return out
