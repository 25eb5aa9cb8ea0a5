// RUN: not axon-opt %s -p propagate 2>&1 | filecheck %s --check-prefix=EXIT
// RUN: axon-opt %s --split-input-file --verify-diagnostics -p propagate | filecheck %s

// A printed nu-graph is untrusted input: every class membership is re-proved when it is read back,
// and one that does not check is a located error (one diagnostic, exit 1, no traceback).
// EXIT: propagate_untrusted_graph.mlir:{{[0-9]+}}:5: error: nu.class %c7: e-node 'ax.sum' (nu.proof = "p1") is not proved equal to its class
// EXIT-NOT: Traceback

// The graph `propagate{emit="graph"}` prints for gemm_sum_scale, with row sums of x added to the
// result class, citing a proof of something else.
func.func @forged_membership(%x: !ax.tensor<[M, K], bf16>, %w: !ax.tensor<[K, N], bf16>, %s: !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16> {
  %0 = nu.graph -> !ax.tensor<[M], bf16> {
    %c0 = nu.class %x : !ax.tensor<[M, K], bf16>
    %c1 = nu.class %w : !ax.tensor<[K, N], bf16>
    %c2 = nu.class %s : !ax.tensor<[], bf16>
    %1 = ax.matmul %c0, %c1 {nu.proof = "input"} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16>
    %c3 = nu.class %1 : !ax.tensor<[M, N], bf16>
    %2 = ax.constant {nu.proof = "input", value = 2.000000e+00 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
    %c4 = nu.class %2 : !ax.tensor<[], bf16>
    %3 = ax.div %c3, %c4 {nu.proof = "input"} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, N], bf16>
    %c5 = nu.class %3 : !ax.tensor<[M, N], bf16>
    %4 = ax.sum %c1 {nu.proof = "p3", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[K], bf16>
    %c11 = nu.class %4 : !ax.tensor<[K], bf16>
    %5 = ax.sum %c3 {nu.proof = "p1", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M], bf16>
    %6 = ax.generic %c0, %c1 {nu.proof = "p2", form = "out[d0 < M] = add over r0 in [0, N), r1 in [0, K) of in0[d0, r1] * in1[r1, r0]", dtype = bf16} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M], bf16>
    %7 = ax.matmul %c0, %c11 {nu.proof = "p3"} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16>
    %8 = ax.generic %c0, %c1 {nu.proof = "p5", form = "out[d0 < M] = add over r0 in [0, K), r1 in [0, N) of in0[d0, r0] * in1[r0, r1]", dtype = bf16} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M], bf16>
    %c8 = nu.class %5, %6, %7, %8 : !ax.tensor<[M], bf16>
    %9 = ax.mul %c0, %c11 {nu.proof = "p4"} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M, K], bf16>
    %c13 = nu.class %9 : !ax.tensor<[M, K], bf16>
    %10 = ax.sum %c13 {nu.proof = "p4", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M], bf16>
    %c14 = nu.class %10 : !ax.tensor<[M], bf16>
    %11 = ax.sum %c5 {nu.proof = "input", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M], bf16>
    %12 = ax.div %c8, %c4 {nu.proof = "p1"} : (!ax.tensor<[M], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16>
    %13 = ax.div %c14, %c4 {nu.proof = "p4"} : (!ax.tensor<[M], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16>
    %c6 = nu.class %11, %12, %13 : !ax.tensor<[M], bf16>
    %14 = ax.mul %c6, %c2 {nu.proof = "input"} : (!ax.tensor<[M], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16>
    // CHECK: propagate_untrusted_graph.mlir:[[# @LINE + 1]]:5: error: nu.class %c7: e-node 'ax.sum' (nu.proof = "p1") is not proved equal to its class (defined by e-node 'ax.mul' (nu.proof = "input")): refuted
    %15 = ax.sum %c0 {nu.proof = "p1", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M], bf16>
    %c7 = nu.class %14, %15 : !ax.tensor<[M], bf16>
    nu.yield %c7 : !ax.tensor<[M], bf16>
  } {proofs = {p1 = "hoist: ax.sum{axes=(1), keepdims=False}(ax.div(c3, c4)) == ax.div(ax.sum{axes=(1), keepdims=False}(c3), c4) [proved eeaafefe1ca03ede, 0.024s]", p2 = "fuse: ax.sum{axes=(1), keepdims=False}(ax.matmul(c0, c1)) == ax.generic{dtype=bf16}[out[d0 < M] = add over r0 in [0, N), r1 in [0, K) of in0[d0, r1] * in1[r1, r0]](c0, c1) [proved 4605000c4e7fd41f, 0.043s]", p3 = "split: ax.sum{axes=(1), keepdims=False}(ax.matmul(c0, c1)) == ax.matmul(c0, ax.sum{axes=(1), keepdims=False}(c1)) [proved 4605000c4e7fd41f, 0.006s]", p4 = "sink: ax.div(ax.matmul(c0, c11), c4) == ax.div(ax.sum{axes=(1), keepdims=False}(ax.mul(c0, c11)), c4) [proved 709511bbd68efdf0, 0.021s]", p5 = "fuse: ax.matmul(c0, ax.sum{axes=(1), keepdims=False}(c1)) == ax.generic{dtype=bf16}[out[d0 < M] = add over r0 in [0, K), r1 in [0, N) of in0[d0, r0] * in1[r0, r1]](c0, c1) [proved 4605000c4e7fd41f, 0.017s]"}}
  func.return %0 : !ax.tensor<[M], bf16>
}

// -----

// An e-node marked "input" that is not the first of its class is re-proved like any other.
func.func @forged_input(%x: !ax.tensor<[M, K], bf16>, %w: !ax.tensor<[K, N], bf16>, %s: !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16> {
  %0 = nu.graph -> !ax.tensor<[M], bf16> {
    %c0 = nu.class %x : !ax.tensor<[M, K], bf16>
    %c1 = nu.class %w : !ax.tensor<[K, N], bf16>
    %c2 = nu.class %s : !ax.tensor<[], bf16>
    %1 = ax.matmul %c0, %c1 {nu.proof = "input"} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16>
    %c3 = nu.class %1 : !ax.tensor<[M, N], bf16>
    %2 = ax.constant {nu.proof = "input", value = 2.000000e+00 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
    %c4 = nu.class %2 : !ax.tensor<[], bf16>
    %3 = ax.div %c3, %c4 {nu.proof = "input"} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, N], bf16>
    %c5 = nu.class %3 : !ax.tensor<[M, N], bf16>
    %4 = ax.sum %c1 {nu.proof = "p3", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[K], bf16>
    %c11 = nu.class %4 : !ax.tensor<[K], bf16>
    %5 = ax.sum %c3 {nu.proof = "p1", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M], bf16>
    %6 = ax.generic %c0, %c1 {nu.proof = "p2", form = "out[d0 < M] = add over r0 in [0, N), r1 in [0, K) of in0[d0, r1] * in1[r1, r0]", dtype = bf16} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M], bf16>
    %7 = ax.matmul %c0, %c11 {nu.proof = "p3"} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16>
    %8 = ax.generic %c0, %c1 {nu.proof = "p5", form = "out[d0 < M] = add over r0 in [0, K), r1 in [0, N) of in0[d0, r0] * in1[r0, r1]", dtype = bf16} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M], bf16>
    %c8 = nu.class %5, %6, %7, %8 : !ax.tensor<[M], bf16>
    %9 = ax.mul %c0, %c11 {nu.proof = "p4"} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M, K], bf16>
    %c13 = nu.class %9 : !ax.tensor<[M, K], bf16>
    %10 = ax.sum %c13 {nu.proof = "p4", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M], bf16>
    %c14 = nu.class %10 : !ax.tensor<[M], bf16>
    %11 = ax.sum %c5 {nu.proof = "input", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M], bf16>
    %12 = ax.div %c8, %c4 {nu.proof = "p1"} : (!ax.tensor<[M], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16>
    %13 = ax.div %c14, %c4 {nu.proof = "p4"} : (!ax.tensor<[M], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16>
    %c6 = nu.class %11, %12, %13 : !ax.tensor<[M], bf16>
    %14 = ax.mul %c6, %c2 {nu.proof = "input"} : (!ax.tensor<[M], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16>
    // CHECK: propagate_untrusted_graph.mlir:[[# @LINE + 1]]:5: error: nu.class %c7: e-node 'ax.sum' (nu.proof = "input") is not proved equal to its class (defined by e-node 'ax.mul' (nu.proof = "input")): refuted
    %15 = ax.sum %c0 {nu.proof = "input", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M], bf16>
    %c7 = nu.class %14, %15 : !ax.tensor<[M], bf16>
    nu.yield %c7 : !ax.tensor<[M], bf16>
  } {proofs = {p1 = "hoist: ax.sum{axes=(1), keepdims=False}(ax.div(c3, c4)) == ax.div(ax.sum{axes=(1), keepdims=False}(c3), c4) [proved eeaafefe1ca03ede, 0.024s]", p2 = "fuse: ax.sum{axes=(1), keepdims=False}(ax.matmul(c0, c1)) == ax.generic{dtype=bf16}[out[d0 < M] = add over r0 in [0, N), r1 in [0, K) of in0[d0, r1] * in1[r1, r0]](c0, c1) [proved 4605000c4e7fd41f, 0.043s]", p3 = "split: ax.sum{axes=(1), keepdims=False}(ax.matmul(c0, c1)) == ax.matmul(c0, ax.sum{axes=(1), keepdims=False}(c1)) [proved 4605000c4e7fd41f, 0.006s]", p4 = "sink: ax.div(ax.matmul(c0, c11), c4) == ax.div(ax.sum{axes=(1), keepdims=False}(ax.mul(c0, c11)), c4) [proved 709511bbd68efdf0, 0.021s]", p5 = "fuse: ax.matmul(c0, ax.sum{axes=(1), keepdims=False}(c1)) == ax.generic{dtype=bf16}[out[d0 < M] = add over r0 in [0, K), r1 in [0, N) of in0[d0, r0] * in1[r0, r1]](c0, c1) [proved 4605000c4e7fd41f, 0.017s]"}}
  func.return %0 : !ax.tensor<[M], bf16>
}

// -----

// A class whose only e-node reads the class itself denotes nothing.
func.func @undefinable(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> {
  %0 = nu.graph -> !ax.tensor<[N], f32> {
    %c0 = nu.class %x : !ax.tensor<[N], f32>
    %1 = ax.neg %c1 {nu.proof = "p1"} : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
    // CHECK: propagate_untrusted_graph.mlir:[[# @LINE + 1]]:5: error: nu.class %c1: no e-node of the class can define it
    %c1 = nu.class %1 : !ax.tensor<[N], f32>
    nu.yield %c1 : !ax.tensor<[N], f32>
  } {proofs = {p1 = "made up"}}
  func.return %0 : !ax.tensor<[N], f32>
}
