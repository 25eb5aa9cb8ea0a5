// RUN: axon-opt %s --split-input-file --verify-diagnostics -p lower-nki | filecheck %s
// RUN: not axon-opt %s -p lower-nki 2>&1 | filecheck %s --check-prefix=EXIT
// A kernel the lowering cannot take is a user error: one diagnostic per chunk naming the op and
// what is expected; without --verify-diagnostics the first is printed, with a non-zero exit and
// no traceback.

// EXIT: axon-opt: error: lower-nki: not lowered to nki: 'ax.pow' has no NKI lowering yet
// EXIT-NOT: Traceback
// expected-error@unknown {{not lowered to nki: 'ax.pow' has no NKI lowering yet}}
// CHECK: lower-nki: not lowered to nki: 'ax.pow' has no NKI lowering yet
func.func @pow_rows(%0: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128"]} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%2: !ax.tensor<[M, N], f32>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, N], f32>
    %4 = ax.pow %3 {exponent = 3.0 : f64} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, N], f32>
    tile.store %4 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], f32>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, N], f32>
}

// -----

// A reduction over the partitions (a column sum) is not a row reduction.
// expected-error@unknown {{'ax.sum' over axes [0] (a row reduction over the last dim of a [P, F] tile, keepdims)}}
// CHECK: lower-nki: not lowered to nki: 'ax.sum' over axes [0] (a row reduction
func.func @column_sum(%0: !ax.tensor<[M, N], f32>) -> !ax.tensor<[1, N], f32> {
  %1 = tile.kernel %0 {program_ids = ["j"], grid = ["(BN + N - 1) floordiv BN"], params = ["BN"], assume = ["BN >= 1", "M <= 128"]} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[1, N], f32> {
  ^bb0(%2: !ax.tensor<[M, N], f32>):
    %3 = tile.load %2 {offsets = ["0", "BN*j"], shape = ["M", "BN"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, BN], f32>
    %4 = ax.sum %3 {axes = array<i64: 0>, keepdims = true} : (!ax.tensor<[M, BN], f32>) -> !ax.tensor<[1, BN], f32>
    tile.store %4 {result = 0 : i64, offsets = ["0", "BN*j"]} : !ax.tensor<[1, BN], f32>
    tile.yield
  }
  func.return %1 : !ax.tensor<[1, N], f32>
}

// -----

// A function holding more than its kernel and return.
// expected-error@unknown {{@two_ops is not one tile.kernel and its return (it holds 1 kernel(s) and ax.neg other ops)}}
// CHECK: lower-nki: not lowered to nki: @two_ops is not one tile.kernel
func.func @two_ops(%0: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128"]} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%2: !ax.tensor<[M, N], f32>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, N], f32>
    tile.store %3 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], f32>
    tile.yield
  }
  %4 = ax.neg %1 : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32>
  func.return %4 : !ax.tensor<[M, N], f32>
}

// -----

// Softmax's multipass kernel with its max over masked blocks changed to read 0.0 past the row's
// end: the column mask built on chip fills a sum's masked columns with 0.0 and a max's with
// column 0, no other; the refusal names the form.
// expected-error@unknown {{not lowered to nki: 'ax.generic' with the form `out[d0 < BM, d1 < 1] = max over r0 in [0, BK) of select((idx(r0) < idx(N)), in0[d0, r0], 0.0)`: a masked 'max' reduction whose masked columns read `0.0` has no NKI lowering (a sum's take 0.0, a max's or min's column 0)}}
// CHECK: lower-nki: not lowered to nki: 'ax.generic' with the form {{.*}} a masked 'max' reduction
func.func @softmax_rows_multipass(%0: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128", "8*BK + 2 <= 212984"]} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[M, N], bf16> {
  ^bb0(%2: !ax.tensor<[M, N], bf16>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, BK], bf16>
    %4 = ax.generic %3 {form = "out[d0 < BM, d1 < 1] = max over r0 in [0, BK) of select((idx(r0) < idx(N)), in0[d0, r0], 0.0)", dtype = bf16} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, 1], bf16>
    %5 = tile.for %4 {iv = "k", extent = "(BK + N - 1) floordiv BK"} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16> {
    ^bb0(%6: !ax.tensor<[BM, 1], bf16>):
      %7 = tile.load %2 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %8 = ax.generic %7 {form = "out[d0 < BM, d1 < 1] = max over r0 in [0, BK) of select((idx(BK*k + r0) < idx(N)), in0[d0, r0], in0[d0, 0])", dtype = bf16} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, 1], bf16>
      %9 = ax.max %6, %8 : (!ax.tensor<[BM, 1], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16>
      tile.yield %9 : !ax.tensor<[BM, 1], bf16>
    }
    %10 = tile.full {value = 0.000000e+00 : f64, shape = ["BM", "1"], dtype = bf16, space = "sbuf"} : !ax.tensor<[BM, 1], bf16>
    %11 = tile.for %10 {iv = "k1", extent = "(BK + N - 1) floordiv BK"} : (!ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16> {
    ^bb0(%12: !ax.tensor<[BM, 1], bf16>):
      %13 = tile.load %2 {offsets = ["BM*i", "BK*k1"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %14 = ax.sub %13, %5 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %15 = ax.exp %14 : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %16 = ax.generic %15 {form = "out[d0 < BM, d1 < 1] = add over r0 in [0, BK) of select((idx(BK*k1 + r0) < idx(N)), in0[d0, r0], 0.0)", dtype = bf16} : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, 1], bf16>
      %17 = ax.add %12, %16 : (!ax.tensor<[BM, 1], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, 1], bf16>
      tile.yield %17 : !ax.tensor<[BM, 1], bf16>
    }
    tile.for {iv = "c", extent = "(BK + N - 1) floordiv BK", kind = "parallel"} : () -> () {
      %18 = tile.load %2 {offsets = ["BM*i", "BK*c"], shape = ["BM", "BK"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[M, N], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %19 = ax.sub %18, %5 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %20 = ax.exp %19 : (!ax.tensor<[BM, BK], bf16>) -> !ax.tensor<[BM, BK], bf16>
      %21 = ax.div %20, %11 : (!ax.tensor<[BM, BK], bf16>, !ax.tensor<[BM, 1], bf16>) -> !ax.tensor<[BM, BK], bf16>
      tile.store %21 {result = 0 : i64, offsets = ["BM*i", "BK*c"]} : !ax.tensor<[BM, BK], bf16>
      tile.yield
    }
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, N], bf16>
}
