// Invalid xt IR: one diagnostic per chunk, located at the op at fault.
//
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep builtin.module

// grid and program ids differ in length
func.func @grid_ids(%x: !ax.tensor<[M, K], f32>) {
  %r = xt.kernel %x {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    xt.yield
  }
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.kernel': 2 program ids for a grid of 1 dims

// -----

// a block covers a tile parameter, not a size
func.func @block_of_param(%x: !ax.tensor<[M, K], f32>) {
  %r = xt.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"], blocks = ["B = BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    xt.yield
  }
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.kernel': block B covers BM, which uses BM: a block covers sizes only

// -----

// a load's result is not the block its shape says
func.func @load_shape(%x: !ax.tensor<[M, K], f32>) {
  %t = xt.load %x {offsets = ["0", "0"], shape = ["BM", "BK"], extents = ["BM", "K"], other = 0.0 : f64} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, K], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.load': result type is !ax.tensor<[BM, K], f32>, but the operands give !ax.tensor<[BM, BK], f32>

// -----

// a map does not reduce
func.func @map_reduces(%x: !ax.tensor<[BM, BK], f32>) {
  %t = xt.map %x {form = "out[d0 < BM] = add over r0 in [0, BK) of in0[d0, r0]", dtype = f32} : (!ax.tensor<[BM, BK], f32>) -> !ax.tensor<[BM], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.map': a map has no reduction (xt.reduce reduces)

// -----

// an unknown reduction
func.func @reduce_kind(%x: !ax.tensor<[BM, BK], f32>) {
  %t = xt.reduce %x {kind = "mul", axis = 1, extent = "K", keepdims = true} : (!ax.tensor<[BM, BK], f32>) -> !ax.tensor<[BM, 1], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.reduce': kind 'mul' is not one of add, max, min

// -----

// a dot accumulates into a float block of the product's shape
func.func @dot_acc(%a: !ax.tensor<[BM, BK], bf16>, %b: !ax.tensor<[BK, BN], bf16>, %c: !ax.tensor<[BM, BK], f32>) {
  %t = xt.dot %a, %b, %c : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BK, BN], bf16>, !ax.tensor<[BM, BK], f32>) -> !ax.tensor<[BM, BN], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.dot': the accumulator is [BM, BK], the product [BM, BN]

// -----

// a store has an extent per dim
func.func @store_extents(%x: !ax.tensor<[BM, BN], f32>) {
  xt.store %x {result = 0, offsets = ["0", "0"], extents = ["BM"]} : !ax.tensor<[BM, BN], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.store': 1 extents for a block of rank 2

// -----

// a loop's body yields its carried values
func.func @for_yield(%x: !ax.tensor<[BM], f32>) {
  %r = xt.for %x {iv = "k", extent = "4"} : (!ax.tensor<[BM], f32>) -> !ax.tensor<[BM], f32> {
  ^bb0(%c: !ax.tensor<[BM], f32>):
    xt.yield
  }
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.for': the body must end in xt.yield of the carried values' types

// -----

// a split takes a block whose last dim is 2 (a row of pairs)
func.func @split_pairs(%x: !ax.tensor<[BM, B_N], f32>) {
  %t = xt.split %x {half = 0} : (!ax.tensor<[BM, B_N], f32>) -> !ax.tensor<[BM], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.split': xt.split takes a block whose last dim is 2, not [BM, B_N]

// -----

// a join takes two blocks of one type
func.func @join_types(%a: !ax.tensor<[BM, B_N], f32>, %b: !ax.tensor<[BM, B_K], f32>) {
  %t = xt.join %a, %b : (!ax.tensor<[BM, B_N], f32>, !ax.tensor<[BM, B_K], f32>) -> !ax.tensor<[BM, B_N, 2], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.join': xt.join takes two blocks of one type, not f32[BM, B_N] and f32[BM, B_K]

// -----

// a reshape keeps the element count
func.func @reshape_count(%x: !ax.tensor<[BM, B_N], f32>) {
  %t = xt.reshape %x {shape = ["BM", "B_N", "2"]} : (!ax.tensor<[BM, B_N], f32>) -> !ax.tensor<[BM, B_N, 2], f32>
  func.return
}
// CHECK: {{.*}}xt_invalid.mlir:{{[0-9]+}}:3: error: 'xt.reshape': cannot reshape operand #0 (input) [BM, B_N] (BM*B_N elements) to [BM, B_N, 2] (2*BM*B_N elements)
