"""RMSNorm (the NKI tutorial's algorithm, current API):
out[i, :] = x[i, :] / sqrt(mean(x[i, :] ** 2) + eps) * w.

Row tiles of `nl.tile_size.pmax`. ScalarE squares each tile and sums the squares in the same
instruction (activation with reduce); VectorE scales the sum to mean + eps; ScalarE takes its
rsqrt; VectorE multiplies by that per-row factor and by the weight, which is loaded once,
broadcast over the partitions by a zero-stride access pattern.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm(x, w, eps=1e-6):
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    weight = nl.ndarray((pmax, cols), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=weight, src=w.ap(pattern=[[0, pmax], [1, cols]], offset=0))
    for t in nl.affine_range((rows + pmax - 1) // pmax):
        n = min(pmax, rows - t * pmax)
        x_tile = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile[0:n], src=x[t * pmax:t * pmax + n])
        squares = nl.ndarray((pmax, cols), dtype=nl.float32, buffer=nl.sbuf)
        sum_sq = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=squares[0:n], op=nl.square, data=x_tile[0:n], reduce_op=nl.add,
                        reduce_res=sum_sq[0:n])
        factor = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=factor[0:n], data=sum_sq[0:n], op0=nl.multiply,
                           operand0=1.0 / cols, op1=nl.add, operand1=eps)
        nisa.activation(dst=factor[0:n], op=nl.rsqrt, data=factor[0:n])
        y = nl.ndarray((pmax, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:n], data=x_tile[0:n], op0=nl.multiply, operand0=factor[0:n])
        y_out = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=y_out[0:n], data1=y[0:n], data2=weight[0:n], op=nl.multiply)
        nisa.dma_copy(dst=out[t * pmax:t * pmax + n], src=y_out[0:n])
    return out
