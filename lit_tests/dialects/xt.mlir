// The xt dialect round-trips: custom syntax, then generic syntax parsed back, print alike.
// RUN: axon-opt %s --split-input-file | filecheck %s
// RUN: AXON_ROUNDTRIP

// CHECK-LABEL: func.func @softmax_rows
// CHECK: xt.kernel %{{.*}} {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"], blocks = ["B_N = N"]}
// CHECK: xt.load %{{.*}} {offsets = ["BM*i", "0"], shape = ["BM", "B_N"], extents = ["BM", "N"], other = 0.000000e+00 : f64}
// CHECK: xt.reduce %{{.*}} {kind = "max", axis = 1 : i64, extent = "N", keepdims = true}
// CHECK: xt.map %{{.*}}, %{{.*}} {form = "out[d0 < BM, d1 < B_N] = exp(in0[d0, d1] - in1[d0, 0])", dtype = f32}
// CHECK: xt.store %{{.*}} {result = 0 : i64, offsets = ["BM*i", "0"], extents = ["BM", "N"]}
func.func @softmax_rows(%x: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %r = xt.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"], blocks = ["B_N = N"]} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%xg: !ax.tensor<[M, N], f32>):
    %t = xt.load %xg {offsets = ["BM*i", "0"], shape = ["BM", "B_N"], extents = ["BM", "N"], other = 0.0 : f64} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, B_N], f32>
    %m = xt.reduce %t {kind = "max", axis = 1, extent = "N", keepdims = true} : (!ax.tensor<[BM, B_N], f32>) -> !ax.tensor<[BM, 1], f32>
    %e = xt.map %t, %m {form = "out[d0 < BM, d1 < B_N] = exp(in0[d0, d1] - in1[d0, 0])", dtype = f32} : (!ax.tensor<[BM, B_N], f32>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, B_N], f32>
    xt.store %e {result = 0, offsets = ["BM*i", "0"], extents = ["BM", "N"]} : !ax.tensor<[BM, B_N], f32>
    xt.yield
  }
  func.return %r : !ax.tensor<[M, N], f32>
}

// -----

// CHECK-LABEL: func.func @matmul_blocks_k
// CHECK: xt.full {value = 0.000000e+00 : f64, shape = ["BM", "BN"], dtype = f32} : !ax.tensor<[BM, BN], f32>
// CHECK: xt.for %{{.*}} {iv = "k", extent = "ceildiv(K, BK)"}
// CHECK: xt.dot %{{.*}}, %{{.*}}, %{{.*}} : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BK, BN], bf16>, !ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32>
// CHECK: xt.yield %{{.*}} : !ax.tensor<[BM, BN], f32>
func.func @matmul_blocks_k(%a: !ax.tensor<[M, K], bf16>, %b: !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %r = xt.kernel %a, %b {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"], params = ["BM", "BN", "BK"]} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%ag: !ax.tensor<[M, K], bf16>, %bg: !ax.tensor<[K, N], bf16>):
    %z = xt.full {value = 0.0 : f64, shape = ["BM", "BN"], dtype = f32} : !ax.tensor<[BM, BN], f32>
    %acc = xt.for %z {iv = "k", extent = "ceildiv(K, BK)"} : (!ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32> {
    ^bb1(%in: !ax.tensor<[BM, BN], f32>):
      %p = xt.load %ag {offsets = ["i*BM", "k*BK"], shape = ["BM", "BK"], extents = ["BM", "BK"], other = 0.0 : f64} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %q = xt.load %bg {offsets = ["k*BK", "j*BN"], shape = ["BK", "BN"], extents = ["BK", "BN"], other = 0.0 : f64} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[BK, BN], bf16>
      %s = xt.dot %p, %q, %in : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BK, BN], bf16>, !ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32>
      xt.yield %s : !ax.tensor<[BM, BN], f32>
    }
    xt.store %acc {result = 0, offsets = ["i*BM", "j*BN"], extents = ["BM", "BN"]} : !ax.tensor<[BM, BN], f32>
    xt.yield
  }
  func.return %r : !ax.tensor<[M, N], bf16>
}

