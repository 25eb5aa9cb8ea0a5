"""The order Forge's Triton-level stages run in, and which have work on a file.

`DEPENDENCIES` names, for each registered stage, the stages that must run before it:

- `analysis` first: every stage reads its report;
- `algorithmic` next (before `dtype`, as issue 14 orders them): work removed is work no later
  stage tunes, and its cut reads the loops and masks as the user wrote them;
- `base2` after `algorithmic` (it reads both loops of a split) and before `dtype`: it changes
  only the math of the exponentials, which no later stage reads;
- `memory_access` after `dtype`, before `block_pointers` (Xe-Forge's order): its hints are on
  the loads as the user wrote them, its `tl.range` stages on the user's `range` loops (which
  `block_pointers` reads either way);
- `dtype` before `block_pointers`, the swizzle and the tuning: the operand dtype changes the
  tile a tuned config is for;
- `block_pointers` before `swizzle`: the frontend's access analysis reads `pid * BLOCK + lane`
  offsets, and the swizzle's remap (`%`, `tl.minimum`) would hide them;
- `swizzle` before `persistent`: the swizzle reads `tl.program_id(0)` as a statement, which the
  persistent loop turns into its loop variable (the remap then runs per tile, inside the loop);
- `swizzle`, `block_pointers` and `persistent` before `xe_tuning`: the tuning is for the code
  that runs;
- `autotune` last: it takes the launch settings the earlier stages fixed away from the launches
  and hands them to its configurations.

Only stages that exist are registered (fusion and the algorithmic rewrites through propagation
are Axon's own pipeline on the raised and torch paths; the Triton-level `algorithmic` stage
removes the dead iterations of a loop and splits off those whose masks hold everywhere).
`make_plan` sorts the given stages by these dependencies (ties in registration order) and asks
each whether it applies to the file as given; the driver asks again before each stage, on the
file the earlier stages left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from axon.forge.source import KernelFile
from axon.forge.stages import Stage, builtin_stages

__all__ = ["DEPENDENCIES", "PlanError", "PlanStep", "make_plan", "order_stages"]

DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "analysis": (),
    "algorithmic": ("analysis",),
    "base2": ("analysis", "algorithmic"),
    "dtype": ("analysis", "algorithmic", "base2"),
    "memory_access": ("analysis", "algorithmic", "dtype"),
    "block_pointers": ("analysis", "algorithmic", "dtype", "memory_access"),
    "swizzle": ("analysis", "algorithmic", "dtype", "block_pointers"),
    "persistent": ("analysis", "algorithmic", "dtype", "block_pointers", "swizzle"),
    "xe_tuning": ("analysis", "algorithmic", "dtype", "block_pointers", "swizzle",
                  "persistent"),
    "autotune": ("analysis", "algorithmic", "dtype", "block_pointers", "swizzle", "persistent",
                 "xe_tuning"),
}


class PlanError(ValueError):
    """Stages whose dependencies cannot be ordered, or an unknown stage."""


@dataclass(frozen=True)
class PlanStep:
    """One stage of the plan: whether it applies to the file, and why (not)."""

    stage: Stage
    applies: bool
    why: str

    def line(self) -> str:
        """`name: applies/skipped: why`."""
        verdict = "applies" if self.applies else "skipped"
        return f"{self.stage.name}: {verdict}: {self.why}"


def order_stages(stages: Sequence[Stage]) -> list[Stage]:
    """`stages` sorted so every stage follows those it depends on (of the given ones); a stage
    with no entry in DEPENDENCIES (a plugged one) keeps its place after the registered ones."""
    known = [s for s in stages if s.name in DEPENDENCIES]
    names = {s.name for s in known}
    if len(names) != len(known):
        raise PlanError("a stage is given twice")
    ordered: list[Stage] = []
    done: set[str] = set()
    pending = list(known)
    while pending:
        ready = [s for s in pending if set(DEPENDENCIES[s.name]) & names <= done]
        if not ready:
            raise PlanError("the stages' dependencies form a cycle: "
                            + ", ".join(s.name for s in pending))
        ordered.append(ready[0])
        done.add(ready[0].name)
        pending.remove(ready[0])
    return ordered + [s for s in stages if s.name not in DEPENDENCIES]


def make_plan(kernel_file: KernelFile, stages: Sequence[Stage] | None = None) -> list[PlanStep]:
    """The ordered stages (the built-in ones by default), each with whether it applies to
    `kernel_file` and why (not)."""
    plan = []
    for stage in order_stages(list(stages) if stages is not None else builtin_stages()):
        verdict = stage.applies(kernel_file)
        plan.append(PlanStep(stage, verdict.applies, verdict.why))
    return plan
