// The nki dialect round-trips: custom syntax, then generic syntax parsed back, print alike.
// RUN: axon-opt %s --split-input-file | filecheck %s
// RUN: AXON_ROUNDTRIP

// A matmul accumulated in PSUM over two K tiles, copied out through SBUF.
// CHECK-LABEL: func.func @matmul_two_k_tiles
// CHECK: nki.dma_copy %{{.*}} {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
// CHECK: nki.nc_matmul %{{.*}}, %{{.*}} {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>) -> !ax.tensor<[64, 512], f32>
// CHECK: nki.nc_matmul %{{.*}}, %{{.*}}, %{{.*}} {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>, !ax.tensor<[64, 512], f32>) -> !ax.tensor<[64, 512], f32>
// CHECK: nki.tensor_copy %{{.*}} {buffer = "sbuf", dtype = bf16, engine = "scalar"} : (!ax.tensor<[64, 512], f32>) -> !ax.tensor<[64, 512], bf16>
// CHECK: nki.dma_copy %{{.*}} {buffer = "hbm"} : (!ax.tensor<[64, 512], bf16>) -> !ax.tensor<[64, 512], bf16>
func.func @matmul_two_k_tiles(%a0: !ax.tensor<[128, 64], bf16>, %a1: !ax.tensor<[128, 64], bf16>, %b0: !ax.tensor<[128, 512], bf16>, %b1: !ax.tensor<[128, 512], bf16>) -> !ax.tensor<[64, 512], bf16> {
  %s0 = nki.dma_copy %a0 {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %s1 = nki.dma_copy %a1 {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %m0 = nki.dma_copy %b0 {buffer = "sbuf"} : (!ax.tensor<[128, 512], bf16>) -> !ax.tensor<[128, 512], bf16>
  %m1 = nki.dma_copy %b1 {buffer = "sbuf"} : (!ax.tensor<[128, 512], bf16>) -> !ax.tensor<[128, 512], bf16>
  %p = nki.nc_matmul %s0, %m0 {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>) -> !ax.tensor<[64, 512], f32>
  %q = nki.nc_matmul %s1, %m1, %p {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>, !ax.tensor<[64, 512], f32>) -> !ax.tensor<[64, 512], f32>
  %c = nki.tensor_copy %q {buffer = "sbuf", dtype = bf16, engine = "scalar"} : (!ax.tensor<[64, 512], f32>) -> !ax.tensor<[64, 512], bf16>
  %o = nki.dma_copy %c {buffer = "hbm"} : (!ax.tensor<[64, 512], bf16>) -> !ax.tensor<[64, 512], bf16>
  func.return %o : !ax.tensor<[64, 512], bf16>
}

// -----

// Softmax of 128 rows: max, exp(x - max) with its row sum, scaled by the reciprocal.
// CHECK-LABEL: func.func @softmax_rows
// CHECK: nki.tensor_reduce %{{.*}} {op = "maximum", axes = array<i64: 1>, negate = true, keepdims = true, buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 1], f32>
// CHECK: nki.activation %{{.*}}, %{{.*}} {func = "exp", buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 512], f32>
// CHECK: nki.activation_reduce %{{.*}}, %{{.*}} {func = "exp", reduce_op = "add", buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 1], f32>
// CHECK: nki.activation %{{.*}} {func = "reciprocal", buffer = "sbuf"} : (!ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 1], f32>
// CHECK: nki.tensor_scalar %{{.*}}, %{{.*}} {op0 = "multiply", buffer = "sbuf", dtype = bf16} : (!ax.tensor<[128, 512], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 512], bf16>
func.func @softmax_rows(%x: !ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 512], bf16> {
  %s = nki.dma_copy %x {buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 512], f32>
  %negmax = nki.tensor_reduce %s {op = "maximum", axes = array<i64: 1>, negate = true, keepdims = true, buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 1], f32>
  %e = nki.activation %s, %negmax {func = "exp", buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 512], f32>
  %sum = nki.activation_reduce %s, %negmax {func = "exp", reduce_op = "add", buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 1], f32>
  %inv = nki.activation %sum {func = "reciprocal", buffer = "sbuf"} : (!ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 1], f32>
  %y = nki.tensor_scalar %e, %inv {op0 = "multiply", buffer = "sbuf", dtype = bf16} : (!ax.tensor<[128, 512], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 512], bf16>
  func.return %y : !ax.tensor<[128, 512], bf16>
}

// -----

// Every other instruction, once: the transposes, elementwise ops, scans, masks and fills.
// CHECK-LABEL: func.func @each_instruction
// CHECK: nki.dma_transpose %{{.*}} {buffer = "sbuf"} : (!ax.tensor<[64, 128], bf16>) -> !ax.tensor<[128, 64], bf16>
// CHECK: nki.nc_transpose %{{.*}} {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[64, 128], bf16>
// CHECK: nki.nc_transpose %{{.*}} {buffer = "sbuf", engine = "vector"} : (!ax.tensor<[32, 16], f32>) -> !ax.tensor<[16, 32], f32>
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "subtract", buffer = "sbuf", engine = "gpsimd"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
// CHECK: nki.tensor_scalar %{{.*}} {op0 = "add", scalar0 = 1.000000e+00 : f64, reverse0 = true, op1 = "maximum", scalar1 = 0.000000e+00 : f64, buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
// CHECK: nki.memset {value = 0.000000e+00 : f64, shape = ["128", "64"], dtype = f32, buffer = "sbuf"} : !ax.tensor<[128, 64], f32>
// CHECK: nki.tensor_tensor_scan %{{.*}}, %{{.*}} {op0 = "add", op1 = "add", initial = 0.000000e+00 : f64, buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
// CHECK: nki.iota {shape = ["128", "64"], pattern = array<i64: -1>, offset = 0 : i64, channel_multiplier = 1 : i64, dtype = f32, buffer = "sbuf"} : !ax.tensor<[128, 64], f32>
// CHECK: nki.affine_select %{{.*}} {pattern = array<i64: -1>, channel_multiplier = 1 : i64, offset = 0 : i64, cmp_op = "greater_equal", on_false_value = -3.000000e+04 : f64, buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "greater", buffer = "sbuf", dtype = i1} : (!ax.tensor<[128, 64], f32>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], i1>
// CHECK: nki.select %{{.*}}, %{{.*}} {on_false_value = 0.000000e+00 : f64, reverse_pred = true, buffer = "sbuf"} : (!ax.tensor<[128, 64], i1>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
// CHECK: nki.select %{{.*}}, %{{.*}}, %{{.*}} {buffer = "sbuf"} : (!ax.tensor<[128, 64], i1>, !ax.tensor<[128, 64], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 64], f32>
func.func @each_instruction(%x: !ax.tensor<[64, 128], bf16>, %v: !ax.tensor<[32, 16], f32>, %y: !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32> {
  %t = nki.dma_transpose %x {buffer = "sbuf"} : (!ax.tensor<[64, 128], bf16>) -> !ax.tensor<[128, 64], bf16>
  %u = nki.nc_transpose %t {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[64, 128], bf16>
  %vs = nki.dma_copy %v {buffer = "sbuf"} : (!ax.tensor<[32, 16], f32>) -> !ax.tensor<[32, 16], f32>
  %w = nki.nc_transpose %vs {buffer = "sbuf", engine = "vector"} : (!ax.tensor<[32, 16], f32>) -> !ax.tensor<[16, 32], f32>
  %d = nki.tensor_tensor %t, %t {op = "subtract", buffer = "sbuf", engine = "gpsimd"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %r = nki.tensor_scalar %d {op0 = "add", scalar0 = 1.0, reverse0 = true, op1 = "maximum", scalar1 = 0.0, buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %z = nki.memset {value = 0.0, shape = ["128", "64"], dtype = f32, buffer = "sbuf"} : !ax.tensor<[128, 64], f32>
  %ys = nki.dma_copy %y {buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %c = nki.tensor_tensor_scan %z, %ys {op0 = "add", op1 = "add", initial = 0.0, buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %i = nki.iota {shape = ["128", "64"], pattern = array<i64: -1>, offset = 0, channel_multiplier = 1, dtype = f32, buffer = "sbuf"} : !ax.tensor<[128, 64], f32>
  %m = nki.affine_select %c {pattern = array<i64: -1>, channel_multiplier = 1, offset = 0, cmp_op = "greater_equal", on_false_value = -30000.0, buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %g = nki.tensor_tensor %i, %m {op = "greater", buffer = "sbuf", dtype = i1} : (!ax.tensor<[128, 64], f32>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], i1>
  %s = nki.select %g, %m {on_false_value = 0.0, reverse_pred = true, buffer = "sbuf"} : (!ax.tensor<[128, 64], i1>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %low = nki.memset {value = -1.0, shape = ["128", "1"], dtype = f32, buffer = "sbuf"} : !ax.tensor<[128, 1], f32>
  %out = nki.select %g, %s, %low {buffer = "sbuf"} : (!ax.tensor<[128, 64], i1>, !ax.tensor<[128, 64], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 64], f32>
  func.return %out : !ax.tensor<[128, 64], f32>
}

// -----

// Batch-norm statistics: bn_stats of a [P, F] tile, bn_aggr of its triples.
// CHECK-LABEL: func.func @batch_norm_statistics
// CHECK: nki.bn_stats %{{.*}} {buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 6], f32>
// CHECK: nki.bn_aggr %{{.*}} {buffer = "sbuf"} : (!ax.tensor<[128, 6], f32>) -> !ax.tensor<[128, 2], f32>
func.func @batch_norm_statistics(%x: !ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 2], f32> {
  %s = nki.dma_copy %x {buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 512], f32>
  %b = nki.bn_stats %s {buffer = "sbuf"} : (!ax.tensor<[128, 512], f32>) -> !ax.tensor<[128, 6], f32>
  %m = nki.bn_aggr %b {buffer = "sbuf"} : (!ax.tensor<[128, 6], f32>) -> !ax.tensor<[128, 2], f32>
  func.return %m : !ax.tensor<[128, 2], f32>
}

// -----

// A loop carries the PSUM accumulator: its buffer is the IR's to say, not checked through the
// block argument.
// CHECK-LABEL: func.func @loop_accumulates
// CHECK: scf.for
// CHECK: nki.nc_matmul %{{.*}}, %{{.*}}, %{{.*}} {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>, !ax.tensor<[64, 512], f32>) -> !ax.tensor<[64, 512], f32>
// CHECK: scf.yield %{{.*}} : !ax.tensor<[64, 512], f32>
func.func @loop_accumulates(%a: !ax.tensor<[128, 64], bf16>, %b: !ax.tensor<[128, 512], bf16>) -> !ax.tensor<[64, 512], f32> {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %m = nki.dma_copy %b {buffer = "sbuf"} : (!ax.tensor<[128, 512], bf16>) -> !ax.tensor<[128, 512], bf16>
  %p = nki.nc_matmul %s, %m {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>) -> !ax.tensor<[64, 512], f32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %p) -> (!ax.tensor<[64, 512], f32>) {
    %q = nki.nc_matmul %s, %m, %acc {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>, !ax.tensor<[64, 512], f32>) -> !ax.tensor<[64, 512], f32>
    scf.yield %q : !ax.tensor<[64, 512], f32>
  }
  func.return %r : !ax.tensor<[64, 512], f32>
}
