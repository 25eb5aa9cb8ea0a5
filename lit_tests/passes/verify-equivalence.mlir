// RUN: axon-opt %s -p verify-equivalence | filecheck %s
// RUN: axon-opt %s -p verify-equivalence 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// One marked pair per outcome. Proved: a transpose moved through a matmul. Refuted: the wrong
// reduction axis, with a counterexample that the interpreter reproduced. Unknown: a true identity
// (max over k of x[k] + c is max(x) + c) that needs a shift rule for max reductions, which the
// normalization does not have: z3's candidate does not replay, so the verdict is unknown, never
// proved.

// CHECK: func.func @proved_a
// CHECK-SAME: axon.verdict = "proved"
// CHECK-SAME: axon.proof_id = "{{[0-9a-f]+}}"
// CHECK: func.func @refuted_a
// CHECK-SAME: axon.verdict = "refuted"
// CHECK-SAME: axon.counterexample = "N={{[0-9]+}}: result #0[{{[0-9]+}}] is {{.*}} vs {{.*}}"
// CHECK: func.func @unknown_a
// CHECK-SAME: axon.verdict = "unknown"
// CHECK-SAME: axon.reason = "z3 found candidate counterexamples, but none replayed in the interpreter"

// REPORT: verify-equivalence: @proved_a vs @proved_b: proved (proof {{[0-9a-f]+}})
// REPORT: verify-equivalence: @refuted_a vs @refuted_b: refuted (N=
// REPORT: verify-equivalence: @unknown_a vs @unknown_b: unknown (
// REPORT: verify-equivalence: tried 3, proved 1, refuted 1, unknown 1 in

func.func @proved_a(%0: !ax.tensor<[M, K], f32>, %1: !ax.tensor<[K, N], f32>) -> !ax.tensor<[N, M], f32> attributes {axon.equivalent_to = @proved_b} {
  %2 = ax.matmul %0, %1 : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  %3 = ax.transpose %2 {perm = array<i64: 1, 0>} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[N, M], f32>
  func.return %3 : !ax.tensor<[N, M], f32>
}
func.func @proved_b(%0: !ax.tensor<[M, K], f32>, %1: !ax.tensor<[K, N], f32>) -> !ax.tensor<[N, M], f32> {
  %2 = ax.transpose %1 {perm = array<i64: 1, 0>} : (!ax.tensor<[K, N], f32>) -> !ax.tensor<[N, K], f32>
  %3 = ax.transpose %0 {perm = array<i64: 1, 0>} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[K, M], f32>
  %4 = ax.matmul %2, %3 : (!ax.tensor<[N, K], f32>, !ax.tensor<[K, M], f32>) -> !ax.tensor<[N, M], f32>
  func.return %4 : !ax.tensor<[N, M], f32>
}
func.func @refuted_a(%0: !ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32> attributes {axon.equivalent_to = @refuted_b} {
  %1 = ax.sum %0 {axes = array<i64: 0>, keepdims = false} : (!ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32>
  func.return %1 : !ax.tensor<[N], f32>
}
func.func @refuted_b(%0: !ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32> {
  %1 = ax.sum %0 {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32>
  func.return %1 : !ax.tensor<[N], f32>
}
func.func @unknown_a(%0: !ax.tensor<[N], f32>, %1: !ax.tensor<[], f32>) -> !ax.tensor<[], f32> attributes {axon.equivalent_to = @unknown_b} {
  %2 = ax.add %0, %1 : (!ax.tensor<[N], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[N], f32>
  %3 = ax.reduce_max %2 {axes = array<i64: 0>, keepdims = false} : (!ax.tensor<[N], f32>) -> !ax.tensor<[], f32>
  func.return %3 : !ax.tensor<[], f32>
}
func.func @unknown_b(%0: !ax.tensor<[N], f32>, %1: !ax.tensor<[], f32>) -> !ax.tensor<[], f32> {
  %2 = ax.reduce_max %0 {axes = array<i64: 0>, keepdims = false} : (!ax.tensor<[N], f32>) -> !ax.tensor<[], f32>
  %3 = ax.add %2, %1 : (!ax.tensor<[], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[], f32>
  func.return %3 : !ax.tensor<[], f32>
}
