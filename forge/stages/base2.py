"""The `base2` stage: exponentials in base 2, a scale the scores already take folded into it.

Before                                              After
    s = tl.dot(q, kt) * scale                           s = tl.dot(q, kt) * (scale * LOG2E)
    m_new = tl.maximum(m_i, tl.max(s, axis=1))          m_new = tl.maximum(m_i, tl.max(s, axis=1))
    alpha = tl.exp(m_i - m_new)                         alpha = tl.exp2(m_i - m_new)
    p = tl.exp(s - m_new[:, None])                      p = tl.exp2(s - m_new[:, None])

(LOG2E = log2(e), printed as a literal.) On NVIDIA a float32 `tl.exp` is not the hardware's
base-2 exponential: `tl.exp2(x * LOG2E)` is (the GPU measured attention's exponentials 8%
faster that way, and 13% with the multiply folded into the scale the scores take anyway;
docs/design-notes.md, "Forge: the split loop and exponentials in base 2").

Legality. With c = LOG2E > 0, `exp(x) = exp2(c*x)` for every real x. The stage keeps a set of
values S, each of which the rewritten kernel computes as c times the original's value, and
every other value as it was; then an `exp` of a value in S becomes `exp2` of it (exp2(c*x) =
exp(x)), and any other `exp(x)` becomes `exp2((x) * LOG2E)`. S is built over the kernel's value
graph (the Triton frontend's symbolic evaluation) from components of values that must be
scaled together:

- a **homogeneous** op is scaled exactly when its data operands are: `c*(a+b) = c*a + c*b`,
  `c*(a-b)`, `c*max(a, b) = max(c*a, c*b)` (c > 0), `min`, `-a`, `where(m, a, b)`, a row
  max, min or sum, a float cast, and the shape ops (expand, broadcast, reshape, permute,
  transpose); its constant operands must be ones scaling leaves alone (0, +-inf), as must a
  `tl.full` / `tl.zeros` that joins a component;
- a value a loop carries is scaled with its initial value, its next value and the loop's
  result (one variable, by induction over the iterations);
- a **seed** is a product of a block and a scalar (a kernel parameter or a literal): it joins a
  component by its scalar taking the factor (`x * (scale * LOG2E)`); its block operand is not
  in the component;
- a component is scaled only when it holds a seed and an `exp` reads it, and every use of each
  of its values is an op of the component or an `exp` (a store, a `tl.dot`, a `tl.log`, a
  product with another block, a seed's block operand: the component stays as it was).

z3 proves the identities the homogeneous ops rest on over the reals, for all c > 0 and all
operands (`_LEMMAS`, once per process), before anything is proposed. exp2(c*x) = exp(x) is
the definition of c. The roundings differ (a product rounded at another place, the hardware's
exp2 against the libdevice exp): the proposal says so and the cascade's tolerance decides, as
for every Forge stage; on a GPU it is kept only where it is faster.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import z3

from axon.forge.edits import triton_alias
from axon.forge.source import Edit, KernelFile, apply_edits, node_span
from axon.forge.stages.analysis import analysable, analyse_file
from axon.forge.stages.base import Applicability, Proposal
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.analysis import KernelAnalysis
from axon.frontend.triton.kernel_ir import analyse_kernel
from axon.frontend.triton.values import DataValue, FloatValue, IndexValue, Value
from axon.nugraph.union_find import UnionFind
from axon.targets.xe_triton.kb import Device

__all__ = ["BaseTwoStage", "Exponentials", "base2_plan"]

#: log2(e), the factor `exp(x) = exp2(LOG2E * x)` needs
LOG2E = repr(1 / math.log(2))
_SHAPE_OPS = ("expand_dims", "broadcast_to", "reshape", "permute", "trans", "view")
_HOMOGENEOUS = ("add", "sub", "neg", "maximum", "minimum", "where", "reduce", "to", *_SHAPE_OPS)
_LINEAR_REDUCTIONS = ("max", "min", "add")
_EXP = ("triton.language.exp", "triton.language.math.exp")


def _lemmas() -> list[str]:
    """The homogeneous ops' identities, proved by z3 over the reals for every c > 0 (the names
    of any that fail; empty when all hold)."""
    a, b, c = z3.Reals("a b c")
    m = z3.Bool("m")

    def mx(x: z3.ArithRef, y: z3.ArithRef) -> z3.ArithRef:
        return z3.If(x >= y, x, y)

    def mn(x: z3.ArithRef, y: z3.ArithRef) -> z3.ArithRef:
        return z3.If(x <= y, x, y)

    lemmas = {
        "add": c * (a + b) == c * a + c * b,
        "sub": c * (a - b) == c * a - c * b,
        "neg": c * -a == -(c * a),
        "maximum (and a row max)": c * mx(a, b) == mx(c * a, c * b),
        "minimum (and a row min)": c * mn(a, b) == mn(c * a, c * b),
        "where": c * z3.If(m, a, b) == z3.If(m, c * a, c * b),
        "a seed: x * (s * c) = c * (x * s)": a * (b * c) == c * (a * b),
        "zero stays zero": c * 0 == 0,
    }
    failed = []
    for name, claim in lemmas.items():
        solver = z3.Solver()
        solver.add(c > 0, z3.Not(claim))
        if solver.check() != z3.unsat:
            failed.append(name)
    return failed


_LEMMA_FAILURES: list[str] | None = None


def _lemmas_hold() -> list[str]:
    global _LEMMA_FAILURES
    if _LEMMA_FAILURES is None:
        _LEMMA_FAILURES = _lemmas()
    return _LEMMA_FAILURES


@dataclass
class Exponentials:
    """One kernel's rewrite: each `tl.exp` call and whether its operand is scaled (folded),
    each seed's scalar operand, and what the report says."""

    kernel: str
    exps: list[tuple[ast.Call, bool]] = field(default_factory=list)
    scalars: list[ast.expr] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _invariant(value: Value) -> bool:
    """A constant c * k leaves alone: 0 or an infinity."""
    if isinstance(value, FloatValue):
        return value.value == 0 or math.isinf(value.value)
    if isinstance(value, IndexValue) and value.expr.is_const:
        return value.expr.value == 0
    return False


