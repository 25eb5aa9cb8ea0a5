// RUN: axon-opt %s -p lower-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s -p lower-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// `ax.cast` between floats. A cast that widens (bf16 -> f32) reads its operand's tile: no
// instruction, and the matmul of the fp32 operands runs in fp32 on TensorE (the bf16 tile
// copied exactly into fp32, the fp32 vector not rounded to bf16). A cast that narrows
// (f32 -> bf16) is a `tensor_copy` into bf16, which rounds as the cast does; the one back to
// f32 is the bf16 tile read by the next instruction. Both proved equal to the tiled kernels
// (over the reals a float cast is the identity; the simulator checks the rounding).

// REPORT: lower-nki: @mv_rows_k: proved (proof {{[0-9a-f]+}})
// REPORT: lower-nki: @nc_rows: proved (proof {{[0-9a-f]+}})
// CHECK-LABEL: func.func @mv_rows_k
// CHECK: %[[V:.*]] = nki.dma_copy %{{.*}} {buffer = "sbuf", shape = ["BK", "1"]} : (!ax.tensor<[BK], f32>) -> !ax.tensor<[BK, 1], f32>
// CHECK: %[[X:.*]] = nki.tensor_copy %{{.*}} {buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, BK], f32>
// CHECK: %[[T:.*]] = nki.nc_transpose %[[X]] {buffer = "psum"}
// CHECK: %[[S:.*]] = nki.tensor_copy %[[T]] {buffer = "sbuf"} : (!ax.tensor<[BK, BM], f32>) -> !ax.tensor<[BK, BM], f32>
// CHECK: nki.nc_matmul %[[S]], %[[V]] {buffer = "psum"} : (!ax.tensor<[BK, BM], f32>, !ax.tensor<[BK, 1], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK-LABEL: func.func @nc_rows
// CHECK: %[[L:.*]] = tile.load
// CHECK-NEXT: %[[R:.*]] = nki.tensor_copy %[[L]] {buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], bf16>
// CHECK-NEXT: nki.tensor_tensor %[[L]], %[[R]] {op = "subtract", buffer = "sbuf", dtype = f32}
func.func @mv_rows_k(%0: !ax.tensor<[M, K], bf16>, %1: !ax.tensor<[K], f32>) -> !ax.tensor<[M], f32> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128", "6*BK <= 212984"]} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], f32>) -> !ax.tensor<[M], f32> {
  ^bb0(%3: !ax.tensor<[M, K], bf16>, %4: !ax.tensor<[K], f32>):
    %5 = tile.full {value = 0.000000e+00 : f64, shape = ["BM"], dtype = f32, space = "psum"} : !ax.tensor<[BM], f32>
    %6 = tile.for %5 {iv = "k", extent = "(BK + K - 1) floordiv BK"} : (!ax.tensor<[BM], f32>) -> !ax.tensor<[BM], f32> {
    ^bb0(%7: !ax.tensor<[BM], f32>):
      %8 = tile.load %3 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %9 = tile.load %4 {offsets = ["BK*k"], shape = ["BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[K], f32>) -> !ax.tensor<[BK], f32>
      %10 = ax.cast %8 {dtype = f32} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, BK], f32>
      %11 = ax.matmul %10, %9 : (!ax.tensor<[BM, BK], f32>, !ax.tensor<[BK], f32>) -> !ax.tensor<[BM], f32>
      %12 = ax.add %7, %11 : (!ax.tensor<[BM], f32>, !ax.tensor<[BM], f32>) -> !ax.tensor<[BM], f32>
      tile.yield %12 : !ax.tensor<[BM], f32>
    }
    tile.store %6 {result = 0 : i64, offsets = ["BM*i"]} : !ax.tensor<[BM], f32>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M], f32>
}

func.func @nc_rows(%0: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*N <= 212984"]} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%2: !ax.tensor<[M, N], f32>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, N], f32>
    %4 = ax.cast %3 {dtype = bf16} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], bf16>
    %5 = ax.cast %4 {dtype = f32} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], f32>
    %6 = ax.sub %3, %5 : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32>
    tile.store %6 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], f32>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, N], f32>
}
