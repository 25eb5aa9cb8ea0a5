# RUN: axon-opt %s | filecheck %s
# Elementwise ops with NumPy broadcasting; a Python scalar takes the tensor's dtype.

def scale_shift(x: bf16[M, K], g: bf16[K], b: bf16[M, 1]):
    return relu(x * g + b) - 2

# CHECK-LABEL: func.func @scale_shift(%x: !ax.tensor<[M, K], bf16>, %g: !ax.tensor<[K], bf16>, %b: !ax.tensor<[M, 1], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %0 = ax.mul %x, %g : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %1 = ax.add %0, %b : (!ax.tensor<[M, K], bf16>, !ax.tensor<[M, 1], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %2 = ax.relu %1 : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    %3 = ax.constant {value = 2.000000e+00 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
# CHECK-NEXT:    %4 = ax.sub %2, %3 : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], bf16>
# CHECK-NEXT:    func.return %4 : !ax.tensor<[M, K], bf16>
