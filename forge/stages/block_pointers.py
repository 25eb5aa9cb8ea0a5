"""The `block_pointers` stage: masked 2-D pointer loads and stores become block pointers.

    for k0 in range(0, K, BLOCK_K):                      x_block_ptr = tl.make_block_ptr(
        k = k0 + offs_k                                      base=x_ptr, shape=(M, K),
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm      strides=(stride_xm, stride_xk),
                    + k[None, :] * stride_xk,                offsets=(pid_m * BLOCK_M, 0),
                    mask=(offs_m[:, None] < M)               block_shape=(BLOCK_M, BLOCK_K),
                    & (k[None, :] < K), other=0.0)           order=(1, 0))
                                                         for k0 in range(0, K, BLOCK_K):
                                                             ...
                                                             x = tl.load(x_block_ptr,
                                                                 boundary_check=(0, 1),
                                                                 padding_option="zero")
                                                             ...
                                                             x_block_ptr = tl.advance(
                                                                 x_block_ptr, (0, BLOCK_K))

An access qualifies when its pointer is `BASE + R[:, None] * S0 + C[None, :] * S1` (the terms in
any order, BASE any other terms), its mask `(R[:, None] < D0) & (C[None, :] < D1)`, its `other`
absent or zero, each of R and C is `E + tl.arange(0, B)` / `tl.arange(0, B)` (a fixed origin E)
or `IV + A` with A such an arange and IV the variable of the loop around the access, `for IV in
range(start, stop, step)` with a literal start >= 0 and no `break`/`continue`; and the frontend's
analysis (on the same text) finds the access affine with strides exactly (S0, S1).

Legality: lane (i, j) of the block pointer addresses BASE + (O0 + i)*S0 + (O1 + j)*S1 (the
definition of `make_block_ptr`), which is the original pointer since R_i = O0 + i and C_j = O1 + j;
`boundary_check=(0, 1)` loads (stores) it iff 0 <= O0 + i < D0 and 0 <= O1 + j < D1, else pads
with zero (skips): the original mask is R_i < D0 and C_j < D1, and R_i, C_j >= 0 (program ids,
lanes and a loop from a nonnegative start times positive blocks), so the two agree, and zero is
the original `other`. In a loop, the block pointer starts at the loop's first offset (`start`)
and advances by `step` after each iteration's body, so at iteration t it is at start + t*step,
which is IV. `order` is a layout hint and changes no value. The now unused index names stay (the
compiler drops them). Block pointers are Triton 3.6's (removed upstream in 3.8: the KB prefers
tensor descriptors there, a later stage).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from axon.dialects.form.intexpr import IntExpr
from axon.forge.edits import triton_alias, wrapped_call
from axon.forge.source import (
    Edit,
    KernelFile,
    apply_edits,
    fresh_name,
    indent_of,
    node_span,
    statement_span,
)
from axon.forge.stages.analysis import KernelSummary, analyse_file
from axon.forge.stages.base import Applicability, Proposal
from axon.targets.xe_triton.kb import Device

__all__ = ["BlockPointersStage"]


@dataclass(frozen=True)
class _Axis:
    """One axis of an access: its index name, size bound, stride, origin, block, and the loop
    step it advances by (None: fixed)."""

    index: str
    bound: str
    stride: str
    origin: str
    block: str
    step: str | None


@dataclass(frozen=True)
class _Access:
    call: ast.Call
    statement: ast.stmt
    loop: ast.For | None
    base: str
    axes: tuple[_Axis, _Axis]
    store_value: str | None
    target: str


def _terms(node: ast.expr, op: type) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, op):
        return _terms(node.left, op) + _terms(node.right, op)
    return [node]


def _full(node: ast.expr) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None \
        and node.step is None


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _broadcast(node: ast.expr) -> tuple[str, int] | None:
    """`R[:, None]` -> (R, 0); `C[None, :]` -> (C, 1)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
            and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
        a, b = node.slice.elts
        if _full(a) and _none(b):
            return node.value.id, 0
        if _none(a) and _full(b):
            return node.value.id, 1
    return None


def _counts_up(file: KernelFile, func: ast.expr) -> bool:
    """`range` or `tl.range` (whose keywords, such as the memory-access stage's
    `num_stages`, change how the loop is compiled, not the values it visits)."""
    return (isinstance(func, ast.Name) and func.id == "range") or \
        file.module.qualified(func) == "triton.language.range"


