# RUN: not python -m axon.frontend.torch %s 2>&1 | filecheck %s
# A PyTorch problem (this file runs: it is imported, Model built, forward traced) whose forward
# sorts: each operator without an ax translation is named at its line, the command exits 1, no
# traceback.
# CHECK: torch_unsupported.py:23:9: error: unsupported operator aten.sort.default; no ax translation
# CHECK-NEXT: {{^}}        y = torch.sort(y, dim=-1).values
# CHECK-NEXT: {{^}}        ^
# CHECK-NEXT: torch_unsupported.py:24:9: error: unsupported operator aten.cummax.default; no ax translation
# CHECK-NOT: Traceback

import torch
import torch.nn as nn

rows = 4
cols = 8


class Model(nn.Module):
    """relu, a sort and a running maximum."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        y = torch.sort(y, dim=-1).values
        return torch.cummax(y, dim=1).values


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(rows, cols)]


def get_init_inputs() -> list[int]:
    return []
