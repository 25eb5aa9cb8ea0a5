// RUN: axon-opt %s -p build-nugraph | filecheck %s
// RUN: axon-opt %s -p build-nugraph | axon-opt -p 'propagate{sizes="M=1024,K=8192,N=8192"}' | filecheck %s --check-prefix=PROP
// RUN: axon-opt %s -p 'propagate{emit="graph" max_iterations=1}' | axon-opt -p 'propagate{emit="graph"}' | filecheck %s --check-prefix=AGAIN

// Every op becomes an e-node justified "input", in a class of its own.
// CHECK-LABEL: func.func @sum_of_matmul(
// CHECK-NEXT:    %0 = nu.graph -> !ax.tensor<[M], f32> {
// CHECK-NEXT:      %c0 = nu.class %x : !ax.tensor<[M, K], f32>
// CHECK-NEXT:      %c1 = nu.class %w : !ax.tensor<[K, N], f32>
// CHECK-NEXT:      %1 = ax.matmul %c0, %c1 {nu.proof = "input"}
// CHECK-NEXT:      %c2 = nu.class %1 : !ax.tensor<[M, N], f32>
// CHECK-NEXT:      %2 = ax.sum %c2 {nu.proof = "input", axes = array<i64: 1>, keepdims = false}
// CHECK-NEXT:      %c3 = nu.class %2 : !ax.tensor<[M], f32>
// CHECK-NEXT:      nu.yield %c3 : !ax.tensor<[M], f32>
// CHECK-NEXT:    } {proofs = {}}
// CHECK-NEXT:    func.return %0 : !ax.tensor<[M], f32>

// propagate continues from a nu-graph: the one it was given, or one it printed before.
// PROP-LABEL: func.func @sum_of_matmul(
// PROP-NEXT:    %0 = ax.sum %w {axes = array<i64: 1>, keepdims = false}
// PROP-NEXT:    %1 = ax.matmul %x, %0
// Read back, each e-node beside its class's first is proved again ("read-back"); the printed
// proof stays only where it justifies a class's defining e-node (the row sums of w).
// AGAIN-LABEL: func.func @sum_of_matmul(
// AGAIN:         ax.sum %c1 {nu.proof = "p2"
// AGAIN:         ax.generic %c0, %c1 {nu.proof = "p3"
// AGAIN:         ax.matmul %c0, %c{{[0-9]+}} {nu.proof = "p4"}
// AGAIN:       } {proofs = {p2 = "split: {{.*}}", p3 = "read-back: {{.*}} [proved {{.*}}", p4 = "read-back: {{.*}} [proved {{.*}}", p5 = "fuse: {{.*}}"}}
func.func @sum_of_matmul(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M], f32> {
  %y = ax.matmul %x, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  %s = ax.sum %y {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}
