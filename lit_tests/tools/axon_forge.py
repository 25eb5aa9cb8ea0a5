# `axon forge`: mistakes are one diagnostic on stderr and exit 1, before the file is imported;
# the output is never the input.
# RUN: not axon forge %s --from torch -o %s 2>&1 | filecheck %s --check-prefix=SAME
# RUN: not axon forge %s.missing --from torch 2>&1 | filecheck %s --check-prefix=MISSING
# RUN: not axon forge %s --from triton --profile h100 2>&1 | filecheck %s --check-prefix=PROFILE
# RUN: not axon forge %s --from torch --size rows=x 2>&1 | filecheck %s --check-prefix=SIZE
# RUN: not axon forge %s --from fortran 2>&1 | filecheck %s --check-prefix=FROM
# RUN: not axon forge %s --from torch --profile h100 2>&1 | filecheck %s --check-prefix=PROFILE
# RUN: not axon forge %s --from triton --dtype bf16 2>&1 | filecheck %s --check-prefix=TRITON-DTYPE

# SAME: axon forge: error: -o {{.*}}axon_forge.py: is the input file; Forge never overwrites its input
# SAME-NOT: Traceback
# MISSING: axon forge: error: cannot open '{{.*}}axon_forge.py.missing': no such file
# PROFILE: axon forge: error: --profile: unknown profile 'h100'; known: a770, b580, b60, b70, h200, max1550
# SIZE: axon forge: error: --size 'rows=x': expected NAME=INTEGER
# FROM: axon forge: error: argument --from: invalid choice: 'fortran'
# TRITON-DTYPE: axon forge: error: --size and --dtype apply to --from torch; the Triton path runs the problem as written

import torch
import torch.nn as nn

rows = 4
cols = 8


class Model(nn.Module):
    """A ReLU."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(rows, cols)]


def get_init_inputs() -> list[int]:
    return []
