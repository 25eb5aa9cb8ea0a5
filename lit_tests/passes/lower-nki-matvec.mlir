// RUN: axon-opt %s -p lower-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s -p lower-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// A matrix-vector product `x @ v` (gemm_sum_scale's nu-graph variant `x @ sum(w, axis=1)`),
// one value per row: TensorE takes the transposed tile [BK, BM] as its stationary operand and
// the vector as the moving column [BK, 1], read into one element a partition by its DMA; the
// K loop accumulates the [BM, 1] products in PSUM (the emitter folds the add into the
// matmul). Proved equal to the tiled kernel.

// REPORT: lower-nki: @mv_rows_k: proved (proof {{[0-9a-f]+}})
// CHECK-LABEL: func.func @mv_rows_k
// CHECK: tile.full {value = 0.000000e+00 : f64, shape = ["BM", "1"], dtype = f32, space = "psum"} : !ax.tensor<[BM, 1], f32>
// CHECK: %[[V:.*]] = nki.dma_copy %{{.*}} {buffer = "sbuf", shape = ["BK", "1"]} : (!ax.tensor<[BK], bf16>) -> !ax.tensor<[BK, 1], bf16>
// CHECK: %[[T:.*]] = nki.nc_transpose %{{.*}} {buffer = "psum"} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BK, BM], bf16>
// CHECK: %[[S:.*]] = nki.tensor_copy %[[T]] {buffer = "sbuf"} : (!ax.tensor<[BK, BM], bf16>) -> !ax.tensor<[BK, BM], bf16>
// CHECK: %[[P:.*]] = nki.nc_matmul %[[S]], %[[V]] {buffer = "psum"} : (!ax.tensor<[BK, BM], bf16>, !ax.tensor<[BK, 1], bf16>) -> !ax.tensor<[BM, 1], f32>
// CHECK: nki.tensor_tensor %{{.*}}, %[[P]] {op = "add", buffer = "psum", dtype = f32}
// CHECK: nki.dma_copy %{{.*}} {buffer = "hbm", shape = ["BM"]} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM], bf16>
func.func @mv_rows_k(%0: !ax.tensor<[M, K], bf16>, %1: !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128", "4*BK <= 212984"]} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16> {
  ^bb0(%3: !ax.tensor<[M, K], bf16>, %4: !ax.tensor<[K], bf16>):
    %5 = tile.full {value = 0.000000e+00 : f64, shape = ["BM"], dtype = bf16, space = "psum"} : !ax.tensor<[BM], bf16>
    %6 = tile.for %5 {iv = "k", extent = "(BK + K - 1) floordiv BK"} : (!ax.tensor<[BM], bf16>) -> !ax.tensor<[BM], bf16> {
    ^bb0(%7: !ax.tensor<[BM], bf16>):
      %8 = tile.load %3 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %9 = tile.load %4 {offsets = ["BK*k"], shape = ["BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[K], bf16>) -> !ax.tensor<[BK], bf16>
      %10 = ax.matmul %8, %9 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BK], bf16>) -> !ax.tensor<[BM], bf16>
      %11 = ax.add %7, %10 : (!ax.tensor<[BM], bf16>, !ax.tensor<[BM], bf16>) -> !ax.tensor<[BM], bf16>
      tile.yield %11 : !ax.tensor<[BM], bf16>
    }
    tile.store %6 {result = 0 : i64, offsets = ["BM*i"]} : !ax.tensor<[BM], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M], bf16>
}
