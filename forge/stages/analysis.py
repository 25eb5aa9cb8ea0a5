"""The `analysis` stage: not a rewrite, the per-kernel report every other stage and the planner
read (built on the Triton frontend: `frontend/triton/`).

Per kernel: whether it raises to `xt` (or where and why not), its launch sites, its constexpr
parameters with their literal launch values, the launches' `num_warps`, its `tl.dot`s (and
operands cast to float32 before one), the program-id axes it reads and the launches' grid
ranks, whether it uses atomics, and the KB's kind for it (a heuristic: dots, then the names
"softmax"/"norm", then reductions), and the parameters its loads and stores address from (the
frontend's bases, or `pointer_bases` from the text where the analysis stops). The frontend's
analysis reads the file with each `.to(P.dtype.element_ty)` as `.to(tl.float32)` (`analysable`):
it does not read `.dtype` yet, and no access depends on a cast's dtype; "raises to xt" is said
of that reading.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from axon.forge.source import Edit, KernelFile, apply_edits, node_span
from axon.forge.stages.base import Applicability, Proposal
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.analysis import KernelAnalysis
from axon.frontend.triton.kernel_ir import analyse_kernel
from axon.frontend.triton.parse import JitKernel, LaunchSite, TritonModule, parse_triton_source
from axon.frontend.triton.raise_xt import raise_kernel
from axon.frontend.triton.report import launch_constexprs
from axon.targets.xe_triton.kb import Device

__all__ = ["AnalysisReport", "AnalysisStage", "DotCast", "KernelSummary", "analyse_file",
           "dependent_names"]

_REDUCTIONS = frozenset({"sum", "max", "min", "reduce", "argmax", "argmin", "cumsum"})


@dataclass(frozen=True)
class DotCast:
    """An operand of `tl.dot` written `NAME.to(tl.float32)` where NAME holds a `tl.load`."""

    loc: tuple[int, int]
    operand: str


@dataclass
class KernelSummary:
    """What the planner and the stages know of one launched kernel."""

    name: str
    loc: tuple[int, int]
    raises_xt: bool
    raise_note: str
    launches: list[LaunchSite]
    block_params: dict[str, tuple[int, ...]]
    num_warps: tuple[str | None, ...]
    dots: int
    dot_casts: list[DotCast]
    program_axes: tuple[int, ...]
    grid_ranks: tuple[int | None, ...]
    atomics: bool
    kind: str
    analysis: KernelAnalysis | None = None
    analysis_error: str = ""
    loads: frozenset[str] = frozenset()
    stores: frozenset[str] = frozenset()

    def lines(self) -> list[str]:
        """The report lines of this kernel."""
        line, col = self.loc
        out = [f"kernel {self.name} at {line}:{col} ({self.kind})",
               "  raises to xt: " + ("yes" if self.raises_xt else f"no, {self.raise_note}")]
        blocks = ", ".join(f"{n}={'/'.join(map(str, v))}" for n, v in self.block_params.items())
        out.append(f"  constexpr blocks at launch: {blocks or 'none'}")
        out.append(f"  tl.dot: {self.dots}" + (
            "; float32 casts of loaded operands: " + ", ".join(
                f"{c.operand} at {c.loc[0]}:{c.loc[1]}" for c in self.dot_casts)
            if self.dot_casts else ""))
        out.append(f"  program ids: {', '.join(map(str, self.program_axes)) or 'none'}; "
                   f"atomics: {'yes' if self.atomics else 'no'}")
        for site, warps in zip(self.launches, self.num_warps, strict=True):
            rank = len(site.grid_dims) if site.grid_dims else "?"
            out.append(f"  launch at {site.loc[0]}:{site.loc[1]} in {site.host}(): grid "
                       f"({site.grid_kind}, rank {rank}) {site.grid}; num_warps "
                       f"{warps or 'default'}")
        if self.analysis_error:
            out.append(f"  analysis: {self.analysis_error}")
        return out


@dataclass
class AnalysisReport:
    """The per-kernel summaries of a file (launched kernels only; jit helpers are read where
    they are called), or the file's parse error."""

    filename: str
    kernels: dict[str, KernelSummary] = field(default_factory=dict)
    error: str = ""

    def lines(self) -> list[str]:
        """The report, one kernel after another."""
        if self.error:
            return [f"{self.filename}: {self.error}"]
        out: list[str] = []
        for summary in self.kernels.values():
            out += summary.lines()
        return out or [f"{self.filename}: no launched @triton.jit kernels"]


def _calls(module: TritonModule, node: ast.AST) -> list[tuple[str, ast.Call]]:
    return [(name, n) for n in ast.walk(node) if isinstance(n, ast.Call)
            for name in [module.qualified(n.func)] if name is not None]


