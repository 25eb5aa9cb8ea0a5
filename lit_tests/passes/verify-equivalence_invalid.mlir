// RUN: not axon-opt %s --split-input-file -p verify-equivalence 2>&1 | filecheck %s
// A bad mark is a user error: one diagnostic, a non-zero exit, no traceback.

// CHECK: axon-opt: error: verify-equivalence: @a: axon.equivalent_to names @missing, which is not a function of this module
// CHECK-NOT: Traceback
func.func @a(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> attributes {axon.equivalent_to = @missing} {
  func.return %x : !ax.tensor<[N], f32>
}
