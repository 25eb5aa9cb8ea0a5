"""Forge's raised path: a user's Triton kernel that raises to `ax` with proof goes through Axon's
own pipeline, and the launch becomes a call of Axon's kernel.

    raised = raise_file(KernelFile.read(path))                 # per launched kernel
    forged = forge_raised(path, problem, device, sizes, executor, gpu=False, scratch=dir)

For each launched kernel the Triton frontend reads (never runs) the file, raises the kernel to
`xt`, then to `tile` and `ax` (`frontend/triton/raise_tile.py`, proved by the verifier); a
kernel that does not raise is listed with the reason and keeps the Triton-level stages. The
raised `ax` function goes through the Triton target's selection unchanged (`select_kernel`: the
nu-graph's variants, proved tilings, the KB's launches, the target's cascade per candidate),
as the torch path's captured function does. The launch statement `kernel[grid](...)` is then
replaced, in the user's own text, by a call of the selected host function on the user's
tensors seen as the raised kernel's tensors (`torch.as_strided(arg, sizes, strides)` with the
launch's own argument texts for the sizes and strides; the raise's tensors are the user's with
those strides), and the result copied into the user's output the same way, so `ModelNew`, its
constructor and its entry points stay the user's. The module is checked by the Forge cascade
against the ORIGINAL kernel file (`forge/cascade.py`); a proposal that fails it is not used.

Sizes: the file's text gives no sizes, so the selection prices every size symbol at `SIZE`
(the KB's facts use the same rule in the Triton path); the proof and the checks hold at all
sizes. Dtypes: the raise reads every pointer as float32 (`raise_xt`); the Triton target's
emitted kernels compute in float32, a narrower input is widened at the call (`.float()`, an
extra pass over it) and the copy into the user's output converts back.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.func import FuncOp

from axon.dialects.form.intexpr import IntExpr
from axon.forge.cascade import ForgeCascade
from axon.forge.driver import CheckOutcome
from axon.forge.source import (
    Edit,
    KernelFile,
    apply_edits,
    indent_of,
    statement_span,
    without_docstring,
)
from axon.forge.stages.analysis import analysable
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.kernel_ir import analyse_kernel
from axon.frontend.triton.parse import LaunchSite
from axon.frontend.triton.raise_tile import NotRaised, RaisedKernel, raise_to_ax
from axon.frontend.triton.raise_xt import _Raising
from axon.frontend.triton.report import launch_constexprs
from axon.selection.executor import Executor
from axon.targets.xe_triton.kb import Device
from axon.targets.xe_triton.select import (
    Candidate,
    SelectionError,
    SelectOptions,
    select_kernel,
)

__all__ = ["KernelRaise", "RaisedResult", "assumption_error", "forge_raised",
           "launch_replacement", "raise_file"]

#: the size every symbol is priced at in the selection (the text has no sizes)
SIZE = 4096

Say = Callable[[str], None]


@dataclass
class KernelRaise:
    """One launched kernel: raised (with its proof) or why not; its tensors' dims (each
    pointer parameter's stride parameters, None for the unit stride, and sizes)."""

    name: str
    raised: RaisedKernel | None = None
    reason: str = ""
    tensors: dict[str, tuple[list[str | None], list[IntExpr]]] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    scalars: list[str] = field(default_factory=list)
    """Float parameters (`scale`, `eps`): inputs of one float32 element."""

    def line(self) -> str:
        """The report line."""
        if self.raised is None:
            return f"kernel {self.name}: not raised to ax: {self.reason}"
        assume = f" (assuming {', '.join(self.raised.assumptions)})" \
            if self.raised.assumptions else ""
        return (f"kernel {self.name}: raised to tile and ax, proved equal{assume} in "
                f"{self.raised.seconds:.2f} s")


