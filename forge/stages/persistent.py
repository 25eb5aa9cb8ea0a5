"""The `persistent` stage: grid axis 0 run by a fixed number of programs, each looping over tiles.

Before (grid `(T, ...)`)                       After (grid `(min(T, PERSISTENT_PROGRAMS), ...)`)

    pid = tl.program_id(0)                         num_tiles = T_k
    ...body...                                     for pid in range(tl.program_id(0), num_tiles,
                                                                    tl.num_programs(0)):
                                                       ...body...

`T_k` is the launch's grid dim 0 written in the kernel's own terms: each `triton.cdiv(X, 64)`
becomes `tl.cdiv(size, BLOCK)` by `grid.grid_blocks` (the size parameter the launch binds X to,
the block constexpr the launch binds 64 to), each other argument text becomes the parameter it is
bound to, integers stay; so a later stage that retunes the blocks (`xe_tuning`, `autotune`)
keeps the loop's bound equal to the grid. A grid dim without blocks that the kernel cannot
compute (a row kernel's `(M,)`, M no argument) is passed instead: a new parameter `num_tiles`,
given `num_tiles=M` at each launch. `PERSISTENT_PROGRAMS` is a module constant: the KB
device's cores (one program a core, the usual persistent GEMM), and in further proposals two
and four a core where the profile's `warps_per_core_max` holds that many of the launch's
warps. It is a name, not a literal, so the autotune stage still reads the grid.

Legality. Each old program ran the body with `pid` = its id t in [0, T). The new program p of
P = min(T, NP) runs the body with `pid` = p, p + P, p + 2P, ... below T. `prove_cover` proves
with z3, for all T >= 1 and NP >= 1, that every t in [0, T) is visited by exactly one pair
(p, i) with p in [0, P) and i >= 0 (t = p + i*P), and that the loop visits nothing else; unknown
is not proved and the stage then proposes nothing. The body runs unchanged for each t provided
one iteration cannot see another's work: no atomics, no buffer both loaded and stored (programs
independent, as the swizzle needs), no `tl.num_programs` or second `tl.program_id(0)` read, no
`return`, and no name the moved body assigns is a parameter or assigned before the loop (so
nothing is carried from one tile to the next: `x_ptr += pid * stride` is refused).
"""

from __future__ import annotations

import ast
import copy
import functools
from dataclasses import dataclass

import z3

from axon.forge.edits import add_param, keyword_node, set_keyword, triton_alias
from axon.forge.grid import grid_blocks, grid_expr
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
from axon.forge.stages.facts import ForgeOptions
from axon.targets.profiles import load_profile
from axon.targets.xe_triton.kb import Device

__all__ = ["CoverProof", "PersistentStage", "prove_cover"]

#: the seconds z3 may take; past them the cover is not proved
PROOF_TIMEOUT_S = 20

#: the module constant holding the number of programs
PROGRAMS_NAME = "PERSISTENT_PROGRAMS"


@dataclass(frozen=True)
class CoverProof:
    """z3's verdict on the persistent loop's cover of the old grid."""

    proved: bool
    detail: str


