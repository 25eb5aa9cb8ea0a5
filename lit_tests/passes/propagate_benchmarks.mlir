// The variants later stages need, found by propagation on the benchmark programs
// (benchmarks/programs/*.py, read by axon-opt's source frontend). Each variant is checked to sit in
// the class the program returns (the class before `nu.yield`), i.e. proved equal to the program.
//
// RUN: axon-opt %S/../../benchmarks/programs/rmsnorm_matmul.py -p 'propagate{emit="graph"}' | filecheck %s --check-prefix=RMS
// RUN: axon-opt %S/../../benchmarks/programs/softmax_matmul.py -p 'propagate{emit="graph"}' | filecheck %s --check-prefix=SOFT
// RUN: axon-opt %S/../../benchmarks/programs/transpose_matmul.py -p propagate | filecheck %s --check-prefix=TRANS
// RUN: axon-opt %S/../../benchmarks/programs/lora.py -p 'propagate{emit="graph"}' | filecheck %s --check-prefix=LORA
// RUN: axon-opt %S/../../benchmarks/programs/gated_mlp.py -p 'propagate{emit="graph"}' | filecheck %s --check-prefix=GATED
// RUN: axon-opt %S/../../benchmarks/programs/gemm_sum_scale.py -p 'propagate{sizes="M=1024,K=8192,N=8192"}' | filecheck %s --check-prefix=GEMM
// RUN: axon-opt %S/../../benchmarks/programs/gemm_sum_scale.py -p 'propagate{emit="graph"}' | filecheck %s --check-prefix=GEMMG

// rmsnorm_matmul: the normalization rsqrt(mean(x^2) + eps) applied after the matmul.
// RMS-LABEL: func.func @rmsnorm_matmul(
// RMS:         %[[RSQRT:[0-9]+]] = ax.rsqrt %c{{[0-9]+}} {nu.proof = "input"}
// RMS-NEXT:    %[[RS:c[0-9]+]] = nu.class %[[RSQRT]] : !ax.tensor<[M, 1], bf16>
// RMS:         %[[MM:[0-9]+]] = ax.matmul %c{{[0-9]+}}, %c2 {nu.proof = "p{{[0-9]+}}"}
// RMS:         %[[MMC:c[0-9]+]] = nu.class %[[MM]]{{.*}} : !ax.tensor<[M, N], bf16>
// RMS:         %[[AFTER:[0-9]+]] = ax.mul %[[MMC]], %[[RS]] {nu.proof = "p{{[0-9]+}}"} : (!ax.tensor<[M, N], bf16>, !ax.tensor<[M, 1], bf16>)
// RMS:         %[[ROOT:c[0-9]+]] = nu.class {{.*}}%[[AFTER]]{{[, ]}}
// RMS-NEXT:    nu.yield %[[ROOT]]

// softmax_matmul: exp(x - max) @ w, then the division by the row sums.
// SOFT-LABEL: func.func @softmax_matmul(
// SOFT:         %[[EXP:[0-9]+]] = ax.exp
// SOFT-NEXT:    %[[E:c[0-9]+]] = nu.class %[[EXP]]
// SOFT:         %[[SUM:[0-9]+]] = ax.sum %[[E]] {nu.proof = "input", axes = array<i64: 1>, keepdims = true}
// SOFT-NEXT:    %[[S:c[0-9]+]] = nu.class %[[SUM]]
// SOFT:         %[[MM:[0-9]+]] = ax.matmul %[[E]], %c1 {nu.proof = "p{{[0-9]+}}"}
// SOFT-NEXT:    %[[MMC:c[0-9]+]] = nu.class %[[MM]]
// SOFT:         %[[DIV:[0-9]+]] = ax.div %[[MMC]], %[[S]] {nu.proof = "p{{[0-9]+}}"}
// SOFT:         %[[ROOT:c[0-9]+]] = nu.class {{.*}}%[[DIV]]{{[, ]}}
// SOFT-NEXT:    nu.yield %[[ROOT]]

// transpose_matmul: the transpose absorbed into the contraction (the extracted best program).
// TRANS-LABEL: func.func @transpose_matmul(
// TRANS-NEXT:    %0 = ax.generic %x, %w {form = "out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[r0, d0] * in1[r0, d1]", dtype = bf16}
// TRANS-NEXT:    func.return %0

