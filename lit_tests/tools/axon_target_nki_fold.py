# `axon PROGRAM --target nki` on a row kernel of few long rows: the best candidate is also
# printed with each row over several partitions (`fold.py`: 8 rows of 2048 on 128 partitions,
# each row's sums completed by a matmul with a block-diagonal ones matrix) and, its rows being
# one block, with its columns in chunks (`chunk.py`); both are simulated, checked and priced
# like every candidate, and the folded kernel is chosen.
# RUN: axon %s --target nki --sizes M=8,N=2048 --max-candidates 1 --no-cache -o %t.py 2>&1 | filecheck %s
# RUN: filecheck %s --check-prefix=MODULE < %t.py

def rmsnorm_rows(x: bf16[M, N], g: bf16[N]):
    return rmsnorm(x, g)

# CHECK: axon: nki: @rmsnorm_rows: candidate 1/1 rows BM=8: {{[0-9.]+}} us
# CHECK: axon: nki: @rmsnorm_rows: candidate 2 rows BM=8 rows over partitions: {{[0-9.]+}} us
# CHECK: axon: nki: @rmsnorm_rows: candidate 3 rows BM=8 columns in chunks: {{[0-9.]+}} us
# CHECK: axon: nki: @rmsnorm_rows: selection: {{.*}}; chosen rows BM=8 rows over partitions, predicted {{[0-9.]+}} us
# MODULE: fold_s = nl.tile_size.pmax // BM
# MODULE: nisa.nc_matmul(dst=fold_bp, stationary=fold_e, moving=fold_e)
# MODULE: nisa.dma_copy(dst={{t[0-9]+}}[0:{{n[0-9]+}} * fold_s, 0:fold_f], src=in0.ap(pattern={{.}}{{.}}fold_f, {{n[0-9]+}} * fold_s], {{.}}1, fold_f]], offset=(BM*i) * (N)))
# MODULE: nisa.nc_matmul(dst={{t[0-9]+}}, stationary=fold_b, moving={{t[0-9]+}})
