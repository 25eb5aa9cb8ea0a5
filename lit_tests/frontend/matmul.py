# RUN: axon-opt %s | filecheck %s
# matmul and @ with NumPy rules (batched; a 1-D operand loses its promoted dim); w.T.

def linear(x: bf16[B, M, K], w: bf16[N, K], v: bf16[N]):
    return (x @ w.T) @ v, matmul(transpose(x, (0, 2, 1)), x)

# CHECK-LABEL: func.func @linear(%x: !ax.tensor<[B, M, K], bf16>, %w: !ax.tensor<[N, K], bf16>, %v: !ax.tensor<[N], bf16>) -> (!ax.tensor<[B, M], bf16>, !ax.tensor<[B, K, K], bf16>)
# CHECK-NEXT:    %0 = ax.transpose %w {perm = array<i64: 1, 0>} : (!ax.tensor<[N, K], bf16>) -> !ax.tensor<[K, N], bf16>
# CHECK-NEXT:    %1 = ax.matmul %x, %0 : (!ax.tensor<[B, M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[B, M, N], bf16>
# CHECK-NEXT:    %2 = ax.matmul %1, %v : (!ax.tensor<[B, M, N], bf16>, !ax.tensor<[N], bf16>) -> !ax.tensor<[B, M], bf16>
# CHECK-NEXT:    %3 = ax.transpose %x {perm = array<i64: 0, 2, 1>} : (!ax.tensor<[B, M, K], bf16>) -> !ax.tensor<[B, K, M], bf16>
# CHECK-NEXT:    %4 = ax.matmul %3, %x : (!ax.tensor<[B, K, M], bf16>, !ax.tensor<[B, M, K], bf16>) -> !ax.tensor<[B, K, K], bf16>
# CHECK-NEXT:    func.return %2, %4 : !ax.tensor<[B, M], bf16>, !ax.tensor<[B, K, K], bf16>