def _dot_casts(module: TritonModule, kernel: JitKernel) -> list[DotCast]:
    loaded = {n.targets[0].id for n in ast.walk(kernel.node)
              if isinstance(n, ast.Assign) and len(n.targets) == 1
              and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call)
              and module.qualified(n.value.func) == "triton.language.load"}
    out: list[DotCast] = []
    for name, call in _calls(module, kernel.node):
        if name != "triton.language.dot":
            continue
        for operand in call.args[:2]:
            if isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute) \
                    and operand.func.attr == "to" and len(operand.args) == 1 \
                    and module.qualified(operand.args[0]) == "triton.language.float32" \
                    and isinstance(operand.func.value, ast.Name) \
                    and operand.func.value.id in loaded:
                out.append(DotCast(module.loc(operand), module.segment(operand)))
    return out


def _kind(name: str, dots: int, axes: tuple[int, ...], reductions: bool) -> str:
    lowered = name.lower()
    if dots >= 2:
        return "attention"
    if dots == 1:
        return "batched_matmul" if 2 in axes else "matmul"
    if "softmax" in lowered:
        return "softmax"
    if "norm" in lowered:
        return "norm"
    return "reduction" if reductions else "elementwise"


def analysable(file: KernelFile, value_dtype_casts: bool = False) -> TritonModule:
    """The file's module with each `.to(P.dtype.element_ty)` read as `.to(tl.float32)`, padded
    to the same length so every position stays (the frontend does not read `.dtype` yet; an
    access's pointer, offset and mask do not depend on the dtype a value is cast to). With
    `value_dtype_casts`, a one-line cast to another value's dtype, `x.to(v.dtype)`, is read as
    `x` (padded): for a reader of masks and loops, not of rounding (the raised path keeps the
    cast unread, and so does not raise such a kernel)."""
    alias = next((a for a, full in file.module.aliases.items() if full == "triton.language"),
                 None)
    if alias is None:
        return file.module
    edits: list[Edit] = []
    for node in ast.walk(file.tree):
        if value_dtype_casts and isinstance(node, ast.Call) \
                and isinstance(node.func, ast.Attribute) and node.func.attr == "to" \
                and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "dtype" \
                and isinstance(node.func.value, (ast.Name, ast.Call, ast.Subscript)) \
                and node.lineno == node.end_lineno:
            start, end = node_span(file, node)
            receiver = file.segment(node.func.value)
            edits.append(Edit(start, end, receiver.ljust(end - start)))
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "to" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Attribute) \
                and node.args[0].attr == "element_ty" \
                and isinstance(node.args[0].value, ast.Attribute) \
                and node.args[0].value.attr == "dtype" \
                and node.args[0].lineno == node.args[0].end_lineno:
            start, end = node_span(file, node.args[0])
            text = f"{alias}.float32"
            if len(text) <= end - start:
                edits.append(Edit(start, end, text.ljust(end - start)))
    if not edits:
        return file.module
    return parse_triton_source(apply_edits(file.source, edits), file.filename)


def pointer_bases(file: KernelFile, kernel: str) -> tuple[set[str], set[str]]:
    """The parameters a kernel's loads and its stores address from, read from the text where
    the frontend's analysis does not reach (a swizzled kernel's `tl.minimum`): the names among
    the terms of a pointer's `+` chain, followed through the kernel's assignments, block
    pointers' `base=`, `tl.advance` and the pointer hints (other calls give integers: aranges,
    program ids); a pointer loaded from memory or picked by `tl.where` counts as every parameter
    (then a placeholder is in both sets), so an unread pointer refuses rather than passes."""
    node = file.kernel_node(kernel)
    params = {p.name for p in file.kernel(kernel).params if not p.constexpr}
    assigned: dict[str, list[ast.expr]] = {}
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            assigned.setdefault(stmt.targets[0].id, []).append(stmt.value)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            assigned.setdefault(stmt.target.id, []).append(stmt.value)

    def bases(expr: ast.expr, seen: set[str]) -> set[str | None]:
        out: set[str | None] = set()
        stack = [expr]
        while stack:
            term = stack.pop()
            if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Add):
                stack += [term.left, term.right]
            elif isinstance(term, ast.Name) and term.id in params:
                out.add(term.id)
            elif isinstance(term, ast.Name) and term.id in assigned:
                if term.id not in seen:
                    seen.add(term.id)
                    for value in assigned[term.id]:
                        out |= bases(value, seen)
            elif isinstance(term, ast.Subscript):
                stack.append(term.value)
            elif isinstance(term, ast.Call) and isinstance(term.func, ast.Attribute):
                given = {k.arg: k.value for k in term.keywords}
                if term.func.attr in ("make_block_ptr", "advance", "multiple_of",
                                      "max_contiguous"):
                    base = given.get("base") or (term.args[0] if term.args else None)
                    if base is None:
                        out.add(None)
                    else:
                        stack.append(base)
                elif term.func.attr in ("load", "where"):
                    out.add(None)  # a pointer read from memory or chosen: not followed
        return out

    loads: set[str | None] = set()
    stores: set[str | None] = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and call.args:
            which = file.module.qualified(call.func)
            if which == "triton.language.load":
                loads |= bases(call.args[0], set())
            elif which == "triton.language.store":
                stores |= bases(call.args[0], set())
    unknown = {"a pointer the text does not show"} if None in loads | stores else set()
    return ({b for b in loads if b is not None} | unknown,
            {b for b in stores if b is not None} | unknown)


