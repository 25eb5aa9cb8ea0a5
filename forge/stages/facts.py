"""The knowledge base's view of a kernel the analysis summarized (`KernelFacts`).

Sizes are runtime values a file's text does not give, so the facts take them from the caller
(`ForgeOptions.sizes`, 4096 by default: large enough that the KB's clamping to the problem keeps
its preferred tiles), and the element type from `ForgeOptions.dtype`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from axon.forge.stages.analysis import KernelSummary
from axon.targets.xe_triton.kb import KernelFacts
from axon.targets.xe_triton.kb.device import Dtype
from axon.targets.xe_triton.kb.pattern import KernelKind

__all__ = ["ForgeOptions", "kernel_facts"]


@dataclass(frozen=True)
class ForgeOptions:
    """What the stages ask the KB with, and how many proposals a stage makes at most."""

    dtype: str = "bf16"
    m: int = 4096
    n: int = 4096
    k: int = 4096
    max_proposals: int = 4
    max_configs: int = 8


def kernel_facts(summary: KernelSummary, options: ForgeOptions) -> KernelFacts:
    """The KB facts of a summarized kernel."""
    axes = summary.program_axes
    return KernelFacts(cast(KernelKind, summary.kind), cast(Dtype, options.dtype),
                       has_dot=summary.dots > 0, m=options.m, n=options.n, k=options.k,
                       batch=2 if 2 in axes else 1, grid_dims=max(axes, default=0) + 1,
                       dots=max(summary.dots, 1))
