"""Softmax over the last axis (the NKI tutorial's algorithm, current API):
out[i, :] = exp(x[i, :] - max(x[i, :])) / sum(exp(x[i, :] - max(x[i, :]))).

Row tiles of `nl.tile_size.pmax`: VectorE takes the negated row maximum, ScalarE computes the
exponentials with that as bias and sums them in the same instruction, ScalarE takes the
reciprocal of the sum and VectorE scales the row by it.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax(x):
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((rows + pmax - 1) // pmax):
        n = min(pmax, rows - t * pmax)
        x_tile = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile[0:n], src=x[t * pmax:t * pmax + n])
        neg_max = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max[0:n], op=nl.maximum, data=x_tile[0:n], axis=1,
                           negate=True)
        exps = nl.ndarray((pmax, cols), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=exps[0:n], op=nl.exp, data=x_tile[0:n], bias=neg_max[0:n],
                        reduce_op=nl.add, reduce_res=total[0:n])
        inverse = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inverse[0:n], op=nl.reciprocal, data=total[0:n])
        y = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:n], data=exps[0:n], op0=nl.multiply, operand0=inverse[0:n])
        nisa.dma_copy(dst=out[t * pmax:t * pmax + n], src=y[0:n])
    return out
