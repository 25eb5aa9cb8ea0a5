# RUN: axon-opt %s | filecheck %s
# Reductions: axis None/int/tuple with keepdims, mean, cumsum; negative axes normalize.

def reductions(x: f32[A, B, C]):
    return sum(x), max(x, axis=(0, -1), keepdims=True), x.mean(axis=-2), cumsum(x, axis=1)

# CHECK-LABEL: func.func @reductions(%x: !ax.tensor<[A, B, C], f32>) -> (!ax.tensor<[], f32>, !ax.tensor<[1, B, 1], f32>, !ax.tensor<[A, C], f32>, !ax.tensor<[A, B, C], f32>)
# CHECK-NEXT:    %0 = ax.sum %x {axes = array<i64: 0, 1, 2>, keepdims = false} : (!ax.tensor<[A, B, C], f32>) -> !ax.tensor<[], f32>
# CHECK-NEXT:    %1 = ax.reduce_max %x {axes = array<i64: 0, 2>, keepdims = true} : (!ax.tensor<[A, B, C], f32>) -> !ax.tensor<[1, B, 1], f32>
# CHECK-NEXT:    %2 = ax.mean %x {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[A, B, C], f32>) -> !ax.tensor<[A, C], f32>
# CHECK-NEXT:    %3 = ax.cumsum %x {axis = 1 : i64} : (!ax.tensor<[A, B, C], f32>) -> !ax.tensor<[A, B, C], f32>
# CHECK-NEXT:    func.return %0, %1, %2, %3 : !ax.tensor<[], f32>, !ax.tensor<[1, B, 1], f32>, !ax.tensor<[A, C], f32>, !ax.tensor<[A, B, C], f32>
