# RUN: not axon-opt %s 2>&1 | filecheck %s
# CHECK: unknown_name.py:7:12: error: unknown name 'expp'; did you mean 'exp'?
# CHECK-NEXT: {{^}}    return expp(x)
# CHECK-NEXT: {{^}}           ^

def f(x: f32[M]):
    return expp(x)
