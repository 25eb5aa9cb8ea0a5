# RUN: axon-opt %s | filecheck %s
# A size symbol used as a number: a 0-d ax.generic in the other operand's dtype.

def scaled(q: bf16[S, D], k: bf16[S, D]):
    return q @ k.T / sqrt(D)

# CHECK-LABEL: func.func @scaled(%q: !ax.tensor<[S, D], bf16>, %k: !ax.tensor<[S, D], bf16>) -> !ax.tensor<[S, S], bf16>
# CHECK-NEXT:    %0 = ax.transpose %k {perm = array<i64: 1, 0>} : (!ax.tensor<[S, D], bf16>) -> !ax.tensor<[D, S], bf16>
# CHECK-NEXT:    %1 = ax.matmul %q, %0 : (!ax.tensor<[S, D], bf16>, !ax.tensor<[D, S], bf16>) -> !ax.tensor<[S, S], bf16>
# CHECK-NEXT:    %2 = ax.generic {form = "out[] = cast(idx(D), bf16)", dtype = bf16} : () -> !ax.tensor<[], bf16>
# CHECK-NEXT:    %3 = ax.sqrt %2 : (!ax.tensor<[], bf16>) -> !ax.tensor<[], bf16>
# CHECK-NEXT:    %4 = ax.div %1, %3 : (!ax.tensor<[S, S], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[S, S], bf16>
# CHECK-NEXT:    func.return %4 : !ax.tensor<[S, S], bf16>
