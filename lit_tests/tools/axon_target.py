# `axon PROGRAM --target xe_triton` and `--target nki`: mistakes are one line on stderr and
# exit 1, before any search.
# RUN: not axon %s --target xe_triton --profile h100 --no-cache 2>&1 | filecheck %s --check-prefix=PROFILE
# RUN: not axon %s --target xe_triton --sizes M=4,Q=4 --no-cache 2>&1 | filecheck %s --check-prefix=SIZES
# RUN: not axon %s --target xe_triton --sizes M=0 --no-cache 2>&1 | filecheck %s --check-prefix=ZERO
# RUN: not axon %s --target xe_triton -o %s 2>&1 | filecheck %s --check-prefix=SAME
# RUN: not axon %s --target cuda 2>&1 | filecheck %s --check-prefix=TARGET
# RUN: not axon %s --target nki --profile h200 2>&1 | filecheck %s --check-prefix=NKI-PROFILE
# RUN: not axon %s --target nki --sizes M=4,Q=4 2>&1 | filecheck %s --check-prefix=NKI-SIZES
# RUN: not axon %s --target nki --max-candidates 0 2>&1 | filecheck %s --check-prefix=NKI-BOUND

def scale(x: f32[M, N], y: f32[M, N]):
    return x * y

# PROFILE: axon: error: --profile: unknown profile 'h100'; known: a770, b580, b60, b70, h200, max1550
# PROFILE-NOT: Traceback
# NKI-PROFILE: axon: error: --profile: 'h200' is not a NeuronCore profile; known: trn1, trn2
# NKI-SIZES: axon: error: --sizes: Q is not a size of @scale in {{.*}}axon_target.py (its sizes: M, N)
# NKI-BOUND: axon: error: --max-candidates 0: expected at least 1
# NKI-BOUND-NOT: Traceback
# SIZES: axon: error: --sizes: Q is not a size of @scale in {{.*}}axon_target.py (its sizes: M, N)
# ZERO: axon: error: --sizes 'M=0': sizes entry 'M=0' gives M the size 0; sizes are at least 1
# SAME: axon: error: refusing to overwrite the input file '{{.*}}axon_target.py' with -o
# TARGET: axon: error: argument --target: invalid choice: 'cuda' (choose from {{'?}}xe_triton{{'?}}, {{'?}}nki{{'?}})
