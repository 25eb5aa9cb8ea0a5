# RUN: axon-opt %s | filecheck %s
# softmax expands into primitives and subtracts the row max first.

def row_softmax(x: f16[M, N]):
    return softmax(x, axis=-1)

# CHECK-LABEL: func.func @row_softmax(%x: !ax.tensor<[M, N], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    %0 = ax.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, N], f16>) -> !ax.tensor<[M, 1], f16>
# CHECK-NEXT:    %1 = ax.sub %x, %0 : (!ax.tensor<[M, N], f16>, !ax.tensor<[M, 1], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    %2 = ax.exp %1 : (!ax.tensor<[M, N], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    %3 = ax.sum %2 {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, N], f16>) -> !ax.tensor<[M, 1], f16>
# CHECK-NEXT:    %4 = ax.div %2, %3 : (!ax.tensor<[M, N], f16>, !ax.tensor<[M, 1], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    func.return %4 : !ax.tensor<[M, N], f16>