@dataclass
class RaisedResult:
    """What the raised path made of a file: per kernel its raise, the module text (the input's
    where nothing was replaced), the kernels replaced and the cascade's outcome."""

    kernels: list[KernelRaise]
    source: str
    replaced: list[str]
    outcome: CheckOutcome | None = None
    notes: list[str] = field(default_factory=list)
    proposal: str = ""
    """The module put to the cascade (kept when it failed, for the report)."""

    def report_lines(self) -> list[str]:
        """One line per kernel, then the notes."""
        return [k.line() for k in self.kernels] + self.notes


def raise_file(file: KernelFile) -> list[KernelRaise]:
    """Every launched kernel of `file` raised to `ax` with proof, or the reason it is not."""
    out: list[KernelRaise] = []
    if file.error is not None:
        return out
    module = analysable(file)
    launched = {s.kernel for s in file.module.launches}
    for name in module.kernels:
        if name not in launched:
            continue
        entry = KernelRaise(name)
        out.append(entry)
        try:
            analysis = analyse_kernel(module, name, launch_constexprs(module,
                                                                      module.kernels[name]))
            raising = _Raising(analysis, {})
            func = raising.run()
            func.verify()
        except SourceError as err:
            entry.reason = f"the raise to xt stops at {err.line}:{err.column}: {err.message}"
            continue
        except Exception as err:  # noqa: BLE001 (the raise's verify: a gap, reported)
            entry.reason = f"the raise to xt does not verify: {err}"
            continue
        entry.tensors = {t.param: (list(t.strides), [s for s in t.sizes if s is not None])
                         for t in raising.tensors.values()}
        entry.inputs = [t.param for t in raising.tensors.values() if t.loaded] \
            + raising.scalars
        entry.scalars = list(raising.scalars)
        entry.outputs = [t.param for t in raising.tensors.values() if t.stored]
        try:
            entry.raised = raise_to_ax(func)
        except NotRaised as err:
            entry.reason = str(err)
    return out


def _size_text(size: IntExpr, site: LaunchSite, grid_names: Mapping[str, str]) -> str:
    """A size of the raised kernel as host text: a size parameter's launch argument or the
    grid's dim `G<k>`."""
    name = size.as_symbol
    if name is None:
        raise NotRaised(f"a tensor dim of size {size} (not one parameter) has no launch text")
    if name in grid_names:
        return grid_names[name]
    text = site.arg(name)
    if text is None:
        raise NotRaised(f"the launch at line {site.loc[0]} does not bind {name}")
    return text


def assumption_error(kernel: KernelRaise, site: LaunchSite) -> str | None:
    """Why the launch `site` may break an assumption of the raise (`B >= S`: a block holding a
    dim whole covers it), or None: the launch must pass `B=triton.next_power_of_2(T)` where
    `T` is the text it passes for the size `S` (or the grid's dim for `G<k>`)."""
    assert kernel.raised is not None
    grid = {f"G{k}": text for k, text in enumerate(site.grid_dims)}
    for fact in kernel.raised.assumptions:
        block, _, size = (part.strip() for part in fact.partition(">="))
        given = (site.arg(block) or "").replace(" ", "")
        size_text = (grid.get(size) or site.arg(size) or "?").replace(" ", "")
        wanted = {f"triton.next_power_of_2({size_text})", f"triton.next_power_of_2(({size_text}))"}
        if given not in wanted:
            return (f"the raise assumes {fact} (the block holds the dim whole); the launch at "
                    f"line {site.loc[0]} passes {block}={site.arg(block)!r}, not "
                    f"triton.next_power_of_2({size_text})")
    return None