def summarize(file: KernelFile, kernel: JitKernel,
              readable: TritonModule | None = None) -> KernelSummary:
    """The summary of one kernel of `file`."""
    module = file.module
    calls = _calls(module, kernel.node)
    names = [n for n, _ in calls]
    axes = sorted({c.args[0].value for n, c in calls if n == "triton.language.program_id"
                   and c.args and isinstance(c.args[0], ast.Constant)
                   and isinstance(c.args[0].value, int)})
    dots = names.count("triton.language.dot")
    reductions = any(n.startswith("triton.language.") and n.rsplit(".", 1)[1] in _REDUCTIONS
                     for n in names)
    launches = file.kernel_launches(kernel.name)
    blocks: dict[str, tuple[int, ...]] = {}
    for p in kernel.params:
        values = [site.literal(p.name) for site in launches] if p.constexpr else []
        ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        if ints and len(ints) == len(values):
            blocks[p.name] = tuple(dict.fromkeys(ints))
    summary = KernelSummary(
        kernel.name, kernel.loc, False, "", launches, blocks,
        tuple(dict(s.options).get("num_warps") for s in launches), dots,
        _dot_casts(module, kernel), tuple(axes),
        tuple(len(s.grid_dims) if s.grid_dims else None for s in launches),
        any(n.startswith("triton.language.atomic_") for n in names),
        _kind(kernel.name, dots, tuple(axes), reductions))
    loads, stores = pointer_bases(file, kernel.name)
    summary.loads, summary.stores = frozenset(loads), frozenset(stores)
    readable = readable or analysable(file)
    read_kernel = readable.kernels[kernel.name]
    try:
        summary.analysis = analyse_kernel(readable, read_kernel,
                                          launch_constexprs(readable, read_kernel))
    except SourceError as err:
        summary.analysis_error = f"{err.line}:{err.column}: {err.message}"
        summary.raise_note = f"the analysis stops at {summary.analysis_error}"
        return summary
    unplaced = "a pointer the analysis does not place"
    summary.loads = frozenset(a.base or unplaced for a in summary.analysis.accesses
                              if a.kind == "load")
    summary.stores = frozenset(a.base or unplaced for a in summary.analysis.accesses
                               if a.kind == "store")
    try:
        raise_kernel(summary.analysis)
        summary.raises_xt = True
    except SourceError as err:
        summary.raise_note = f"at {err.line}:{err.column}: {err.message}"
    return summary


def analyse_file(file: KernelFile, value_dtype_casts: bool = False) -> AnalysisReport:
    """The report of every launched kernel of `file` (the parse error, located, if it fails);
    `value_dtype_casts` as `analysable`'s (for a reader of shapes, masks and loops)."""
    if file.error is not None:
        return AnalysisReport(file.filename, error=str(file.error))
    report = AnalysisReport(file.filename)
    helpers = file.module.helpers()
    readable = analysable(file, value_dtype_casts)
    for kernel in file.module.kernels.values():
        if kernel.name not in helpers and file.kernel_launches(kernel.name):
            report.kernels[kernel.name] = summarize(file, kernel, readable)
    return report


class AnalysisStage:
    """The report stage; it proposes nothing (the planner reads its report)."""

    name = "analysis"

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Always: the report is what the other stages read (a parse error is reported)."""
        report = analyse_file(kernel_file)
        if report.error:
            return Applicability(False, f"analysis: the file does not parse: {report.error}")
        return Applicability(True, f"analysis: {len(report.kernels)} launched kernel(s): "
                                   f"{', '.join(report.kernels) or 'none'}")

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """Nothing: the analysis is a report, not a rewrite."""
        return []


def dependent_names(statements: Iterable[ast.AST], seed: set[str],
                    source: Callable[[ast.AST], bool] = lambda node: False) -> set[str]:
    """`seed` and the names assigned in `statements`, directly or through other names, from
    a name already found or a node `source` accepts: to the fixpoint (each round that changes
    anything adds a name, so there are at most as many rounds as assignments, plus one)."""

    def reads(expr: ast.AST, found: set[str]) -> bool:
        return any(source(n) or (isinstance(n, ast.Name) and n.id in found)
                   for n in ast.walk(expr))

    found = set(seed)
    assigns = [n for stmt in statements for n in ast.walk(stmt)
               if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))]
    for _ in range(len(assigns) + 1):
        before = len(found)
        for stmt in assigns:
            value = stmt.iter if isinstance(stmt, ast.For) else stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if value is not None and reads(value, found):
                found |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if len(found) == before:
            break
    return found