def _scalar(value: Value) -> bool:
    """A scalar a product can take the factor into: a scalar parameter or a literal."""
    return not value.shape and isinstance(value, (IndexValue, FloatValue))


def _seed_operand(node: DataValue) -> int | None:
    """The index of the scalar operand of a product of a block and a scalar."""
    if node.op != "mul" or len(node.operands) != 2:
        return None
    a, b = node.operands
    if isinstance(a, DataValue) and _scalar(b):
        return 1
    if isinstance(b, DataValue) and _scalar(a):
        return 0
    return None


def _plan_kernel(file: KernelFile, name: str, analysis: KernelAnalysis) -> Exponentials:
    """Which exponentials of kernel `name` fold, which only change base (module docstring)."""
    values = analysis.values
    plan = Exponentials(name)
    exps = [v for v in values if v.op == "exp"]
    if not exps:
        return plan
    parts = UnionFind()  # over the nodes' numbers (their places in `values`)
    for _ in values:
        parts.make_set()
    bad: set[int] = set()  # nodes whose component may not be scaled
    for node in values:
        data = [o for o in node.operands if isinstance(o, DataValue)]
        if node.op == "carried" or node.op == "loop_out":
            for d in data:
                parts.union(node.number, d.number)
            if any(not isinstance(o, DataValue) and not _invariant(o) for o in node.operands):
                bad.add(node.number)  # a loop value starting at 1.0 would start at c, not 1.0
        elif node.op in _HOMOGENEOUS:
            if node.op == "reduce" and node.attrs.get("kind") not in _LINEAR_REDUCTIONS:
                bad.add(node.number)
            if node.op == "to" and not node.attrs.get("dtype", "").startswith(("float",
                                                                              "bfloat")):
                bad.add(node.number)
            operands = node.operands[1:] if node.op == "where" else node.operands
            for o in operands:
                if isinstance(o, DataValue):
                    parts.union(node.number, o.number)
                elif isinstance(o, (IndexValue, FloatValue)) and not _invariant(o):
                    bad.add(node.number)  # `x + 1`: c*(x + 1) is no c*x + 1
        elif node.op in ("full", "zeros"):
            if node.op == "full" and node.attrs.get("value") not in ("0", "0.0", "-inf", "inf"):
                bad.add(node.number)
        elif _seed_operand(node) is None:
            bad.add(node.number)  # a load, a dot, an exp's result, ...: no free scaling
    for loop in analysis.loops:
        for carried in loop.carried:
            if isinstance(carried.entry, DataValue) and isinstance(carried.next, DataValue):
                parts.union(carried.entry.number, carried.next.number)
    # every use of a value must stay inside its component or be an exp
    members: dict[int, list[DataValue]] = {}
    for node in values:
        members.setdefault(parts.find(node.number), []).append(node)
    for node in values:
        for k, o in enumerate(node.operands):
            if not isinstance(o, DataValue) or node.op == "exp":
                continue
            scalar_at = _seed_operand(node)
            if parts.find(o.number) != parts.find(node.number) \
                    or scalar_at is not None and k != scalar_at:
                bad.add(o.number)
    for access in analysis.accesses:
        if isinstance(access.value, DataValue):
            bad.add(access.value.number)
    spoiled = {parts.find(x) for x in bad}
    # an exp rewritten must be a plain call outside any other exp's argument; one that is not
    # stays `tl.exp`, so the value it reads may not be scaled
    calls = {(n.lineno, n.col_offset + 1): n for n in ast.walk(file.kernel_node(name))
             if isinstance(n, ast.Call) and file.module.qualified(n.func) in _EXP}
    exp_calls = {id(c) for c in calls.values()}
    nested = {id(inner) for outer in calls.values() for arg in outer.args
              for inner in ast.walk(arg) if id(inner) in exp_calls}
    plain: dict[int, ast.Call] = {}
    for e in exps:
        call = calls.get(e.loc)
        if call is None or len(call.args) != 1 or call.keywords or id(call) in nested:
            plan.notes.append(f"the exp at line {e.loc[0]} is not a plain `tl.exp(x)` call")
            if isinstance(e.operands[0], DataValue):
                spoiled.add(parts.find(e.operands[0].number))
        else:
            plain[e.number] = call
    scaled = set()
    for root, nodes in members.items():
        if root in spoiled:
            continue
        seeds = [n for n in nodes if _seed_operand(n) is not None]
        read = [e for e in exps if isinstance(e.operands[0], DataValue)
                and parts.find(e.operands[0].number) == root]
        if seeds and read:
            scaled.add(root)
    binops: dict[tuple[int, int], list[ast.BinOp]] = {}
    for n in ast.walk(file.kernel_node(name)):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            binops.setdefault((n.lineno, n.col_offset + 1), []).append(n)
    for root in sorted(scaled):
        seeds = [n for n in members[root] if _seed_operand(n) is not None]
        sides: list[ast.expr] = []
        for seed in seeds:
            found = binops.get(seed.loc, [])
            if len(found) != 1:
                break
            index = _seed_operand(seed)
            sides.append(found[0].right if index == 1 else found[0].left)
        else:
            plan.scalars += sides
            continue
        scaled.discard(root)
        plan.notes.append(f"a product at line {seeds[0].loc[0]} is not one `*` of the text")
    for e in exps:
        if e.number in plain:
            x = e.operands[0]
            plan.exps.append((plain[e.number], isinstance(x, DataValue)
                              and parts.find(x.number) in scaled))
    return plan