def launch_replacement(kernel: KernelRaise, site: LaunchSite, host: str,
                       kwargs: Mapping[str, object], indent: str) -> str:
    """The statements replacing the launch `site`: the host function `host` called on the
    user's tensors seen as the raised kernel's, its results copied into the user's outputs."""
    grid_names = {f"G{k}": f"({text})" for k, text in enumerate(site.grid_dims)}

    def view(param: str, read: bool = False) -> str:
        pointer = site.arg(param)
        if pointer is None:
            raise NotRaised(f"the launch at line {site.loc[0]} does not bind {param}")
        if param in kernel.scalars:
            first = site.arg(kernel.outputs[0]) if kernel.outputs else None
            return (f"torch.full((1,), {pointer}, dtype=torch.float32, device={first}.device)")
        strides, sizes = kernel.tensors[param]
        size_texts = [_size_text(s, site, grid_names) for s in sizes]
        stride_texts = []
        for s in strides:
            if s is None:
                stride_texts.append("1")
                continue
            text = site.arg(s)
            if text is None:
                raise NotRaised(f"the launch at line {site.loc[0]} does not bind {s}")
            stride_texts.append(text)
        # Axon's kernel takes float32 (the raise reads every pointer so): a bf16 or f16
        # input is widened at the call (`.float()` is the tensor itself when it is float32)
        return (f"torch.as_strided({pointer}, ({', '.join(size_texts)},), "
                f"({', '.join(stride_texts)},)){'.float()' if read else ''}")

    keywords = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    outs = [f"_axon_out{k}" for k in range(len(kernel.outputs))]
    lines = [f"{', '.join(outs)} = {host}({', '.join(view(p, read=True) for p in kernel.inputs)}"
             f"{keywords})"]
    for name, param in zip(outs, kernel.outputs, strict=True):
        lines.append(f"{view(param)}.copy_({name})")
    return "\n".join(indent + line for line in lines) + "\n"


