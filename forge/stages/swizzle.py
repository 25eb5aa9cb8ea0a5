"""The `swizzle` stage: a 2-D `tl.dot` grid run in Triton's grouped program order (L2 reuse).

Before (grid `(cdiv(M, 64), cdiv(N, 64))`)         After (grid `(cdiv(M, 64) * cdiv(N, 64),)`)

    pid_m = tl.program_id(0)                           pid = tl.program_id(0)
    pid_n = tl.program_id(1)                           num_pid_m = tl.cdiv(M, BLOCK_M)
                                                       num_pid_n = tl.cdiv(N, BLOCK_N)
                                                       ... (GROUP_SIZE_M rows of tiles a group)
                                                       pid_m = first_pid_m + (pid % ...) % ...
                                                       pid_n = (pid % ...) // group_size_m

Legality. The programs are independent (no atomics, no buffer both loaded and stored by the
kernel), so the outputs are the same whatever order the grid's points run in, provided every
point runs once: the remap must be a bijection of [0, Mb*Nb) onto [0, Mb) x [0, Nb), where Mb
and Nb are the old grid's dims. Two facts give that. (1) The kernel computes Mb and Nb as
`tl.cdiv(M, BLOCK_M)` only where the launch's grid dim is `triton.cdiv(X, 64)` with X the text
bound to `M` and 64 the text bound to `BLOCK_M` at that same launch (`grid.py`): the same
integers, ceil-divided the same way. (2) `prove_bijection` proves, with z3, for all Mb, Nb,
GROUP_SIZE_M >= 1, that the remap statements as written (parsed back from the text the stage
inserts) send every linear id in range into the old grid, injectively (a map of a finite set
into one of the same size that is injective is onto), with every divisor positive and every
dividend nonnegative (so Triton's truncating `//` and `%` agree with z3's); unknown is not
proved, and the stage then proposes nothing. A third grid axis (the batch of 06_bmm_scale)
becomes the second, the one the remap frees (the KB's `xpu_tiles_on_grid_axis_0`: tiles on axis
0, the batch on axis 1): every `tl.program_id(2)` reads `tl.program_id(1)`, whose grid dim is
now the old third one, and nothing else read axis 1 (the remap replaced the one read of it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import z3

from axon.forge.edits import add_param
from axon.forge.grid import GridBlock, grid_blocks, grid_expr
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
from axon.forge.stages.facts import ForgeOptions, kernel_facts
from axon.targets.xe_triton.kb import Device, settings_for

__all__ = ["SWIZZLE_TEMPLATE", "BijectionProof", "SwizzleStage", "prove_bijection"]

#: the grouped order of Triton's matmul tutorial; `{...}` are names the stage picks fresh
SWIZZLE_TEMPLATE = (
    "{pid} = {tl}.program_id(0)",
    "{num_pid_m} = {tl}.cdiv({M}, {BLOCK_M})",
    "{num_pid_n} = {tl}.cdiv({N}, {BLOCK_N})",
    "{num_pid_in_group} = {GROUP} * {num_pid_n}",
    "{group_id} = {pid} // {num_pid_in_group}",
    "{first_pid_m} = {group_id} * {GROUP}",
    "{group_size_m} = {tl}.minimum({num_pid_m} - {first_pid_m}, {GROUP})",
    "{pid_m} = {first_pid_m} + (({pid} % {num_pid_in_group}) % {group_size_m})",
    "{pid_n} = ({pid} % {num_pid_in_group}) // {group_size_m}",
)

#: the seconds z3 may take; past them the bijection is not proved
PROOF_TIMEOUT_S = 20


@dataclass(frozen=True)
class BijectionProof:
    """z3's verdict on a remap: proved, or not with why (and a counterexample when refuted)."""

    proved: bool
    detail: str
    counterexample: dict[str, int] = field(default_factory=dict)


class _Unsupported(ValueError):
    pass


