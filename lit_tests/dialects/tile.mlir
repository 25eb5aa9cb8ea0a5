// The tile dialect: a tiled matmul (grid over output tiles, a sequential loop carrying the
// accumulator, masked loads and stores for remainder tiles) and a row-wise kernel with a
// parallel loop. Parse, print, and round trip through the generic syntax.
//
// RUN: axon-opt %s | axon-opt | filecheck %s
// RUN: AXON_ROUNDTRIP

// CHECK-LABEL: func.func @matmul(
// CHECK:         %{{.*}} = tile.kernel %a, %b {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"], params = ["BM", "BN", "BK"], assume = ["BM >= 1", "BN >= 1", "BK >= 1"]} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: !ax.tensor<[M, K], f32>, %{{.*}}: !ax.tensor<[K, N], f32>):
// CHECK-NEXT:      %{{.*}} = tile.full {value = 0.000000e+00 : f64, shape = ["BM", "BN"], dtype = f32, space = "psum"} : !ax.tensor<[BM, BN], f32>
// CHECK-NEXT:      %{{.*}} = tile.for %{{.*}} {iv = "k", extent = "ceildiv(K, BK)"} : (!ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32> {
// CHECK:             %{{.*}} = tile.load %{{.*}} {offsets = ["i*BM", "k*BK"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, BK], f32>
// CHECK:             %{{.*}} = ax.matmul
// CHECK:             tile.yield %{{.*}} : !ax.tensor<[BM, BN], f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      tile.store %{{.*}} {result = 0 : i64, offsets = ["i*BM", "j*BN"]} : !ax.tensor<[BM, BN], f32>
// CHECK-NEXT:      tile.yield
// CHECK-NEXT:    }
func.func @matmul(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
  %c = tile.kernel %a, %b {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"], params = ["BM", "BN", "BK"], assume = ["BM >= 1", "BN >= 1", "BK >= 1"]} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[K, N], f32>):
    %zero = tile.full {value = 0.0 : f64, shape = ["BM", "BN"], dtype = f32, space = "psum"} : !ax.tensor<[BM, BN], f32>
    %acc = tile.for %zero {iv = "k", extent = "ceildiv(K, BK)"} : (!ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32> {
    ^bb1(%in: !ax.tensor<[BM, BN], f32>):
      %p = tile.load %x {offsets = ["i*BM", "k*BK"], shape = ["BM", "BK"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, BK], f32>
      %q = tile.load %y {offsets = ["k*BK", "j*BN"], shape = ["BK", "BN"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[K, N], f32>) -> !ax.tensor<[BK, BN], f32>
      %r = ax.matmul %p, %q : (!ax.tensor<[BM, BK], f32>, !ax.tensor<[BK, BN], f32>) -> !ax.tensor<[BM, BN], f32>
      %s = ax.add %in, %r : (!ax.tensor<[BM, BN], f32>, !ax.tensor<[BM, BN], f32>) -> !ax.tensor<[BM, BN], f32>
      tile.yield %s : !ax.tensor<[BM, BN], f32>
    }
    tile.store %acc {result = 0, offsets = ["i*BM", "j*BN"]} : !ax.tensor<[BM, BN], f32>
    tile.yield
  }
  func.return %c : !ax.tensor<[M, N], f32>
}

// CHECK-LABEL: func.func @scale_rows(
// CHECK:         tile.for {iv = "s", extent = "ceildiv(BM, SB)", kind = "parallel"} : () -> () {
// CHECK:           tile.store %{{.*}} {result = 0 : i64, offsets = ["i*BM + s*SB", "0"]} : !ax.tensor<[SB, N], bf16>
func.func @scale_rows(%x: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %c = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "SB"], assume = ["SB >= 1", "BM >= SB", "BM mod SB == 0"]} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%xg: !ax.tensor<[M, N], bf16>):
    tile.for {iv = "s", extent = "ceildiv(BM, SB)", kind = "parallel"} : () -> () {
      %t = tile.load %xg {offsets = ["i*BM + s*SB", "0"], shape = ["SB", "N"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[SB, N], bf16>
      %two = ax.constant {value = 2.0 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
      %u = ax.mul %t, %two : (!ax.tensor<[SB, N], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[SB, N], bf16>
      tile.store %u {result = 0, offsets = ["i*BM + s*SB", "0"]} : !ax.tensor<[SB, N], bf16>
      tile.yield
    }
    tile.yield
  }
  func.return %c : !ax.tensor<[M, N], bf16>
}
