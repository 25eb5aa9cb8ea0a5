// RUN: axon-opt %s -p 'tile{profile=trn2}' 2>&1 | filecheck %s
// RUN: axon-opt %s -p 'tile{profile=h200 emit="variants"}' 2>/dev/null | filecheck %s --check-prefix=VARIANTS

// Every tiling of a function is proposed (blocks of rows; blocks of rows and columns; each with
// or without a loop over a reduced dim) and kept only when proved equal to it for every size and
// every tile size the profile admits (a NeuronCore: at most 128 partitions, a row within a
// partition's bytes), then priced at `sizes` under the tiled cost model. Softmax reduces over
// its columns, so its blocks of columns are not tileable; blocks of whole rows are proved, and so
// is the three-pass kernel (a loop for the max, one for the sum, a parallel pass writing the
// rows: each loop's masked blocks recombine into the whole row), and the online one (one loop
// for the running max and the rescaled sum, proved by induction on the invariant it states,
// then the writing pass). On a NeuronCore the best block
// fills the 128 partitions. A mean over the rows cannot be split across programs: the function is kept.

// CHECK: tile: @softmax: 4 proposed, 3 proved, 0 refuted, 0 unknown, 1 not tileable, 3 fused in {{.*}} s; best rows of @softmax (proof {{[0-9a-f]+}}): BM=128: {{.*}} ms, HBM 8.4 MB (1.00x compulsory)
// CHECK: tile: @colnorm: 2 proposed, 0 proved, {{.*}}; no kernel proved (first reason: @colnorm: 'ax.mean' reduces over M, which is split across programs)
// CHECK: tile: 1 of 2 programs tiled; 6 tilings proposed, 3 proved (3 fused), 0 refuted, 0 unknown, 3 not tileable in {{.*}} s (profile trn2)
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    attributes {axon.proof_id = "{{[0-9a-f]+}}", axon.tiling = "rows", axon.tile_sizes = ["BM=128: {{.*}}"
// CHECK:         tile.kernel %{{.*}} {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*N <= 212984"]}
// CHECK:           tile.load %{{.*}} {offsets = ["BM*i", "0"], shape = ["BM", "N"]
// CHECK:           ax.reduce_max %{{.*}} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK:           tile.store %{{.*}} {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], f32>
// CHECK-LABEL: func.func @colnorm(
// CHECK-NOT:     tile.kernel
// CHECK:         ax.mean

// VARIANTS-LABEL: func.func @softmax(
// VARIANTS-NOT:     tile.kernel
// VARIANTS-LABEL: func.func @softmax_rows(
// VARIANTS-SAME:    attributes {axon.proof_id = "{{[0-9a-f]+}}", axon.tiling = "rows", axon.tile_sizes = [{{.*}}], axon.tiling_of = @softmax}
// VARIANTS:         tile.kernel {{.*}} assume = ["BM >= 1"]

func.func @softmax(%x: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %m = ax.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, 1], f32>
  %s = ax.sub %x, %m : (!ax.tensor<[M, N], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, N], f32>
  %e = ax.exp %s : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32>
  %z = ax.sum %e {axes = array<i64: 1>, keepdims = true} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, 1], f32>
  %y = ax.div %e, %z : (!ax.tensor<[M, N], f32>, !ax.tensor<[M, 1], f32>) -> !ax.tensor<[M, N], f32>
  func.return %y : !ax.tensor<[M, N], f32>
}

func.func @colnorm(%x: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %m = ax.mean %x {axes = array<i64: 0>, keepdims = true} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[1, N], f32>
  %y = ax.sub %x, %m : (!ax.tensor<[M, N], f32>, !ax.tensor<[1, N], f32>) -> !ax.tensor<[M, N], f32>
  func.return %y : !ax.tensor<[M, N], f32>
}
