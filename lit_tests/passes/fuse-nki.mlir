// RUN: axon-opt %s --split-input-file -p fuse-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s --split-input-file -p fuse-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// Lowered kernels (`lower-nki`'s output for trn2 tilings) whose instructions fuse: each fusion is
// applied to a copy of the function and kept only when the verifier proves the copy equal to the
// function before; stderr names each rule, the instructions it matched and the verdict.

// Nothing to fuse: the function is left as it was, with an empty record.
// REPORT: fuse-nki: @mul_rows: fused 0; refuted 0; unknown 0
// CHECK-LABEL: func.func @mul_rows
// CHECK-SAME: axon.nki_fusions = []
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "multiply", buffer = "sbuf", dtype = bf16}
// CHECK-NEXT: tile.store
func.func @mul_rows(%0: !ax.tensor<[M, N], bf16>, %1: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> attributes {axon.nki_proof_id = "7aca7f9f2a2e1694"} {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*N <= 212984"]} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, N], bf16>, %4: !ax.tensor<[M, N], bf16>):
    %5 = tile.load %3 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %6 = tile.load %4 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %7 = nki.tensor_tensor %5, %6 {op = "multiply", buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    tile.store %7 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}

// -----

// Softmax's rows: x - max absorbed into exp's bias (the max negated by its reduction), and the
// row sum of exp read from the activation's reduction; both results are used, so the
// activation stays beside its activation_reduce (the emitter prints the two as one). The
// divide by the sum is a product by its reciprocal (a column), which ScalarE can run.
// REPORT: fuse-nki: @softmax_rows: activation-scale-bias (nki.activation <- nki.tensor_scalar): proved (proof {{[0-9a-f]+}})
// REPORT-NEXT: fuse-nki: @softmax_rows: reduce-negate (nki.tensor_scalar <- nki.tensor_reduce): proved
// REPORT-NEXT: fuse-nki: @softmax_rows: activation-reduce (nki.tensor_reduce <- nki.activation): proved
// REPORT-NEXT: fuse-nki: @softmax_rows: divide-reciprocal (nki.tensor_scalar): proved
// REPORT-NEXT: fuse-nki: @softmax_rows: fused 4 (activation-scale-bias, reduce-negate, activation-reduce, divide-reciprocal); refuted 0; unknown 0
// CHECK-LABEL: func.func @softmax_rows
// CHECK-SAME: axon.nki_fusions = ["activation-scale-bias: {{[0-9a-f]+}}", "reduce-negate: {{[0-9a-f]+}}", "activation-reduce: {{[0-9a-f]+}}", "divide-reciprocal: {{[0-9a-f]+}}"]
// CHECK: %[[X:.*]] = tile.load
// CHECK-NEXT: %[[NEGMAX:.*]] = nki.tensor_reduce %[[X]] {op = "maximum", axes = array<i64: 1>, negate = true, keepdims = true, buffer = "sbuf", dtype = f32}
// CHECK-NEXT: %[[E:.*]] = nki.activation %[[X]], %[[NEGMAX]] {func = "exp", buffer = "sbuf", dtype = f32}
// CHECK-NEXT: %[[S:.*]] = nki.activation_reduce %[[X]], %[[NEGMAX]] {func = "exp", reduce_op = "add", buffer = "sbuf", dtype = f32}
// CHECK-NEXT: %[[R:.*]] = nki.tensor_scalar %[[S]] {op0 = "divide", scalar0 = 1.000000e+00 : f64, reverse0 = true, buffer = "sbuf", dtype = f32}
// CHECK-NEXT: nki.tensor_scalar %[[E]], %[[R]] {op0 = "multiply", reverse0 = false, buffer = "sbuf", dtype = bf16}
// CHECK-NEXT: tile.store
func.func @softmax_rows(%0: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> attributes {axon.nki_proof_id = "e6d9fe9fb8949b23"} {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "2*N <= 212984"]} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%2: !ax.tensor<[M, N], bf16>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %4 = nki.tensor_reduce %3 {op = "maximum", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, 1], f32>
    %5 = nki.tensor_scalar %3, %4 {op0 = "subtract", reverse0 = false, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, N], f32>
    %6 = nki.activation %5 {func = "exp", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32>
    %7 = nki.tensor_reduce %6 {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %8 = nki.tensor_scalar %6, %7 {op0 = "divide", reverse0 = false, buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, N], bf16>
    tile.store %8 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, N], bf16>
}

// -----

// rmsnorm: the sum of squares is one activation_reduce with square; the product x * x, read
// nowhere else, is gone. rsqrt(sum / N + eps) is one activation: the count's reciprocal its
// scale, eps (two fp32 pieces) its bias, columns of constants (the emitter computes them once,
// before the grid).
// REPORT: fuse-nki: @rmsnorm_rows: square-reduce (nki.tensor_reduce <- nki.tensor_tensor): proved
// REPORT-NEXT: fuse-nki: @rmsnorm_rows: column-scale-bias (nki.activation <- nki.tensor_scalar <- nki.tensor_tensor): proved
// REPORT-NEXT: fuse-nki: @rmsnorm_rows: fused 2 (square-reduce, column-scale-bias); refuted 0; unknown 0
// CHECK-LABEL: func.func @rmsnorm_rows
// CHECK: %[[X:.*]] = tile.load
// CHECK-NEXT: tile.load
// CHECK-NEXT: %[[SUM:.*]] = nki.activation_reduce %[[X]] {func = "square", reduce_op = "add", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, 1], f32>
// CHECK: %[[COUNT:.*]] = nki.tensor_reduce
// CHECK-NEXT: %[[INV:.*]] = nki.tensor_scalar %[[COUNT]] {op0 = "divide", scalar0 = 1.000000e+00 : f64, reverse0 = true, buffer = "sbuf", dtype = f32}
// CHECK-NEXT: %[[EPS0:.*]] = nki.memset {value = 9.9999999747524271e-07 : f64, shape = ["BM", "1"], dtype = f32, buffer = "sbuf"}
// CHECK-NEXT: %[[EPS:.*]] = nki.tensor_scalar %[[EPS0]] {op0 = "add", scalar0 = 2.5247572468697606e-15 : f64, buffer = "sbuf", dtype = f32}
// CHECK-NEXT: nki.activation %[[SUM]], %[[EPS]], %[[INV]] {func = "rsqrt", buffer = "sbuf", dtype = f32}
// CHECK-NOT: nki.tensor_tensor %[[X]], %[[X]]
func.func @rmsnorm_rows(%0: !ax.tensor<[M, N], bf16>, %1: !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> attributes {axon.nki_proof_id = "17927402e5919f08"} {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*N <= 212984"]} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, N], bf16>, %4: !ax.tensor<[N], bf16>):
    %5 = tile.load %3 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %6 = tile.load %4 {offsets = ["0"], shape = ["N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[N], bf16>
    %7 = nki.tensor_tensor %5, %5 {op = "multiply", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, N], f32>
    %8 = nki.tensor_reduce %7 {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %9 = nki.memset {value = 1.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, buffer = "sbuf"} : !ax.tensor<[BM, N], f32>
    %10 = nki.tensor_reduce %9 {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %11 = nki.tensor_tensor %8, %10 {op = "divide", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %12 = nki.tensor_scalar %11 {op0 = "add", scalar0 = 9.9999999747524271e-07 : f64, reverse0 = false, op1 = "add", scalar1 = 2.5247572468697606e-15 : f64, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %13 = nki.activation %12 {func = "rsqrt", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %14 = nki.tensor_scalar %5, %13 {op0 = "multiply", reverse0 = false, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, N], f32>
    %15 = nki.dma_copy %6 {buffer = "sbuf", shape = ["1", "N"]} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[1, N], bf16>
    %16 = nki.memset {value = 1.000000e+00 : f64, shape = ["1", "BM"], dtype = bf16, buffer = "sbuf"} : !ax.tensor<[1, BM], bf16>
    %17 = nki.nc_matmul %16, %15 {buffer = "psum"} : (!ax.tensor<[1, BM], bf16>, !ax.tensor<[1, N], bf16>) -> !ax.tensor<[BM, N], f32>
    %18 = nki.tensor_tensor %14, %17 {op = "multiply", buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], bf16>
    tile.store %18 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}

// -----

// A matmul's stationary operand: the bf16 tile transposed by DMA instead of TensorE and a copy
// out of PSUM.
// REPORT: fuse-nki: @matmul_rows_k: dma-transpose (nki.tensor_copy <- nki.nc_transpose): proved
// CHECK-LABEL: func.func @matmul_rows_k
// CHECK: %[[A:.*]] = tile.load
// CHECK: %[[B:.*]] = tile.load
// CHECK-NEXT: %[[T:.*]] = nki.dma_transpose %[[A]] {buffer = "sbuf"} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BK, BM], bf16>
// CHECK-NEXT: nki.nc_matmul %[[T]], %[[B]] {buffer = "psum"}
// CHECK-NOT: nki.nc_transpose
func.func @matmul_rows_k(%0: !ax.tensor<[M, K], bf16>, %1: !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> attributes {axon.nki_proof_id = "c03e3fed38dfe770"} {
  %2 = tile.kernel %0, %1 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128", "4*N <= 2048", "BK <= 128", "N <= 512", "2*BK + 2*N <= 212984"]} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%3: !ax.tensor<[M, K], bf16>, %4: !ax.tensor<[K, N], bf16>):
    %5 = tile.full {value = 0.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, space = "psum"} : !ax.tensor<[BM, N], f32>
    %6 = tile.for %5 {iv = "k", extent = "(BK + K - 1) floordiv BK"} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32> {
    ^bb0(%7: !ax.tensor<[BM, N], f32>):
      %8 = tile.load %3 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %9 = tile.load %4 {offsets = ["BK*k", "0"], shape = ["BK", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[BK, N], bf16>
      %10 = nki.nc_transpose %8 {buffer = "psum"} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BK, BM], bf16>
      %11 = nki.tensor_copy %10 {buffer = "sbuf"} : (!ax.tensor<[BK, BM], bf16>) -> !ax.tensor<[BK, BM], bf16>
      %12 = nki.nc_matmul %11, %9 {buffer = "psum"} : (!ax.tensor<[BK, BM], bf16>, !ax.tensor<[BK, N], bf16>) -> !ax.tensor<[BM, N], f32>
      %13 = nki.tensor_tensor %7, %12 {op = "add", buffer = "psum", dtype = f32} : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32>
      tile.yield %13 : !ax.tensor<[BM, N], f32>
    }
    %14 = nki.tensor_copy %6 {buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], bf16>
    tile.store %14 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %2 : !ax.tensor<[M, N], bf16>
}

// -----

// layernorm: the centred square summed by activation_reduce, whose bias takes -mean (so the
// centred rows x - mean are read only by the product by the rstd, and the two tensor_scalars
// chain into one: (x - mean) * rstd).
// REPORT: fuse-nki: @layernorm_rows: square-reduce (nki.tensor_reduce <- nki.tensor_tensor): proved
// REPORT-NEXT: fuse-nki: @layernorm_rows: activation-scale-bias (nki.activation_reduce <- nki.tensor_scalar): proved
// REPORT-NEXT: fuse-nki: @layernorm_rows: tensor-scalar-chain (nki.tensor_scalar <- nki.tensor_scalar): proved
// REPORT-NEXT: fuse-nki: @layernorm_rows: column-scale-bias (nki.activation <- nki.tensor_scalar <- nki.tensor_scalar <- nki.tensor_tensor): proved
// REPORT-NEXT: fuse-nki: @layernorm_rows: fused 4 (square-reduce, activation-scale-bias, tensor-scalar-chain, column-scale-bias); refuted 0; unknown 0
// CHECK-LABEL: func.func @layernorm_rows
// CHECK: %[[X:.*]] = tile.load
// CHECK: %[[MEAN:.*]] = nki.tensor_tensor %{{.*}}, %{{.*}} {op = "divide", buffer = "sbuf", dtype = f32}
// CHECK-NEXT: %[[NEG:.*]] = nki.tensor_scalar %[[MEAN]] {op0 = "multiply", scalar0 = -1.000000e+00 : f64, buffer = "sbuf", dtype = f32}
// CHECK-NEXT: nki.activation_reduce %[[X]], %[[NEG]] {func = "square", reduce_op = "add", buffer = "sbuf", dtype = f32}
// CHECK: %[[RSTD:.*]] = nki.activation %{{.*}} {func = "rsqrt", buffer = "sbuf", dtype = f32}
// CHECK-NEXT: nki.tensor_scalar %[[X]], %[[MEAN]], %[[RSTD]] {op0 = "subtract", reverse0 = false, op1 = "multiply", reverse1 = false, buffer = "sbuf", dtype = f32}
func.func @layernorm_rows(%0: !ax.tensor<[M, N], bf16>, %1: !ax.tensor<[N], bf16>, %2: !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %3 = tile.kernel %0, %1, %2 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "6*N <= 212984"]} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[N], bf16>, !ax.tensor<[N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%4: !ax.tensor<[M, N], bf16>, %5: !ax.tensor<[N], bf16>, %6: !ax.tensor<[N], bf16>):
    %7 = tile.load %4 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, N], bf16>
    %8 = tile.load %5 {offsets = ["0"], shape = ["N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[N], bf16>
    %9 = tile.load %6 {offsets = ["0"], shape = ["N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[N], bf16>
    %10 = nki.tensor_reduce %7 {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>) -> !ax.tensor<[BM, 1], f32>
    %11 = nki.memset {value = 1.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, buffer = "sbuf"} : !ax.tensor<[BM, N], f32>
    %12 = nki.tensor_reduce %11 {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %13 = nki.tensor_tensor %10, %12 {op = "divide", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %14 = nki.tensor_scalar %7, %13 {op0 = "subtract", reverse0 = false, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, N], f32>
    %15 = nki.tensor_tensor %14, %14 {op = "multiply", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32>
    %16 = nki.tensor_reduce %15 {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %17 = nki.memset {value = 1.000000e+00 : f64, shape = ["BM", "N"], dtype = f32, buffer = "sbuf"} : !ax.tensor<[BM, N], f32>
    %18 = nki.tensor_reduce %17 {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
    %19 = nki.tensor_tensor %16, %18 {op = "divide", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %20 = nki.tensor_scalar %19 {op0 = "add", scalar0 = 9.9999997473787516e-06 : f64, reverse0 = false, op1 = "add", scalar1 = 2.5262124748841319e-13 : f64, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %21 = nki.tensor_scalar %20 {op0 = "add", scalar0 = 1.6940658945086007e-21 : f64, reverse0 = false, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %22 = nki.activation %21 {func = "rsqrt", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
    %23 = nki.tensor_scalar %14, %22 {op0 = "multiply", reverse0 = false, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, N], f32>
    %24 = nki.dma_copy %8 {buffer = "sbuf", shape = ["1", "N"]} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[1, N], bf16>
    %25 = nki.memset {value = 1.000000e+00 : f64, shape = ["1", "BM"], dtype = bf16, buffer = "sbuf"} : !ax.tensor<[1, BM], bf16>
    %26 = nki.nc_matmul %25, %24 {buffer = "psum"} : (!ax.tensor<[1, BM], bf16>, !ax.tensor<[1, N], bf16>) -> !ax.tensor<[BM, N], f32>
    %27 = nki.tensor_tensor %23, %26 {op = "multiply", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32>
    %28 = nki.dma_copy %9 {buffer = "sbuf", shape = ["1", "N"]} : (!ax.tensor<[N], bf16>) -> !ax.tensor<[1, N], bf16>
    %29 = nki.memset {value = 1.000000e+00 : f64, shape = ["1", "BM"], dtype = bf16, buffer = "sbuf"} : !ax.tensor<[1, BM], bf16>
    %30 = nki.nc_matmul %29, %28 {buffer = "psum"} : (!ax.tensor<[1, BM], bf16>, !ax.tensor<[1, N], bf16>) -> !ax.tensor<[BM, N], f32>
    %31 = nki.tensor_tensor %27, %30 {op = "add", buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, N], f32>, !ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], bf16>
    tile.store %31 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>
    tile.yield
  }
  func.return %3 : !ax.tensor<[M, N], bf16>
}
