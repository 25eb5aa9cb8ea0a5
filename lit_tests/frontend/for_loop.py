# RUN: not axon-opt %s 2>&1 | filecheck %s
# CHECK: for_loop.py:5:5: error: 'for' loops are not part of the Axon subset

def f(x: f32[M]):
    for i in x:
        x = x + 1
    return x