// -----

// CHECK-LABEL: func.func @rope_rows
// CHECK: xt.reshape %{{.*}} {shape = ["BM", "B_H", "B_D2", "2"]} : (!ax.tensor<[BM, B_H, 2*B_D2], f32>) -> !ax.tensor<[BM, B_H, B_D2, 2], f32>
// CHECK: xt.split %{{.*}} {half = 0 : i64} : (!ax.tensor<[BM, B_H, B_D2, 2], f32>) -> !ax.tensor<[BM, B_H, B_D2], f32>
// CHECK: xt.split %{{.*}} {half = 1 : i64} : (!ax.tensor<[BM, B_H, B_D2, 2], f32>) -> !ax.tensor<[BM, B_H, B_D2], f32>
// CHECK: xt.join %{{.*}}, %{{.*}} : (!ax.tensor<[BM, B_H, B_D2], f32>, !ax.tensor<[BM, B_H, B_D2], f32>) -> !ax.tensor<[BM, B_H, B_D2, 2], f32>
// CHECK: xt.cumsum %{{.*}} {axis = 2 : i64} : (!ax.tensor<[BM, B_H, 2*B_D2], f32>) -> !ax.tensor<[BM, B_H, 2*B_D2], f32>
func.func @rope_rows(%x: !ax.tensor<[T, H, 2*D2], f32>) -> !ax.tensor<[T, H, 2*D2], f32> {
  %r = xt.kernel %x {program_ids = ["i"], grid = ["ceildiv(T, BM)"], params = ["BM"], blocks = ["B_H = H", "B_D2 = D2"]} : (!ax.tensor<[T, H, 2*D2], f32>) -> !ax.tensor<[T, H, 2*D2], f32> {
  ^bb0(%xg: !ax.tensor<[T, H, 2*D2], f32>):
    %t = xt.load %xg {offsets = ["BM*i", "0", "0"], shape = ["BM", "B_H", "2*B_D2"], extents = ["BM", "H", "2*D2"], other = 0.0 : f64} : (!ax.tensor<[T, H, 2*D2], f32>) -> !ax.tensor<[BM, B_H, 2*B_D2], f32>
    %p = xt.reshape %t {shape = ["BM", "B_H", "B_D2", "2"]} : (!ax.tensor<[BM, B_H, 2*B_D2], f32>) -> !ax.tensor<[BM, B_H, B_D2, 2], f32>
    %even = xt.split %p {half = 0} : (!ax.tensor<[BM, B_H, B_D2, 2], f32>) -> !ax.tensor<[BM, B_H, B_D2], f32>
    %odd = xt.split %p {half = 1} : (!ax.tensor<[BM, B_H, B_D2, 2], f32>) -> !ax.tensor<[BM, B_H, B_D2], f32>
    %j = xt.join %odd, %even : (!ax.tensor<[BM, B_H, B_D2], f32>, !ax.tensor<[BM, B_H, B_D2], f32>) -> !ax.tensor<[BM, B_H, B_D2, 2], f32>
    %s = xt.reshape %j {shape = ["BM", "B_H", "2*B_D2"]} : (!ax.tensor<[BM, B_H, B_D2, 2], f32>) -> !ax.tensor<[BM, B_H, 2*B_D2], f32>
    %c = xt.cumsum %s {axis = 2} : (!ax.tensor<[BM, B_H, 2*B_D2], f32>) -> !ax.tensor<[BM, B_H, 2*B_D2], f32>
    xt.store %c {result = 0, offsets = ["BM*i", "0", "0"], extents = ["BM", "H", "2*D2"]} : !ax.tensor<[BM, B_H, 2*B_D2], f32>
    xt.yield
  }
  func.return %r : !ax.tensor<[T, H, 2*D2], f32>
}
