// Invalid tile IR: one diagnostic per chunk (chunks are split at the dashed separator lines), at
// least one chunk for every op of the tile dialect, each located at the op at fault (a kernel's
// check of an op it holds points at that op). A chunk that verifies would print a
// `builtin.module`; the second RUN line fails the test if any does.
//
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: axon-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep builtin.module

// grid and program ids differ in length
func.func @grid_ids(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.kernel': 2 program ids for a grid of 1 dims

// -----

// a program id and a parameter share a name
func.func @repeated_name(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "i"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.kernel': program ids and params repeat a name: i, BM, i

// -----

// a program id that is already a size of the inputs
func.func @id_is_a_size(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["K"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.kernel': K already name(s) a size of the inputs

// -----

// a grid extent over a name nothing binds
func.func @grid_unbound(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BQ)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.kernel': grid extent (BQ + M - 1) floordiv BQ uses BQ, which nothing binds here (sizes of the kernel's inputs, its params, program ids and the ivs of enclosing loops)

// -----

// an assumption without a comparison
func.func @assumption(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"], assume = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.kernel': assumption 'BM' has no comparison (== != <= >= < >)

// -----

// a result dim over a program id (a param may size a result: a split loop's partials have a
// dim per stretch; a program id is bound only inside the body)
func.func @result_dim(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[i, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.kernel': result dim i uses i, which nothing binds here (sizes of the kernel's inputs, its params, program ids and the ivs of enclosing loops)

// -----

// the body's arguments are not the inputs
func.func @body_args(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0:
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.kernel': the body takes one argument per input, of its type

// -----

// a load at an offset over a name nothing binds
func.func @load_unbound(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    %t = tile.load %xg {offsets = ["q*BM", "0"], shape = ["BM", "K"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, K], f32>
    tile.store %t {result = 0, offsets = ["i*BM", "0"]} : !ax.tensor<[BM, K], f32>
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.load' uses q, which nothing binds here (sizes of the kernel's inputs, its params, program ids and the ivs of enclosing loops)

// -----

// a load with one offset for a rank-2 tensor
func.func @load_rank(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    %t = tile.load %xg {offsets = ["i*BM"], shape = ["BM", "K"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, K], f32>
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.load': offsets needs 2 entries (one per dim), got 1

// -----

// a memory space that is not a name
func.func @load_space(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    %t = tile.load %xg {offsets = ["i*BM", "0"], shape = ["BM", "K"], pad = 0.0 : f64, space = "on chip"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, K], f32>
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.load': space 'on chip' is not a memory space name

// -----

// a full tile whose value its dtype cannot hold (the check is ax.constant's)
func.func @full_value() {
  %t = tile.full {value = 0.5 : f64, shape = ["4"], dtype = i32, space = "psum"} : !ax.tensor<[4], i32>
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:3: error: 'tile.full': value 0.5 is not representable in i32

// -----

// a store into a result the kernel does not have
func.func @store_result(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    %t = tile.load %xg {offsets = ["i*BM", "0"], shape = ["BM", "K"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, K], f32>
    tile.store %t {result = 1, offsets = ["i*BM", "0"]} : !ax.tensor<[BM, K], f32>
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.store': result 1 is not a result of the kernel (it has 1)

// -----

// a store of a bf16 tile into an f32 result
func.func @store_dtype(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[M, K], bf16>) {
  %r = tile.kernel %y {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%yg: !ax.tensor<[M, K], bf16>):
    %t = tile.load %yg {offsets = ["i*BM", "0"], shape = ["BM", "K"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[M, K], bf16>) -> !ax.tensor<[BM, K], bf16>
    tile.store %t {result = 0, offsets = ["i*BM", "0"]} : !ax.tensor<[BM, K], bf16>
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.store': a tile bf16[BM, K] into result 0 of type f32[M, K]

// -----

// a store with one offset for a rank-2 tile
func.func @store_rank(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    %t = tile.load %xg {offsets = ["i*BM", "0"], shape = ["BM", "K"], pad = 0.0 : f64, space = "sbuf"} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[BM, K], f32>
    tile.store %t {result = 0, offsets = ["i*BM"]} : !ax.tensor<[BM, K], f32>
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.store': 1 offsets for a tile of rank 2

// -----

// a parallel loop that carries a value
func.func @parallel_carry(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    %z = tile.full {value = 0.0 : f64, shape = ["BM"], dtype = f32, space = "psum"} : !ax.tensor<[BM], f32>
    %a = tile.for %z {iv = "k", extent = "4", kind = "parallel"} : (!ax.tensor<[BM], f32>) -> !ax.tensor<[BM], f32> {
    ^bb1(%in: !ax.tensor<[BM], f32>):
      tile.yield %in : !ax.tensor<[BM], f32>
    }
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.for': a parallel loop carries no values

// -----

// a loop kind that does not exist
func.func @loop_kind(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.for {iv = "k", extent = "4", kind = "unrolled"} : () -> () {
      tile.yield
    }
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.for': kind 'unrolled' is not one of sequential, parallel

// -----

// a loop iv that shadows a program id
func.func @loop_shadow(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    tile.for {iv = "i", extent = "4", kind = "parallel"} : () -> () {
      tile.yield
    }
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.for': iv 'i' shadows a name already bound here

// -----

// a loop whose body yields a value of another type
func.func @loop_yield(%x: !ax.tensor<[M, K], f32>) {
  %r = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"]} : (!ax.tensor<[M, K], f32>) -> !ax.tensor<[M, K], f32> {
  ^bb0(%xg: !ax.tensor<[M, K], f32>):
    %z = tile.full {value = 0.0 : f64, shape = ["BM"], dtype = f32, space = "psum"} : !ax.tensor<[BM], f32>
    %a = tile.for %z {iv = "k", extent = "4"} : (!ax.tensor<[BM], f32>) -> !ax.tensor<[BM], f32> {
    ^bb1(%in: !ax.tensor<[BM], f32>):
      %w = tile.full {value = 0.0 : f64, shape = ["BM", "2"], dtype = f32, space = "psum"} : !ax.tensor<[BM, 2], f32>
      tile.yield %w : !ax.tensor<[BM, 2], f32>
    }
    tile.yield
  }
  func.return
}
// CHECK: {{.*}}tile_invalid.mlir:{{[0-9]+}}:5: error: 'tile.for': the body must end in tile.yield of the carried values' types
