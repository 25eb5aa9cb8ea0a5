# RUN: not axon-opt %s 2>&1 | filecheck %s
# CHECK: shape_mismatch.py:5:14: error: cannot broadcast operand #1 (rhs) dim 0 (K) against operand #0 (lhs) dim 0 (M)

def f(x: f32[M], y: f32[K]):
    return x + y
