"""LayerNorm, version 1 (the NKI tutorial's `nki_layernorm_kernel_v1` algorithm, current API):
out[i, :] = (x[i, :] - mean(x[i, :])) / sqrt(var(x[i, :]) + eps) * gamma + beta.

Row tiles of `nl.tile_size.pmax`, computed the way the tutorial's nki.language version does:
the mean and the mean of squares by two VectorE reductions (ScalarE squares), the variance as
mean(x^2) - mean^2, the shift and the scale as two separate passes, then gamma and beta (loaded
once, broadcast over the partitions by a zero-stride access pattern) as two more.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def layernorm_v1(x, gamma, beta, eps=1e-5):
    rows, cols = x.shape
    pmax = nl.tile_size.pmax
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    gamma_tile = nl.ndarray((pmax, cols), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=gamma_tile, src=gamma.ap(pattern=[[0, pmax], [1, cols]], offset=0))
    beta_tile = nl.ndarray((pmax, cols), dtype=beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=beta_tile, src=beta.ap(pattern=[[0, pmax], [1, cols]], offset=0))
    for t in nl.affine_range((rows + pmax - 1) // pmax):
        n = min(pmax, rows - t * pmax)
        x_tile = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile[0:n], src=x[t * pmax:t * pmax + n])
        mean = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=mean[0:n], op=nl.add, data=x_tile[0:n], axis=1, keepdims=True)
        nisa.tensor_scalar(dst=mean[0:n], data=mean[0:n], op0=nl.multiply, operand0=1.0 / cols)
        squares = nl.ndarray((pmax, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=squares[0:n], op=nl.square, data=x_tile[0:n])
        var = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=var[0:n], op=nl.add, data=squares[0:n], axis=1, keepdims=True)
        del squares  # SBUF capacity: a 4096 x 8192 fp32 input leaves room for few full tiles
        mean_sq = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=mean_sq[0:n], data1=mean[0:n], data2=mean[0:n], op=nl.multiply)
        # var = sum(x^2) / cols - mean^2
        nisa.tensor_scalar(dst=var[0:n], data=var[0:n], op0=nl.multiply, operand0=1.0 / cols,
                           op1=nl.subtract, operand1=mean_sq[0:n])
        rstd = nl.ndarray((pmax, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd[0:n], data=var[0:n], op0=nl.add, operand0=eps)
        nisa.activation(dst=rstd[0:n], op=nl.rsqrt, data=rstd[0:n])
        y = nl.ndarray((pmax, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:n], data=x_tile[0:n], op0=nl.subtract, operand0=mean[0:n])
        nisa.tensor_scalar(dst=y[0:n], data=y[0:n], op0=nl.multiply, operand0=rstd[0:n])
        nisa.tensor_tensor(dst=y[0:n], data1=y[0:n], data2=gamma_tile[0:n], op=nl.multiply)
        nisa.tensor_tensor(dst=y[0:n], data1=y[0:n], data2=beta_tile[0:n], op=nl.add)
        nisa.dma_copy(dst=out[t * pmax:t * pmax + n], src=y[0:n])
        # release this tile's buffers before the next tile allocates its own (SBUF capacity)
        del x_tile, y
    return out
