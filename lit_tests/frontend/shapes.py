# RUN: axon-opt %s | filecheck %s
# Slicing (negative bounds count from the end, steps), concatenate, reshape with -1, transpose.

def shapes(x: f32[M, 2*D], y: f32[M, 3]):
    head = x[1:-1, ::2]
    both = concatenate([x, y], axis=-1)
    flat = reshape(both, [-1])
    return head, transpose(both, (1, 0)), flat, x[0]

# CHECK-LABEL: func.func @shapes(%x: !ax.tensor<[M, 2*D], f32>, %y: !ax.tensor<[M, 3], f32>) -> (!ax.tensor<[M - 2, D], f32>, !ax.tensor<[2*D + 3, M], f32>, !ax.tensor<[2*D*M + 3*M], f32>, !ax.tensor<[2*D], f32>)
# CHECK-NEXT:    %0 = ax.slice %x {start = ["1", "0"], stop = ["M - 1", "2*D"], step = ["1", "2"]} : (!ax.tensor<[M, 2*D], f32>) -> !ax.tensor<[M - 2, D], f32>
# CHECK-NEXT:    %1 = ax.concat %x, %y {axis = 1 : i64} : (!ax.tensor<[M, 2*D], f32>, !ax.tensor<[M, 3], f32>) -> !ax.tensor<[M, 2*D + 3], f32>
# CHECK-NEXT:    %2 = ax.reshape %1 {shape = ["2*D*M + 3*M"]} : (!ax.tensor<[M, 2*D + 3], f32>) -> !ax.tensor<[2*D*M + 3*M], f32>
# CHECK-NEXT:    %3 = ax.transpose %1 {perm = array<i64: 1, 0>} : (!ax.tensor<[M, 2*D + 3], f32>) -> !ax.tensor<[2*D + 3, M], f32>
# CHECK-NEXT:    %4 = ax.slice %x {start = ["0", "0"], stop = ["1", "2*D"], step = ["1", "1"]} : (!ax.tensor<[M, 2*D], f32>) -> !ax.tensor<[1, 2*D], f32>
# CHECK-NEXT:    %5 = ax.reshape %4 {shape = ["2*D"]} : (!ax.tensor<[1, 2*D], f32>) -> !ax.tensor<[2*D], f32>
# CHECK-NEXT:    func.return %0, %3, %2, %5 : !ax.tensor<[M - 2, D], f32>, !ax.tensor<[2*D + 3, M], f32>, !ax.tensor<[2*D*M + 3*M], f32>, !ax.tensor<[2*D], f32>