def _term(node: ast.expr, env: dict[str, z3.ArithRef], divisions: list[tuple[z3.ArithRef,
          z3.ArithRef]]) -> z3.ArithRef:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return z3.IntVal(node.value)
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise _Unsupported(f"`{node.id}` is not defined by the remap")
        return env[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _term(node.left, env, divisions), _term(node.right, env, divisions)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
            divisions.append((left, right))
            return left / right if isinstance(node.op, ast.FloorDiv) else left % right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("minimum", "maximum") and len(node.args) == 2:
        a, b = (_term(arg, env, divisions) for arg in node.args)
        return z3.If(a < b, a, b) if node.func.attr == "minimum" else z3.If(a > b, a, b)
    raise _Unsupported(f"`{ast.unparse(node)}` is outside the remap's arithmetic")


def prove_bijection(statements: str, pid: str, num_pid_m: str, num_pid_n: str, group: str,
                    pid_m: str, pid_n: str, timeout_s: float = PROOF_TIMEOUT_S
                    ) -> BijectionProof:
    """Prove that `statements` (Python assignments) map each `pid` in [0, Mb*Nb) to a distinct
    (`pid_m`, `pid_n`) in [0, Mb) x [0, Nb), for all Mb, Nb, `group` >= 1. `pid` is read from
    `tl.program_id(0)` and `num_pid_m` / `num_pid_n` are Mb and Nb wherever assigned."""
    mb, nb, g = z3.Ints("Mb Nb GROUP_SIZE_M")
    ids = z3.Ints("pid_a pid_b")
    outs: list[tuple[z3.ArithRef, z3.ArithRef]] = []
    divisions: list[tuple[z3.ArithRef, z3.ArithRef]] = []
    try:
        body = ast.parse(statements).body
        for linear in ids:
            env: dict[str, z3.ArithRef] = {group: g}
            for stmt in body:
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Name)):
                    raise _Unsupported(f"`{ast.unparse(stmt)}` is not `name = expression`")
                name = stmt.targets[0].id
                value = stmt.value
                if name == pid:
                    env[name] = linear
                elif name in (num_pid_m, num_pid_n):
                    env[name] = mb if name == num_pid_m else nb
                else:
                    env[name] = _term(value, env, divisions)
            if pid_m not in env or pid_n not in env:
                raise _Unsupported(f"the remap does not assign {pid_m} and {pid_n}")
            outs.append((env[pid_m], env[pid_n]))
    except (_Unsupported, SyntaxError) as err:
        return BijectionProof(False, f"not proved: {err}")
    hypotheses = [mb >= 1, nb >= 1, g >= 1, *(z3.And(i >= 0, i < mb * nb) for i in ids)]
    (m0, n0), (m1, n1) = outs
    goals = [z3.And(d > 0, n >= 0) for n, d in divisions]
    goals += [m0 >= 0, m0 < mb, n0 >= 0, n0 < nb,
              z3.Implies(ids[0] != ids[1], z3.Or(m0 != m1, n0 != n1))]
    solver = z3.Solver()
    solver.set("timeout", int(timeout_s * 1000))
    solver.add(*hypotheses, z3.Not(z3.And(*goals)))
    verdict = solver.check()
    if verdict == z3.unsat:
        return BijectionProof(True, "proved: a bijection of [0, Mb*Nb) onto [0, Mb) x [0, Nb) "
                                    "for all Mb, Nb, GROUP_SIZE_M >= 1")
    if verdict == z3.unknown:
        return BijectionProof(False, f"not proved: z3 answered unknown ({solver.reason_unknown()})")
    model = solver.model()
    example = {str(v): model.eval(v, model_completion=True).as_long()
               for v in (mb, nb, g, *ids)}
    example.update({f"{pid_m}(pid_a)": model.eval(m0, model_completion=True).as_long(),
                    f"{pid_n}(pid_a)": model.eval(n0, model_completion=True).as_long(),
                    f"{pid_m}(pid_b)": model.eval(m1, model_completion=True).as_long(),
                    f"{pid_n}(pid_b)": model.eval(n1, model_completion=True).as_long()})
    shown = ", ".join(f"{k}={v}" for k, v in example.items())
    return BijectionProof(False, f"refuted: {shown}", example)


@dataclass(frozen=True)
class _Site:
    call: ast.Call
    grid: ast.Tuple
    blocks: tuple[GridBlock, GridBlock]


@dataclass(frozen=True)
class _Plan:
    kernel: str
    first: ast.Assign
    second: ast.Assign
    sites: tuple[_Site, ...]


