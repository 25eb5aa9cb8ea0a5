// The float-error check of what `propagate` emits: each emitted program runs in its own dtype on
// small inputs of realistic magnitude and its error against the exact (float64) result of the
// input program is printed in the report, next to the dtype's tolerance.
//
// RUN: axon-opt %s -p 'propagate{report=true}' 2>&1 >/dev/null | filecheck %s
// RUN: axon-opt %s -p 'propagate{report=true emit="top-k" top_k=3}' 2>&1 >/dev/null | filecheck %s --check-prefix=TOPK

// f32: the reordered contraction is within the f32 tolerance.
// CHECK: propagate: @sum_of_matmul: {{.*}}; cost {{.*}}us -> {{.*}}us; float error {{[0-9]\.[0-9]e-(0[6-9]|1[0-9])}} (f32 tolerance 2e-05); 0 rejected for float error
// TOPK: propagate: @sum_of_matmul: {{.*}}; float error {{[0-9.]+e-[0-9]+}} (f32 tolerance 2e-05), runners-up {{[0-9.]+e-[0-9]+}}, {{[0-9.]+e-[0-9]+}}; 0 rejected for float error
func.func @sum_of_matmul(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M], f32> {
  %y = ax.matmul %x, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  %s = ax.sum %y {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}

// bf16: the input program rounds x * s before the matmul, so its own error is part of the bound.
// CHECK: propagate: @row_scale: {{.*}}; float error {{[0-9.]+e-0[2-9]}} (bf16 tolerance 3e-02{{(; input program [0-9.]+e-[0-9]+, allowed [0-9.]+e-[0-9]+)?}}); 0 rejected for float error
func.func @row_scale(%x: !ax.tensor<[M, K], bf16>, %w: !ax.tensor<[K, N], bf16>, %s: !ax.tensor<[M, 1], bf16>) -> !ax.tensor<[M, N], bf16> {
  %xs = ax.mul %x, %s : (!ax.tensor<[M, K], bf16>, !ax.tensor<[M, 1], bf16>) -> !ax.tensor<[M, K], bf16>
  %y = ax.matmul %xs, %w : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16>
  func.return %y : !ax.tensor<[M, N], bf16>
}

// A large concrete dim: the check runs with it scaled down (4096 -> 256, `nugraph/shrink.py`).
// CHECK: propagate: @wide: {{.*}}; float error {{[0-9.]+e-[0-9]+}} (f32 tolerance 2e-05); 0 rejected for float error
func.func @wide(%x: !ax.tensor<[4096, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[4096], f32> {
  %y = ax.matmul %x, %w : (!ax.tensor<[4096, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[4096, N], f32>
  %s = ax.sum %y {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[4096, N], f32>) -> !ax.tensor<[4096], f32>
  func.return %s : !ax.tensor<[4096], f32>
}

// Concrete dims that no scaling keeps well-typed (4096 = 64 x 64): the check does not run, and
// the report says why.
// CHECK: propagate: @square: {{.*}}; float error not checked (its concrete dims do not scale down: {{.*}} breaks 'ax.reshape' {{.*}}); 0 rejected for float error
func.func @square(%x: !ax.tensor<[4096], f32>, %w: !ax.tensor<[64, N], f32>) -> !ax.tensor<[64, N], f32> {
  %r = ax.reshape %x {shape = ["64", "64"]} : (!ax.tensor<[4096], f32>) -> !ax.tensor<[64, 64], f32>
  %y = ax.matmul %r, %w : (!ax.tensor<[64, 64], f32>, !ax.tensor<[64, N], f32>) -> !ax.tensor<[64, N], f32>
  func.return %y : !ax.tensor<[64, N], f32>
}
