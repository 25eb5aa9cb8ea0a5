// A refuted pair exits 0 by default (the verdict is in the IR); with fail_on_refuted=true the
// pass still annotates and reports, then fails with one diagnostic naming the refuted pairs.
//
// RUN: axon-opt %s -p verify-equivalence 2>/dev/null | filecheck %s --check-prefix=DEFAULT
// RUN: not axon-opt %s -p 'verify-equivalence{fail_on_refuted=true}' 2>&1 | filecheck %s

// DEFAULT: func.func @refuted_a
// DEFAULT-SAME: axon.verdict = "refuted"
// CHECK: verify-equivalence: @refuted_a vs @refuted_b: refuted (N=
// CHECK: verify-equivalence: tried 1, proved 0, refuted 1
// CHECK-NEXT: axon-opt: error: verify-equivalence: refuted: @refuted_a vs @refuted_b (N={{[0-9]+}}: result #0
// CHECK-NOT: Traceback
func.func @refuted_a(%0: !ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32> attributes {axon.equivalent_to = @refuted_b} {
  %1 = ax.sum %0 {axes = array<i64: 0>, keepdims = false} : (!ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32>
  func.return %1 : !ax.tensor<[N], f32>
}
func.func @refuted_b(%0: !ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32> {
  %1 = ax.sum %0 {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[N, N], f32>) -> !ax.tensor<[N], f32>
  func.return %1 : !ax.tensor<[N], f32>
}
