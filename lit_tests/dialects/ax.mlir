// The ax dialect's own syntax, every op of ALL_OPS: parse, print, and round trips through the
// generic syntax. tests/tools/test_axon_opt.py fails when an op of ALL_OPS is missing here.
//
// RUN: axon-opt %s | axon-opt | filecheck %s
// RUN: AXON_ROUNDTRIP
// RUN: axon-opt %s --print-op-generic | axon-opt --print-op-generic | filecheck %s --check-prefix=GENERIC

// ---- unary -------------------------------------------------------------------------------------

// CHECK-LABEL: func.func @neg(
// CHECK-NEXT:    %r = ax.neg %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i32>
// GENERIC:       %r = "ax.neg"(%x) : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
func.func @neg(%x: !ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32> {
  %r = ax.neg %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return %r : !ax.tensor<[M, K], i32>
}

// CHECK-LABEL: func.func @abs(
// CHECK-NEXT:    %r = ax.abs %x : (!ax.tensor<[M, K], f16>) -> !ax.tensor<[M, K], f16>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f16>
// GENERIC:       %r = "ax.abs"(%x) : (!ax.tensor<[M, K], f16>) -> !ax.tensor<[M, K], f16>
func.func @abs(%x: !ax.tensor<[M, K], f16>) -> !ax.tensor<[M, K], f16> {
  %r = ax.abs %x : (!ax.tensor<[M, K], f16>) -> !ax.tensor<[M, K], f16>
  func.return %r : !ax.tensor<[M, K], f16>
}

// CHECK-LABEL: func.func @exp(
// CHECK-NEXT:    %r = ax.exp %x : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], bf16>
// GENERIC:       %r = "ax.exp"(%x) : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
func.func @exp(%x: !ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16> {
  %r = ax.exp %x : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
  func.return %r : !ax.tensor<[M, K], bf16>
}

// CHECK-LABEL: func.func @log(
// CHECK-NEXT:    %r = ax.log %x : (!ax.tensor<[8, 16], f32>) -> !ax.tensor<[8, 16], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[8, 16], f32>
// GENERIC:       %r = "ax.log"(%x) : (!ax.tensor<[8, 16], f32>) -> !ax.tensor<[8, 16], f32>
func.func @log(%x: !ax.tensor<[8, 16], f32>) -> !ax.tensor<[8, 16], f32> {
  %r = ax.log %x : (!ax.tensor<[8, 16], f32>) -> !ax.tensor<[8, 16], f32>
  func.return %r : !ax.tensor<[8, 16], f32>
}

// CHECK-LABEL: func.func @sqrt(
// CHECK-NEXT:    %r = ax.sqrt %x : (!ax.tensor<[], f32>) -> !ax.tensor<[], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[], f32>
// GENERIC:       %r = "ax.sqrt"(%x) : (!ax.tensor<[], f32>) -> !ax.tensor<[], f32>
func.func @sqrt(%x: !ax.tensor<[], f32>) -> !ax.tensor<[], f32> {
  %r = ax.sqrt %x : (!ax.tensor<[], f32>) -> !ax.tensor<[], f32>
  func.return %r : !ax.tensor<[], f32>
}

// CHECK-LABEL: func.func @rsqrt(
// CHECK-NEXT:    %r = ax.rsqrt %x : (!ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, 1], f32>
// GENERIC:       %r = "ax.rsqrt"(%x) : (!ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], f32>
func.func @rsqrt(%x: !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], f32> {
  %r = ax.rsqrt %x : (!ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, 1], f32>
  func.return %r : !ax.tensor<[M, 1], f32>
}

// CHECK-LABEL: func.func @reciprocal(
// CHECK-NEXT:    %r = ax.reciprocal %x : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[N], f32>
// GENERIC:       %r = "ax.reciprocal"(%x) : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
func.func @reciprocal(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> {
  %r = ax.reciprocal %x : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
  func.return %r : !ax.tensor<[N], f32>
}

// CHECK-LABEL: func.func @tanh(
// CHECK-NEXT:    %r = ax.tanh %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.tanh"(%x) : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @tanh(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.tanh %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @sigmoid(
// CHECK-NEXT:    %r = ax.sigmoid %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.sigmoid"(%x) : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @sigmoid(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.sigmoid %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @relu(
// CHECK-NEXT:    %r = ax.relu %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i32>
// GENERIC:       %r = "ax.relu"(%x) : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
func.func @relu(%x: !ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32> {
  %r = ax.relu %x : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return %r : !ax.tensor<[M, K], i32>
}

// CHECK-LABEL: func.func @silu(
// CHECK-NEXT:    %r = ax.silu %x : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], bf16>
// GENERIC:       %r = "ax.silu"(%x) : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
func.func @silu(%x: !ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16> {
  %r = ax.silu %x : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], bf16>
  func.return %r : !ax.tensor<[M, K], bf16>
}

// CHECK-LABEL: func.func @gelu(
// CHECK-NEXT:    %r = ax.gelu %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.gelu"(%x) : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @gelu(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.gelu %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @erf(
// CHECK-NEXT:    %r = ax.erf %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.erf"(%x) : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @erf(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.erf %x : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @square(
// CHECK-NEXT:    %r = ax.square %x : (!ax.tensor<[2*M, K + 1], f32>) -> !ax.tensor<[2*M, K + 1], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[2*M, K + 1], f32>
// GENERIC:       %r = "ax.square"(%x) : (!ax.tensor<[2*M, K + 1], f32>) -> !ax.tensor<[2*M, K + 1], f32>
func.func @square(%x: !ax.tensor<[2*M, K + 1], f32>) -> !ax.tensor<[2*M, K + 1], f32> {
  %r = ax.square %x : (!ax.tensor<[2*M, K + 1], f32>) -> !ax.tensor<[2*M, K + 1], f32>
  func.return %r : !ax.tensor<[2*M, K + 1], f32>
}

// ---- binary (NumPy broadcasting) ---------------------------------------------------------------

// CHECK-LABEL: func.func @add(
// CHECK-NEXT:    %r = ax.add %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.add"(%x, %y) : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, K], f32>
func.func @add(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.add %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @sub(
// CHECK-NEXT:    %r = ax.sub %x, %y : (!ax.tensor<[M, K], i32>, !ax.tensor<[K], i32>) -> !ax.tensor<[M, K], i32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i32>
// GENERIC:       %r = "ax.sub"(%x, %y) : (!ax.tensor<[M, K], i32>, !ax.tensor<[K], i32>) -> !ax.tensor<[M, K], i32>
func.func @sub(%x: !ax.tensor<[M, K], i32>, %y: !ax.tensor<[K], i32>) -> !ax.tensor<[M, K], i32> {
  %r = ax.sub %x, %y : (!ax.tensor<[M, K], i32>, !ax.tensor<[K], i32>) -> !ax.tensor<[M, K], i32>
  func.return %r : !ax.tensor<[M, K], i32>
}

// CHECK-LABEL: func.func @mul(
// CHECK-NEXT:    %r = ax.mul %x, %y : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], bf16>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], bf16>
// GENERIC:       %r = "ax.mul"(%x, %y) : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], bf16>
func.func @mul(%x: !ax.tensor<[M, K], bf16>, %y: !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], bf16> {
  %r = ax.mul %x, %y : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], bf16>
  func.return %r : !ax.tensor<[M, K], bf16>
}

// CHECK-LABEL: func.func @div(
// CHECK-NEXT:    %r = ax.div %x, %y : (!ax.tensor<[M, 1], f32>, !ax.tensor<[1, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.div"(%x, %y) : (!ax.tensor<[M, 1], f32>, !ax.tensor<[1, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @div(%x: !ax.tensor<[M, 1], f32>, %y: !ax.tensor<[1, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.div %x, %y : (!ax.tensor<[M, 1], f32>, !ax.tensor<[1, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @max(
// CHECK-NEXT:    %r = ax.max %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.max"(%x, %y) : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @max(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.max %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @min(
// CHECK-NEXT:    %r = ax.min %x, %y : (!ax.tensor<[M, K], i32>, !ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i32>
// GENERIC:       %r = "ax.min"(%x, %y) : (!ax.tensor<[M, K], i32>, !ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
func.func @min(%x: !ax.tensor<[M, K], i32>, %y: !ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32> {
  %r = ax.min %x, %y : (!ax.tensor<[M, K], i32>, !ax.tensor<[M, K], i32>) -> !ax.tensor<[M, K], i32>
  func.return %r : !ax.tensor<[M, K], i32>
}

// ---- comparisons give i1 -----------------------------------------------------------------------

// CHECK-LABEL: func.func @eq(
// CHECK-NEXT:    %r = ax.eq %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i1>
// GENERIC:       %r = "ax.eq"(%x, %y) : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1>
func.func @eq(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1> {
  %r = ax.eq %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1>
  func.return %r : !ax.tensor<[M, K], i1>
}

// CHECK-LABEL: func.func @ne(
// CHECK-NEXT:    %r = ax.ne %x, %y : (!ax.tensor<[M, K], i1>, !ax.tensor<[M, K], i1>) -> !ax.tensor<[M, K], i1>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i1>
// GENERIC:       %r = "ax.ne"(%x, %y) : (!ax.tensor<[M, K], i1>, !ax.tensor<[M, K], i1>) -> !ax.tensor<[M, K], i1>
func.func @ne(%x: !ax.tensor<[M, K], i1>, %y: !ax.tensor<[M, K], i1>) -> !ax.tensor<[M, K], i1> {
  %r = ax.ne %x, %y : (!ax.tensor<[M, K], i1>, !ax.tensor<[M, K], i1>) -> !ax.tensor<[M, K], i1>
  func.return %r : !ax.tensor<[M, K], i1>
}

// CHECK-LABEL: func.func @lt(
// CHECK-NEXT:    %r = ax.lt %x, %y : (!ax.tensor<[M, K], i32>, !ax.tensor<[M, 1], i32>) -> !ax.tensor<[M, K], i1>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i1>
// GENERIC:       %r = "ax.lt"(%x, %y) : (!ax.tensor<[M, K], i32>, !ax.tensor<[M, 1], i32>) -> !ax.tensor<[M, K], i1>
func.func @lt(%x: !ax.tensor<[M, K], i32>, %y: !ax.tensor<[M, 1], i32>) -> !ax.tensor<[M, K], i1> {
  %r = ax.lt %x, %y : (!ax.tensor<[M, K], i32>, !ax.tensor<[M, 1], i32>) -> !ax.tensor<[M, K], i1>
  func.return %r : !ax.tensor<[M, K], i1>
}

// CHECK-LABEL: func.func @le(
// CHECK-NEXT:    %r = ax.le %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i1>
// GENERIC:       %r = "ax.le"(%x, %y) : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1>
func.func @le(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1> {
  %r = ax.le %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], i1>
  func.return %r : !ax.tensor<[M, K], i1>
}

// CHECK-LABEL: func.func @gt(
// CHECK-NEXT:    %r = ax.gt %x, %y : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], i1>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i1>
// GENERIC:       %r = "ax.gt"(%x, %y) : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], i1>
func.func @gt(%x: !ax.tensor<[M, K], bf16>, %y: !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], i1> {
  %r = ax.gt %x, %y : (!ax.tensor<[M, K], bf16>, !ax.tensor<[], bf16>) -> !ax.tensor<[M, K], i1>
  func.return %r : !ax.tensor<[M, K], i1>
}

// CHECK-LABEL: func.func @ge(
// CHECK-NEXT:    %r = ax.ge %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], i1>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i1>
// GENERIC:       %r = "ax.ge"(%x, %y) : (!ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], i1>
func.func @ge(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], i1> {
  %r = ax.ge %x, %y : (!ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], i1>
  func.return %r : !ax.tensor<[M, K], i1>
}

// ---- pow, select, cast -------------------------------------------------------------------------

// CHECK-LABEL: func.func @pow(
// CHECK-NEXT:    %r = ax.pow %x {exponent = 3.000000e+00 : f64} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.pow"(%x) <{exponent = 3.000000e+00 : f64}> : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @pow(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.pow %x {exponent = 3.0 : f64} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @select(
// CHECK-NEXT:    %r = ax.select %c, %a, %b : (!ax.tensor<[M, K], i1>, !ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.select"(%c, %a, %b) : (!ax.tensor<[M, K], i1>, !ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], f32>
func.func @select(%c: !ax.tensor<[M, K], i1>, %a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.select %c, %a, %b : (!ax.tensor<[M, K], i1>, !ax.tensor<[M, K], f32>, !ax.tensor<[K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// CHECK-LABEL: func.func @cast(
// CHECK-NEXT:    %r = ax.cast %x {dtype = bf16} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], bf16>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], bf16>
// GENERIC:       %r = "ax.cast"(%x) <{dtype = bf16}> : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], bf16>
func.func @cast(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], bf16> {
  %r = ax.cast %x {dtype = bf16} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], bf16>
  func.return %r : !ax.tensor<[M, K], bf16>
}

// ---- creation ----------------------------------------------------------------------------------

// CHECK-LABEL: func.func @constant(
// CHECK-NEXT:    %r = ax.constant {value = 5.000000e-01 : f64, shape = ["M", "K"], dtype = f32} : !ax.tensor<[M, K], f32>
// CHECK-NEXT:    %s = ax.constant {value = 7.000000e+00 : f64, shape = [], dtype = i32} : !ax.tensor<[], i32>
// CHECK-NEXT:    func.return %r, %s : !ax.tensor<[M, K], f32>, !ax.tensor<[], i32>
// GENERIC:       %r = "ax.constant"() <{value = 5.000000e-01 : f64, shape = ["M", "K"], dtype = f32}> : () -> !ax.tensor<[M, K], f32>
// GENERIC:       %s = "ax.constant"() <{value = 7.000000e+00 : f64, shape = [], dtype = i32}> : () -> !ax.tensor<[], i32>
func.func @constant() -> (!ax.tensor<[M, K], f32>, !ax.tensor<[], i32>) {
  %r = ax.constant {value = 0.5 : f64, shape = ["M", "K"], dtype = f32} : !ax.tensor<[M, K], f32>
  %s = ax.constant {value = 7.0 : f64, shape = [], dtype = i32} : !ax.tensor<[], i32>
  func.return %r, %s : !ax.tensor<[M, K], f32>, !ax.tensor<[], i32>
}

// CHECK-LABEL: func.func @iota(
// CHECK-NEXT:    %r = ax.iota {shape = ["M", "K"], axis = 1 : i64, dtype = i32} : !ax.tensor<[M, K], i32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], i32>
// GENERIC:       %r = "ax.iota"() <{shape = ["M", "K"], axis = 1 : i64, dtype = i32}> : () -> !ax.tensor<[M, K], i32>
func.func @iota() -> !ax.tensor<[M, K], i32> {
  %r = ax.iota {shape = ["M", "K"], axis = 1 : i64, dtype = i32} : !ax.tensor<[M, K], i32>
  func.return %r : !ax.tensor<[M, K], i32>
}

// ---- contraction and reductions ----------------------------------------------------------------

// CHECK-LABEL: func.func @matmul(
// CHECK-NEXT:    %r = ax.matmul %a, %b : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16>
// CHECK-NEXT:    %mv = ax.matmul %a, %v : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16>
// CHECK-NEXT:    %bm = ax.matmul %a, %c : (!ax.tensor<[M, K], bf16>, !ax.tensor<[B, 1, K, N], bf16>) -> !ax.tensor<[B, 1, M, N], bf16>
// CHECK-NEXT:    func.return %r, %mv, %bm : !ax.tensor<[M, N], bf16>, !ax.tensor<[M], bf16>, !ax.tensor<[B, 1, M, N], bf16>
// GENERIC:       %r = "ax.matmul"(%a, %b) : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16>
// GENERIC:       %mv = "ax.matmul"(%a, %v) : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16>
// GENERIC:       %bm = "ax.matmul"(%a, %c) : (!ax.tensor<[M, K], bf16>, !ax.tensor<[B, 1, K, N], bf16>) -> !ax.tensor<[B, 1, M, N], bf16>
func.func @matmul(%a: !ax.tensor<[M, K], bf16>, %b: !ax.tensor<[K, N], bf16>, %v: !ax.tensor<[K], bf16>, %c: !ax.tensor<[B, 1, K, N], bf16>) -> (!ax.tensor<[M, N], bf16>, !ax.tensor<[M], bf16>, !ax.tensor<[B, 1, M, N], bf16>) {
  %r = ax.matmul %a, %b : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[M, N], bf16>
  %mv = ax.matmul %a, %v : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16>
  %bm = ax.matmul %a, %c : (!ax.tensor<[M, K], bf16>, !ax.tensor<[B, 1, K, N], bf16>) -> !ax.tensor<[B, 1, M, N], bf16>
  func.return %r, %mv, %bm : !ax.tensor<[M, N], bf16>, !ax.tensor<[M], bf16>, !ax.tensor<[B, 1, M, N], bf16>
}

// CHECK-LABEL: func.func @sum(
// CHECK-NEXT:    %r = ax.sum %x {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, 1], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, 1], f32>
// GENERIC:       %r = "ax.sum"(%x) <{axes = array<i64: 1>, keepdims = true}> : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, 1], f32>
func.func @sum(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, 1], f32> {
  %r = ax.sum %x {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, 1], f32>
  func.return %r : !ax.tensor<[M, 1], f32>
}

// CHECK-LABEL: func.func @reduce_max(
// CHECK-NEXT:    %r = ax.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M], f32>
// GENERIC:       %r = "ax.reduce_max"(%x) <{axes = array<i64: 1>, keepdims = false}> : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32>
func.func @reduce_max(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32> {
  %r = ax.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M], f32>
  func.return %r : !ax.tensor<[M], f32>
}

// CHECK-LABEL: func.func @reduce_min(
// CHECK-NEXT:    %r = ax.reduce_min %x {axes = array<i64: 0, 1>, keepdims = false} : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[], i32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[], i32>
// GENERIC:       %r = "ax.reduce_min"(%x) <{axes = array<i64: 0, 1>, keepdims = false}> : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[], i32>
func.func @reduce_min(%x: !ax.tensor<[M, K], i32>) -> !ax.tensor<[], i32> {
  %r = ax.reduce_min %x {axes = array<i64: 0, 1>, keepdims = false} : (!ax.tensor<[M, K], i32>) -> !ax.tensor<[], i32>
  func.return %r : !ax.tensor<[], i32>
}

// CHECK-LABEL: func.func @prod(
// CHECK-NEXT:    %r = ax.prod %x {axes = array<i64: 0, 2>, keepdims = true} : (!ax.tensor<[B, M, K], f32>) -> !ax.tensor<[1, M, 1], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[1, M, 1], f32>
// GENERIC:       %r = "ax.prod"(%x) <{axes = array<i64: 0, 2>, keepdims = true}> : (!ax.tensor<[B, M, K], f32>) -> !ax.tensor<[1, M, 1], f32>
func.func @prod(%x: !ax.tensor<[B, M, K], f32>) -> !ax.tensor<[1, M, 1], f32> {
  %r = ax.prod %x {axes = array<i64: 0, 2>, keepdims = true} : (!ax.tensor<[B, M, K], f32>) -> !ax.tensor<[1, M, 1], f32>
  func.return %r : !ax.tensor<[1, M, 1], f32>
}

// CHECK-LABEL: func.func @mean(
// CHECK-NEXT:    %r = ax.mean %x {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, 1], bf16>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, 1], bf16>
// GENERIC:       %r = "ax.mean"(%x) <{axes = array<i64: 1>, keepdims = true}> : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, 1], bf16>
func.func @mean(%x: !ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, 1], bf16> {
  %r = ax.mean %x {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, 1], bf16>
  func.return %r : !ax.tensor<[M, 1], bf16>
}

// CHECK-LABEL: func.func @cumsum(
// CHECK-NEXT:    %r = ax.cumsum %x {axis = 1 : i64} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.cumsum"(%x) <{axis = 1 : i64}> : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @cumsum(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  %r = ax.cumsum %x {axis = 1 : i64} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r : !ax.tensor<[M, K], f32>
}

// ---- data movement -----------------------------------------------------------------------------

// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT:    %r = ax.transpose %x {perm = array<i64: 2, 0, 1>} : (!ax.tensor<[B, M, K], f32>) -> !ax.tensor<[K, B, M], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[K, B, M], f32>
// GENERIC:       %r = "ax.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (!ax.tensor<[B, M, K], f32>) -> !ax.tensor<[K, B, M], f32>
func.func @transpose(%x: !ax.tensor<[B, M, K], f32>) -> !ax.tensor<[K, B, M], f32> {
  %r = ax.transpose %x {perm = array<i64: 2, 0, 1>} : (!ax.tensor<[B, M, K], f32>) -> !ax.tensor<[K, B, M], f32>
  func.return %r : !ax.tensor<[K, B, M], f32>
}

// CHECK-LABEL: func.func @reshape(
// CHECK-NEXT:    %r = ax.reshape %x {shape = ["M", "K", "2"]} : (!ax.tensor<[M, 2*K], f32>) -> !ax.tensor<[M, K, 2], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K, 2], f32>
// GENERIC:       %r = "ax.reshape"(%x) <{shape = ["M", "K", "2"]}> : (!ax.tensor<[M, 2*K], f32>) -> !ax.tensor<[M, K, 2], f32>
func.func @reshape(%x: !ax.tensor<[M, 2*K], f32>) -> !ax.tensor<[M, K, 2], f32> {
  %r = ax.reshape %x {shape = ["M", "K", "2"]} : (!ax.tensor<[M, 2*K], f32>) -> !ax.tensor<[M, K, 2], f32>
  func.return %r : !ax.tensor<[M, K, 2], f32>
}

// CHECK-LABEL: func.func @broadcast_to(
// CHECK-NEXT:    %r = ax.broadcast_to %x {shape = ["B", "M", "K"]} : (!ax.tensor<[M, 1], f32>) -> !ax.tensor<[B, M, K], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[B, M, K], f32>
// GENERIC:       %r = "ax.broadcast_to"(%x) <{shape = ["B", "M", "K"]}> : (!ax.tensor<[M, 1], f32>) -> !ax.tensor<[B, M, K], f32>
func.func @broadcast_to(%x: !ax.tensor<[M, 1], f32>) -> !ax.tensor<[B, M, K], f32> {
  %r = ax.broadcast_to %x {shape = ["B", "M", "K"]} : (!ax.tensor<[M, 1], f32>) -> !ax.tensor<[B, M, K], f32>
  func.return %r : !ax.tensor<[B, M, K], f32>
}

// CHECK-LABEL: func.func @slice(
// CHECK-NEXT:    %r = ax.slice %x {start = ["1", "1"], stop = ["M", "K"], step = ["1", "2"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M - 1, K floordiv 2], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M - 1, K floordiv 2], f32>
// GENERIC:       %r = "ax.slice"(%x) <{start = ["1", "1"], stop = ["M", "K"], step = ["1", "2"]}> : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M - 1, K floordiv 2], f32>
func.func @slice(%x: !ax.tensor<[M, K], f32>) -> !ax.tensor<[M - 1, K floordiv 2], f32> {
  %r = ax.slice %x {start = ["1", "1"], stop = ["M", "K"], step = ["1", "2"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M - 1, K floordiv 2], f32>
  func.return %r : !ax.tensor<[M - 1, K floordiv 2], f32>
}

// CHECK-LABEL: func.func @concat(
// CHECK-NEXT:    %r = ax.concat %a, %b, %c {axis = 1 : i64} : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, N], f32>, !ax.tensor<[M, 4], f32>) -> !ax.tensor<[M, K + N + 4], f32>
// CHECK-NEXT:    func.return %r : !ax.tensor<[M, K + N + 4], f32>
// GENERIC:       %r = "ax.concat"(%a, %b, %c) <{axis = 1 : i64}> : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, N], f32>, !ax.tensor<[M, 4], f32>) -> !ax.tensor<[M, K + N + 4], f32>
func.func @concat(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[M, N], f32>, %c: !ax.tensor<[M, 4], f32>) -> !ax.tensor<[M, K + N + 4], f32> {
  %r = ax.concat %a, %b, %c {axis = 1 : i64} : (!ax.tensor<[M, K], f32>, !ax.tensor<[M, N], f32>, !ax.tensor<[M, 4], f32>) -> !ax.tensor<[M, K + N + 4], f32>
  func.return %r : !ax.tensor<[M, K + N + 4], f32>
}

// ---- generic -----------------------------------------------------------------------------------

// CHECK-LABEL: func.func @generic(
// CHECK-NEXT:    %r = ax.generic %a, %b {form = "out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[d0, r0] * in1[r0, d1]", dtype = f32} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
// CHECK-NEXT:    %c = ax.generic %a {form = "out[d0 < M, d1 < K] = add over r0 in [0, d1 + 1) of in0[d0, r0]", dtype = f32} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
// CHECK-NEXT:    func.return %r, %c : !ax.tensor<[M, N], f32>, !ax.tensor<[M, K], f32>
// GENERIC:       %r = "ax.generic"(%a, %b) <{form = "out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[d0, r0] * in1[r0, d1]", dtype = f32}> : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
// GENERIC:       %c = "ax.generic"(%a) <{form = "out[d0 < M, d1 < K] = add over r0 in [0, d1 + 1) of in0[d0, r0]", dtype = f32}> : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
func.func @generic(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[K, N], f32>) -> (!ax.tensor<[M, N], f32>, !ax.tensor<[M, K], f32>) {
  %r = ax.generic %a, %b {form = "out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[d0, r0] * in1[r0, d1]", dtype = f32} : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  %c = ax.generic %a {form = "out[d0 < M, d1 < K] = add over r0 in [0, d1 + 1) of in0[d0, r0]", dtype = f32} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32>
  func.return %r, %c : !ax.tensor<[M, N], f32>, !ax.tensor<[M, K], f32>
}
