// RUN: axon-opt %s --split-input-file -p lower-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s --split-input-file -p lower-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// Attention's `x / sqrt(D)`: the rank-0 tiles `cast(idx(D), bf16)` and its sqrt are kept as a
// chain and made, where the tile reads them, as a [BM, 1] fp32 column at the start of the body
// (the size as the row sum of a ones tile, which the emitter prints as a memset of D; then
// sqrt), read by tensor_scalar. Nothing rank-0 is left. Proved equal to the tiled kernel.

// REPORT: lower-nki: @f_rows: proved (proof {{[0-9a-f]+}})
// CHECK-LABEL: func.func @f_rows
// CHECK: ^bb0(%{{.*}}: !ax.tensor<[M, D], bf16>):
// CHECK-NEXT: %[[ONES:.*]] = nki.memset {value = 1.000000e+00 : f64, shape = ["BM", "D"], dtype = f32, buffer = "sbuf"} : !ax.tensor<[BM, D], f32>
// CHECK-NEXT: %[[D:.*]] = nki.tensor_reduce %[[ONES]] {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, D], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK-NEXT: %[[ROOT:.*]] = nki.activation %[[D]] {func = "sqrt", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK-NEXT: %[[X:.*]] = tile.load
// CHECK-NOT: {{ ax\.(generic|sqrt|div) }}
// CHECK: nki.tensor_scalar %[[X]], %[[ROOT]] {op0 = "divide", reverse0 = false, buffer = "sbuf", dtype = bf16} : (!ax.tensor<[BM, D], bf16>, !ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, D], bf16>
func.func @f_rows(%0: !ax.tensor<[M, D], bf16>) -> !ax.tensor<[M, D], bf16> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "2*D <= 212984"]} : (!ax.tensor<[M, D], bf16>) -> !ax.tensor<[M, D], bf16> {
  ^bb0(%2: !ax.tensor<[M, D], bf16>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "D"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, D], bf16>) -> !ax.tensor<[BM, D], bf16>
    %4 = ax.generic {form = "out[] = cast(idx(D), bf16)", dtype = bf16} : () -> !ax.tensor<[], bf16>
    %5 = ax.sqrt %4 : (!ax.tensor<[], bf16>) -> !ax.tensor<[], bf16>
    %6 = ax.div %3, %5 : (!ax.tensor<[BM, D], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[BM, D], bf16>
    tile.store %6 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, D], bf16>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, D], bf16>
}
