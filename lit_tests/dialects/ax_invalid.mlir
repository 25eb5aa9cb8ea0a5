// Invalid ax IR: one diagnostic per chunk (chunks are split at the dashed separator lines), at
// least one chunk for every op of ALL_OPS (its own verifier), then invalid types.
// tests/tools/test_axon_opt.py fails when an op of ALL_OPS is missing here. A chunk that verifies would
// print a `builtin.module`; the second RUN line fails the test if any does.
//
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep builtin.module

// 'exp' needs a float operand
func.func @exp_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.exp %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: {{.*}}ax_invalid.mlir:{{[0-9]+}}:3: error: 'ax.exp': operand #0 (input) has element type i32; 'exp' needs a float type

// -----

// 'log' needs a float operand
func.func @log_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.log %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.log': operand #0 (input) has element type i32; 'log' needs a float type

// -----

// 'sqrt' needs a float operand
func.func @sqrt_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.sqrt %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.sqrt': operand #0 (input) has element type i32; 'sqrt' needs a float type

// -----

// 'rsqrt' needs a float operand
func.func @rsqrt_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.rsqrt %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.rsqrt': operand #0 (input) has element type i32; 'rsqrt' needs a float type

// -----

// 'reciprocal' needs a float operand
func.func @reciprocal_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.reciprocal %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.reciprocal': operand #0 (input) has element type i32; 'reciprocal' needs a float type

// -----

// 'tanh' needs a float operand
func.func @tanh_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.tanh %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.tanh': operand #0 (input) has element type i32; 'tanh' needs a float type

// -----

// 'sigmoid' needs a float operand
func.func @sigmoid_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.sigmoid %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.sigmoid': operand #0 (input) has element type i32; 'sigmoid' needs a float type

// -----

// 'silu' needs a float operand
func.func @silu_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.silu %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.silu': operand #0 (input) has element type i32; 'silu' needs a float type

// -----

// 'gelu' needs a float operand
func.func @gelu_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.gelu %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.gelu': operand #0 (input) has element type i32; 'gelu' needs a float type

// -----

// 'erf' needs a float operand
func.func @erf_i32(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.erf %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.erf': operand #0 (input) has element type i32; 'erf' needs a float type

// -----

// neg needs numbers, not i1
func.func @neg_i1(%x: !ax.tensor<[M, K], i1>) {
  %r = ax.neg %x : (!ax.tensor<[M, K], i1>) -> !ax.tensor<[M, K], i1>
  func.return
}
// CHECK: 'ax.neg': operand #0 (input) has element type i1; 'neg' needs numbers

// -----

// abs needs numbers, not i1
func.func @abs_i1(%x: !ax.tensor<[M, K], i1>) {
  %r = ax.abs %x : (!ax.tensor<[M, K], i1>) -> !ax.tensor<[M, K], i1>
  func.return
}
// CHECK: 'ax.abs': operand #0 (input) has element type i1; 'abs' needs numbers

// -----

// the result dtype must be the operand's
func.func @relu_f32(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.relu %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], bf16>
  func.return
}
// CHECK: 'ax.relu': result type is !ax.tensor<[M, K], bf16>, but the operands give !ax.tensor<[M, K], f32>

// -----

// the result shape must be the operand's
func.func @square_f32(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.square %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[K, M], f32>
  func.return
}
// CHECK: 'ax.square': result type is !ax.tensor<[K, M], f32>, but the operands give !ax.tensor<[M, K], f32>

// -----

// broadcasting gives [M, K], not [M, 1]
func.func @add_result(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, 1], f32>) {
  %r = ax.add %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], f32>
  func.return
}
// CHECK: 'ax.add': result type is !ax.tensor<[M, 1], f32>, but the operands give !ax.tensor<[M, K], f32>

// -----

