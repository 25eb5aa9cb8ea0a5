// RUN: not axon-opt %s -p verify-equivalence 2>&1 | filecheck %s
// CHECK: axon-opt: error: verify-equivalence: @a: axon.assume must be an array of strings
// CHECK-NOT: Traceback
func.func @a(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> attributes {axon.equivalent_to = @b, axon.assume = 3 : i64} {
  func.return %x : !ax.tensor<[N], f32>
}
func.func @b(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> {
  func.return %x : !ax.tensor<[N], f32>
}
