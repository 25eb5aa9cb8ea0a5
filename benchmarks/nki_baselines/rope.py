"""Hand-written rotary-embedding baseline on interleaved pairs, x [T, H, 2*D2]:
out[t, h, 2i] = x[t, h, 2i] cos[t, i] - x[t, h, 2i+1] sin[t, i] and
out[t, h, 2i+1] = x[t, h, 2i] sin[t, i] + x[t, h, 2i+1] cos[t, i].

The algorithm of nki-samples' RoPE (neuron-team kernels): four elementwise products of the
even and odd halves by cos and sin, a difference and a sum. Here the tokens are on the
partitions, tiles of up to `nl.tile_size.pmax` tokens (the last cut by the end), each token's
heads and pairs in the free dims: the tile of x is loaded whole and its even and odd elements
are read in place (a free stride of 2), cos and sin are read broadcast over the heads (a free
stride of 0), the products alternate between VectorE and GpSimd, and the two results are
written into the even and odd places of one output tile, stored whole.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rope(x, cos, sin):
    tokens, heads, dim = x.shape
    half = dim // 2
    assert dim == 2 * half, f"rope: the last dim of x is {dim}, expected an even size"
    assert tuple(cos.shape) == (tokens, half) and tuple(sin.shape) == (tokens, half), \
        f"rope: cos and sin are {tuple(cos.shape)} and {tuple(sin.shape)}, expected " \
        f"({tokens}, {half})"
    pmax = nl.tile_size.pmax
    # per partition: x's and the output's tiles, four fp32 products, cos and sin, twice each
    # (a loop's new tile is allocated while the last iteration's is still held)
    need = 2 * (heads * dim * 2 * x.dtype.itemsize + 4 * heads * half * 4
                + 2 * half * cos.dtype.itemsize)
    assert need <= nl.tile_size.sbuf_fmax_bytes, \
        f"rope: a token of {heads} x {dim} needs {need} bytes per partition, more than SBUF's " \
        f"{nl.tile_size.sbuf_fmax_bytes}"
    out = nl.ndarray((tokens, heads, dim), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range((tokens + pmax - 1) // pmax):
        first = t * pmax
        n = min(pmax, tokens - first)
        xt = nl.ndarray((pmax, heads, dim), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:n], src=x[first:first + n])
        ct = nl.ndarray((pmax, half), dtype=cos.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=ct[0:n], src=cos[first:first + n])
        st = nl.ndarray((pmax, half), dtype=sin.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=st[0:n], src=sin[first:first + n])
        c = ct.ap(pattern=[[half, n], [0, heads], [1, half]], offset=0)
        s = st.ap(pattern=[[half, n], [0, heads], [1, half]], offset=0)
        even = xt[0:n, :, 0:dim:2]
        odd = xt[0:n, :, 1:dim:2]
        ec = nl.ndarray((pmax, heads, half), dtype=nl.float32, buffer=nl.sbuf)
        os_ = nl.ndarray((pmax, heads, half), dtype=nl.float32, buffer=nl.sbuf)
        es = nl.ndarray((pmax, heads, half), dtype=nl.float32, buffer=nl.sbuf)
        oc = nl.ndarray((pmax, heads, half), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=ec[0:n], data1=even, data2=c, op=nl.multiply)
        nisa.tensor_tensor(dst=os_[0:n], data1=odd, data2=s, op=nl.multiply,
                           engine=nisa.engine.gpsimd)
        nisa.tensor_tensor(dst=es[0:n], data1=even, data2=s, op=nl.multiply)
        nisa.tensor_tensor(dst=oc[0:n], data1=odd, data2=c, op=nl.multiply,
                           engine=nisa.engine.gpsimd)
        ot = nl.ndarray((pmax, heads, dim), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=ot[0:n, :, 0:dim:2], data1=ec[0:n], data2=os_[0:n],
                           op=nl.subtract)
        nisa.tensor_tensor(dst=ot[0:n, :, 1:dim:2], data1=es[0:n], data2=oc[0:n], op=nl.add)
        nisa.dma_copy(dst=out[first:first + n], src=ot[0:n])
    return out
