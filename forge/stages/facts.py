"""The knowledge base's view of a kernel the analysis summarized (`KernelFacts`).

Sizes are runtime values a file's text does not give, so the facts take them from the caller
(`ForgeOptions.sizes`, 4096 by default: large enough that the KB's clamping to the problem keeps
its preferred tiles), and the element type from `ForgeOptions.dtype`. An attention kernel's
head dim is a block its launch binds at run time (`HEAD_DIM=q.shape[-1]`): `head_dims` reads it
off the launches recorded at the problem's sizes (`forge/launch_record.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from axon.forge.stages.analysis import KernelSummary
from axon.targets.xe_triton.kb import UNKNOWN_HEAD_DIM, KernelFacts
from axon.targets.xe_triton.kb.device import Dtype
from axon.targets.xe_triton.kb.pattern import KernelKind, next_power_of_two

if TYPE_CHECKING:
    from axon.forge.launch_record import LaunchRecord

__all__ = ["ForgeOptions", "head_dims", "kernel_facts"]


@dataclass(frozen=True)
class ForgeOptions:
    """What the stages ask the KB with, and how many proposals a stage makes at most."""

    dtype: str = "bf16"
    m: int = 4096
    n: int = 4096
    k: int = 4096
    max_proposals: int = 4
    max_configs: int = 8
    head_dims: tuple[tuple[str, int], ...] = ()
    """(kernel name, head dim) of each attention kernel whose head dim is known (`head_dims`)."""


def kernel_facts(summary: KernelSummary, options: ForgeOptions) -> KernelFacts:
    """The KB facts of a summarized kernel."""
    axes = summary.program_axes
    return KernelFacts(cast(KernelKind, summary.kind), cast(Dtype, options.dtype),
                       has_dot=summary.dots > 0, m=options.m, n=options.n, k=options.k,
                       batch=2 if 2 in axes else 1, grid_dims=max(axes, default=0) + 1,
                       dots=max(summary.dots, 1),
                       head_dim=dict(options.head_dims).get(summary.name, UNKNOWN_HEAD_DIM))


def head_dims(summaries: Iterable[KernelSummary], record: LaunchRecord
              ) -> tuple[tuple[str, int], ...]:
    """The head dim of each attention kernel: the block its first `tl.dot` contracts (`q`'s
    last dim), evaluated with the integers its first recorded launch passed, as the power of
    two the block holds. A kernel the analysis did not read, or whose block names something
    the launch gave no integer for, is left out (the KB then takes its head dim as unknown)."""
    out: list[tuple[str, int]] = []
    for summary in summaries:
        if summary.kind != "attention" or summary.analysis is None:
            continue
        dot = next((v for v in summary.analysis.values if v.op == "dot"), None)
        launch = next((x for x in record.launches if x.kernel == summary.name), None)
        if dot is None or launch is None or not dot.operands or not dot.operands[0].shape:
            continue
        block = dot.operands[0].shape[-1]
        ints = {name: size for name in block.symbols()
                if (size := launch.size(name)) is not None}
        if block.symbols() <= ints.keys():
            out.append((summary.name, next_power_of_two(block.evaluate(ints))))
    return tuple(out)
