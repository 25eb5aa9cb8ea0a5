# RUN: not axon-opt %s 2>&1 | filecheck %s
# CHECK: wrong_arity.py:5:12: error: wrong arguments to 'softmax(x, axis=-1)': too many positional arguments

def f(x: f32[M]):
    return softmax(x, 0, 1)
