# RUN: python -m axon.frontend.triton %s --xt --dtype y_ptr=f16 | axon-opt | filecheck %s
# Kernels raised into the xt dialect (parsed, never run): the tensors, the grid and the ops come
# from the accesses' strides and mask bounds; what is printed reads back through axon-opt.

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
             mask=offs < n)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)

# CHECK-LABEL: func.func @add_kernel(%{{.*}}: !ax.tensor<[n], f32>, %{{.*}}: !ax.tensor<[n], f16>) -> !ax.tensor<[n], f32>
# CHECK:         xt.kernel %{{.*}}, %{{.*}} {program_ids = ["pid0"], grid = ["(BLOCK + n - 1) floordiv BLOCK"], params = ["BLOCK"]}
# CHECK:           xt.load %{{.*}} {offsets = ["BLOCK*pid0"], shape = ["BLOCK"], extents = ["BLOCK"], other = 0.000000e+00 : f64}
# CHECK:           xt.load %{{.*}} {offsets = ["BLOCK*pid0"], shape = ["BLOCK"], extents = ["BLOCK"], other = 0.000000e+00 : f64} : (!ax.tensor<[n], f16>) -> !ax.tensor<[BLOCK], f16>
# CHECK:           xt.map %{{.*}}, %{{.*}} {form = "out[d0 < BLOCK] = in0[d0] + in1[d0]", dtype = f32}
# CHECK:           xt.store %{{.*}} {result = 0 : i64, offsets = ["BLOCK*pid0"], extents = ["BLOCK"]}

# CHECK-LABEL: func.func @softmax_kernel(%{{.*}}: !ax.tensor<[G0, n_cols], f32>) -> !ax.tensor<[G0, n_cols], f32>
# CHECK:         xt.kernel %{{.*}} {program_ids = ["pid0"], grid = ["G0"], params = ["BLOCK"]}
# CHECK:           xt.load %{{.*}} {offsets = ["pid0", "0"], shape = ["1", "BLOCK"], extents = ["1", "BLOCK"], other = 0xfff0000000000000 : f64}
# CHECK:           xt.reduce %{{.*}} {kind = "max", axis = 0 : i64, extent = "BLOCK", keepdims = true}
# CHECK:           xt.map %{{.*}}, %{{.*}} {form = "out[d0 < BLOCK] = in0[d0] - in1[0]", dtype = f32}
# CHECK:           xt.map %{{.*}} {form = "out[d0 < BLOCK] = exp(in0[d0])", dtype = f32}
# CHECK:           xt.reduce %{{.*}} {kind = "add", axis = 0 : i64, extent = "BLOCK", keepdims = true}
# CHECK:           xt.map %{{.*}}, %{{.*}} {form = "out[d0 < BLOCK] = in0[d0] / in1[0]", dtype = f32}
# CHECK:           xt.store %{{.*}} {result = 0 : i64, offsets = ["pid0", "0"], extents = ["1", "BLOCK"]}