// lora: x @ w + (x @ a) @ b = x @ (w + a @ b): associativity, then the common operand x factored.
// LORA-LABEL: func.func @lora(
// LORA:         %[[AB:[0-9]+]] = ax.matmul %c2, %c3 {nu.proof = "p{{[0-9]+}}"}
// LORA-NEXT:    %[[ABC:c[0-9]+]] = nu.class %[[AB]]
// LORA:         %[[ADD:[0-9]+]] = ax.add %c1, %[[ABC]] {nu.proof = "p{{[0-9]+}}"}
// LORA-NEXT:    %[[ADDC:c[0-9]+]] = nu.class %[[ADD]]
// LORA:         %[[FACT:[0-9]+]] = ax.matmul %c0, %[[ADDC]] {nu.proof = "p{{[0-9]+}}"}
// LORA:         %[[ROOT:c[0-9]+]] = nu.class {{.*}}%[[FACT]]{{[, ]}}
// LORA-NEXT:    nu.yield %[[ROOT]]

// gated_mlp: one GEMM over the concatenated weights x @ [w1 | w2], each original matmul a slice
// of it (merge proofs); the gate applied as one epilogue over both matmul results, and as one
// epilogue reading both halves of the merged GEMM.
// GATED-LABEL: func.func @gated_mlp(
// GATED:         %[[CAT:[0-9]+]] = ax.concat %c1, %c2 {nu.proof = "p{{[0-9]+}}", axis = 1 : i64} : (!ax.tensor<[K, N], bf16>, !ax.tensor<[K, N], bf16>) -> !ax.tensor<[K, 2*N], bf16>
// GATED-NEXT:    %[[CATC:c[0-9]+]] = nu.class %[[CAT]]
// GATED-NEXT:    %[[MM:[0-9]+]] = ax.matmul %c0, %[[CATC]] {nu.proof = "p{{[0-9]+}}"} : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K, 2*N], bf16>) -> !ax.tensor<[M, 2*N], bf16>
// GATED-NEXT:    %[[MMC:c[0-9]+]] = nu.class %[[MM]]
// GATED-NEXT:    %[[G1:[0-9]+]] = ax.matmul %c0, %c1 {nu.proof = "input"}
// GATED-NEXT:    %[[S1:[0-9]+]] = ax.slice %[[MMC]] {nu.proof = "p{{[0-9]+}}", start = ["0", "0"], stop = ["M", "N"], step = ["1", "1"]}
// GATED-NEXT:    nu.class %[[G1]], %[[S1]]
// GATED:         %[[G2:[0-9]+]] = ax.matmul %c0, %c2 {nu.proof = "input"}
// GATED-NEXT:    %[[S2:[0-9]+]] = ax.slice %[[MMC]] {nu.proof = "p{{[0-9]+}}", start = ["0", "N"], stop = ["M", "2*N"], step = ["1", "1"]}
// GATED-NEXT:    nu.class %[[G2]], %[[S2]]
// GATED:         %[[EPI:[0-9]+]] = ax.generic %c{{[0-9]+}}, %c{{[0-9]+}} {nu.proof = "p{{[0-9]+}}", form = "out[d0 < M, d1 < N] = in0[d0, d1] * silu(in1[d0, d1])", dtype = bf16}
// GATED:         %[[FUSED:[0-9]+]] = ax.generic %[[MMC]] {nu.proof = "p{{[0-9]+}}", form = "out[d0 < M, d1 < N] = in0[d0, N + d1] * silu(in0[d0, d1])", dtype = bf16}
// GATED:         %[[ROOT:c[0-9]+]] = nu.class {{.*}}%[[EPI]]{{[, ]}}{{.*}}%[[FUSED]]{{[, ]}}
// GATED-NEXT:    nu.yield %[[ROOT]]
// GATED:         p{{[0-9]+}} = "merge: ax.matmul(c0, c1) == ax.slice{start=(0, 0), step=(1, 1), stop=(M, N)}(ax.matmul(c0, ax.concat{axis=1}(c1, c2))) [proved

// gemm_sum_scale at its benchmark sizes: a matrix-vector product with rowsum(w).
// GEMM-LABEL: func.func @gemm_sum_scale(
// GEMM-NEXT:    %0 = ax.sum %w {axes = array<i64: 1>, keepdims = false} : (!ax.tensor<[K, N], bf16>) -> !ax.tensor<[K], bf16>
// GEMM-NEXT:    %1 = ax.matmul %x, %0 : (!ax.tensor<[M, K], bf16>, !ax.tensor<[K], bf16>) -> !ax.tensor<[M], bf16>
// GEMM-NOT:     !ax.tensor<[M, N], bf16>
// GEMM:         func.return
// GEMMG-LABEL: func.func @gemm_sum_scale(
// GEMMG:        %[[RS:[0-9]+]] = ax.sum %c1 {nu.proof = "p{{[0-9]+}}", axes = array<i64: 1>, keepdims = false}
// GEMMG-NEXT:   %[[RSC:c[0-9]+]] = nu.class %[[RS]] : !ax.tensor<[K], bf16>
// GEMMG:        ax.matmul %c0, %[[RSC]] {nu.proof = "p{{[0-9]+}}"}