def base2_plan(file: KernelFile) -> tuple[list[Exponentials], list[str]]:
    """Every launched kernel's exponentials and folds, and why a kernel has none."""
    report = analyse_file(file)
    if report.error:
        return [], [report.error]
    failed = _lemmas_hold()
    if failed:
        return [], [f"z3 did not prove the identities of {', '.join(failed)}"]
    module = analysable(file, value_dtype_casts=True)
    plans: list[Exponentials] = []
    reasons: list[str] = []
    for name in report.kernels:
        try:
            analysis = analyse_kernel(module, name)
        except SourceError as err:
            reasons.append(f"kernel `{name}` is not read: {err.message}")
            continue
        plan = _plan_kernel(file, name, analysis)
        if plan.exps:
            plans.append(plan)
        else:
            reasons.append(f"kernel `{name}` has no tl.exp" + (
                f" ({'; '.join(plan.notes)})" if plan.notes else ""))
    return plans, reasons or ["no launched kernels"]


def _describe(plans: Iterable[Exponentials]) -> str:
    parts = []
    for p in plans:
        folded = sum(1 for _, f in p.exps if f)
        parts.append(f"`{p.kernel}`: {len(p.exps)} tl.exp in base 2, {folded} with LOG2E folded "
                     f"into {len(p.scalars)} scale(s)" + (f" ({'; '.join(p.notes)})"
                                                          if p.notes else ""))
    return "; ".join(parts)


class BaseTwoStage:
    """`tl.exp` as `tl.exp2`, LOG2E folded into a scale where the module docstring's set S
    allows (rounding changes: the cascade's tolerance decides)."""

    name = "base2"

    def __init__(self) -> None:
        self._last: tuple[str, tuple[list[Exponentials], list[str]]] | None = None

    def _plans(self, kernel_file: KernelFile) -> tuple[list[Exponentials], list[str]]:
        if self._last is None or self._last[0] != kernel_file.source:
            self._last = (kernel_file.source, base2_plan(kernel_file))
        return self._last[1]

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where a launched kernel calls `tl.exp`."""
        if kernel_file.error is not None:
            return Applicability(False, f"base2: not applicable: {kernel_file.error}")
        plans, reasons = self._plans(kernel_file)
        if not plans:
            return Applicability(False, "base2: not applicable: " + "; ".join(reasons))
        return Applicability(True, "base2: " + _describe(plans))

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal: every exponential in base 2, the folds made (the rounding changes)."""
        plans, _ = self._plans(kernel_file)
        tl = triton_alias(kernel_file, "triton.language")
        if not plans or tl is None:
            return []
        scales = [Edit(*node_span(kernel_file, scalar),
                       f"({kernel_file.segment(scalar)} * {LOG2E})")
                  for plan in plans for scalar in plan.scalars]
        edits: list[Edit] = []
        for plan in plans:
            for call, folded in plan.exps:
                start, end = node_span(kernel_file, call.args[0])
                inner = [e for e in scales if start <= e.start and e.end <= end]
                scales = [e for e in scales if e not in inner]
                arg = apply_edits(kernel_file.source[:end], inner)[start:]
                text = arg if folded else f"({arg}) * {LOG2E}"
                edits.append(Edit(*node_span(kernel_file, call), f"{tl}.exp2({text})"))
        edits += scales
        return [Proposal(self.name, f"exponentials in base 2 (rounding changes): "
                                    f"{_describe(plans)}",
                         apply_edits(kernel_file.source, edits))]
