// RUN: axon-opt %s -p verify-equivalence | filecheck %s
// RUN: axon-opt %s -p verify-equivalence 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// One marked pair per outcome. Proved: a transpose moved through a matmul. Refuted: the wrong
// reduction axis, with a counterexample that the interpreter reproduced. Refuted by type: a float
// result against a boolean one (never compared as numbers). Unknown: a true identity
// (tanh(x) = 2 sigmoid(2x) - 1) that the encoding cannot see, since tanh and sigmoid are
// uninterpreted: z3's candidates do not replay, so the verdict is unknown, never proved.
// Inconsistent: an assumption no size satisfies, under which anything would "hold".

// CHECK: func.func @proved_a
// CHECK-SAME: axon.verdict = "proved"
// CHECK-SAME: axon.proof_id = "{{[0-9a-f]+}}"
// CHECK: func.func @refuted_a
// CHECK-SAME: axon.verdict = "refuted"
// CHECK-SAME: axon.counterexample = "N={{[0-9]+}}: result #0[{{[0-9]+}}] is {{.*}} vs {{.*}}"
// CHECK: func.func @typed_a
// CHECK-SAME: axon.verdict = "refuted"
// CHECK-SAME: axon.counterexample = "N={{[0-9]+}}: result #0 has type [{{[0-9]+}}] f32 vs [{{[0-9]+}}] i1"
// CHECK: func.func @unknown_a
// CHECK-SAME: axon.verdict = "unknown"
// CHECK-SAME: axon.reason = "z3 found candidate counterexamples, but none replayed in the interpreter"
// CHECK: func.func @inconsistent_a
// CHECK-SAME: axon.verdict = "inconsistent"
// CHECK-SAME: axon.reason = "no sizes satisfy the assumptions (N < 1) with every size >= 1 and every dim >= 0"

// REPORT: verify-equivalence: @proved_a vs @proved_b: proved (proof {{[0-9a-f]+}})
// REPORT: verify-equivalence: @refuted_a vs @refuted_b: refuted (N=
// REPORT: verify-equivalence: @typed_a vs @typed_b: refuted (N=
// REPORT: verify-equivalence: @unknown_a vs @unknown_b: unknown (
// REPORT: verify-equivalence: @inconsistent_a vs @inconsistent_b: inconsistent (
// REPORT: verify-equivalence: tried 5, proved 1, refuted 2, unknown 1, inconsistent 1 in

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
func.func @typed_a(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> attributes {axon.equivalent_to = @typed_b} {
  func.return %x : !ax.tensor<[N], f32>
}
func.func @typed_b(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], i1> {
  %0 = ax.constant {value = 0.000000e+00 : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
  %1 = ax.ne %x, %0 : (!ax.tensor<[N], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[N], i1>
  func.return %1 : !ax.tensor<[N], i1>
}
func.func @unknown_a(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> attributes {axon.equivalent_to = @unknown_b} {
  %0 = ax.tanh %x : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
  func.return %0 : !ax.tensor<[N], f32>
}
func.func @unknown_b(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> {
  %0 = ax.constant {value = 2.000000e+00 : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
  %1 = ax.mul %0, %x : (!ax.tensor<[], f32>, !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
  %2 = ax.sigmoid %1 : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
  %3 = ax.mul %0, %2 : (!ax.tensor<[], f32>, !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
  %4 = ax.constant {value = 1.000000e+00 : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
  %5 = ax.sub %3, %4 : (!ax.tensor<[N], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[N], f32>
  func.return %5 : !ax.tensor<[N], f32>
}
func.func @inconsistent_a(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> attributes {axon.equivalent_to = @inconsistent_b, axon.assume = ["N < 1"]} {
  func.return %x : !ax.tensor<[N], f32>
}
func.func @inconsistent_b(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> {
  %0 = ax.constant {value = 2.000000e+00 : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
  %1 = ax.mul %x, %0 : (!ax.tensor<[N], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[N], f32>
  func.return %1 : !ax.tensor<[N], f32>
}
