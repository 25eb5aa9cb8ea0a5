// propagate's options are typed and checked when the pipeline is parsed, before any work: a bad
// value is one diagnostic with the valid range, exit 1, and nothing on stdout.
//
// RUN: axon-opt %s -p 'propagate{time_limit=5 max_iterations=1}' | filecheck %s --check-prefix=INT-FOR-FLOAT
// RUN: not axon-opt %s -p 'propagate{emit="top-k" top_k=0}' 2>&1 | filecheck %s --check-prefix=TOPK
// RUN: not axon-opt %s -p 'propagate{max_iterations=0}' 2>&1 | filecheck %s --check-prefix=ITER
// RUN: not axon-opt %s -p 'propagate{device="a100"}' 2>&1 | filecheck %s --check-prefix=DEVICE
// RUN: not axon-opt %s -p 'propagate{sizes="=5"}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not axon-opt %s -p 'propagate{sizes="M=64,Q=5"}' 2>&1 | filecheck %s --check-prefix=SYMBOL

// INT-FOR-FLOAT: func.func @sum_of_matmul(
// TOPK: axon-opt: error: propagate: top_k must be an integer >= 1, not 0
// ITER: axon-opt: error: propagate: max_iterations must be an integer >= 1, not 0
// DEVICE: axon-opt: error: propagate: unknown device 'a100'; known: h200, {{.*}}
// SYNTAX: axon-opt: error: propagate: sizes entry '=5' is not NAME=INTEGER (e.g. sizes="M=1024,K=4096")
// SYMBOL: axon-opt: error: propagate: sizes names Q, which is not a size symbol of the program; its size symbols: K, M, N
func.func @sum_of_matmul(%x: !ax.tensor<[M, K], f32>, %w: !ax.tensor<[K, N], f32>) -> !ax.tensor<[M], f32> {
  %y = ax.matmul %x, %w : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32>
  %s = ax.sum %y {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M], f32>
  func.return %s : !ax.tensor<[M], f32>
}