@functools.cache
def prove_cover(step_programs: int = 1, timeout_s: float = PROOF_TIMEOUT_S) -> CoverProof:
    """Prove that `range(p, T, S)` over the programs p in [0, P), P = min(T, NP), visits every
    t in [0, T) exactly once and nothing else, for all T >= 1, NP >= 1, where the step S is
    `step_programs` times P (the stage's loop: 1, `tl.num_programs(0)`)."""
    tiles, launched = z3.Ints("T NP")
    programs = z3.If(tiles < launched, tiles, launched)
    step = step_programs * programs
    t, p, q, i, j = z3.Ints("t p q i j")
    in_range = [tiles >= 1, launched >= 1]
    # visited: t = p + i*S with p a program, i an iteration; range() stops below T
    visited = z3.And(p >= 0, p < programs, i >= 0, p + i * step < tiles)
    goals = {
        # the witness of t: program t % S at iteration t / S
        "every tile is visited": z3.ForAll([t], z3.Implies(
            z3.And(t >= 0, t < tiles),
            z3.And(t % step >= 0, t % step < programs,
                   t / step >= 0, t % step + (t / step) * step == t))),
        "only tiles are visited": z3.Implies(visited, z3.And(p + i * step >= 0,
                                                             p + i * step < tiles)),
        "no tile is visited twice": z3.Implies(
            z3.And(visited, q >= 0, q < programs, j >= 0, p + i * step == q + j * step),
            z3.And(p == q, i == j)),
    }
    for what, goal in goals.items():
        solver = z3.Solver()
        solver.set("timeout", int(timeout_s * 1000))
        solver.add(*in_range, z3.Not(goal))
        verdict = solver.check()
        if verdict == z3.unknown:
            return CoverProof(False, f"not proved ({what}): z3 answered unknown "
                                     f"({solver.reason_unknown()})")
        if verdict == z3.sat:
            return CoverProof(False, f"refuted ({what}): {solver.model()}")
    return CoverProof(True, "proved: each tile of [0, T) runs once, on one program, for all "
                            "T, NP >= 1")


@dataclass(frozen=True)
class _Plan:
    """`tiles`: grid dim 0 in the kernel's terms, or None where each launch passes it (`grids`
    holds each launch's call and grid dim 0)."""

    kernel: str
    pid: ast.Assign
    tiles: str | None
    grids: tuple[tuple[ast.Call, ast.expr], ...]
    warps: int | None


class _NotKernelTerms(ValueError):
    pass