// K and N do not broadcast
func.func @sub_broadcast(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[N], f32>) {
  %r = ax.sub %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[N], f32>) -> !ax.tensor<[M, K], f32>
  func.return
}
// CHECK: 'ax.sub': cannot broadcast operand #1 (rhs) dim 0 (N) against operand #0 (lhs) dim 1 (K): dims must be equal or 1; shapes are operand #0 (lhs) [M, K], operand #1 (rhs) [N]

// -----

// no implicit dtype promotion
func.func @mul_dtypes(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, K], bf16>) {
  %r = ax.mul %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], f32>
  func.return
}
// CHECK: 'ax.mul': operand #1 (rhs) has element type bf16, expected f32 (like operand #0 (lhs))

// -----

// div is float-only (no integer division)
func.func @div_int(%x: !ax.tensor<[M, K], i32>, %y: !ax.tensor<[M, K], i32>) {
  %r = ax.div %x, %y : (!ax.tensor<[M, K], i32>, !ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.div': operand #0 (lhs) has element type i32; 'div' needs a float type

// -----

// max needs numbers
func.func @max_bool(%x: !ax.tensor<[M], i1>, %y: !ax.tensor<[M], i1>) {
  %r = ax.max %x, %y : (!ax.tensor<[M], i1>, !ax.tensor<[M], i1>) -> !ax.tensor<[M], i1>
  func.return
}
// CHECK: 'ax.max': 'max' needs numbers, operands are i1

// -----

// the result dtype is the operands'
func.func @min_dtype(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, K], f32>) {
  %r = ax.min %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.min': result type is !ax.tensor<[M, K], i32>, but the operands give !ax.tensor<[M, K], f32>

// -----

// comparisons give i1
func.func @eq_result(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, K], f32>) {
  %r = ax.eq %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return
}
// CHECK: 'ax.eq': result type is !ax.tensor<[M, K], f32>, but the operands give !ax.tensor<[M, K], i1>

// -----

// [M, K] and [K, M] do not broadcast
func.func @ne_broadcast(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[K, M], f32>) {
  %r = ax.ne %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, M], f32>) -> !ax.tensor<[M, K], i1>
  func.return
}
// CHECK: 'ax.ne': cannot broadcast operand #1 (rhs) dim 0 (K) against operand #0 (lhs) dim 0 (M): dims must be equal or 1; shapes are operand #0 (lhs) [M, K], operand #1 (rhs) [K, M]

// -----

// operand dtypes must agree
func.func @lt_dtypes(%x: !ax.tensor<[M], f32>, %y: !ax.tensor<[M], i32>) {
  %r = ax.lt %x, %y : (!ax.tensor<[M], f32>, !ax.tensor<[M], i32>) -> !ax.tensor<[M], i1>
  func.return
}
// CHECK: 'ax.lt': operand #1 (rhs) has element type i32, expected f32 (like operand #0 (lhs))

// -----

// 2 and 3 do not broadcast
func.func @le_static(%x: !ax.tensor<[2], f32>, %y: !ax.tensor<[3], f32>) {
  %r = ax.le %x, %y : (!ax.tensor<[2], f32>, !ax.tensor<[3], f32>) -> !ax.tensor<[3], i1>
  func.return
}
// CHECK: 'ax.le': cannot broadcast operand #1 (rhs) dim 0 (3) against operand #0 (lhs) dim 0 (2): dims must be equal or 1; shapes are operand #0 (lhs) [2], operand #1 (rhs) [3]

// -----

// the result shape is the broadcast shape
func.func @gt_result(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, 1], f32>) {
  %r = ax.gt %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], i1>
  func.return
}
// CHECK: 'ax.gt': result type is !ax.tensor<[M, 1], i1>, but the operands give !ax.tensor<[M, K], i1>

// -----

// operand dtypes must agree
func.func @ge_dtypes(%x: !ax.tensor<[M, K], bf16>, %y: !ax.tensor<[M, K], f16>) {
  %r = ax.ge %x, %y : (!ax.tensor<[M, K], bf16>, !ax.tensor<[M, K], f16>) -> !ax.tensor<[M, K], i1>
  func.return
}
// CHECK: 'ax.ge': operand #1 (rhs) has element type f16, expected bf16 (like operand #0 (lhs))

