// RUN: axon-opt %s --split-input-file -p lower-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s --split-input-file -p lower-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// Kernels the tile pass builds for trn2 (blocks of 128 partitions, a PSUM accumulator for the
// contraction) keep their grid, loops, loads and stores; their compute becomes nki instructions,
// and each lowering is proved equal to the tiled kernel before it replaces it.

// REPORT: lower-nki: @mul_rows: proved (proof {{[0-9a-f]+}})
// CHECK-LABEL: func.func @mul_rows
// CHECK-SAME: axon.nki_proof_id = "{{[0-9a-f]+}}"
// CHECK: tile.kernel
// CHECK: tile.load %{{.*}} {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"}
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "multiply", buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
// CHECK-NEXT: tile.store
// CHECK-NOT: ax.mul
func.func @mul_rows(%0: !ax.tensor<[M, N], bf16>, %1: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*N <= 212984"]} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, N], bf16>, %4: !ax.tensor<[M, N], bf16>):
    %5 = tile.load %3 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %6 = tile.load %4 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %7 = ax.mul %5, %6 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    tile.store %7 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}

// -----

// Softmax's rows: the max as tensor_reduce, x - max as tensor_scalar with the [P, 1] column,
// exp on ScalarE, the row sum, the division by the column written in bf16 for the store.
// REPORT: lower-nki: @softmax_rows: proved
// CHECK-LABEL: func.func @softmax_rows
// CHECK: nki.tensor_reduce %{{.*}} {op = "maximum", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, 1], f32>
// CHECK: nki.tensor_scalar %{{.*}}, %{{.*}} {op0 = "subtract", reverse0 = false, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, N], f32>
// CHECK: nki.activation %{{.*}} {func = "exp", buffer = "sbuf", dtype = f32}
// CHECK: nki.tensor_reduce %{{.*}} {op = "add", axes = array<i64: 1>
// CHECK: nki.tensor_scalar %{{.*}}, %{{.*}} {op0 = "divide", reverse0 = false, buffer = "sbuf", dtype = bf16}
// CHECK-NEXT: tile.store
func.func @softmax_rows(%0: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "2*N <= 212984"]} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%2: !ax.tensor<[M, N], bf16>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %4 = ax.reduce_max %3 {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %5 = ax.sub %3, %4 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, N], bf16>
    %6 = ax.exp %5 : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %7 = ax.sum %6 {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %8 = ax.div %6, %7 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, N], bf16>
    tile.store %8 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, N], bf16>
}

// -----

