# RUN: not python -m axon.frontend.triton %s 2>&1 | filecheck %s
# An atomic is outside what the Triton frontend reads: a located error, no traceback.
# CHECK: triton_unsupported.py:16:5: error: tl.atomic_add is not supported; expected one of tl.program_id, tl.num_programs, tl.arange, tl.cdiv, tl.load, tl.store, tl.make_block_ptr, tl.advance, tl.make_tensor_descriptor, tl.dot
# CHECK-NEXT: {{^}}    tl.atomic_add(out_ptr + offs, x, mask=offs < n)
# CHECK-NEXT: {{^}}    ^
# CHECK-NOT: Traceback

import triton
import triton.language as tl


@triton.jit
def histogram(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.atomic_add(out_ptr + offs, x, mask=offs < n)
