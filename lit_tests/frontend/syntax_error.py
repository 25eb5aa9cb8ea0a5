# RUN: not axon-opt %s 2>&1 | filecheck %s
# CHECK: syntax_error.py:6:5: error: invalid syntax: unexpected 'return'

def f(x: f32[M]):
    y = (x +
    return y