// -----

// pow is float-only
func.func @pow_int(%x: !ax.tensor<[M], i32>) {
  %r = ax.pow %x {exponent = 2.0 : f64} : (!ax.tensor<[M], i32>) -> !ax.tensor<[M], i32>
  func.return
}
// CHECK: 'ax.pow': operand #0 (input) has element type i32; 'pow' needs a float type

// -----

// pow needs its exponent
func.func @pow_missing(%x: !ax.tensor<[M], f32>) {
  %r = "ax.pow"(%x) : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: property 'exponent' expected in operation 'ax.pow'

// -----

// select's condition must be i1
func.func @select_cond(%c: !ax.tensor<[M], f32>, %a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) {
  %r = ax.select %c, %a, %b : (!ax.tensor<[M], f32>, !ax.tensor<[M], f32>, !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.select': operand #0 (cond) has element type f32, expected i1

// -----

// select's branches must agree in dtype
func.func @select_branches(%c: !ax.tensor<[M], i1>, %a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], i32>) {
  %r = ax.select %c, %a, %b : (!ax.tensor<[M], i1>, !ax.tensor<[M], f32>, !ax.tensor<[M], i32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.select': operand #2 (on_false) has element type i32, expected f32 (like operand #1 (on_true))

// -----

// cast to a dtype Axon does not have
func.func @cast_f64(%x: !ax.tensor<[M], f32>) {
  %r = ax.cast %x {dtype = f64} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.cast': unsupported element type f64; expected one of f32, f16, bf16, i32, i1

// -----

// the cast result has the target dtype
func.func @cast_result(%x: !ax.tensor<[M], f32>) {
  %r = ax.cast %x {dtype = bf16} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f16>
  func.return
}
// CHECK: 'ax.cast': result type is !ax.tensor<[M], f16>, but the operands give !ax.tensor<[M], bf16>

// -----

// an i32 constant must hold an integer
func.func @constant_frac() {
  %r = ax.constant {value = 0.5 : f64, shape = ["M"], dtype = i32} : !ax.tensor<[M], i32>
  func.return
}
// CHECK: 'ax.constant': value 0.5 is not representable in i32

// -----

// the constant's type follows its shape
func.func @constant_shape() {
  %r = ax.constant {value = 1.0 : f64, shape = ["M", "K"], dtype = f32} : !ax.tensor<[K, M], f32>
  func.return
}
// CHECK: 'ax.constant': result type is !ax.tensor<[K, M], f32>, but the operands give !ax.tensor<[M, K], f32>

// -----

// iota's axis must be in the shape
func.func @iota_axis() {
  %r = ax.iota {shape = ["M", "K"], axis = 2 : i64, dtype = i32} : !ax.tensor<[M, K], i32>
  func.return
}
// CHECK: 'ax.iota': axis 2 is out of range for shape of rank 2

// -----

// iota needs a numeric dtype
func.func @iota_bool() {
  %r = ax.iota {shape = ["M"], axis = 0 : i64, dtype = i1} : !ax.tensor<[M], i1>
  func.return
}
// CHECK: 'ax.iota': iota needs a numeric dtype, got i1

// -----

// matmul's contracted dims must agree
func.func @matmul_k(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[N, K], f32>) {
  %r = ax.matmul %a, %b : (!ax.tensor<[M, K], f32>, !ax.tensor<[N, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return
}
// CHECK: 'ax.matmul': contracted dims differ: operand #0 (lhs) [M, K] has K in its last dim, operand #1 (rhs) [N, K] has N in dim 0

// -----

// matmul of booleans
func.func @matmul_bool(%a: !ax.tensor<[M, K], i1>, %b: !ax.tensor<[K, N], i1>) {
  %r = ax.matmul %a, %b : (!ax.tensor<[M, K], i1>, !ax.tensor<[K, N], i1>) -> !ax.tensor<[M, N], i1>
  func.return
}
// CHECK: 'ax.matmul': matmul needs numbers, operands are i1

// -----

// matmul batch dims broadcast
func.func @matmul_batch(%a: !ax.tensor<[2, M, K], f32>, %b: !ax.tensor<[3, K, N], f32>) {
  %r = ax.matmul %a, %b : (!ax.tensor<[2, M, K], f32>, !ax.tensor<[3, K, N], f32>) -> !ax.tensor<[3, M, N], f32>
  func.return
}
// CHECK: 'ax.matmul': cannot broadcast operand #1 (rhs) batch dim 0 (3) against operand #0 (lhs) batch dim 0 (2): dims must be equal or 1; shapes are operand #0 (lhs) batch [2], operand #1 (rhs) batch [3]

// -----

// axis out of range
func.func @sum_axis(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.sum %x {axes = array<i64: 2>, keepdims = false} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.sum': axis 2 is out of range for operand #0 (input) of rank 2

// -----

// keepdims = false drops the axis
func.func @sum_keepdims(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.sum %x {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, 1], f32>
  func.return
}
// CHECK: 'ax.sum': result type is !ax.tensor<[M, 1], f32>, but the operands give !ax.tensor<[M], f32>

// -----

// axes must be increasing
func.func @reduce_max_order(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.reduce_max %x {axes = array<i64: 1, 0>, keepdims = false} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[], f32>
  func.return
}
// CHECK: 'ax.reduce_max': axes [1, 0] must be distinct and increasing

// -----

// no reductions over i1
func.func @reduce_min_bool(%x: !ax.tensor<[M, K], i1>) {
  %r = ax.reduce_min %x {axes = array<i64: 0>, keepdims = false} : (!ax.tensor<[M, K], i1>) -> !ax.tensor<[K], i1>
  func.return
}
// CHECK: 'ax.reduce_min': 'ax.reduce_min' does not apply to element type i1

// -----

// at least one axis
func.func @prod_no_axes(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.prod %x {axes = array<i64>, keepdims = false} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return
}
// CHECK: 'ax.prod': reduction needs at least one axis

// -----

// mean needs a float type
func.func @mean_int(%x: !ax.tensor<[M, K], i32>) {
  %r = ax.mean %x {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, 1], i32>
  func.return
}
// CHECK: 'ax.mean': 'ax.mean' does not apply to element type i32

// -----

// cumsum's axis must be in range
func.func @cumsum_axis(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.cumsum %x {axis = 2 : i64} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return
}
// CHECK: 'ax.cumsum': axis 2 is out of range for operand #0 (input) of rank 2

// -----

// cumsum of booleans
func.func @cumsum_bool(%x: !ax.tensor<[M], i1>) {
  %r = ax.cumsum %x {axis = 0 : i64} : (!ax.tensor<[M], i1>) -> !ax.tensor<[M], i1>
  func.return
}
// CHECK: 'ax.cumsum': 'ax.cumsum' does not apply to element type i1

// -----

// perm must be a permutation
func.func @transpose_perm(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.transpose %x {perm = array<i64: 0, 0>} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, M], f32>
  func.return
}
// CHECK: 'ax.transpose': perm [0, 0] is not a permutation of the 2 dims of operand #0 (input) [M, K]

// -----

// perm's length must be the rank
func.func @transpose_rank(%x: !ax.tensor<[M, K, N], f32>) {
  %r = ax.transpose %x {perm = array<i64: 1, 0>} : (!ax.tensor<[M, K, N], f32>) -> !ax.tensor<[K, M], f32>
  func.return
}
// CHECK: 'ax.transpose': perm [1, 0] is not a permutation of the 3 dims of operand #0 (input) [M, K, N]

// -----

// the transpose result permutes the dims
func.func @transpose_result(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.transpose %x {perm = array<i64: 1, 0>} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return
}
// CHECK: 'ax.transpose': result type is !ax.tensor<[M, K], f32>, but the operands give !ax.tensor<[K, M], f32>

// -----

// reshape keeps the element count
func.func @reshape_count(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.reshape %x {shape = ["M", "K", "2"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K, 2], f32>
  func.return
}
// CHECK: 'ax.reshape': cannot reshape operand #0 (input) [M, K] (K*M elements) to [M, K, 2] (2*K*M elements)

// -----

// reshape: counts are compared as polynomials
func.func @reshape_static(%x: !ax.tensor<[4, 6], f32>) {
  %r = ax.reshape %x {shape = ["5", "5"]} : (!ax.tensor<[4, 6], f32>) -> !ax.tensor<[5, 5], f32>
  func.return
}
// CHECK: 'ax.reshape': cannot reshape operand #0 (input) [4, 6] (24 elements) to [5, 5] (25 elements)

// -----

// broadcast only stretches size-1 dims
func.func @broadcast_to_dim(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.broadcast_to %x {shape = ["M", "N"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, N], f32>
  func.return
}
// CHECK: 'ax.broadcast_to': cannot broadcast operand #0 (input) dim 1 (K) to N in [M, N]: dims must be equal or 1

// -----

// broadcast cannot lower the rank
func.func @broadcast_to_rank(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.broadcast_to %x {shape = ["K"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[K], f32>
  func.return
}
// CHECK: 'ax.broadcast_to': cannot broadcast operand #0 (input) [M, K] to the lower rank [K]

// -----

// slice stop past the extent
func.func @slice_range(%x: !ax.tensor<[8, K], f32>) {
  %r = ax.slice %x {start = ["0", "0"], stop = ["9", "K"], step = ["1", "1"]} : (!ax.tensor<[8, K], f32>) -> !ax.tensor<[9, K], f32>
  func.return
}
// CHECK: 'ax.slice': dim 0: slice [0:9:1] does not fit in extent 8 (needs 0 <= start <= stop <= dim; dim breaks it)

// -----

// slice step zero
func.func @slice_step(%x: !ax.tensor<[8], f32>) {
  %r = ax.slice %x {start = ["0"], stop = ["8"], step = ["0"]} : (!ax.tensor<[8], f32>) -> !ax.tensor<[8], f32>
  func.return
}
// CHECK: 'ax.slice': dim 0: step 0 must be a positive integer constant

// -----

// slice needs one entry per dim
func.func @slice_entries(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.slice %x {start = ["0"], stop = ["M"], step = ["1"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.slice': start, stop and step need 2 entries each (one per dim of operand #0 (input)), got 1, 1, 1

// -----

// slice start after stop
func.func @slice_backwards(%x: !ax.tensor<[8], f32>) {
  %r = ax.slice %x {start = ["5"], stop = ["2"], step = ["1"]} : (!ax.tensor<[8], f32>) -> !ax.tensor<[0], f32>
  func.return
}
// CHECK: 'ax.slice': dim 0: slice [5:2:1] does not fit in extent 8 (needs 0 <= start <= stop <= dim; stop breaks it)

// -----

// concat: dims off the axis must agree
func.func @concat_dims(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[N, K], f32>) {
  %r = ax.concat %a, %b {axis = 1 : i64} : (!ax.tensor<[M, K], f32>, !ax.tensor<[N, K], f32>) -> !ax.tensor<[M, 2*K], f32>
  func.return
}
// CHECK: 'ax.concat': operand #1 [N, K] does not match operand #0 [M, K] outside axis 1

// -----

// concat: axis out of range
func.func @concat_axis(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], f32>) {
  %r = ax.concat %a, %b {axis = 1 : i64} : (!ax.tensor<[M], f32>, !ax.tensor<[M], f32>) -> !ax.tensor<[2*M], f32>
  func.return
}
// CHECK: 'ax.concat': axis 1 is out of range for rank 1

// -----

// concat: dtypes must agree
func.func @concat_dtype(%a: !ax.tensor<[M], f32>, %b: !ax.tensor<[M], bf16>) {
  %r = ax.concat %a, %b {axis = 0 : i64} : (!ax.tensor<[M], f32>, !ax.tensor<[M], bf16>) -> !ax.tensor<[2*M], f32>
  func.return
}
// CHECK: 'ax.concat': operand #1 has element type bf16, expected f32

// -----

// generic: a malformed form
func.func @generic_syntax(%x: !ax.tensor<[M], f32>) {
  %r = ax.generic %x {form = "out[d0 < M] = in0[d0", dtype = f32} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.generic': malformed generic form

// -----

// generic: reads in0 with the wrong rank
func.func @generic_rank(%x: !ax.tensor<[M, K], f32>) {
  %r = ax.generic %x {form = "out[d0 < M] = in0[d0]", dtype = f32} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.generic': form reads in0 with 1 indices, but operand #0 has rank 2

// -----

// generic: the result type follows the form
func.func @generic_result(%x: !ax.tensor<[M], f32>) {
  %r = ax.generic %x {form = "out[d0 < M] = exp(in0[d0])", dtype = f32} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], bf16>
  func.return
}
// CHECK: 'ax.generic': result type is !ax.tensor<[M], bf16>, but the operands give !ax.tensor<[M], f32>

// -----

// generic: reads an operand that does not exist
func.func @generic_operand(%x: !ax.tensor<[M], f32>) {
  %r = ax.generic %x {form = "out[d0 < M] = in1[d0]", dtype = f32} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
  func.return
}
// CHECK: 'ax.generic': body reads in1, but the op has 1 operand(s)

// -----

// generic: a read that leaves its operand (here at every point)
func.func @generic_stray_read(%x: !ax.tensor<[4, 3], f32>) {
  %r = ax.generic %x {form = "out[d0 < 4] = in0[d0, d0 + 5]", dtype = f32} : (!ax.tensor<[4, 3], f32>) -> !ax.tensor<[4], f32>
  func.return
}
// CHECK: 'ax.generic': read in0[d0, d0 + 5] leaves operand #0: its index d0 + 5 in dim 1 reaches 5, outside [0, 3) (at d0 = 0)

// -----

// generic: a read that leaves its operand whatever the sizes (at d0 = N - 1)
func.func @generic_stray_read_symbolic(%x: !ax.tensor<[N], f32>) {
  %r = ax.generic %x {form = "out[d0 < N] = in0[d0 + 1]", dtype = f32} : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
  func.return
}
// CHECK: 'ax.generic': read in0[d0 + 1] leaves operand #0 for every size: its index d0 + 1 in dim 0 reaches 1, outside [0, N) (at N = 1, d0 = 0)

// -----

// a negative static dim
func.func @negative_dim(%x: !ax.tensor<[M, -2], f32>) {
  func.return
}
// CHECK: tensor dim -2 is negative

// -----

// an element type Axon does not have
func.func @f64_tensor(%x: !ax.tensor<[M], f64>) {
  func.return
}
// CHECK: unsupported element type f64; expected one of f32, f16, bf16, i32, i1

// -----

// a dim that is not an integer expression
func.func @bad_dim(%x: !ax.tensor<[M, 1.5], f32>) {
  func.return
}
// CHECK: identifier expected in a tensor dim (an integer or a size symbol)

// -----

// an ax op on a builtin tensor
func.func @builtin_tensor(%x: tensor<4xf32>) {
  %r = ax.exp %x : (tensor<4xf32>) -> !ax.tensor<[4], f32>
  func.return
}
// CHECK: tensor<4xf32> should be of base attribute ax.tensor

// -----

// a dim that is a dotted identifier, not a size symbol (found by the fuzz test)
func.func @dotted_dim(%x: !ax.tensor<[M, N], bf16>) -> !ax.tensor<[ax.addM, N], bf16> {
  func.return %x : !ax.tensor<[M, N], bf16>
}
// CHECK: 'ax.addM' is not a size symbol (a name of letters, digits and '_') in a tensor dim
