// RUN: axon-opt %s --split-input-file -p lower-nki 2>/dev/null | filecheck %s
// RUN: axon-opt %s --split-input-file -p lower-nki 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// Tiles of more than one free dim (rope's [BM, H, 2*D2] rows): the structural ops become
// `nki.access` patterns of the same meaning, partition dim kept: the interleaved pairs a view at
// free stride 2, cos and sin reshaped and stretched over the heads (stride 0), the pairs joined
// by a concatenation along a free dim; the elementwise ops read them as [P, free...] tiles.

// REPORT: lower-nki: @rope_rows: proved (proof {{[0-9a-f]+}})
// CHECK-LABEL: func.func @rope_rows
// CHECK: %[[EVEN:.*]] = nki.access %[[X:.*]] {layout = "slice", start = ["0", "0", "0"], stop = ["BM", "H", "2*D2 - 1"], step = ["1", "1", "2"], buffer = "sbuf"} : (!ax.tensor<[BM, H, 2*D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
// CHECK-NEXT: %[[ODD:.*]] = nki.access %[[X]] {layout = "slice", start = ["0", "0", "1"], stop = ["BM", "H", "2*D2"], step = ["1", "1", "2"], buffer = "sbuf"}
// CHECK-NEXT: %[[C1:.*]] = nki.access %{{.*}} {layout = "reshape", shape = ["BM", "1", "D2"], buffer = "sbuf"} : (!ax.tensor<[BM, D2], bf16>) -> !ax.tensor<[BM, 1, D2], bf16>
// CHECK-NEXT: %[[S1:.*]] = nki.access %{{.*}} {layout = "reshape", shape = ["BM", "1", "D2"], buffer = "sbuf"}
// CHECK-NEXT: %[[C:.*]] = nki.access %[[C1]] {layout = "broadcast_to", shape = ["BM", "H", "D2"], buffer = "sbuf"} : (!ax.tensor<[BM, 1, D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
// CHECK-NEXT: nki.tensor_tensor %[[EVEN]], %[[C]] {op = "multiply", buffer = "sbuf", dtype = f32} : (!ax.tensor<[BM, H, D2], bf16>, !ax.tensor<[BM, H, D2], bf16>) -> !ax.tensor<[BM, H, D2], f32>
// CHECK: nki.tensor_tensor %{{.*}}, %{{.*}} {op = "subtract", buffer = "sbuf", dtype = bf16}
// CHECK: nki.access %{{.*}}, %{{.*}} {layout = "concat", axis = 3 : i64, buffer = "sbuf"} : (!ax.tensor<[BM, H, D2, 1], bf16>, !ax.tensor<[BM, H, D2, 1], bf16>) -> !ax.tensor<[BM, H, D2, 2], bf16>
// CHECK-NEXT: %[[OUT:.*]] = nki.access %{{.*}} {layout = "reshape", shape = ["BM", "H", "2*D2"], buffer = "sbuf"}
// CHECK-NEXT: tile.store %[[OUT]]
// CHECK-NOT: ax.slice
// CHECK-NOT: ax.concat
func.func @rope_rows(%0: !ax.tensor<[T, H, 2*D2], bf16>, %1: !ax.tensor<[T, D2], bf16>, %2: !ax.tensor<[T, D2], bf16>) -> !ax.tensor<[T, H, 2*D2], bf16> {
  %3 = tile.kernel %0, %1, %2 {program_ids = ["i"], grid = ["(BM + T - 1) floordiv BM"], params = ["BM"], assume = ["BM >= 1", "BM <= 128", "4*D2 + 4*D2*H <= 212984"]} : (!ax.tensor<[T, H, 2*D2], bf16>, !ax.tensor<[T, D2], bf16>, !ax.tensor<[T, D2], bf16>) -> !ax.tensor<[T, H, 2*D2], bf16> {
  ^bb0(%4: !ax.tensor<[T, H, 2*D2], bf16>, %5: !ax.tensor<[T, D2], bf16>, %6: !ax.tensor<[T, D2], bf16>):
    %7 = tile.load %4 {offsets = ["BM*i", "0", "0"], shape = ["BM", "H", "2*D2"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[T, H, 2*D2], bf16>) -> !ax.tensor<[BM, H, 2*D2], bf16>
    %8 = tile.load %5 {offsets = ["BM*i", "0"], shape = ["BM", "D2"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[T, D2], bf16>) -> !ax.tensor<[BM, D2], bf16>
    %9 = tile.load %6 {offsets = ["BM*i", "0"], shape = ["BM", "D2"], pad = 0.000000e+00 : f64, space = "sbuf"} : (!ax.tensor<[T, D2], bf16>) -> !ax.tensor<[BM, D2], bf16>
    %10 = ax.slice %7 {start = ["0", "0", "0"], stop = ["BM", "H", "2*D2 - 1"], step = ["1", "1", "2"]} : (!ax.tensor<[BM, H, 2*D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %11 = ax.slice %7 {start = ["0", "0", "1"], stop = ["BM", "H", "2*D2"], step = ["1", "1", "2"]} : (!ax.tensor<[BM, H, 2*D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %12 = ax.reshape %8 {shape = ["BM", "1", "D2"]} : (!ax.tensor<[BM, D2], bf16>) -> !ax.tensor<[BM, 1, D2], bf16>
    %13 = ax.reshape %9 {shape = ["BM", "1", "D2"]} : (!ax.tensor<[BM, D2], bf16>) -> !ax.tensor<[BM, 1, D2], bf16>
    %14 = ax.mul %10, %12 : (!ax.tensor<[BM, H, D2], bf16>, !ax.tensor<[BM, 1, D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %15 = ax.mul %11, %13 : (!ax.tensor<[BM, H, D2], bf16>, !ax.tensor<[BM, 1, D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %16 = ax.sub %14, %15 : (!ax.tensor<[BM, H, D2], bf16>, !ax.tensor<[BM, H, D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %17 = ax.mul %10, %13 : (!ax.tensor<[BM, H, D2], bf16>, !ax.tensor<[BM, 1, D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %18 = ax.mul %11, %12 : (!ax.tensor<[BM, H, D2], bf16>, !ax.tensor<[BM, 1, D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %19 = ax.add %17, %18 : (!ax.tensor<[BM, H, D2], bf16>, !ax.tensor<[BM, H, D2], bf16>) -> !ax.tensor<[BM, H, D2], bf16>
    %20 = ax.reshape %16 {shape = ["BM", "H", "D2", "1"]} : (!ax.tensor<[BM, H, D2], bf16>) -> !ax.tensor<[BM, H, D2, 1], bf16>
    %21 = ax.reshape %19 {shape = ["BM", "H", "D2", "1"]} : (!ax.tensor<[BM, H, D2], bf16>) -> !ax.tensor<[BM, H, D2, 1], bf16>
    %22 = ax.concat %20, %21 {axis = 3 : i64} : (!ax.tensor<[BM, H, D2, 1], bf16>, !ax.tensor<[BM, H, D2, 1], bf16>) -> !ax.tensor<[BM, H, D2, 2], bf16>
    %23 = ax.reshape %22 {shape = ["BM", "H", "2*D2"]} : (!ax.tensor<[BM, H, D2, 2], bf16>) -> !ax.tensor<[BM, H, 2*D2], bf16>
    tile.store %23 {result = 0 : i64, offsets = ["BM*i", "0", "0"]} : !ax.tensor<[BM, H, 2*D2], bf16>
    tile.yield
  }
  func.return %3 : !ax.tensor<[T, H, 2*D2], bf16>
}
