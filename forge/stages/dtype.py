"""The `dtype` stage: a `tl.dot` whose loaded operands are widened to float32 first takes them
in the dtype they were loaded in (the accumulator stays float32).

    acc += tl.dot(x.to(tl.float32), w.to(tl.float32))   ->   acc += tl.dot(x, w)

Legality: `tl.dot` of two bf16/f16 blocks accumulates in float32 (its default `out_dtype`), and
the products of two bf16 values are exact in float32, so only the order and precision of the
dot's own accumulation change (an fp32 dot may run as TF32 on NVIDIA; on DPAS an fp32 dot is not
a matrix-unit op). Where the loaded dtype is float32 already the cast was a no-op and nothing
changes. The rounding may change: the proposal says so and the cascade's tolerance decides.
Applicable only where the analysis sees both operands of a dot written `NAME.to(tl.float32)`
with NAME assigned a `tl.load` (a narrower dtype cannot be told from the text).

The stage's second rewrite narrows a float32 intermediate between the user's kernels to the
data's dtype:

    z = torch.empty((M, N), device=x.device, dtype=torch.float32)   ->   dtype=x.dtype
    linear_kernel[grid](x, w, b, z, ...)        # stores acc (float32) into z
    row_max_kernel[(M,)](z, y, ...)             # z = tl.load(z_ptr + ...)
                                                #  -> tl.load(z_ptr + ...).to(tl.float32)

Where a host function allocates a float32 buffer that one launch stores into and others only
load, and the buffer is used for nothing else (not returned, not handed to torch: only launch
arguments, `.stride()`, `.shape`, `.size()`, `.numel()`), it is allocated in the dtype of the
first of the host's arguments that the writing kernel loads (its input data), and every load of
it in the reading kernels is widened back to float32. The writer's stored value is cast to the
buffer's element type (`acc.to(z_ptr.dtype.element_ty)`: a store through a block pointer, which
a later stage may make of it, takes no implicit cast), so each element is rounded once, as the
problem's model rounds its own bf16 intermediate (a bf16 `nn.Linear` returns bf16), and the
readers then compute in float32 on those values exactly as before. Half the bytes of the round
trip through memory go; the rounding changes: the proposal says so and the cascade's tolerance
decides. Where the input is float32 nothing changes at run time.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from axon.forge.edits import keyword_node, triton_alias
from axon.forge.source import Edit, KernelFile, apply_edits, node_span
from axon.forge.stages.analysis import AnalysisReport, analyse_file, dependent_names
from axon.forge.stages.base import Applicability, Proposal
from axon.frontend.triton.parse import LaunchSite
from axon.targets.xe_triton.kb import Device

__all__ = ["DtypeStage"]

#: allocations whose `dtype=` the narrowing reads (and the float32 spellings it narrows)
_ALLOCATIONS = ("torch.empty", "torch.zeros")
_FLOAT32 = ("torch.float32", "torch.float")
#: what a narrowed buffer may be used for in its host besides launch arguments
_SHAPE_METHODS = ("stride", "size", "numel", "shape", "dim")


@dataclass(frozen=True)
class _Buffer:
    """A float32 intermediate to narrow: its allocation's dtype value, the dtype text it takes,
    the loads that read it, and what the report says."""

    dtype: ast.expr
    text: str
    loads: tuple[ast.Call, ...]
    stored: tuple[tuple[ast.expr, str], ...]
    """The values the writer stores into it, each with its pointer parameter."""
    why: str


def _buffer_uses(host: ast.FunctionDef, name: str, launches: set[int]
                 ) -> tuple[int, list[ast.Name]]:
    """How often `name` is assigned in `host`, and the uses that are neither an argument of a
    kernel launch (a call whose id() is in `launches`) nor a shape query (`z.stride(0)`)."""
    assigned = 0
    other: list[ast.Name] = []
    parents = {id(child): node for node in ast.walk(host) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(host):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        if isinstance(node.ctx, ast.Store):
            assigned += 1
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in _SHAPE_METHODS:
            continue
        if isinstance(parent, ast.Call) and id(parent) in launches \
                and any(a is node for a in parent.args):
            continue  # a launch argument (`kernel[grid](..., z, ...)`)
        other.append(node)
    return assigned, other


def _accesses(file: KernelFile, kernel: str, param: str, qualified: str) -> list[ast.Call]:
    """The `tl.load`s or `tl.store`s of `kernel` whose pointer reads pointer parameter `param`
    (directly or through names assigned from it: offsets, block pointers)."""
    node = file.kernel_node(kernel)
    derived = dependent_names([node], {param})
    return [c for c in ast.walk(node) if isinstance(c, ast.Call) and c.args
            and file.module.qualified(c.func) == qualified
            and any(isinstance(n, ast.Name) and n.id in derived for n in ast.walk(c.args[0]))]


def _narrowable(file: KernelFile, report: AnalysisReport) -> tuple[list[_Buffer], str]:
    """The float32 intermediates to narrow (see the module docstring), or why there are none."""
    tl = triton_alias(file, "triton.language")
    if tl is None:
        return [], "the file does not import triton.language"
    # (host, buffer text) -> [(kernel, parameter, stores, loads, the launch)]
    uses: dict[tuple[int, str], list[tuple[str, str, bool, bool, LaunchSite]]] = {}
    hosts: dict[int, ast.FunctionDef] = {}
    launches: set[int] = set()
    for summary in report.kernels.values():
        for site, call in zip(summary.launches, file.launch_calls(summary.name), strict=True):
            launches.add(id(call))
            host = file.host_of(call)
            if host is None:
                continue
            hosts[id(host)] = host
            for param, text in site.args:
                writes, reads = param in summary.stores, param in summary.loads
                if writes or reads:
                    uses.setdefault((id(host), text), []).append(
                        (summary.name, param, writes, reads, site))
    found: list[_Buffer] = []
    reasons: list[str] = []
    for (host_id, name), users in uses.items():
        host = hosts[host_id]
        allocation = next((n for n in ast.walk(host) if isinstance(n, ast.Assign)
                           and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                           and n.targets[0].id == name and isinstance(n.value, ast.Call)
                           and file.module.qualified(n.value.func) in _ALLOCATIONS), None)
        if allocation is None:
            continue
        assert isinstance(allocation.value, ast.Call)
        dtype = keyword_node(allocation.value, "dtype")
        if dtype is None or file.module.qualified(dtype.value) not in _FLOAT32:
            continue
        writers = [u for u in users if u[2]]
        readers = [u for u in users if u[3] and not u[2]]
        if len(writers) != 1 or writers[0][3] or not readers or len(readers) + 1 != len(users):
            reasons.append(f"`{name}` in {host.name}(): not stored by one launch and only "
                           "loaded by the others")
            continue
        assigned, other = _buffer_uses(host, name, launches)
        if assigned != 1 or other:
            reasons.append(f"`{name}` in {host.name}(): used at line "
                           f"{other[0].lineno if other else allocation.lineno} other than as a "
                           "launch argument or a shape")
            continue
        writer, param, _, _, site = writers[0]
        # the dtype of the data the writer computes from: a host argument it loads
        params = {a.arg for a in host.args.args}
        source = next((text for p, text in site.args
                       if p in report.kernels[writer].loads and text in params), None)
        if source is None:
            reasons.append(f"`{name}` in {host.name}(): {writer} loads no argument of "
                           f"{host.name}() to take a dtype from")
            continue
        loads = [c for kernel, p, _, _, _ in readers
                 for c in _accesses(file, kernel, p, "triton.language.load")]
        stores = _accesses(file, writer, param, "triton.language.store")
        stored = [(v, param) for c in stores
                  if (v := c.args[1] if len(c.args) > 1 else
                      next((k.value for k in c.keywords if k.arg == "value"), None)) is not None]
        if len(stored) != len(stores):
            reasons.append(f"`{name}` in {host.name}(): a store into it in {writer} gives no "
                           "value")
            continue
        kernels = ", ".join(sorted({r[0] for r in readers}))
        found.append(_Buffer(dtype.value, f"{source}.dtype", tuple(loads), tuple(stored),
                             f"`{name}` in {host.name}() in {source}'s dtype (written by "
                             f"{writer}, {len(loads)} load(s) in {kernels} widened to "
                             "float32)"))
    return found, "; ".join(reasons) or "no float32 buffer between two launches"


class DtypeStage:
    """Drop the float32 casts of a dot's loaded operands, narrow float32 intermediates (see the
    module docstring)."""

    name = "dtype"

    def _dots(self, file: KernelFile, report: AnalysisReport) -> list[tuple[str, ast.Call]]:
        found = []
        for summary in report.kernels.values():
            cast_locs = {c.loc for c in summary.dot_casts}
            for node in ast.walk(file.kernel_node(summary.name)):
                if isinstance(node, ast.Call) and file.module.qualified(node.func) == \
                        "triton.language.dot" and len(node.args) >= 2 \
                        and all(file.module.loc(a) in cast_locs for a in node.args[:2]):
                    found.append((summary.name, node))
        return found

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where a dot's two operands are loaded values cast to float32, or a float32 buffer
        passes between two launches."""
        if kernel_file.error is not None:
            return Applicability(False, f"dtype: not applicable: {kernel_file.error}")
        report = analyse_file(kernel_file)
        dots = self._dots(kernel_file, report)
        buffers, why = _narrowable(kernel_file, report)
        if not dots and not buffers:
            return Applicability(False, "dtype: not applicable: no tl.dot takes both operands "
                                        f"as loaded values cast to tl.float32; {why}")
        parts = []
        if dots:
            where = ", ".join(f"`{k}` at {d.lineno}:{d.col_offset + 1}" for k, d in dots)
            parts.append(f"tl.dot of float32 casts in {where}")
        parts += [f"narrow {b.why}" for b in buffers]
        return Applicability(True, "dtype: " + "; ".join(parts))

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """Every rewrite together; where both kinds apply, then each kind alone."""
        file = kernel_file
        report = analyse_file(file)
        dot_edits = []
        for _, dot in self._dots(file, report):
            for operand in dot.args[:2]:
                assert isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute)
                dot_edits.append(Edit(*node_span(file, operand), file.segment(operand.func.value)))
        buffers, _ = _narrowable(file, report)
        tl = triton_alias(file, "triton.language")
        buffer_edits = []
        for buffer in buffers:
            buffer_edits.append(Edit(*node_span(file, buffer.dtype), buffer.text))
            for load in buffer.loads:
                end = node_span(file, load)[1]
                buffer_edits.append(Edit(end, end, f".to({tl}.float32)"))
            for value, param in buffer.stored:
                text = file.segment(value)
                if not isinstance(value, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
                    text = f"({text})"
                buffer_edits.append(Edit(*node_span(file, value),
                                         f"{text}.to({param}.dtype.element_ty)"))
        dots_said = ("tl.dot takes its operands in their loaded dtype (float32 accumulation "
                     "kept)")
        buffers_said = "narrowed " + "; ".join(b.why for b in buffers)
        tail = "; this changes rounding, the cascade's tolerance decides"
        kinds = [(edits, said) for edits, said in ((dot_edits, dots_said),
                                                   (buffer_edits, buffers_said)) if edits]
        if not kinds:
            return []
        proposals = [Proposal(self.name, "dtype: " + "; ".join(s for _, s in kinds) + tail,
                              apply_edits(file.source, [e for edits, _ in kinds for e in edits]))]
        if len(kinds) == 2:
            proposals += [Proposal(self.name, f"dtype: {said}{tail}",
                                   apply_edits(file.source, edits)) for edits, said in kinds]
        return proposals
