"""The Triton-level stages of Forge, each in its own file (name <-> file <-> test):

    analysis        stages/analysis.py        report per kernel (what the planner reads)
    algorithmic     stages/algorithmic.py     dead iterations cut, full ones split off (z3)
    base2           stages/base2.py           tl.exp as tl.exp2, LOG2E folded into a scale
    dtype           stages/dtype.py           tl.dot on the loaded dtype, not float32 casts
    memory_access   stages/memory_access.py   no-dot kernels: tl.range stages, cache hints
    block_pointers  stages/block_pointers.py  masked 2-D accesses -> tl.make_block_ptr
    swizzle         stages/swizzle.py         grouped program order (z3-proved bijection)
    persistent      stages/persistent.py      grid axis 0 as a loop over tiles (z3-proved cover)
    xe_tuning       stages/xe_tuning.py       num_warps / num_stages / grf_mode / tiles from the KB
    autotune        stages/autotune.py        @triton.autotune over the KB's grid

Each has `name`, `applies(kernel_file) -> Applicability` and `propose(kernel_file, profile) ->
list[Proposal]`; `builtin_stages()` gives one of each, in no particular order (planner.py orders).
"""

from __future__ import annotations

from axon.forge.stages.algorithmic import AlgorithmicStage, dead_loops
from axon.forge.stages.analysis import AnalysisReport, AnalysisStage, analyse_file
from axon.forge.stages.autotune import AutotuneStage
from axon.forge.stages.base import Applicability, Proposal, Stage
from axon.forge.stages.base2 import BaseTwoStage
from axon.forge.stages.block_pointers import BlockPointersStage
from axon.forge.stages.dtype import DtypeStage
from axon.forge.stages.facts import ForgeOptions
from axon.forge.stages.memory_access import MemoryAccessStage
from axon.forge.stages.persistent import PersistentStage, prove_cover
from axon.forge.stages.swizzle import SwizzleStage, prove_bijection
from axon.forge.stages.xe_tuning import XeTuningStage

__all__ = ["AlgorithmicStage", "AnalysisReport", "AnalysisStage", "Applicability",
           "AutotuneStage", "BaseTwoStage", "BlockPointersStage", "DtypeStage", "ForgeOptions",
           "MemoryAccessStage", "PersistentStage", "Proposal", "Stage", "SwizzleStage",
           "XeTuningStage", "analyse_file", "builtin_stages", "dead_loops", "prove_bijection",
           "prove_cover"]


def builtin_stages(options: ForgeOptions | None = None) -> list[Stage]:
    """One instance of every built-in stage."""
    return [AnalysisStage(), AlgorithmicStage(), BaseTwoStage(), DtypeStage(),
            MemoryAccessStage(options), BlockPointersStage(), SwizzleStage(options),
            PersistentStage(options), XeTuningStage(options), AutotuneStage(options)]
