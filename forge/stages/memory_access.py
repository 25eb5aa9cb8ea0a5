"""The `memory_access` stage: cache hints on the loads of a row kernel that reads memory again.

Before                                             After

    for n0 in range(0, N, BLOCK):   # pass 1           ... tl.load(x_row + offs, ...,
        x = tl.load(x_row + offs, ...)                         eviction_policy="evict_last")
    for n0 in range(0, N, BLOCK):   # pass 2           ... tl.load(x_row + offs, ...,
        x = tl.load(x_row + offs, ...)                         eviction_policy="evict_first")
    w = tl.load(w_ptr + offs, ...)                 w = tl.load(w_ptr + offs, ...,
                                                               eviction_policy="evict_last")

Two rules, for kernels without `tl.dot` (a GEMM's tiles are re-read by other programs through
L2 in an order the swizzle, not a hint, decides):

- a load whose pointer text recurs in several loops of the kernel (a multi-pass row kernel:
  the maximum, the sum, the output) keeps its lines cached for the next pass (`evict_last`)
  except in the last pass, after which nothing reads them (`evict_first`);
- a load whose pointer depends on no program id (a weight or bias every program reads: no name
  it reads is assigned, however indirectly, from `tl.program_id`) is kept cached (`evict_last`).

A load that already gives `eviction_policy` or `cache_modifier` is the user's and left alone.
Legality: `eviction_policy` changes where lines are cached, never a loaded value (Triton's
`tl.load`: "changes eviction policy in NVIDIA PTX"); the cascade checks the outputs against the
original all the same, and on a GPU rolls the stage back if it is slower.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from axon.forge.edits import keyword_node, set_keyword
from axon.forge.source import Edit, KernelFile, apply_edits
from axon.forge.stages.analysis import KernelSummary, analyse_file
from axon.forge.stages.base import Applicability, Proposal
from axon.targets.xe_triton.kb import Device

__all__ = ["MemoryAccessStage"]

#: how many rounds the program-id taint takes through chains of assignments
_TAINT_ROUNDS = 8


@dataclass(frozen=True)
class _Hint:
    load: ast.Call
    policy: str
    why: str


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

    def reads_pid(expr: ast.AST, tainted: set[str]) -> bool:
        return any((isinstance(n, ast.Call) and file.module.qualified(n.func) ==
                    "triton.language.program_id") or (isinstance(n, ast.Name) and n.id in tainted)
                   for n in ast.walk(expr))

    tainted: set[str] = set()
    assigns = [n for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AugAssign,
                                                             ast.AnnAssign, ast.For))]
    for _ in range(_TAINT_ROUNDS):
        before = len(tainted)
        for stmt in assigns:
            value = stmt.iter if isinstance(stmt, ast.For) else stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if value is not None and reads_pid(value, tainted):
                tainted |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(tainted) == before:
            break
    return tainted


def _hints(file: KernelFile, summary: KernelSummary) -> list[_Hint] | str:
    name = summary.name
    if summary.dots:
        return f"kernel `{name}` has a tl.dot (its tiles' reuse is the swizzle's)"
    node = file.kernel_node(name)
    loads = [c for c in ast.walk(node) if isinstance(c, ast.Call)
             and file.module.qualified(c.func) == "triton.language.load" and c.args
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
    if not hints:
        return f"kernel `{name}` reads nothing twice and nothing every program reads"
    return hints


class MemoryAccessStage:
    """Cache hints on loads a row kernel reads again (see the module docstring)."""

    name = "memory_access"

    def _plan(self, file: KernelFile) -> tuple[dict[str, list[_Hint]], list[str]]:
        report = analyse_file(file)
        if report.error:
            return {}, [report.error]
        plans: dict[str, list[_Hint]] = {}
        reasons: list[str] = []
        for summary in report.kernels.values():
            found = _hints(file, summary)
            if isinstance(found, str):
                reasons.append(found)
            else:
                plans[summary.name] = found
        return plans, reasons or ["no launched kernels"]

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where some launched kernel without a dot reads a row again or a shared vector."""
        if kernel_file.error is not None:
            return Applicability(False, f"memory_access: not applicable: {kernel_file.error}")
        plans, reasons = self._plan(kernel_file)
        if not plans:
            return Applicability(False, "memory_access: not applicable: " + "; ".join(reasons))
        counts = ", ".join(f"`{k}` ({len(v)} load(s))" for k, v in plans.items())
        return Applicability(True, f"memory_access: cache hints for {counts}")

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal: every hint of every kernel the stage applies to."""
        plans, _ = self._plan(kernel_file)
        if not plans:
            return []
        edits: list[Edit] = []
        lines: list[str] = []
        for kernel, hints in plans.items():
            for hint in hints:
                edits.append(set_keyword(kernel_file, hint.load, "eviction_policy",
                                         f'"{hint.policy}"'))
                lines.append(f"{kernel}:{hint.load.lineno} {hint.policy} ({hint.why})")
        return [Proposal(self.name, "cache hints: " + "; ".join(lines),
                         apply_edits(kernel_file.source, edits))]