def _launch_statements(file: KernelFile, kernel: str) -> list[ast.stmt]:
    """The statements that are exactly one launch of `kernel`, in order."""
    calls = file.launch_calls(kernel)
    found: list[ast.stmt] = []
    for node in ast.walk(file.tree):
        if isinstance(node, ast.Expr) and any(node.value is c for c in calls):
            found.append(node)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def forge_raised(path: Path, problem: Path, device: Device,
                 sizes: Sequence[Mapping[str, int]], executor: Executor, *, gpu: bool,
                 scratch: Path, atol_scale: float = 1.0, max_candidates: int = 4,
                 fuse: bool = True, say: Say = lambda line: None) -> RaisedResult:
    """The raised path on the kernel file `path` (module docstring): each raised kernel's
    launches replaced by Axon's selected kernel, the module checked by the Forge cascade
    against the original. With `fuse`, a host function whose launches are all raised and
    compose (`forge/fuse_raised.py`) is one `ax` program, selected once, its launches replaced
    by one call. Kernels that do not raise, or whose selection or replacement fails, keep their
    launches, and the result says why."""
    from axon.forge.fuse_raised import fuse_host

    file = KernelFile.read(path)
    kernels = raise_file(file)
    result = RaisedResult(kernels, file.source, [])
    for k in kernels:
        say(k.line())
    edits: list[Edit] = []
    emitted_texts: list[str] = []
    taken = set(re.findall(r"^(?:def|class)\s+(\w+)", file.source, re.M))
    ours: set[str] = set()  # Axon's shared helpers (`_wide`, ...) may repeat across kernels

    def select(func: FuncOp, name: str) -> tuple[str, str, Candidate] | None:
        """Axon's kernel for `func`: the host function's name, the module text, the chosen
        candidate; None (with a note) where the selection or the names fail."""
        symbols = sorted({s for t in func.function_type.inputs.data
                          for d in t.shape for s in d.symbols()})  # type: ignore[attr-defined]
        options = SelectOptions(profile=device.name, sizes={s: SIZE for s in symbols},
                                max_candidates=max_candidates, time_on_gpu=gpu)
        try:
            selection = select_kernel(func, options, executor, program=name,
                                      report=lambda line: say(f"{name}: {line}"))
        except SelectionError as err:
            result.notes.append(f"{name}: the selection found no kernel: {err}")
            return None
        chosen = selection.chosen or next(iter(selection.passed()), None)
        if chosen is None:
            result.notes.append(f"{name}: no selected candidate passed the target's cascade")
            return None
        emitted = selection.emitted[chosen.id]
        text = emitted.text if gpu else selection.twins[chosen.id]
        names = set(re.findall(r"^def\s+(\w+)", text, re.M))
        hosts = {emitted.name, *(n for n in names if n.startswith(emitted.name))}
        clash = sorted((names & taken) | (hosts & ours))
        if clash:
            result.notes.append(f"{name}: the emitted module defines {', '.join(clash)}, "
                                "which the file defines too")
            return None
        ours.update(names)
        emitted_texts.append(f"# ---- Axon: {name} raised to ax (proved), {chosen.tiling} "
                             f"({chosen.launch()}) ----\n"
                             + without_docstring(text).rstrip() + "\n")
        return emitted.name, text, chosen

    fused_kernels: set[str] = set()
    if fuse:
        for host in dict.fromkeys(s.host for s in file.module.launches):
            try:
                fused = fuse_host(file, kernels, host)
            except NotRaised as err:
                if len([s for s in file.module.launches if s.host == host]) > 1:
                    result.notes.append(f"{host}(): the launches are not fused: {err}")
                continue
            say(f"{host}(): {', '.join(fused.kernels)} composed into one ax program")
            picked = select(fused.ax, f"{host}_fused")
            if picked is None:
                continue
            statements = [st for k in dict.fromkeys(fused.kernels)
                          for st in _launch_statements(file, k)]
            statements.sort(key=lambda st: st.lineno)
            indent = indent_of(file, statements[-1])
            keywords = "".join(f", {k}={v!r}" for k, v in picked[2].kwargs.items())
            outs = [f"_axon_out{j}" for j in range(len(fused.outputs))]
            lines = [f"{', '.join(outs)} = {picked[0]}({', '.join(fused.inputs)}{keywords})"]
            lines += [f"{view}.copy_({o})" for view, o in zip(fused.outputs, outs,
                                                              strict=True)]
            text = "\n".join(indent + line for line in lines) + "\n"
            for j, st in enumerate(statements):
                begin, stop = statement_span(file, st)
                # at the last launch: every input and output buffer exists by then
                edits.append(Edit(begin, stop, text if j == len(statements) - 1 else ""))
            fused_kernels.update(fused.kernels)
            result.replaced.extend(fused.kernels)
            result.notes.append(f"{host}(): {', '.join(fused.kernels)} fused into one ax "
                                "program")
    for k in kernels:
        if k.raised is None or k.name in fused_kernels:
            continue
        try:
            sites = file.kernel_launches(k.name)
            statements = _launch_statements(file, k.name)
            if len(statements) != len(sites):
                raise NotRaised("a launch that is not a statement of its own")
            why = next((w for w in (assumption_error(k, site) for site in sites) if w), None)
            if why:
                raise NotRaised(why)
            picked = select(k.raised.ax, k.name)
            if picked is None:
                continue
            for site, stmt in zip(sites, statements, strict=True):
                begin, stop = statement_span(file, stmt)
                edits.append(Edit(begin, stop, launch_replacement(
                    k, site, picked[0], picked[2].kwargs, indent_of(file, stmt))))
        except NotRaised as err:
            result.notes.append(f"kernel {k.name}: its launch is not replaced: {err}")
            continue
        result.replaced.append(k.name)
    if not result.replaced:
        return result
    proposal = apply_edits(file.source, edits).rstrip() + "\n\n\n" + "\n\n".join(emitted_texts)
    result.proposal = proposal
    cascade = ForgeCascade(path, problem, device, list(sizes), scratch, gpu=gpu,
                           atol_scale=atol_scale)
    outcome = cascade(file.source, proposal)
    result.outcome = outcome
    if outcome.passed:
        result.source = proposal
        result.notes.append(f"raised path: {', '.join(result.replaced)} replaced by Axon's "
                            f"kernels; cascade: {outcome.step}: {outcome.reason}")
    else:
        result.notes.append(f"raised path: the module with {', '.join(result.replaced)} "
                            f"replaced failed the cascade at {outcome.step}: {outcome.reason}")
        result.replaced = []
    return result
