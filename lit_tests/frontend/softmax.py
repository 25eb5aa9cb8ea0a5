# RUN: axon-opt %s | filecheck %s
# softmax expands into primitives and subtracts the row max first.

def row_softmax(x: f16[M, N]):
    return softmax(x, axis=-1)

# CHECK-LABEL: func.func @row_softmax(%0: !ax.tensor<[M, N], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    %1 = ax.reduce_max %0 {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, N], f16>) -> !ax.tensor<[M, 1], f16>
# CHECK-NEXT:    %2 = ax.sub %0, %1 : (!ax.tensor<[M, N], f16>, !ax.tensor<[M, 1], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    %3 = ax.exp %2 : (!ax.tensor<[M, N], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    %4 = ax.sum %3 {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, N], f16>) -> !ax.tensor<[M, 1], f16>
# CHECK-NEXT:    %5 = ax.div %3, %4 : (!ax.tensor<[M, N], f16>, !ax.tensor<[M, 1], f16>) -> !ax.tensor<[M, N], f16>
# CHECK-NEXT:    func.return %5 : !ax.tensor<[M, N], f16>
