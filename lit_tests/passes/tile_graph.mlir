// RUN: axon-opt %s -p 'tile{emit="graph" profile=h200 sizes="M=4096,N=4096,K=4096"}' 2>/dev/null | filecheck %s
// RUN: axon-opt %s -p 'tile{emit="graph" profile=h200 sizes="M=4096,N=4096,K=4096"}' 2>/dev/null | axon-opt | filecheck %s

// `tile{emit="graph"}` keeps the program's nu-graph (here the function's own: no propagation
// ran) and adds every proved kernel as a `tile.kernel` e-node of the result class, beside the
// untiled relu: operands the parameters' classes, `nu.proof` its proof (in the graph's proofs
// table), `nu.variant` the untiled program it was proved against (one e-node index per class),
// its tiling, tile sizes (num_warps included on a GPU) and modeled figures. The result class's
// `best` marks the cheapest kernel: the K-loop blocks. The second RUN line reads the printed
// graph back (the dialect verifier checks every kernel e-node) and prints the same.

// CHECK-LABEL: func.func @mm_relu(
// CHECK:         nu.graph -> !ax.tensor<[M, N], f32> {
// CHECK:           %[[X:.*]] = nu.class %x
// CHECK:           %[[W:.*]] = nu.class %w
// CHECK:           %[[K:.*]] = tile.kernel %[[X]], %[[W]] {nu.proof = "[[P:[0-9a-f]+]]", nu.variant = array<i64: 0, 0, 0, 0>, axon.tiling = "blocks_k", axon.tile_sizes = ["BM=128 BN=128 BK={{[0-9]+}} GROUP_M={{[0-9]+}} num_warps=8: {{.*}}"{{.*}}], axon.seconds = {{.*}} : f64, axon.hbm_bytes = {{.*}} : f64, program_ids = ["i", "j"]
// CHECK:             tile.for
// CHECK:             ax.relu
// CHECK:           tile.kernel %[[X]], %[[W]] {nu.proof = "{{[0-9a-f]+}}", nu.variant = array<i64: 0, 0, 0, 0>, axon.tiling = "rows"
// CHECK:           %[[R:.*]] = ax.relu %{{.*}} {nu.proof = "input"}
// CHECK:           %[[C:.*]] = nu.class %[[R]], %[[K]], %{{.*}}, %{{.*}}, %{{.*}} {best = #builtin.int<1>}
// CHECK:           nu.yield %[[C]]
// CHECK:         } {proofs = {{{.*}}"[[P]]" = "verify-equivalence: the blocks_k kernel equals the program its nu.variant names"

func.func @mm_relu(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
  %y = ax.matmul %x, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  %r = ax.relu %y : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32>
  func.return %r : !ax.tensor<[M, N], f32>
}