class SwizzleStage:
    """Grouped program order for 2-D `tl.dot` grids (see the module docstring)."""

    name = "swizzle"

    def __init__(self, options: ForgeOptions | None = None,
                 template: tuple[str, ...] = SWIZZLE_TEMPLATE) -> None:
        self.options = options or ForgeOptions()
        self.template = template

    def _plan(self, file: KernelFile, summary: KernelSummary) -> _Plan | str:
        name = summary.name
        if summary.dots == 0:
            return f"kernel `{name}` has no tl.dot"
        if summary.atomics:
            return f"kernel `{name}` uses atomics (programs communicate)"
        if 0 not in summary.program_axes or 1 not in summary.program_axes:
            return f"kernel `{name}` is launched on a 1-D grid"
        if summary.loads & summary.stores:
            return (f"kernel `{name}` loads and stores "
                    f"{', '.join(sorted(summary.loads & summary.stores))} (programs may "
                    "communicate)")
        node = file.kernel_node(name)
        if node.args.defaults or node.args.kw_defaults or node.args.kwonlyargs:
            return f"kernel `{name}` has parameters with defaults or keyword-only ones"
        if any(p.arg == "GROUP_SIZE_M" for p in summary_params(file, name)):
            return f"kernel `{name}` already takes GROUP_SIZE_M"
        pid_stmts: dict[int, ast.Assign] = {}
        for stmt in node.body:
            axis = _program_id_axis(file, stmt)
            if axis in (0, 1):
                if axis in pid_stmts:
                    return f"kernel `{name}` reads tl.program_id({axis}) twice"
                pid_stmts[axis] = stmt  # type: ignore[assignment]
        calls = [n for n in ast.walk(node) if isinstance(n, ast.Call)]
        reads = sum(1 for c in calls if file.module.qualified(c.func) ==
                    "triton.language.program_id" and c.args and
                    isinstance(c.args[0], ast.Constant) and c.args[0].value in (0, 1))
        if len(pid_stmts) != 2 or reads != 2:
            return (f"kernel `{name}` does not read program ids 0 and 1 once each as "
                    "`name = tl.program_id(k)` at its top level")
        if any(file.module.qualified(c.func) == "triton.language.num_programs" for c in calls):
            return f"kernel `{name}` reads tl.num_programs"
        sites: list[_Site] = []
        for site, call in zip(file.kernel_launches(name), file.launch_calls(name), strict=True):
            expr, binding = grid_expr(file, call)
            if not isinstance(expr, ast.Tuple) or len(expr.elts) not in (2, 3):
                return (f"the launch at {site.loc[0]}:{site.loc[1]} has grid `{site.grid}`; "
                        "expected a tuple of 2 or 3 dims")
            if binding is not None:
                host = file.host_of(call)
                assert isinstance(call.func, ast.Subscript) \
                    and isinstance(call.func.slice, ast.Name)
                grid_name = call.func.slice.id
                uses = sum(1 for n in ast.walk(host) if isinstance(n, ast.Name)
                           and isinstance(n.ctx, ast.Load) and n.id == grid_name) if host else 0
                if uses != 1:
                    return f"grid `{file.segment(binding.targets[0])}` is used {uses} times"
            found, why = grid_blocks(file, site, expr)
            if why:
                return why
            dims = []
            for dim in expr.elts[:2]:
                match = [b for b in found if b.call is dim]
                if not match:
                    return (f"grid dim `{file.segment(dim)}` is not `triton.cdiv(size, block)` "
                            f"of {name}'s parameters")
                dims.append(match[0])
            sites.append(_Site(call, expr, (dims[0], dims[1])))
        keys = {tuple((b.size, b.block) for b in s.blocks) for s in sites}
        if len(keys) != 1:
            return f"the launches of `{name}` divide their grids differently"
        return _Plan(name, pid_stmts[0], pid_stmts[1], tuple(sites))

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where some launched kernel has a 2-D dot grid the remap can read."""
        report = analyse_file(kernel_file)
        if report.error:
            return Applicability(False, f"swizzle: not applicable: {report.error}")
        reasons = []
        for summary in report.kernels.values():
            plan = self._plan(kernel_file, summary)
            if isinstance(plan, _Plan):
                return Applicability(True, f"swizzle: kernel `{plan.kernel}`: grouped order "
                                           "over a 1-D grid")
            reasons.append(plan)
        return Applicability(False, "swizzle: not applicable: " + "; ".join(reasons or
                                                                            ["no kernels"]))

    def remap_text(self, file: KernelFile, plan: _Plan, indent: str) -> tuple[str, dict[str,
                                                                                       str]]:
        """The remap statements for `plan` and the names they use."""
        node = file.kernel_node(plan.kernel)
        taken = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
            {a.arg for a in node.args.args}
        first, second = plan.first.targets[0], plan.second.targets[0]
        assert isinstance(first, ast.Name) and isinstance(second, ast.Name)
        names = {"pid_m": first.id, "pid_n": second.id, "GROUP": "GROUP_SIZE_M",
                 "tl": next(a for a, full in file.module.aliases.items()
                            if full == "triton.language")}
        for base in ("pid", "num_pid_m", "num_pid_n", "num_pid_in_group", "group_id",
                     "first_pid_m", "group_size_m"):
            names[base] = fresh_name(base, taken | set(names.values()))
            taken.add(names[base])
        m, n = plan.sites[0].blocks
        names.update(M=m.size, BLOCK_M=m.block, N=n.size, BLOCK_N=n.block)
        text = "".join(f"{indent}{line.format(**names)}\n" for line in self.template)
        return text, names

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal per GROUP_SIZE_M the KB gives for the device (8 where it gives none),
        for the first kernel the remap applies to; none unless z3 proves the remap."""
        report = analyse_file(kernel_file)
        for summary in report.kernels.values():
            plan = self._plan(kernel_file, summary)
            if isinstance(plan, _Plan):
                return self._proposals(kernel_file, summary, plan, profile)
        return []

    def _proposals(self, file: KernelFile, summary: KernelSummary, plan: _Plan,
                   profile: Device) -> list[Proposal]:
        settings = settings_for(profile, kernel_facts(summary, self.options))
        groups = settings.group_size_m or (8,)
        first, second = sorted((plan.first, plan.second), key=lambda s: s.lineno)
        remap, names = self.remap_text(file, plan, indent_of(file, first))
        proof = prove_bijection(remap.replace("\n" + indent_of(file, first), "\n").strip(),
                                names["pid"], names["num_pid_m"], names["num_pid_n"],
                                "GROUP_SIZE_M", names["pid_m"], names["pid_n"])
        if not proof.proved:
            return []
        node = file.kernel_node(plan.kernel)
        tl = names["tl"]
        proposals = []
        for group in groups[:self.options.max_proposals]:
            edits = [Edit(*statement_span(file, first), remap),
                     Edit(*statement_span(file, second), ""),
                     add_param(file, plan.kernel, f"GROUP_SIZE_M: {tl}.constexpr")]
            # the third axis (a batch) moves to the second, which the remap freed
            edits += [Edit(*node_span(file, c.args[0]), "1") for c in ast.walk(node)
                      if isinstance(c, ast.Call) and file.module.qualified(c.func) ==
                      "triton.language.program_id" and c.args
                      and isinstance(c.args[0], ast.Constant) and c.args[0].value == 2]
            for site in plan.sites:
                dims = [file.segment(e) for e in site.grid.elts]
                grid = f"({dims[0]} * {dims[1]},)" if len(dims) == 2 else \
                    f"({dims[0]} * {dims[1]}, {dims[2]})"
                edits.append(Edit(*node_span(file, site.grid), grid))
                last = max([*site.call.args, *(k.value for k in site.call.keywords)],
                           key=lambda e: (e.end_lineno, e.end_col_offset))
                end = node_span(file, last)[1]
                edits.append(Edit(end, end, f", GROUP_SIZE_M={group}"))
            proposals.append(Proposal(
                self.name, f"swizzle `{plan.kernel}`: grouped program order, GROUP_SIZE_M="
                           f"{group}, over a 1-D grid; remap {proof.detail}",
                apply_edits(file.source, edits)))
        return proposals


def summary_params(file: KernelFile, kernel: str) -> list[ast.arg]:
    """The kernel's parameters as `ast.arg`s."""
    node = file.kernel_node(kernel)
    return [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]


def _program_id_axis(file: KernelFile, stmt: ast.stmt) -> int | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call) \
            and file.module.qualified(stmt.value.func) == "triton.language.program_id" \
            and stmt.value.args and isinstance(stmt.value.args[0], ast.Constant) \
            and isinstance(stmt.value.args[0].value, int):
        return stmt.value.args[0].value
    return None
