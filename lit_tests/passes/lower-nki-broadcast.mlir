// RUN: axon-opt %s --split-input-file -p lower-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s --split-input-file -p lower-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// `ax.broadcast_to` in a tiled kernel: a [P, 1] column over the free dim read by an elementwise
// op is no instruction of its own (tensor_scalar reads the column); one read by anything else is
// a ones tile times the column; a row over the partitions is a ones column times the row (a
// matmul into PSUM). Each lowering is proved equal to the tiled kernel.

// reduce_broadcast_mul's rows: x * broadcast(sum(y)) is tensor_scalar by the row sum
// REPORT: lower-nki: @reduce_broadcast_mul_rows: proved (proof {{[0-9a-f]+}})
// CHECK-LABEL: func.func @reduce_broadcast_mul_rows
// CHECK: %[[SUM:.*]] = nki.tensor_reduce %{{.*}} {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, K], bf16>) -> !ax.tensor<[BM, 1], f32>
// CHECK-NEXT: nki.tensor_scalar %{{.*}}, %[[SUM]] {op0 = "multiply", reverse0 = false, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, K], bf16>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, K], f32>
// CHECK: nki.nc_matmul
// CHECK-NOT: ax.broadcast_to
func.func @reduce_broadcast_mul_rows(%0: !ax.tensor<[M, K], bf16>, %1: !ax.tensor<[M, K], bf16>, %2: !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %3 = tile.kernel %0, %1, %2 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "K <= 128", "N <= 512", "4*K + 2*N <= 212984"]} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%4: !ax.tensor<[M, K], bf16>, %5: !ax.tensor<[M, K], bf16>, %6: !ax.tensor<[K, N], bf16>):
    %7 = tile.load %4 {offsets = ["BM*i", "0"], shape = ["BM", "K"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, K], bf16>
    %8 = tile.load %5 {offsets = ["BM*i", "0"], shape = ["BM", "K"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, K], bf16>
    %9 = tile.load %6 {offsets = ["0", "0"], shape = ["K", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[K, N], bf16>
    %10 = ax.sum %8 {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[BM, K], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %11 = ax.broadcast_to %10 {shape = ["BM", "K"]} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, K], bf16>
    %12 = ax.mul %7, %11 : (!ax.tensor<[BM, K], bf16>, !ax.tensor<[BM, K], bf16>) -> !ax.tensor<[BM, K], bf16>
    %13 = ax.matmul %12, %9 : (!ax.tensor<[BM, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    tile.store %13 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %3 : !ax.tensor<[M, N], bf16>
}

// -----

// a column read by exp: a [P, F] tile of its own, ones times the column
// REPORT: lower-nki: @column_exp_rows: proved
// CHECK-LABEL: func.func @column_exp_rows
// CHECK: %[[ONES:.*]] = nki.memset {value = 1.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, buffer = "sbuf"}
// CHECK-NEXT: %[[COL:.*]] = nki.tensor_copy %{{.*}} {buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], f32>
// CHECK-NEXT: %[[B:.*]] = nki.tensor_scalar %[[ONES]], %[[COL]] {op0 = "multiply", buffer = "sbuf", dtype = f32}
// CHECK-NEXT: nki.activation %[[B]] {func = "exp"
func.func @column_exp_rows(%0: !ax.tensor<[M, 1], bf16>, %1: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "2*N + 2 <= 212984"]} : (!ax.tensor<[M, 1], bf16>, !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, 1], bf16>, %4: !ax.tensor<[M, N], bf16>):
    %5 = tile.load %3 {offsets = ["BM*i", "0"], shape = ["BM", "1"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, 1], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %6 = tile.load %4 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %7 = ax.broadcast_to %5 {shape = ["BM", "N"]} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, N], bf16>
    %8 = ax.exp %7 : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %9 = ax.mul %8, %6 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    tile.store %9 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}

// -----

// a row [N] over the partitions: a ones column [1, BM] times the row, into PSUM
// REPORT: lower-nki: @row_exp_rows: proved
// CHECK-LABEL: func.func @row_exp_rows
// CHECK: nki.dma_copy %{{.*}} {buffer = "sbuf", shape = ["1", "N"]} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[1, N], bf16>
// CHECK-NEXT: nki.memset {value = 1.000000e+00 : f64, shape = ["1", "BM"], dtype = bf16, buffer = "sbuf"}
// CHECK-NEXT: %[[B:.*]] = nki.nc_matmul %{{.*}}, %{{.*}} {buffer = "psum"} : (!ax.tensor<[1, BM], bf16>, !ax.tensor<[1, N], bf16>) -> !ax.tensor<[BM, N], f32>
// CHECK-NEXT: nki.activation %[[B]] {func = "exp"
func.func @row_exp_rows(%0: !ax.tensor<[N], bf16>, %1: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*N <= 212984"]} : (!ax.tensor<[N], bf16>, !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[N], bf16>, %4: !ax.tensor<[M, N], bf16>):
    %5 = tile.load %3 {offsets = ["0"], shape = ["N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[N], bf16>
    %6 = tile.load %4 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %7 = ax.broadcast_to %5 {shape = ["BM", "N"]} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %8 = ax.exp %7 : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %9 = ax.add %8, %6 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    tile.store %9 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}
