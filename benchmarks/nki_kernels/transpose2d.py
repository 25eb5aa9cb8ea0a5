"""2-D transpose (the NKI tutorial's algorithm, current API): out = x.T.

Square blocks of `nl.tile_size.pmax`, each transposed on TensorE into PSUM, copied back to SBUF
and stored at the mirrored block position.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose2d(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    pmax = nl.tile_size.pmax
    for i in nl.affine_range((rows + pmax - 1) // pmax):
        r = min(pmax, rows - i * pmax)
        for j in nl.affine_range((cols + pmax - 1) // pmax):
            c = min(pmax, cols - j * pmax)
            block = nl.ndarray((pmax, pmax), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=block[0:r, 0:c],
                          src=x[i * pmax:i * pmax + r, j * pmax:j * pmax + c])
            flipped = nl.ndarray((pmax, pmax), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped[0:c, 0:r], data=block[0:r, 0:c])
            result = nl.ndarray((pmax, pmax), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result[0:c, 0:r], src=flipped[0:c, 0:r])
            nisa.dma_copy(dst=out[j * pmax:j * pmax + c, i * pmax:i * pmax + r],
                          src=result[0:c, 0:r])
    return out
