// RUN: axon-opt %s -p 'tile{profile=trn2}' 2>&1 | filecheck %s
// RUN: axon-opt %s -p 'tile{profile=h200 emit="variants"}' 2>/dev/null | filecheck %s --check-prefix=VARIANTS

// A row-local function becomes one kernel over blocks of BM rows, proved equal to it for every
// size and every BM the profile admits (a NeuronCore: at most 128 partitions, a row within a
// partition's bytes); the report says so. A function that is not row-local is refuted and kept.

// CHECK: tile: @softmax: row kernel proved (proof {{[0-9a-f]+}}, {{.*}} s) under BM >= 1, BM <= 128, N*4 <= 212984
// CHECK: tile: @colnorm: row kernel rejected (refuted: {{.*}})
// CHECK: tile: tried 2, proved 1, rejected 1, not tileable 0 in {{.*}} s (profile trn2)
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    attributes {axon.proof_id = "{{[0-9a-f]+}}"}
// CHECK:         tile.kernel %{{.*}} {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "N*4 <= 212984"]}
// CHECK:           tile.load %{{.*}} {offsets = ["BM*i", "0"], shape = ["BM", "N"]
// CHECK:           ax.reduce_max %{{.*}} : (!ax.tensor<[BM, N], f32>) -> !ax.tensor<[BM, 1], f32>
// CHECK:           tile.store %{{.*}} {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], f32>
// CHECK-LABEL: func.func @colnorm(
// CHECK-NOT:     tile.kernel
// CHECK:         ax.mean

// VARIANTS-LABEL: func.func @softmax(
// VARIANTS-NOT:     tile.kernel
// VARIANTS-LABEL: func.func @softmax_rows(
// VARIANTS-SAME:    attributes {axon.proof_id = "{{[0-9a-f]+}}", axon.tiling_of = @softmax}
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
