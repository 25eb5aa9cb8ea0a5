"""The `memory_access` stage: prefetch and cache hints for kernels without a dot.

Before                                             After (on a device whose pipeliner stages
                                                   loads in shared memory: NVIDIA)
    for n0 in range(0, N, BLOCK):   # pass 1       for n0 in tl.range(0, N, BLOCK, num_stages=2):
        x = tl.load(x_row + offs, ...)                 x = tl.load(x_row + offs, ...,
    for n0 in range(0, N, BLOCK):   # pass 2                       eviction_policy="evict_last")
        x = tl.load(x_row + offs, ...)             for n0 in tl.range(0, N, BLOCK, num_stages=2):
    w = tl.load(w_ptr + offs, ...)                     x = tl.load(x_row + offs, ...,
                                                                   eviction_policy="evict_first")
                                                   w = tl.load(w_ptr + offs, ...,
                                                               eviction_policy="evict_last")

Prefetch: an innermost `for ... in range(...)` loop of a kernel without `tl.dot` whose loads
advance with the loop variable iterates over `tl.range(..., num_stages=S)`: Triton's pipeliner
pipelines the loads of a loop without a dot only where the loop states its stages (a kernel's
`num_stages` reaches only the loads that feed a dot; `tl.range`'s docstring), so the next
iterations' blocks are copied into shared memory while this one computes. S comes from the
KB (`loop_num_stages`, pattern `pipelined_dot_free_loops`): one proposal per value, the
fastest kept on a GPU. Not on a device whose pipeliner does not stage loads (Intel's
prefetches DPAS operands only), and not in a kernel that stores into a buffer it loads from
(a pipelined load would be issued before an earlier iteration's store).

Cache hints, for kernels without `tl.dot` (a GEMM's tiles are re-read by other programs
through L2 in an order the swizzle, not a hint, decides):

- a load whose pointer text recurs in several loops of the kernel (a multi-pass row kernel:
  the maximum, the sum, the output) keeps its lines cached for the next pass (`evict_last`)
  except in the last pass, after which nothing reads them (`evict_first`);
- a load whose pointer depends on no program id (a weight or bias every program reads: no name
  it reads is assigned, however indirectly, from `tl.program_id`) is kept cached (`evict_last`).

A load that already gives `eviction_policy` or `cache_modifier` is the user's and left alone.
Legality: neither a hint nor a loop's stages changes a loaded value (`eviction_policy` changes
where lines are cached; `tl.range` iterates as `range` does); the cascade checks the outputs
against the original all the same, and on a GPU rolls the stage back if it is slower.

Not built: rewriting the order of a tile's lanes for coalescing. Triton's coalesce pass already
orders each load's lanes by the contiguity its axis analysis finds (a stride argument equal to 1
is specialized at launch), so a source rewrite changes nothing there; a kernel whose contiguous
axis is not any tile's is a layout change the torch and raised paths make, not this stage.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from axon.forge.edits import keyword_node, plain_range, set_keyword, triton_alias
from axon.forge.source import Edit, KernelFile, apply_edits, node_span
from axon.forge.stages.analysis import KernelSummary, analyse_file, dependent_names
from axon.forge.stages.base import Applicability, Proposal
from axon.forge.stages.facts import ForgeOptions, kernel_facts
from axon.targets.xe_triton.kb import Device, settings_for

__all__ = ["MemoryAccessStage"]


@dataclass(frozen=True)
class _Hint:
    load: ast.Call
    policy: str
    why: str


@dataclass(frozen=True)
class _KernelPlan:
    """What the stage would do to one kernel: its cache hints and the loops to prefetch."""

    summary: KernelSummary
    hints: tuple[_Hint, ...]
    loops: tuple[ast.For, ...]
    no_prefetch: str = ""
    """Why no loop is prefetched, where none is."""


def _loops_of(node: ast.FunctionDef) -> dict[int, ast.For | None]:
    """Each call's innermost enclosing `for` (None at the kernel's top level), by id()."""
    found: dict[int, ast.For | None] = {}
    stack: list[tuple[ast.AST, ast.For | None]] = [(node, None)]
    while stack:
        current, loop = stack.pop()
        if isinstance(current, ast.Call):
            found[id(current)] = loop
        inner = current if isinstance(current, ast.For) else loop
        stack.extend((child, inner) for child in ast.iter_child_nodes(current))
    return found


def _program_dependent(file: KernelFile, node: ast.FunctionDef) -> set[str]:
    """Names assigned, directly or through other names, from `tl.program_id`."""
    return dependent_names([node], set(), lambda n: isinstance(n, ast.Call) and
                           file.module.qualified(n.func) == "triton.language.program_id")


def _is_load(file: KernelFile, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and bool(node.args) and \
        file.module.qualified(node.func) == "triton.language.load"


def _hints(file: KernelFile, node: ast.FunctionDef) -> list[_Hint]:
    loads = [c for c in ast.walk(node) if isinstance(c, ast.Call) and _is_load(file, c)
             and keyword_node(c, "eviction_policy") is None
             and keyword_node(c, "cache_modifier") is None]
    loads.sort(key=lambda c: (c.lineno, c.col_offset))
    loop_of = _loops_of(node)
    tainted = _program_dependent(file, node)
    by_pointer: dict[str, list[ast.Call]] = {}
    for load in loads:
        by_pointer.setdefault(ast.unparse(load.args[0]), []).append(load)
    hints: list[_Hint] = []
    for pointer, group in by_pointer.items():
        loops = {id(loop_of[id(c)]) for c in group if loop_of[id(c)] is not None}
        if len(loops) > 1:
            passes = len(group)
            hints += [_Hint(c, "evict_last", f"`{pointer}` is read again in a later pass")
                      for c in group[:-1]]
            hints.append(_Hint(group[-1], "evict_first",
                               f"`{pointer}` is read for the last of {passes} passes"))
            continue
        shared = not any(isinstance(n, ast.Name) and n.id in tainted
                         for n in ast.walk(group[0].args[0]))
        if shared:
            hints += [_Hint(c, "evict_last", f"`{pointer}` is read by every program")
                      for c in group]
    return hints


def _prefetch_loops(file: KernelFile, summary: KernelSummary,
                    node: ast.FunctionDef) -> list[ast.For] | str:
    """The innermost `range` loops whose loads advance with the loop (a load whose pointer or
    mask reads the loop variable or a name the loop steps), or why there are none."""
    name = summary.name
    both = sorted(b or "?" for b in summary.loads & summary.stores)
    if both:
        return (f"kernel `{name}` stores into a buffer it loads ({', '.join(both)}): a "
                "pipelined load could pass an earlier iteration's store")
    found: list[ast.For] = []
    for loop in (n for n in ast.walk(node) if isinstance(n, ast.For)):
        inner = [n for stmt in loop.body for n in ast.walk(stmt)]
        if any(isinstance(n, (ast.For, ast.While)) for n in inner) or not plain_range(file, loop):
            continue
        stepped = {n.target.id for n in inner
                   if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
        seed = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} | stepped
        advancing = dependent_names(loop.body, seed)
        if any(_is_load(file, n) and any(isinstance(m, ast.Name) and m.id in advancing
                                         for m in ast.walk(n))
               for n in inner):
            found.append(loop)
    if not found:
        return f"kernel `{name}` has no `range` loop whose loads advance with it"
    found.sort(key=lambda loop: loop.lineno)
    return found


class MemoryAccessStage:
    """Prefetch and cache hints for kernels without a dot (see the module docstring)."""

    name = "memory_access"

    def __init__(self, options: ForgeOptions | None = None) -> None:
        self.options = options or ForgeOptions()

    def _plan(self, file: KernelFile) -> tuple[dict[str, _KernelPlan], list[str]]:
        report = analyse_file(file)
        if report.error:
            return {}, [report.error]
        plans: dict[str, _KernelPlan] = {}
        reasons: list[str] = []
        for summary in report.kernels.values():
            if summary.dots:
                reasons.append(f"kernel `{summary.name}` has a tl.dot (its tiles' reuse is "
                               "the swizzle's, its loads the pipeliner's)")
                continue
            node = file.kernel_node(summary.name)
            hints = _hints(file, node)
            loops = _prefetch_loops(file, summary, node)
            no_prefetch = loops if isinstance(loops, str) else ""
            loops = [] if isinstance(loops, str) else loops
            if hints or loops:
                plans[summary.name] = _KernelPlan(summary, tuple(hints), tuple(loops),
                                                  no_prefetch)
                continue
            reasons += [no_prefetch, f"kernel `{summary.name}` reads nothing twice and "
                                     "nothing every program reads"]
        return plans, reasons or ["no launched kernels"]

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where some launched kernel without a dot has a loop whose loads advance with it,
        reads a row again or reads a shared vector."""
        if kernel_file.error is not None:
            return Applicability(False, f"memory_access: not applicable: {kernel_file.error}")
        plans, reasons = self._plan(kernel_file)
        if not plans:
            return Applicability(False, "memory_access: not applicable: " + "; ".join(reasons))
        parts = []
        for kernel, plan in plans.items():
            what = [f"{len(plan.hints)} load(s) hinted"] if plan.hints else []
            what += [f"{len(plan.loops)} loop(s) to prefetch where the device's pipeliner "
                     "stages loads"] if plan.loops else [f"no prefetch: {plan.no_prefetch}"]
            parts.append(f"`{kernel}` ({', '.join(what)})")
        return Applicability(True, f"memory_access: {', '.join(parts)}")

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """Every hint with each of the KB's loop stage counts for the loops to prefetch (where
        `profile`'s pipeliner stages loads), then the hints alone; at most
        `options.max_proposals`."""
        plans, _ = self._plan(kernel_file)
        file = kernel_file
        hint_edits: list[Edit] = []
        hint_lines: list[str] = []
        stages: dict[str, tuple[int, ...]] = {}
        for kernel, plan in plans.items():
            for hint in plan.hints:
                hint_edits.append(set_keyword(file, hint.load, "eviction_policy",
                                              f'"{hint.policy}"'))
                hint_lines.append(f"{kernel}:{hint.load.lineno} {hint.policy} ({hint.why})")
            counts = settings_for(profile, kernel_facts(plan.summary, self.options)
                                  ).loop_num_stages
            if plan.loops and counts:
                stages[kernel] = counts
        hints = "cache hints: " + "; ".join(hint_lines) if hint_lines else ""
        proposals: list[Proposal] = []
        tl = triton_alias(file, "triton.language")
        rounds = max((len(v) for v in stages.values()), default=0) if tl else 0
        for i in range(rounds):
            edits = list(hint_edits)
            phrases = []
            for kernel, counts in stages.items():
                count = counts[min(i, len(counts) - 1)]
                for loop in plans[kernel].loops:
                    assert isinstance(loop.iter, ast.Call)
                    edits += [Edit(*node_span(file, loop.iter.func), f"{tl}.range"),
                              set_keyword(file, loop.iter, "num_stages", str(count))]
                lines = ", ".join(f"{kernel}:{loop.lineno}" for loop in plans[kernel].loops)
                phrases.append(f"tl.range(..., num_stages={count}) at {lines}")
            what = "prefetch: " + "; ".join(phrases)
            proposals.append(Proposal(self.name, "; ".join(x for x in (what, hints) if x),
                                      apply_edits(file.source, edits)))
        if hint_edits:
            proposals.append(Proposal(self.name, hints, apply_edits(file.source, hint_edits)))
        return proposals[:self.options.max_proposals]
