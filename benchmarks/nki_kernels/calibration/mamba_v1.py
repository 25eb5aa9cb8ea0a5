"""Mamba selective scan, version 1 (the NKI fused-Mamba tutorial's `mamba_v1` algorithm,
current API). With delta, u: [batch, channels, seq_len], A: [channels, state],
B, C: [batch, state, seq_len]:

    h[b, c, s, t] = exp(delta[b, c, t] * A[c, s]) * h[b, c, s, t - 1]
                    + delta[b, c, t] * u[b, c, t] * B[b, s, t]          (h[.., -1] = 0)
    out[b, c, t]  = sum over s of C[b, s, t] * h[b, c, s, t]

Channels on the partitions (tiles of `nl.tile_size.pmax`; channels must be a multiple), the
sequence along the free dimension. Loops batch > state > channel tile, as the tutorial's first
kernel: every (state, channel tile) step loads its delta and u tiles again, and the per-channel
accumulators of every channel tile stay in SBUF until the batch ends. One step:

1. ScalarE: `exp(delta * A[:, s])`, the scale a [P, 1] column (steps 1 and 2 in one activation);
2. VectorE: delta * u, then times B[s] broadcast over the partitions;
3. VectorE: `tensor_tensor_scan` (multiply, add) along the sequence, the recurrence above;
4. VectorE: times C[s] broadcast over the partitions, added into the accumulator.

The partition broadcast of a B or C row is TensorE's (the tutorial: "partition-dim broadcast
often requires a separate instruction on TensorE"): a matmul of a ones row [1, P] by the row
(512 columns at a time) into PSUM, which the VectorE multiply reads as its second operand (a
`tensor_tensor` with one input in PSUM costs N cycles, not 2N: reference section 6.1).
"""

import nki
import nki.isa as nisa
import nki.language as nl


def times_row(dst, data, row, ones):
    """`dst = data * row`, the row [1, L] (SBUF, fp32) broadcast over data's partitions: per
    512-column piece, a TensorE matmul of the ones row [1, P] by the piece into PSUM, and a
    VectorE `tensor_tensor` reading that PSUM tile."""
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
def mamba_v1(delta, u, A, B, C):
    batch, channels, length = delta.shape
    states = A.shape[1]
    pmax = nl.tile_size.pmax
    assert channels % pmax == 0, "channels must be a multiple of the partition count"
    tiles = channels // pmax
    out = nl.ndarray((batch, channels, length), dtype=delta.dtype, buffer=nl.shared_hbm)
    ones = nl.ndarray((1, pmax), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    for b in nl.affine_range(batch):
        accum = nl.ndarray((pmax, tiles, length), dtype=delta.dtype, buffer=nl.sbuf)
        nisa.memset(dst=accum, value=0.0)
        for s in nl.affine_range(states):
            for t in nl.affine_range(tiles):
                rows = slice(t * pmax, (t + 1) * pmax)
                delta_t = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=delta_t, src=delta[b, rows, 0:length])
                a_col = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=a_col, src=A[rows, s:s + 1])
                decay = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=decay, op=nl.exp, data=delta_t, scale=a_col)
                u_t = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=u_t, src=u[b, rows, 0:length])
                b_row = nl.ndarray((1, length), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=b_row, src=B[b, s:s + 1, 0:length])
                drive = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=drive, data1=delta_t, data2=u_t, op=nl.multiply)
                times_row(drive, drive, b_row, ones)
                h = nl.ndarray((pmax, length), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor_scan(dst=h, data0=decay, data1=drive, initial=0.0,
                                        op0=nl.multiply, op1=nl.add)
                c_row = nl.ndarray((1, length), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=c_row, src=C[b, s:s + 1, 0:length])
                times_row(h, h, c_row, ones)
                nisa.tensor_tensor(dst=accum[:, t, :], data1=accum[:, t, :], data2=h,
                                   op=nl.add)
                # release this step's tiles before the next step allocates its own
                del delta_t, u_t, decay, drive, h
        for t in nl.affine_range(tiles):
            nisa.dma_copy(dst=out[b, t * pmax:(t + 1) * pmax, 0:length], src=accum[:, t, :])
    return out
