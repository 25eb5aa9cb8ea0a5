// RUN: axon-opt %s -p 'propagate{sizes="M=1024,K=8192,N=8192"}' | filecheck %s
// RUN: axon-opt %s -p 'propagate{emit="graph"}' | filecheck %s --check-prefix=GRAPH
// RUN: axon-opt %s -p 'propagate{report=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: axon-opt %s -p 'propagate{report=true max_iterations=1}' 2>&1 >/dev/null | filecheck %s --check-prefix=CUT
// RUN: axon-opt %s -p 'propagate{emit="top-k" top_k=2}' | filecheck %s --check-prefix=TOPK

// sum_j (x @ w)[i, j] is x @ rowsum(w): a reduction pushed into the producer's operand.
// CHECK-LABEL: func.func @sum_of_matmul(
// CHECK-NEXT:    %0 = ax.sum %w {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[K, N], f32>) -> !ax.tensor<[K], f32>
// CHECK-NEXT:    %1 = ax.matmul %x, %0 : (!ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M], f32>
// CHECK-NEXT:    func.return %1
// REPORT: propagate: @sum_of_matmul: iteration 1: {{[0-9]+}} classes, {{[0-9]+}} e-nodes; {{[0-9]+}} candidates, {{[0-9]+}} proved so far ({{.*}}s)
// REPORT: propagate: @sum_of_matmul: {{[0-9]+}} classes, {{[0-9]+}} e-nodes; {{[0-9]+}} candidates: {{[1-9][0-9]*}} proved, {{[0-9]+}} refuted ({{[0-9]+}} by a numeric test), 0 unknown, {{.*}} saturated, {{.*}}; cost {{.*}}us -> {{.*}}us
// CUT: propagate: @sum_of_matmul: {{.*}} 1 iteration(s), cut by the iteration limit
func.func @sum_of_matmul(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M], f32> {
  %y = ax.matmul %x, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  %s = ax.sum %y {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}

// The transpose is absorbed into the contraction's index map.
// CHECK-LABEL: func.func @transpose_matmul(
// CHECK-NEXT:    %0 = ax.generic %x, %w {form = "out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[r0, d0] * in1[r0, d1]", dtype = f32}
// CHECK-NEXT:    func.return %0
func.func @transpose_matmul(%x: !ax.tensor<[K, M], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
  %t = ax.transpose %x {perm = array<i64: 1, 0>} : (!ax.tensor<[K, M], f32>) -> !ax.tensor<[M, K], f32>
  %y = ax.matmul %t, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  func.return %y : !ax.tensor<[M, N], f32>
}

// A row scaling moves after the matmul (hoisted out of the reduction); both operand orders of
// the scaling are proved.
// GRAPH-LABEL: func.func @row_scale(
// GRAPH:         %[[MM:[0-9]+]] = ax.matmul %c0, %c1 {nu.proof = "p{{[0-9]+}}"}
// GRAPH-NEXT:    %[[MMC:c[0-9]+]] = nu.class %[[MM]] :
// GRAPH:         %[[IN:[0-9]+]] = ax.matmul %c3, %c1 {nu.proof = "input"}
// GRAPH-NEXT:    %[[AFTER:[0-9]+]] = ax.mul %[[MMC]], %c2 {nu.proof = "p{{[0-9]+}}"} : (!ax.tensor<[M, N], f32>, !ax.tensor<[M, 1], f32>)
// GRAPH:         nu.class %[[IN]], %[[AFTER]]
// GRAPH:         } {proofs = {p1 = "hoist: ax.matmul(ax.mul(c0, c2), c1) == ax.mul(ax.matmul(c0, c1), c2) [proved
func.func @row_scale(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>, %s: !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, N], f32> {
  %xs = ax.mul %x, %s : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, K], f32>
  %y = ax.matmul %xs, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  func.return %y : !ax.tensor<[M, N], f32>
}

// Pushing the sum through exp gives exp(sum(x)), which is false: it is refuted (by the numeric
// test before the solver) and never enters the graph.
// GRAPH-LABEL: func.func @sum_of_exp(
// GRAPH-NOT:     ax.exp %c{{[0-9]+}} {nu.proof = "p
// GRAPH:         nu.yield
// REPORT: propagate: @sum_of_exp: 3 classes, 3 e-nodes; 1 candidates: 0 proved, 1 refuted (1 by a numeric test), 0 unknown, 0 already present
func.func @sum_of_exp(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32> {
  %e = ax.exp %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  %s = ax.sum %e {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}

// top-k: the best program and a distinct runner-up, as separate functions.
// TOPK-LABEL: func.func @row_scale(
// TOPK-LABEL: func.func @row_scale_k1(
