// RUN: axon-opt %s --split-input-file -p lower-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s --split-input-file -p lower-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// A rank-1 tile [BM] of one value per row (a row sum without keepdims, its product by a scalar
// input) is held on chip as the column [BM, 1]: partition dim first, as NKI tiles are. A scalar
// input is broadcast over the partitions by a ones matmul; the column leaves for the rank-1
// result by a DMA reshape [BM, 1] -> [BM] that the store reads. Proved equal to the tiled kernel.
// The sum, a factor of a bf16 product, is written in bf16 where the tiled kernel rounds it.

// REPORT: lower-nki: @gemm_sum_scale_rows: proved (proof {{[0-9a-f]+}})
// CHECK-LABEL: func.func @gemm_sum_scale_rows
// CHECK: %[[SUM:.*]] = nki.tensor_reduce %{{.*}} {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], bf16>
// CHECK: nki.dma_copy %{{.*}} {buffer = "sbuf", shape = ["1", "1"]} : (!ax.tensor<[], bf16>) -> !ax.tensor<[1, 1], bf16>
// CHECK: nki.nc_matmul %{{.*}}, %{{.*}} {buffer = "psum"} : (!ax.tensor<[1, BM], bf16>, !ax.tensor<[1, 1], bf16>) -> !ax.tensor<[BM, 1], f32>
// CHECK: %[[S:.*]] = nki.tensor_copy %{{.*}} {buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK: %[[Y:.*]] = nki.tensor_tensor %[[SUM]], %[[S]] {op = "multiply", buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, 1], bf16>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], bf16>
// CHECK: %[[OUT:.*]] = nki.dma_copy %[[Y]] {buffer = "hbm", shape = ["BM"]} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM], bf16>
// CHECK-NEXT: tile.store %[[OUT]] {result = 0 : i64, offsets = ["BM*i"]} : !ax.tensor<[BM], bf16>
func.func @gemm_sum_scale_rows(%0: !ax.tensor<[M, K], bf16>, %1: !ax.tensor<[K, N], bf16>, %2: !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16> {
  %3 = tile.kernel %0, %1, %2 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "K <= 128", "N <= 512", "2*K + 2*N <= 212984"]} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M], bf16> {
  ^bb0(%4: !ax.tensor<[M, K], bf16>, %5: !ax.tensor<[K, N], bf16>, %6: !ax.tensor<[], bf16>):
    %7 = tile.load %4 {offsets = ["BM*i", "0"], shape = ["BM", "K"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, K], bf16>
    %8 = tile.load %5 {offsets = ["0", "0"], shape = ["K", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[K, N], bf16>
    %9 = tile.load %6 {offsets = [], shape = [], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[], bf16>) -> !ax.tensor<[], bf16>
    %10 = ax.matmul %7, %8 : (!ax.tensor<[BM, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %11 = ax.constant {value = 2.000000e+00 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
    %12 = ax.div %10, %11 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[BM, N], bf16>
    %13 = ax.sum %12 {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM], bf16>
    %14 = ax.mul %13, %9 : (!ax.tensor<[BM], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[BM], bf16>
    tile.store %14 {result = 0 : i64, offsets = ["BM*i"]} : !ax.tensor<[BM], bf16>
    tile.yield
  }
  func.return %3 : !ax.tensor<[M], bf16>
}

// -----

// the blocked row sum: the N loop carries the column [BM, 1], started at 0 in fp32
// REPORT: lower-nki: @row_sum_rows_k: proved
// CHECK-LABEL: func.func @row_sum_rows_k
// CHECK: tile.full {value = 0.000000e+00 : f64, shape = ["BM", "1"], dtype = f32, space = "sbuf"} : !ax.tensor<[BM, 1], f32>
// CHECK: tile.for %{{.*}} {iv = "k", extent = "(BK + N - 1) floordiv BK"} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK: nki.tensor_reduce %{{.*}} {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, 1], f32>
// CHECK: nki.dma_copy %{{.*}} {buffer = "hbm", shape = ["BM"]} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM], bf16>
func.func @row_sum_rows_k(%0: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M], bf16> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128", "2*BK + 2 <= 212984"]} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M], bf16> {
  ^bb0(%2: !ax.tensor<[M, N], bf16>):
    %3 = tile.full {value = 0.000000e+00 : f64, shape = ["BM"], dtype = bf16, space = "sbuf"} : !ax.tensor<[BM], bf16>
    %4 = tile.for %3 {iv = "k", extent = "(BK + N - 1) floordiv BK"} : (!ax.tensor<[BM], bf16>) -> !ax.tensor<[BM], bf16> {
    ^bb0(%5: !ax.tensor<[BM], bf16>):
      %6 = tile.load %2 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %7 = ax.generic %6 {form = "out[d0 < BM] = add over r0 in [0, BK) of select((idx(BK*k + r0) < idx(N)), in0[d0, r0], 0.0)", dtype = bf16} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM], bf16>
      %8 = ax.add %5, %7 : (!ax.tensor<[BM], bf16>, !ax.tensor<[BM], bf16>) -> !ax.tensor<[BM], bf16>
      tile.yield %8 : !ax.tensor<[BM], bf16>
    }
    tile.store %4 {result = 0 : i64, offsets = ["BM*i"]} : !ax.tensor<[BM], bf16>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M], bf16>
}
