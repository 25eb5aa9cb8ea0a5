# RUN: axon-opt %s | filecheck %s
# Elementwise ops with NumPy broadcasting; a Python scalar takes the tensor's dtype.

def scale_shift(x: bf16[M, K], g: bf16[K], b: bf16[M, 1]):
    return relu(x * g + b) - 2

# CHECK-LABEL: func.func @scale_shift(%0: !ax.tensor<[M, K], bf16>, %1: !ax.tensor<[K], bf16>, %2: !ax.tensor<[M, 1], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %3 = ax.mul %0, %1 : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %4 = ax.add %3, %2 : (!ax.tensor<[M, K], bf16>, !ax.tensor<[M, 1], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %5 = ax.relu %4 : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %6 = ax.constant {value = 2.000000e+00 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
# CHECK-NEXT:    %7 = ax.sub %5, %6 : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    func.return %7 : !ax.tensor<[M, K], bf16>
