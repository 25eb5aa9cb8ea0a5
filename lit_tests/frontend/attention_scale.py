# RUN: axon-opt %s | filecheck %s
# A size symbol used as a number: a 0-d ax.generic in the other operand's dtype.

def scaled(q: bf16[S, D], k: bf16[S, D]):
    return q @ k.T / sqrt(D)

# CHECK-LABEL: func.func @scaled(%0: !ax.tensor<[S, D], bf16>, %1: !ax.tensor<[S, D], bf16>) -> !ax.tensor<[S, S], bf16>
# CHECK-NEXT:    %2 = ax.transpose %1 {perm = array<i64: 1, 0>} : (!ax.tensor<[S, D], bf16>) -> !ax.tensor<[D, S], bf16>
# CHECK-NEXT:    %3 = ax.matmul %0, %2 : (!ax.tensor<[S, D], bf16>, !ax.tensor<[D, S], bf16>) -> !ax.tensor<[S, S], bf16>
# CHECK-NEXT:    %4 = ax.generic {form = "out[] = cast(idx(D), bf16)", dtype = bf16} : () -> !ax.tensor<[], bf16>
# CHECK-NEXT:    %5 = ax.sqrt %4 : (!ax.tensor<[], bf16>) -> !ax.tensor<[], bf16>
# CHECK-NEXT:    %6 = ax.div %3, %5 : (!ax.tensor<[S, S], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[S, S], bf16>
# CHECK-NEXT:    func.return %6 : !ax.tensor<[S, S], bf16>
