"""Forge's Triton path: a user's kernel file (a `ModelNew` launching Triton kernels) rewritten
stage by stage, every proposal admitted only through the cascade against the original.

    result = forge_kernel(kernel, problem, load_device("b70"), sizes, gpu=False, scratch=dir)
    result.source, result.report_lines()

The stages and their order are `forge/stages/` and `forge/planner.py`; the check of each proposal
is `forge/cascade.py` (syntax, structure against the KB, the frozen harness against the original
kernel and the problem's reference, the GPU's timing). Without a GPU the autotune stage is not
applied: its module picks a configuration by timing each on the device, which Triton's CPU
interpreter cannot do, and the cascade could check only what it would pick. For a module bound
for a GPU (`gpu_later`, the bundle) it applies with every configuration checked alone first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from axon.forge.cascade import ForgeCascade
from axon.forge.driver import ForgeResult, StageRecord, optimize_source
from axon.forge.source import KernelFile
from axon.forge.stages import Applicability, Proposal, Stage, builtin_stages
from axon.forge.stages.analysis import analyse_file
from axon.forge.stages.autotune import AutotuneStage
from axon.forge.stages.facts import ForgeOptions, head_dims
from axon.targets.xe_triton.kb import Device

#: stages whose choice is made by timing on the device
TIMED_STAGES = frozenset({"autotune"})


class Untimed:
    """A stage that picks by timing, on a machine without a GPU: it does not apply, saying why.
    It keeps the wrapped stage's name (the planner orders by it)."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.name = stage.name

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Never: see the class docstring."""
        return Applicability(False, f"{self.name}: not applied: choosing among its "
                                    "configurations needs a GPU's timer (Triton's CPU "
                                    "interpreter has none)")

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """Nothing."""
        return []


class EachConfigChecked:
    """The autotune stage on a machine without a GPU, for a module a GPU will run later (the
    bundle): its proposal over the KB's grid is vouched for to the cascade by the same rewrite
    over each configuration alone (`ForgeCascade.vouch`), so the cascade checks every
    configuration the GPU's autotuner may pick; one that fails rolls the stage back with its
    reason."""

    def __init__(self, stage: AutotuneStage, cascade: ForgeCascade) -> None:
        self.stage = stage
        self.cascade = cascade
        self.name = stage.name

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where the autotune stage applies."""
        return self.stage.applies(kernel_file)

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """The grid's rewrite, vouched for by its configurations alone."""
        split = self.stage.propose_split(kernel_file, profile)
        if split is None:
            return []
        whole, singles = split
        self.cascade.vouch(whole.source, [s.source for s in singles])
        return [Proposal(whole.stage, f"{whole.description}; each configuration checked alone "
                                      "(the GPU's autotuner picks among them)", whole.source)]


def with_head_dims(options: ForgeOptions, kernel: Path, problem: Path) -> ForgeOptions:
    """`options` with the head dim of each attention kernel of the file at the problem's own
    sizes (the GPU's; `facts.head_dims` over the launches `ModelNew` makes on meta tensors,
    which RUNS the problem's and the kernel file's Python), where `options` names none."""
    if options.head_dims:
        return options
    file = KernelFile.read(kernel)
    report = analyse_file(file, value_dtype_casts=True)
    if not any(s.kind == "attention" for s in report.kernels.values()):
        return options
    from axon.forge.launch_record import record_launches

    record = record_launches(file, kernel, problem)
    return dataclasses.replace(options, head_dims=head_dims(report.kernels.values(), record))


def stages_for(gpu: bool, cascade: ForgeCascade | None = None,
               options: ForgeOptions | None = None) -> list[Stage]:
    """The built-in stages; without a GPU, those that pick by timing wrapped in `Untimed`, or,
    given `cascade` (the module will run on a GPU later), the autotune stage with each of its
    configurations checked alone."""
    out: list[Stage] = []
    for stage in builtin_stages(options):
        if gpu or stage.name not in TIMED_STAGES:
            out.append(stage)
        elif cascade is not None and isinstance(stage, AutotuneStage):
            out.append(EachConfigChecked(stage, cascade))
        else:
            out.append(Untimed(stage))
    return out


def forge_kernel(kernel: Path, problem: Path, device: Device,
                 sizes: Sequence[Mapping[str, int]], *, gpu: bool, scratch: Path,
                 atol_scale: float = 1.0, gpu_later: bool = False,
                 options: ForgeOptions | None = None,
                 say: Callable[[str], None] = lambda line: None,
                 raised: bool = False,
                 without: frozenset[str] = frozenset(),
                 smoke_dtype: str | None = None) -> tuple[ForgeResult, int]:
    """The plan run on `kernel` with every proposal through the cascade against the original
    file (the harness runs modules from files under `scratch`); the result and the number of
    proposals checked. `gpu_later`: without a GPU now, the module is for one (the autotune stage
    applies with each configuration checked alone); `options` bound the stages' proposals.
    With `raised`, the raised path runs first (`forge/raised_path.py`): kernels that raise to
    `ax` with proof are replaced by Axon's selected kernels (the module through the same
    cascade), and the stages then run on that module; its record is the first ("raise"), with
    each kernel's line (why a kernel did not raise), and its text the first snapshot.
    `without`: stages left out of the plan (a stage a GPU would roll back, see the bundle);
    `smoke_dtype`: on the CPU, each proposal also runs once in this dtype, failing on a crash
    only (`ForgeCascade.smoke_dtype`)."""
    original = kernel.read_text(encoding="utf-8")
    start, checked = original, 0
    record: StageRecord | None = None
    if raised:
        from axon.forge.raised_path import forge_raised
        from axon.selection.executor import make_executor

        executor = make_executor("local")
        try:
            outcome = forge_raised(kernel, problem, device, sizes, executor, gpu=gpu,
                                   scratch=scratch, atol_scale=atol_scale, say=say)
        finally:
            executor.close()
        checked += outcome.outcome is not None
        start = outcome.source
        record = StageRecord("raise", "applied" if outcome.replaced else "skipped",
                             "; ".join(outcome.report_lines()),
                             int(outcome.outcome is not None),
                             (("raise", outcome.outcome),) if outcome.outcome else ())
    cascade = ForgeCascade(kernel, problem, device, list(sizes), scratch, gpu=gpu,
                           atol_scale=atol_scale, smoke_dtype=smoke_dtype)
    options = with_head_dims(options or ForgeOptions(), kernel, problem)
    stages = [s for s in stages_for(gpu, cascade if gpu_later else None, options)
              if s.name not in without]
    result = optimize_source(start, str(kernel), device, cascade, say, stages)
    result.original = original
    if record is not None:
        result.records.insert(0, record)
        if record.status == "applied":
            result.snapshots.insert(0, ("raise", start))
    return result, cascade.checked + checked
