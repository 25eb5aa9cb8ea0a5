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
