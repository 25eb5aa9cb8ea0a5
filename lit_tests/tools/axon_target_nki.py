# `axon PROGRAM --target nki`: the candidates (each proved tiling of the program and of the
# nu-graph's cheapest other program, here none, at its best tile sizes, and the
# unfused chain) are simulated, checked and priced one by one on stderr, bounded by
# --max-candidates, with a summary line; the chosen module goes to -o and into the winner
# cache, from which a second run prints it without selecting.
# RUN: rm -f %t.winners.json
# RUN: axon %s --target nki --sizes M=128,N=128,K=128 --max-candidates 2 --cache %t.winners.json -o %t.py 2>&1 | filecheck %s
# RUN: filecheck %s --check-prefix=MODULE < %t.py
# RUN: axon %s --target nki --sizes M=128,N=128,K=128 --max-candidates 2 --cache %t.winners.json -o %t.again.py 2>&1 | filecheck %s --check-prefix=CACHED
# RUN: diff %t.py %t.again.py

def relu_matmul(x: bf16[M, K], w: bf16[K, N]):
    return relu(x) @ w

# CHECK: axon: nki: @relu_matmul at K=128, M=128, N=128 on trn2, local executor
# CHECK: axon: nki: @relu_matmul: 1 program(s) (0 nu-graph variant(s)), 4 tilings proposed, 4 proved and fitting; 13 candidate(s): the best tile sizes of each proved tiling by the tiled cost model and the unfused chain
# CHECK: axon: nki: @relu_matmul: candidate 1/2 rows BM=128: {{[0-9.]+}} us
# CHECK: axon: nki: @relu_matmul: candidate 2/2 unfused chain: {{[0-9.]+}} us
# the best is then printed the other ways that change it (relu's result kept in bf16), priced
# CHECK: axon: nki: @relu_matmul: candidate 3 rows BM=128 16-bit intermediates (1): {{[0-9.]+}} us
# CHECK: axon: nki: @relu_matmul: selection: space 13, pruned 11 by the bound (--max-candidates 2), checked 2 (and the best printed 1 other way), rejected 0; chosen rows BM=128 16-bit intermediates (1), predicted {{[0-9.]+}} us ({{[0-9.]+}}x the DMA floor, {{[0-9.]+}} us); {{[0-9.]+}} s
# CHECK: axon: nki: @relu_matmul: rows (BM=128 (16-bit intermediates)), tiling proof
# MODULE: @nki.jit
# MODULE: def relu_matmul_rows(in0, in1):
# CACHED: axon: nki: @relu_matmul: the cached winner rows BM=128 (16-bit intermediates) (trn2, predicted {{[0-9.]+}} us; {{.*}}winners.json); {{[0-9.]+}} s
# CACHED-NOT: candidate