// rmsnorm: the mean is the row sum over the count (a reduction of ones: N is no constant); the
// weight row [N] is broadcast over the partitions by nc_matmul of a ones column into PSUM.
// REPORT: lower-nki: @rmsnorm_rows: proved
// CHECK-LABEL: func.func @rmsnorm_rows
// CHECK: nki.memset {value = 1.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, buffer = "sbuf"}
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "divide"
// CHECK: nki.activation %{{.*}} {func = "rsqrt"
// CHECK: nki.dma_copy %{{.*}} {buffer = "sbuf", shape = ["1", "N"]} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[1, N], bf16>
// CHECK: nki.memset {value = 1.000000e+00 : f64, shape = ["1", "BM"], dtype = bf16, buffer = "sbuf"}
// CHECK: nki.nc_matmul %{{.*}}, %{{.*}} {buffer = "psum"} : (!ax.tensor<[1, BM], bf16>, !ax.tensor<[1, N], bf16>) -> !ax.tensor<[BM, N], f32>
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "multiply", buffer = "sbuf", dtype = bf16}
func.func @rmsnorm_rows(%0: !ax.tensor<[M, N], bf16>, %1: !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*N <= 212984"]} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, N], bf16>, %4: !ax.tensor<[N], bf16>):
    %5 = tile.load %3 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %6 = tile.load %4 {offsets = ["0"], shape = ["N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[N], bf16>
    %7 = ax.mul %5, %5 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %8 = ax.mean %7 {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %9 = ax.constant {value = 1.000000e-06 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
    %10 = ax.add %8, %9 : (!ax.tensor<[BM, 1], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %11 = ax.rsqrt %10 : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %12 = ax.mul %5, %11 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, N], bf16>
    %13 = ax.mul %12, %6 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[N], bf16>) -> !ax.tensor<[BM, N], bf16>
    tile.store %13 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}

// -----

// A matmul with a loop over K: the accumulator is fp32 in PSUM, the left tile is transposed on
// TensorE (the stationary operand is [BK, BM]) and copied out of PSUM, the product joins the
// accumulator (the emitter prints it as nc_matmul accumulating in place), and the result is
// copied out of PSUM into SBUF in bf16 for the store.
// REPORT: lower-nki: @matmul_rows_k: proved
// CHECK-LABEL: func.func @matmul_rows_k
// CHECK: tile.full {value = 0.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, space = "psum"} : !ax.tensor<[BM, N], f32>
// CHECK: tile.for
// CHECK: nki.nc_transpose %{{.*}} {buffer = "psum"} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BK, BM], bf16>
// CHECK: nki.tensor_copy %{{.*}} {buffer = "sbuf"} : (!ax.tensor<[BK, BM], bf16>) -> !ax.tensor<[BK, BM], bf16>
// CHECK: nki.nc_matmul %{{.*}}, %{{.*}} {buffer = "psum"} : (!ax.tensor<[BK, BM], bf16>, !ax.tensor<[BK, N], bf16>) -> !ax.tensor<[BM, N], f32>
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "add", buffer = "psum", dtype = f32}
// CHECK: tile.yield %{{.*}} : !ax.tensor<[BM, N], f32>
// CHECK: nki.tensor_copy %{{.*}} {buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], bf16>
// CHECK-NEXT: tile.store
// REPORT: lower-nki: lowered 1 kernel(s)
func.func @matmul_rows_k(%0: !ax.tensor<[M, K], bf16>, %1: !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128", "4*N <= 2048", "BK <= 128", "N <= 512", "2*BK + 2*N <= 212984"]} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, K], bf16>, %4: !ax.tensor<[K, N], bf16>):
    %5 = tile.full {value = 0.000000e+00 : f64, shape = ["BM", "N"], dtype = bf16, space = "psum"} : !ax.tensor<[BM, N], bf16>
    %6 = tile.for %5 {iv = "k", extent = "(BK + K - 1) floordiv BK"} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16> {
    ^bb0(%7: !ax.tensor<[BM, N], bf16>):
      %8 = tile.load %3 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %9 = tile.load %4 {offsets = ["BK*k", "0"], shape = ["BK", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[BK, N], bf16>
      %10 = ax.matmul %8, %9 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BK, N], bf16>) -> !ax.tensor<[BM, N], bf16>
      %11 = ax.add %7, %10 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
      tile.yield %11 : !ax.tensor<[BM, N], bf16>
    }
    tile.store %6 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}

// -----

// RMSNorm's multipass kernel: the masked partial row sum of x * x (zero past the row's end: a
// zero-padded load) is a tensor_reduce into an fp32 accumulator, the mean's `/ idx(N)` the
// count of a ones tile [BM, N] (the emitter writes N), the write pass a parallel loop.
// REPORT: lower-nki: @rmsnorm_rows_multipass: proved
// CHECK-LABEL: func.func @rmsnorm_rows_multipass
// CHECK: tile.full {value = 0.000000e+00 : f64, shape = ["BM", "1"], dtype = f32, space = "sbuf"}
// CHECK: tile.for
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "multiply"
// CHECK-NEXT: nki.tensor_reduce %{{.*}} {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, BK], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK: nki.memset {value = 1.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, buffer = "sbuf"}
// CHECK-NEXT: nki.tensor_reduce
// CHECK-NEXT: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "divide"
// CHECK: tile.for {iv = "c", extent = "(BK + N - 1) floordiv BK", kind = "parallel"}
// CHECK-NOT: ax.generic
func.func @rmsnorm_rows_multipass(%0: !ax.tensor<[M, N], bf16>, %1: !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128", "6*BK + 2 <= 212984"]} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, N], bf16>, %4: !ax.tensor<[N], bf16>):
    %5 = ax.constant {value = 1.000000e-06 : f64, shape = [], dtype = bf16} : !ax.tensor<[], bf16>
    %6 = tile.full {value = 0.000000e+00 : f64, shape = ["BM", "1"], dtype = bf16, space = "sbuf"} : !ax.tensor<[BM, 1], bf16>
    %7 = tile.for %6 {iv = "k", extent = "(BK + N - 1) floordiv BK"} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16> {
    ^bb0(%8: !ax.tensor<[BM, 1], bf16>):
      %9 = tile.load %3 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %10 = ax.mul %9, %9 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %11 = ax.generic %10 {form = "out[d0 < BM, d1 < 1] = add over r0 in [0, BK) of select((idx(BK*k + r0) < idx(N)), in0[d0, r0], 0.0)", dtype = bf16} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, 1], bf16>
      %12 = ax.add %8, %11 : (!ax.tensor<[BM, 1], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16>
      tile.yield %12 : !ax.tensor<[BM, 1], bf16>
    }
    %13 = ax.generic %7 {form = "out[d0 < BM, d1 < 1] = (in0[d0, d1] / idx(N))", dtype = bf16} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %14 = ax.add %13, %5 : (!ax.tensor<[BM, 1], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %15 = ax.rsqrt %14 : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16>
    tile.for {iv = "c", extent = "(BK + N - 1) floordiv BK", kind = "parallel"} : () -> () {
      %16 = tile.load %3 {offsets = ["BM*i", "BK*c"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %17 = tile.load %4 {offsets = ["BK*c"], shape = ["BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[BK], bf16>
      %18 = ax.mul %16, %15 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %19 = ax.mul %18, %17 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BK], bf16>) -> !ax.tensor<[BM, BK], bf16>
      tile.store %19 {result = 0 : i64, offsets = ["BM*i", "BK*c"]} : !ax.tensor<[BM, BK], bf16>
      tile.yield
    }
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}
