# RUN: python -m axon.frontend.torch %s 2>%t.summary | axon-opt | filecheck %s
# RUN: filecheck %s --check-prefix=SUMMARY < %t.summary
# A KernelBench-format problem (this file runs) captured with torch.export: the layer's weight
# and bias become function inputs, the transpose of the weight is explicit, the sizes are the
# module's globals and the dtype the problem's.
# SUMMARY: forward: 7 ax ops, 3 inputs (2 parameters as inputs: proj_weight, proj_bias); symbolic sizes tokens=5, features=6, hidden=7; fixed sizes none
# CHECK:      func.func @forward(%proj_weight: !ax.tensor<[hidden, features], f32>, %proj_bias: !ax.tensor<[hidden], f32>, %x: !ax.tensor<[tokens, features], f32>) -> !ax.tensor<[tokens, 1], f32>
# CHECK-NEXT:   %0 = ax.transpose %proj_weight {perm = array<i64: 1, 0>}
# CHECK-NEXT:   %1 = ax.matmul %x, %0
# CHECK-NEXT:   %2 = ax.add %1, %proj_bias
# CHECK-NEXT:   %3 = ax.gelu %2
# CHECK-NEXT:   %4 = ax.sum %3 {axes = array<i64: 1>, keepdims = true}
# CHECK-NEXT:   %5 = ax.constant {value = 5.000000e-01 : f64, shape = [], dtype = f32}
# CHECK-NEXT:   %6 = ax.mul %4, %5

import torch
import torch.nn as nn
import torch.nn.functional as F

tokens = 5
features = 6
hidden = 7


class Model(nn.Module):
    """A projection, the exact GELU, and half the sum of each row."""

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.proj = nn.Linear(features, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.proj(x)).sum(dim=1, keepdim=True) * 0.5


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(tokens, features)]


def get_init_inputs() -> list[int]:
    return [features, hidden]
