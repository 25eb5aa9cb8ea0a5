"""Tensor addition (the NKI tutorial's algorithm, current API): out = a + b.

Row tiles of `nl.tile_size.pmax` partitions; an SPMD launch (`tensor_add[n]`) deals the row tiles
out to its programs round-robin.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tensor_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    pmax = nl.tile_size.pmax
    tiles = (rows + pmax - 1) // pmax
    for t in nl.affine_range(nl.program_id(0), tiles, nl.num_programs(0)):
        n = min(pmax, rows - t * pmax)
        a_tile = nl.ndarray((pmax, cols), dtype=a.dtype, buffer=nl.sbuf)
        b_tile = nl.ndarray((pmax, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a_tile[0:n], src=a[t * pmax:t * pmax + n])
        nisa.dma_copy(dst=b_tile[0:n], src=b[t * pmax:t * pmax + n])
        sum_tile = nl.ndarray((pmax, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=sum_tile[0:n], data1=a_tile[0:n], data2=b_tile[0:n], op=nl.add)
        nisa.dma_copy(dst=out[t * pmax:t * pmax + n], src=sum_tile[0:n])
    return out