def _span(node: ast.expr) -> tuple[int, int, int | None, int | None]:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _kernel_terms(file: KernelFile, expr: ast.expr, by_text: dict[str, str],
                  cdivs: dict[tuple[int, int, int | None, int | None], tuple[str, str]],
                  tl: str) -> str:
    """The text of grid dim `expr` in the kernel's terms (see the module docstring); `cdivs`
    are the grid's `triton.cdiv` calls by their place in the file."""

    class Rewrite(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if isinstance(node, ast.expr):
                if _span(node) in cdivs:
                    size, block = cdivs[_span(node)]
                    return ast.parse(f"{tl}.cdiv({size}, {block})", mode="eval").body
                text = file.segment(node)
                if text in by_text:
                    return ast.Name(by_text[text], ast.Load())
            if isinstance(node, ast.Constant) and isinstance(node.value, int):
                return node
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
                return self.generic_visit(node)
            if isinstance(node, (ast.Mult, ast.Add)):
                return node
            raise _NotKernelTerms(f"`{ast.unparse(node)}` is no argument the launch binds")

    # a copy keeps the places (the lookups above) and leaves the file's tree as it was
    return ast.unparse(Rewrite().visit(copy.deepcopy(expr)))


def _rebound(file: KernelFile, call: ast.Call, binding: ast.Assign, dim: ast.expr) -> bool:
    """Whether a name `dim` reads is assigned between the grid's binding and the launch."""
    host = file.host_of(call)
    names = {n.id for n in ast.walk(dim) if isinstance(n, ast.Name)}
    between = [s for s in ast.walk(host) if isinstance(s, ast.stmt) and s is not binding
               and binding.lineno <= s.lineno < call.lineno] if host else []
    return bool(names & _assigned(between))


def _assigned(nodes: list[ast.stmt]) -> set[str]:
    """Names the statements bind (assignments, augmented ones, loop targets, walruses)."""
    names: set[str] = set()
    for stmt in nodes:
        for node in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
                targets = [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


class PersistentStage:
    """A persistent loop over grid axis 0 (see the module docstring)."""

    name = "persistent"

    def __init__(self, options: ForgeOptions | None = None) -> None:
        self.options = options or ForgeOptions()

    def _plan(self, file: KernelFile, summary: KernelSummary) -> _Plan | str:
        name = summary.name
        if summary.atomics:
            return f"kernel `{name}` uses atomics (programs communicate)"
        if summary.loads & summary.stores:
            return (f"kernel `{name}` loads and stores "
                    f"{', '.join(sorted(summary.loads & summary.stores))} (a tile may read "
                    "another's output)")
        tl = triton_alias(file, "triton.language")
        if tl is None or triton_alias(file, "triton") is None:
            return "the file does not import triton and triton.language"
        node = file.kernel_node(name)
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
        if any(file.module.qualified(c.func) == "triton.language.num_programs" for c in calls):
            return f"kernel `{name}` reads tl.num_programs"
        reads = [c for c in calls if file.module.qualified(c.func) ==
                 "triton.language.program_id" and c.args
                 and isinstance(c.args[0], ast.Constant) and c.args[0].value == 0]
        index, pid = next(((k, s) for k, s in enumerate(node.body)
                           if isinstance(s, ast.Assign) and len(s.targets) == 1
                           and isinstance(s.targets[0], ast.Name) and len(reads) == 1
                           and s.value is reads[0]), (-1, None))
        if pid is None:
            return (f"kernel `{name}` does not read tl.program_id(0) once, as "
                    "`name = tl.program_id(0)` at its top level")
        moved = node.body[index + 1:]
        if not moved:
            return f"kernel `{name}` does nothing after reading its program id"
        if any(isinstance(n, ast.Return) for s in moved for n in ast.walk(s)):
            return f"kernel `{name}` returns early (a loop over tiles would stop)"
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str)
               and n.end_lineno != n.lineno for s in moved for n in ast.walk(s)):
            return f"kernel `{name}` holds a string over several lines (its text moves)"
        params = {a.arg for a in [*node.args.posonlyargs, *node.args.args,
                                  *node.args.kwonlyargs]}
        carried = _assigned(moved) & (params | _assigned(node.body[:index + 1]))
        if carried:
            return (f"kernel `{name}` assigns {', '.join(sorted(carried))} after reading its "
                    "program id (a tile would see the one before)")
        grids: list[tuple[ast.Call, ast.expr]] = []
        texts: set[str] = set()
        warps: set[int | None] = set()
        for site, call in zip(file.kernel_launches(name), file.launch_calls(name), strict=True):
            expr, binding = grid_expr(file, call)
            if not isinstance(expr, ast.Tuple) or not expr.elts:
                return (f"the launch at {site.loc[0]}:{site.loc[1]} has grid `{site.grid}`; "
                        "expected a tuple")
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
            cdivs = {_span(b.call): (b.size, b.block) for b in found}
            by_text = {text: param for param, text in site.args}
            try:
                texts.add(_kernel_terms(file, expr.elts[0], by_text, cdivs, tl))
            except _NotKernelTerms as err:
                if any(_span(b.call) in cdivs for b in found
                       if any(n is b.call for n in ast.walk(expr.elts[0]))):
                    # a block a later stage may retune: the launch cannot pass it fixed
                    return f"grid dim `{file.segment(expr.elts[0])}` of {name}: {err}"
                if binding is not None and _rebound(file, call, binding, expr.elts[0]):
                    return (f"grid dim `{file.segment(expr.elts[0])}` of {name} names a value "
                            "reassigned before the launch")
                texts.add("")  # the launch passes it
            grids.append((call, expr.elts[0]))
            given = keyword_node(call, "num_warps")
            warps.add(given.value.value if given is not None
                      and isinstance(given.value, ast.Constant)
                      and isinstance(given.value.value, int) else None)
        if not grids:
            return f"kernel `{name}` is never launched"
        if len(texts) != 1:
            return f"the launches of `{name}` give grid dim 0 differently"
        return _Plan(name, pid, texts.pop() or None, tuple(grids),
                     warps.pop() if len(warps) == 1 else None)

    def _plans(self, file: KernelFile) -> tuple[_Plan | None, list[str]]:
        report = analyse_file(file)
        if report.error:
            return None, [report.error]
        reasons: list[str] = []
        for summary in report.kernels.values():
            plan = self._plan(file, summary)
            if isinstance(plan, _Plan):
                return plan, reasons
            reasons.append(plan)
        return None, reasons or ["no launched kernels"]

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where some launched kernel's grid axis 0 can be looped over (module docstring)."""
        if kernel_file.error is not None:
            return Applicability(False, f"persistent: not applicable: {kernel_file.error}")
        plan, reasons = self._plans(kernel_file)
        if plan is None:
            return Applicability(False, "persistent: not applicable: " + "; ".join(reasons))
        tiles = plan.tiles or "the launch's grid dim 0 (passed as a parameter)"
        return Applicability(True, f"persistent: kernel `{plan.kernel}`: a loop over "
                                   f"{tiles} tiles of grid axis 0")

    @staticmethod
    def program_counts(profile: Device, warps: int | None) -> list[int]:
        """The programs to launch: one a core (the persistent GEMM's usual count), then two and
        four a core where the core holds that many programs of the launch's warps."""
        cores, per_core = profile.cores, 4
        if profile.profile is not None and warps:
            parallelism = load_profile(profile.profile).parallelism
            if parallelism is not None and parallelism.warps_per_core_max is not None:
                per_core = min(per_core, max(int(parallelism.warps_per_core_max.value) // warps,
                                             1))
        return [cores * k for k in (1, 2, 4) if k <= per_core]

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal per program count (`program_counts`), at most
        `options.max_proposals`, for the first kernel that can loop; none unless the cover is
        proved."""
        plan, _ = self._plans(kernel_file)
        if plan is None:
            return []
        proof = prove_cover()
        if not proof.proved:
            return []
        file = kernel_file
        node = file.kernel_node(plan.kernel)
        tl = triton_alias(file, "triton.language")
        target = plan.pid.targets[0]
        assert isinstance(target, ast.Name) and tl is not None
        indent = indent_of(file, plan.pid)
        start = statement_span(file, plan.pid)[0]
        end = statement_span(file, node.body[-1])[1]
        moved = file.source[statement_span(file, plan.pid)[1]:end]
        body = "".join(("    " + line if line.strip() else line)
                       for line in moved.splitlines(keepends=True))
        taken = {n.id for n in ast.walk(file.tree) if isinstance(n, ast.Name)} | \
            {a.arg for a in ast.walk(file.tree) if isinstance(a, ast.arg)}
        tiles = fresh_name("num_tiles", taken)
        header = (f"{indent}{tiles} = {plan.tiles}\n" if plan.tiles is not None else "") + (
            f"{indent}for {target.id} in range({tl}.program_id(0), {tiles}, "
            f"{tl}.num_programs(0)):\n")
        constant = fresh_name(PROGRAMS_NAME, taken)
        imports = [s for s in file.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        after_imports = statement_span(file, imports[-1])[1]
        proposals = []
        for count in self.program_counts(profile, plan.warps)[:self.options.max_proposals]:
            edits = [Edit(start, end, header + body),
                     Edit(after_imports, after_imports,
                          f"\n#: programs of `{plan.kernel}`'s persistent loop on "
                          f"{profile.name} ({profile.cores} cores)\n{constant} = {count}\n")]
            if plan.tiles is None:
                edits.append(add_param(file, plan.kernel, tiles))
            for call, dim in plan.grids:
                span = node_span(file, dim)
                edits.append(Edit(*span, f"min({file.segment(dim)}, {constant})"))
                if plan.tiles is None:
                    edits.append(set_keyword(file, call, tiles, file.segment(dim)))
            proposals.append(Proposal(
                self.name, f"persistent `{plan.kernel}`: {count} programs loop over the "
                           f"{plan.tiles or 'launch-given'} tiles of grid axis 0; cover "
                           f"{proof.detail}",
                apply_edits(file.source, edits)))
        return proposals