class BlockPointersStage:
    """Block pointers for affine masked 2-D accesses (see the module docstring)."""

    name = "block_pointers"

    def _accesses(self, file: KernelFile, summary: KernelSummary) -> list[_Access]:
        if summary.analysis is None:
            return []
        node = file.kernel_node(summary.name)
        module = file.module
        runtime = {p.name for p in file.kernel(summary.name).params if not p.constexpr}
        constexprs = {p.name for p in file.kernel(summary.name).params if p.constexpr}
        assigns: dict[str, list[ast.Assign]] = {}
        parents: dict[int, ast.AST] = {}
        for parent in ast.walk(node):
            for child in ast.iter_child_nodes(parent):
                parents[id(child)] = parent
            if isinstance(parent, ast.Assign) and len(parent.targets) == 1 \
                    and isinstance(parent.targets[0], ast.Name):
                assigns.setdefault(parent.targets[0].id, []).append(parent)
        by_loc = {a.loc: a for a in summary.analysis.accesses}
        found: list[_Access] = []
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            kind = module.qualified(call.func)
            if kind not in ("triton.language.load", "triton.language.store"):
                continue
            access = by_loc.get(module.loc(call))
            if access is None or not access.affine or len(access.strides) != 2:
                continue
            got = self._match(file, node, call, kind.endswith("store"), access.strides, runtime,
                              constexprs, assigns, parents)
            if got is not None:
                found.append(got)
        # in program order: the edits inserting at one place (a loop's end is the next
        # statement's start) land in the order they are made
        return sorted(found, key=lambda a: (a.call.lineno, a.call.col_offset))

    def _match(self, file: KernelFile, kernel: ast.FunctionDef, call: ast.Call, store: bool,
               strides: tuple[IntExpr, ...], runtime: set[str], constexprs: set[str],
               assigns: dict[str, list[ast.Assign]], parents: dict[int, ast.AST]
               ) -> _Access | None:
        keywords = {k.arg: k.value for k in call.keywords}
        if not call.args or set(keywords) - {"mask", "other"} or len(call.args) > (2 if store
                                                                                 else 1):
            return None
        other = keywords.get("other")
        if other is not None and not (isinstance(other, ast.Constant)
                                      and other.value in (0, 0.0)):
            return None
        mask = keywords.get("mask")
        if mask is None:
            return None
        axes: dict[int, tuple[str, str]] = {}
        base: list[str] = []
        for term in _terms(call.args[0], ast.Add):
            index = None
            if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult):
                for a, b in ((term.left, term.right), (term.right, term.left)):
                    bc = _broadcast(a)
                    if bc is not None and isinstance(b, ast.Name) and b.id in runtime:
                        index = (bc, b.id)
            if index is None:
                base.append(file.segment(term))
            elif index[0][1] in axes:
                return None
            else:
                axes[index[0][1]] = (index[0][0], index[1])
        if len(axes) != 2 or not base:
            return None
        if tuple(strides) != (IntExpr.sym(axes[0][1]), IntExpr.sym(axes[1][1])):
            return None
        bounds: dict[int, str] = {}
        for term in _terms(mask, ast.BitAnd):
            if not (isinstance(term, ast.Compare) and len(term.ops) == 1
                    and isinstance(term.ops[0], ast.Lt)):
                return None
            bc = _broadcast(term.left)
            if bc is None or bc[1] in bounds or axes[bc[1]][0] != bc[0]:
                return None
            bounds[bc[1]] = file.segment(term.comparators[0])
        if len(bounds) != 2:
            return None
        statement: ast.AST = call
        loop: ast.For | None = None
        while not isinstance(statement, ast.stmt):
            statement = parents[id(statement)]
        parent = parents.get(id(statement))
        if isinstance(parent, ast.For) and statement in parent.body:
            loop = parent
        made = []
        for axis in (0, 1):
            index_name, stride = axes[axis]
            got = self._axis(file, kernel, index_name, loop, constexprs, assigns)
            if got is None:
                return None
            origin, block, step = got
            made.append(_Axis(index_name, bounds[axis], stride, origin, block, step))
        if all(a.step is None for a in made):
            loop = None
        target = "out"
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            target = statement.targets[0].id
        assert isinstance(statement, ast.stmt)
        return _Access(call, statement, loop, " + ".join(base), (made[0], made[1]),
                       file.segment(call.args[1]) if store else None, target)

    def _axis(self, file: KernelFile, kernel: ast.FunctionDef, index: str, loop: ast.For | None,
              constexprs: set[str], assigns: dict[str, list[ast.Assign]]
              ) -> tuple[str, str, str | None] | None:
        """(origin, block, loop step or None) of an index name."""
        defs = assigns.get(index, [])
        if len(defs) != 1:
            return None
        value = defs[0].value
        arange = self._arange(file, value, constexprs)
        if arange is not None:
            return "0", arange, None
        if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
            return None
        for fixed, lanes in ((value.left, value.right), (value.right, value.left)):
            block = self._arange(file, lanes, constexprs)
            if block is None and isinstance(lanes, ast.Name) \
                    and len(assigns.get(lanes.id, [])) == 1:
                block = self._arange(file, assigns[lanes.id][0].value, constexprs)
            if block is None:
                continue
            if loop is not None and isinstance(fixed, ast.Name) \
                    and isinstance(loop.target, ast.Name) and fixed.id == loop.target.id:
                if not (isinstance(loop.iter, ast.Call) and _counts_up(file, loop.iter.func)
                        and len(loop.iter.args) == 3
                        and isinstance(loop.iter.args[0], ast.Constant)
                        and isinstance(loop.iter.args[0].value, int)
                        and loop.iter.args[0].value >= 0) or loop.orelse \
                        or any(isinstance(n, (ast.Break, ast.Continue)) for n in ast.walk(loop)):
                    return None
                return (str(loop.iter.args[0].value), block,
                        file.segment(loop.iter.args[2]))
            names = {n.id for n in ast.walk(fixed) if isinstance(n, ast.Name)}
            loop_vars = {n.target.id for n in ast.walk(kernel) if isinstance(n, ast.For)
                         and isinstance(n.target, ast.Name)}
            if names & loop_vars:
                return None
            return file.segment(fixed), block, None
        return None

    def _arange(self, file: KernelFile, node: ast.expr, constexprs: set[str]) -> str | None:
        if isinstance(node, ast.Call) and file.module.qualified(node.func) == \
                "triton.language.arange" and len(node.args) == 2 \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0 \
                and isinstance(node.args[1], ast.Name) and node.args[1].id in constexprs:
            return node.args[1].id
        return None

    def _found(self, file: KernelFile) -> list[tuple[str, list[_Access]]]:
        report = analyse_file(file)
        return [(s.name, got) for s in report.kernels.values()
                if (got := self._accesses(file, s))]

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where some masked 2-D access qualifies (see the module docstring)."""
        if kernel_file.error is not None:
            return Applicability(False, f"block_pointers: not applicable: {kernel_file.error}")
        found = self._found(kernel_file)
        if not found:
            return Applicability(False, "block_pointers: not applicable: no masked 2-D "
                                        "tl.load/tl.store with an affine pointer of parameter "
                                        "strides and a mask of its two bounds")
        return Applicability(True, "block_pointers: " + "; ".join(
            f"`{k}`: {len(a)} access(es)" for k, a in found))

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal: every qualifying access of every kernel through a block pointer."""
        found = self._found(kernel_file)
        tl = triton_alias(kernel_file, "triton.language")
        if not found or tl is None:
            return []
        edits: list[Edit] = []
        for kernel, accesses in found:
            taken = {n.id for n in ast.walk(kernel_file.kernel_node(kernel))
                     if isinstance(n, ast.Name)}
            for access in accesses:
                name = fresh_name(f"{access.target}_block_ptr", taken)
                taken.add(name)
                a0, a1 = access.axes
                anchor = access.loop or access.statement
                indent = indent_of(kernel_file, anchor)
                make = wrapped_call(indent, f"{name} = {tl}.make_block_ptr", [
                    f"base={access.base}", f"shape=({a0.bound}, {a1.bound})",
                    f"strides=({a0.stride}, {a1.stride})",
                    f"offsets=({a0.origin}, {a1.origin})",
                    f"block_shape=({a0.block}, {a1.block})", "order=(1, 0)"])
                start = statement_span(kernel_file, anchor)[0]
                edits.append(Edit(start, start, f"{make}\n"))
                if access.store_value is None:
                    text = (f'{tl}.load({name}, boundary_check=(0, 1), '
                            'padding_option="zero")')
                else:
                    text = f"{tl}.store({name}, {access.store_value}, boundary_check=(0, 1))"
                edits.append(Edit(*node_span(kernel_file, access.call), text))
                if access.loop is not None:
                    last = access.loop.body[-1]
                    end = statement_span(kernel_file, last)[1]
                    steps = ", ".join(a.step or "0" for a in access.axes)
                    edits.append(Edit(end, end, f"{indent_of(kernel_file, last)}{name} = "
                                                f"{tl}.advance({name}, ({steps}))\n"))
        described = "; ".join(f"`{k}`: {len(a)} access(es)" for k, a in found)
        return [Proposal(self.name, f"block_pointers: tl.make_block_ptr with boundary_check "
                                    f"for {described}", apply_edits(kernel_file.source, edits))]
