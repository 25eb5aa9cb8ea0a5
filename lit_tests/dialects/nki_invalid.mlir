// Invalid nki IR: one diagnostic per chunk, located at the instruction at fault.
//
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep builtin.module

// an on-chip tile has at most 128 partitions
func.func @partitions(%x: !ax.tensor<[256, 4], f32>) {
  %s = nki.dma_copy %x {buffer = "sbuf"} : (!ax.tensor<[256, 4], f32>) -> !ax.tensor<[256, 4], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.dma_copy': dst has 256 partitions; at most 128

// -----

// a PSUM tile fits one 2 KiB bank per partition
func.func @psum_bank(%x: !ax.tensor<[128, 1024], f32>) {
  %s = nki.dma_copy %x {buffer = "sbuf"} : (!ax.tensor<[128, 1024], f32>) -> !ax.tensor<[128, 1024], f32>
  %p = nki.tensor_copy %s {buffer = "psum"} : (!ax.tensor<[128, 1024], f32>) -> !ax.tensor<[128, 1024], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_copy': dst holds 4096 bytes per partition; one PSUM bank holds 2048

// -----

// the moving free size of a matmul is at most 512
func.func @moving_free(%a: !ax.tensor<[128, 128], bf16>, %b: !ax.tensor<[128, 640], bf16>) {
  %p = nki.nc_matmul %a, %b {buffer = "psum"} : (!ax.tensor<[128, 128], bf16>, !ax.tensor<[128, 640], bf16>) -> !ax.tensor<[128, 640], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_matmul': the moving free size N is 640; at most 512

// -----

// a matmul writes PSUM
func.func @matmul_dst(%a: !ax.tensor<[128, 64], bf16>, %b: !ax.tensor<[128, 64], bf16>) {
  %p = nki.nc_matmul %a, %b {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 64], bf16>) -> !ax.tensor<[64, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_matmul': dst buffer 'sbuf' is not one of psum

// -----

// a matmul reads its operands from SBUF, not HBM
func.func @matmul_hbm(%a: !ax.tensor<[128, 64], bf16>, %b: !ax.tensor<[128, 64], bf16>) {
  %p = nki.nc_matmul %a, %b {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 64], bf16>) -> !ax.tensor<[64, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_matmul': operand #0 (stationary) is in hbm; expected sbuf

// -----

// a matmul's result is fp32
func.func @matmul_f32(%a: !ax.tensor<[128, 64], bf16>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %p = nki.nc_matmul %s, %s {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 64], bf16>) -> !ax.tensor<[64, 64], bf16>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_matmul': result type is !ax.tensor<[64, 64], bf16>, but the operands give !ax.tensor<[64, 64], f32>

// -----

// fp32 operands of a matmul are both fp32
func.func @matmul_mixed(%a: !ax.tensor<[128, 64], bf16>, %b: !ax.tensor<[128, 64], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %t = nki.dma_copy %b {buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %p = nki.nc_matmul %s, %t {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[64, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_matmul': stationary is bf16 and moving f32: fp32 operands must both be fp32

// -----

// accumulating onto PSUM that a memset wrote is undefined
func.func @acc_memset(%a: !ax.tensor<[128, 64], bf16>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %z = nki.memset {value = 0.0, shape = ["64", "64"], dtype = f32, buffer = "psum"} : !ax.tensor<[64, 64], f32>
  %p = nki.nc_matmul %s, %s, %z {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 64], bf16>, !ax.tensor<[64, 64], f32>) -> !ax.tensor<[64, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_matmul': operand #2 (acc) was written by 'nki.memset'; accumulating onto PSUM a non-matmul instruction wrote is undefined on NeuronCore-v2/v3

// -----

// the Vector engine transposes at most 32 x 32
func.func @vector_transpose(%a: !ax.tensor<[64, 32], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[64, 32], f32>) -> !ax.tensor<[64, 32], f32>
  %t = nki.nc_transpose %s {buffer = "sbuf", engine = "vector"} : (!ax.tensor<[64, 32], f32>) -> !ax.tensor<[32, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_transpose': the partition dim of data on the vector engine is 64; at most 32

// -----

// at most one input of tensor_tensor is in PSUM
func.func @two_psum(%a: !ax.tensor<[128, 64], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %p = nki.tensor_copy %s {buffer = "psum"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %t = nki.tensor_tensor %p, %p {op = "add", buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>, !ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_tensor': both inputs are in PSUM; at most one may be

// -----

// the GpSimd engine cannot read PSUM
func.func @gpsimd_psum(%a: !ax.tensor<[128, 64], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %p = nki.tensor_copy %s {buffer = "psum"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %c = nki.tensor_copy %p {buffer = "sbuf", engine = "gpsimd"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_copy': the GpSimd engine cannot read PSUM (operand #0 (src))

// -----

// a DMA does not read PSUM
func.func @dma_psum(%a: !ax.tensor<[128, 64], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %p = nki.tensor_copy %s {buffer = "psum"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  %o = nki.dma_copy %p {buffer = "hbm"} : (!ax.tensor<[128, 64], f32>) -> !ax.tensor<[128, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.dma_copy': operand #0 (src) is in psum; expected hbm or sbuf

// -----

// a DMA transpose moves a 2-byte dtype
func.func @dma_transpose_f32(%a: !ax.tensor<[64, 128], f32>) {
  %t = nki.dma_transpose %a {buffer = "sbuf"} : (!ax.tensor<[64, 128], f32>) -> !ax.tensor<[128, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.dma_transpose': src has dtype f32; a DMA transpose moves a 2-byte dtype (bf16, f16)

// -----

// tensor_reduce reduces trailing free dims only
func.func @reduce_axes(%a: !ax.tensor<[128, 8, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8, 8], f32>) -> !ax.tensor<[128, 8, 8], f32>
  %r = nki.tensor_reduce %s {op = "add", axes = array<i64: 1>, negate = false, keepdims = true, buffer = "sbuf"} : (!ax.tensor<[128, 8, 8], f32>) -> !ax.tensor<[128, 1, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_reduce': axes [1]: tensor_reduce reduces trailing free dims (of a rank-3 tile: [2], ..., [1, 2])

// -----

// a tensor_scalar vector operand is an f32 [P, 1] vector
func.func @scalar_vector(%a: !ax.tensor<[128, 8], f32>, %v: !ax.tensor<[128, 2], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %w = nki.dma_copy %v {buffer = "sbuf"} : (!ax.tensor<[128, 2], f32>) -> !ax.tensor<[128, 2], f32>
  %r = nki.tensor_scalar %s, %w {op0 = "add", buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>, !ax.tensor<[128, 2], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_scalar': operand0 is f32[128, 2]; a vector operand is f32[128, 1]

// -----

// the Scalar engine's tensor_scalar runs (multiply, add), multiply or add (Trn2)
func.func @scalar_engine(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %r = nki.tensor_scalar %s {op0 = "maximum", scalar0 = 0.0, buffer = "sbuf", engine = "scalar"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_scalar': ops (maximum): the Scalar engine's tensor_scalar runs (multiply, add), (multiply), (add) only

// -----

// a scan whose recurrence is no prefix reduction has no generic form
func.func @scan_pair(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %r = nki.tensor_tensor_scan %s, %s {op0 = "multiply", op1 = "add", initial = 0.0, buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>, !ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_tensor_scan': (op0, op1) = ('multiply', 'add') has no generic form (its recurrence is no prefix reduction); expected one of (add, add), (add, subtract), (multiply, multiply), (maximum, maximum), (minimum, minimum)

// -----

// an unknown activation function
func.func @activation_func(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %r = nki.activation %s {func = "softmax", buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.activation': func 'softmax' is not an activation function with a generic form; expected one of copy, exp, log, sqrt, rsqrt, reciprocal, tanh, sigmoid, silu, gelu, erf, relu, square, abs

// -----

// an unknown buffer
func.func @buffer_name(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "dram"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.dma_copy': dst buffer 'dram' is not one of hbm, sbuf

// -----

// an engine an instruction cannot run on
func.func @engine_name(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %c = nki.tensor_copy %s {buffer = "sbuf", engine = "tensor"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_copy': engine 'tensor' cannot run nki.tensor_copy; expected one of vector, scalar, gpsimd

// -----

// memset's value is exact in the dst dtype
func.func @memset_value() {
  %z = nki.memset {value = 0.5, shape = ["128", "8"], dtype = i32, buffer = "sbuf"} : !ax.tensor<[128, 8], i32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.memset': value 0.5 is not representable in i32

// -----

// iota writes SBUF
func.func @iota_psum() {
  %i = nki.iota {shape = ["128", "8"], pattern = array<i64: 1>, offset = 0, channel_multiplier = 0, dtype = f32, buffer = "psum"} : !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.iota': dst buffer 'psum' is not one of sbuf

// -----

// an instruction takes its operands
func.func @operand_count(%a: !ax.tensor<[128, 64], bf16>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[128, 64], bf16>
  %p = nki.nc_matmul %s {buffer = "psum"} : (!ax.tensor<[128, 64], bf16>) -> !ax.tensor<[64, 64], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.nc_matmul': takes operands (stationary, moving, [acc]), got 1

// -----

// an activation's scale is a constant or a [P, 1] operand, not both
func.func @scale_twice(%a: !ax.tensor<[128, 8], f32>, %v: !ax.tensor<[128, 1], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %w = nki.dma_copy %v {buffer = "sbuf"} : (!ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 1], f32>
  %r = nki.activation %s, %w, %w {func = "exp", scale = 2.0, buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>, !ax.tensor<[128, 1], f32>, !ax.tensor<[128, 1], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.activation': scale given both as an operand and as a constant

// -----

// select's predicate is a boolean tile
func.func @select_predicate(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %r = nki.select %s, %s {on_false_value = 0.0, buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>, !ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.select': the predicate has dtype f32; it is a boolean (i1) tile

// -----

// an engine's access pattern has at most 4 free dims
func.func @free_dims(%a: !ax.tensor<[128, 2, 2, 2, 2, 2], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 2, 2, 2, 2, 2], f32>) -> !ax.tensor<[128, 2, 2, 2, 2, 2], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.dma_copy': dst has 5 free dims; an engine's access pattern has at most 4

// -----

// nki.isa.exponential is a NeuronCore-v4 instruction; the profiles here are v2 and v3
func.func @exponential(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %e = nki.exponential %s {max_value = 1.0, buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.exponential': nki.isa.exponential runs on NeuronCore-v4 and newer only; profile trn1 is NeuronCore-v2, trn2 is NeuronCore-v3 (limits.neuron_core_version); use nki.activation with func exp

// -----

// bn_stats reads at most bn_stats_free_max (512) elements per partition
func.func @bn_stats_free(%a: !ax.tensor<[128, 1024], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 1024], f32>) -> !ax.tensor<[128, 1024], f32>
  %b = nki.bn_stats %s {buffer = "sbuf"} : (!ax.tensor<[128, 1024], f32>) -> !ax.tensor<[128, 6], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.bn_stats': the free size of data is 1024; at most 512

// -----

// an immediate is an fp32 value: the IR holds what the engine holds, nothing rounds it
func.func @immediate(%a: !ax.tensor<[128, 8], f32>) {
  %s = nki.dma_copy %a {buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  %r = nki.tensor_scalar %s {op0 = "add", scalar0 = 1.0e-06, buffer = "sbuf"} : (!ax.tensor<[128, 8], f32>) -> !ax.tensor<[128, 8], f32>
  func.return
}
// CHECK: {{.*}}nki_invalid.mlir:{{[0-9]+}}:3: error: 'nki.tensor_scalar': scalar0 1e-06 is not an fp32 value (an engine holds its immediates in fp32; the nearest is 9.999999974752427e-07)
