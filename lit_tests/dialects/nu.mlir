// The nu dialect: a nu-graph with inputs, e-nodes carrying proofs, a class holding two
// equal e-nodes, a cycle (an e-node using its own class, so a forward reference), and the
// proofs table. Parse, print, and round trip through the generic syntax.
//
// RUN: axon-opt %s | axon-opt | filecheck %s
// RUN: AXON_ROUNDTRIP

// CHECK-LABEL: func.func @graph(
// CHECK:         %{{.*}} = nu.graph -> !ax.tensor<[M], f32> {
// CHECK-NEXT:      %x_c = nu.class %x : !ax.tensor<[M, K], f32>
// CHECK-NEXT:      %w_c = nu.class %w : !ax.tensor<[K, N], f32>
// CHECK-NEXT:      %0 = ax.matmul %x_c, %w_c {nu.proof = "input"} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
// CHECK-NEXT:      %y = nu.class %0 : !ax.tensor<[M, N], f32>
// CHECK-NEXT:      %1 = ax.sum %w_c {nu.proof = "p1", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[K, N], f32>) -> !ax.tensor<[K], f32>
// CHECK-NEXT:      %rowsum = nu.class %1 : !ax.tensor<[K], f32>
// CHECK-NEXT:      %2 = ax.sum %y {nu.proof = "input", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M], f32>
// CHECK-NEXT:      %3 = ax.matmul %x_c, %rowsum {nu.proof = "p1"} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M], f32>
// CHECK-NEXT:      %4 = ax.mul %s, %one {nu.proof = "p2"} : (!ax.tensor<[M], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[M], f32>
// CHECK-NEXT:      %s = nu.class %2, %3, %4 {best = #builtin.int<1>} : !ax.tensor<[M], f32>
// CHECK-NEXT:      %5 = ax.constant {nu.proof = "input", value = 1.000000e+00 : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
// CHECK-NEXT:      %one = nu.class %5 : !ax.tensor<[], f32>
// CHECK-NEXT:      nu.yield %s : !ax.tensor<[M], f32>
// CHECK-NEXT:    } {proofs = {p1 = "split: sum(matmul(x, w)) == matmul(x, sum(w))", p2 = "x * 1 == x"}}
func.func @graph(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %x_c = nu.class %x : !ax.tensor<[M, K], f32>
    %w_c = nu.class %w : !ax.tensor<[K, N], f32>
    %0 = ax.matmul %x_c, %w_c {nu.proof = "input"} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
    %y = nu.class %0 : !ax.tensor<[M, N], f32>
    %1 = ax.sum %w_c {nu.proof = "p1", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[K, N], f32>) -> !ax.tensor<[K], f32>
    %rowsum = nu.class %1 : !ax.tensor<[K], f32>
    %2 = ax.sum %y {nu.proof = "input", axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M], f32>
    %3 = ax.matmul %x_c, %rowsum {nu.proof = "p1"} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M], f32>
    %4 = ax.mul %s, %one {nu.proof = "p2"} : (!ax.tensor<[M], f32>, !ax.tensor<[], f32>) -> !ax.tensor<[M], f32>
    %s = nu.class %2, %3, %4 {best = #builtin.int<1>} : !ax.tensor<[M], f32>
    %5 = ax.constant {nu.proof = "input", value = 1.0, shape = [], dtype = f32} : !ax.tensor<[], f32>
    %one = nu.class %5 : !ax.tensor<[], f32>
    nu.yield %s : !ax.tensor<[M], f32>
  } {proofs = {p1 = "split: sum(matmul(x, w)) == matmul(x, sum(w))", p2 = "x * 1 == x"}}
  func.return %r : !ax.tensor<[M], f32>
}

// An empty proofs table may be left out when every e-node is an input.
// CHECK-LABEL: func.func @inputs_only(
// CHECK:         nu.graph -> !ax.tensor<[M], f32> {
// CHECK-NEXT:      %a_c = nu.class %a : !ax.tensor<[M], f32>
// CHECK-NEXT:      %0 = ax.exp %a_c {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
// CHECK-NEXT:      %e = nu.class %0 : !ax.tensor<[M], f32>
// CHECK-NEXT:      nu.yield %e : !ax.tensor<[M], f32>
// CHECK-NEXT:    }
func.func @inputs_only(%a: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
  %r = nu.graph -> !ax.tensor<[M], f32> {
    %a_c = nu.class %a : !ax.tensor<[M], f32>
    %0 = ax.exp %a_c {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
    %e = nu.class %0 : !ax.tensor<[M], f32>
    nu.yield %e : !ax.tensor<[M], f32>
  }
  func.return %r : !ax.tensor<[M], f32>
}
