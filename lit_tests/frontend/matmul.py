# RUN: axon-opt %s | filecheck %s
# matmul and @ with NumPy rules (batched; a 1-D operand loses its promoted dim); w.T.

def linear(x: bf16[B, M, K], w: bf16[N, K], v: bf16[N]):
    return (x @ w.T) @ v, matmul(transpose(x, (0, 2, 1)), x)

# CHECK-LABEL: func.func @linear(%0: !ax.tensor<[B, M, K], bf16>, %1: !ax.tensor<[N, K], bf16>, %2: !ax.tensor<[N], bf16>) -> (!ax.tensor<[B, M], bf16>, !ax.tensor<[B, K, K], bf16>)
# CHECK-NEXT:    %3 = ax.transpose %1 {perm = array<i64: 1, 0>} : (!ax.tensor<[N, K], bf16>) -> !ax.tensor<[K, N], bf16>
# CHECK-NEXT:    %4 = ax.matmul %0, %3 : (!ax.tensor<[B, M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[B, M, N], bf16>
# CHECK-NEXT:    %5 = ax.matmul %4, %2 : (!ax.tensor<[B, M, N], bf16>, !ax.tensor<[N], bf16>) -> !ax.tensor<[B, M], bf16>
# CHECK-NEXT:    %6 = ax.transpose %0 {perm = array<i64: 0, 2, 1>} : (!ax.tensor<[B, M, K], bf16>) -> !ax.tensor<[B, K, M], bf16>
# CHECK-NEXT:    %7 = ax.matmul %6, %0 : (!ax.tensor<[B, K, M], bf16>, !ax.tensor<[B, M, K], bf16>) -> !ax.tensor<[B, K, K], bf16>
# CHECK-NEXT:    func.return %5, %7 : !ax.tensor<[B, M], bf16>, !ax.tensor<[B, K, K], bf16>
