"""The `algorithmic` stage at the Triton level: a loop's dead iterations cut off, and the
iterations whose masks hold at every lane split off from the ones where they do not.

Before                                              After
    for n0 in range(0, L, BLOCK_N):                     for n0 in range(0, tl.minimum(
        keys = n0 + offs_n                                      L, BLOCK_M*pid_m + BLOCK_M),
        s = tl.dot(q, kt) * scale                               BLOCK_N):
        s = tl.where((keys[None, :] < L)                    (the body as it was)
                     & (keys[None, :] <= offs_m[:, None]),
                     s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new

A causal attention kernel that runs its key loop to the end throws away every key block past
its queries' diagonal: every score there is masked to -inf and the block changes nothing the
loop carries. The stage finds such a loop from the kernel's own value graph (the Triton
frontend's symbolic evaluation, `frontend/triton/kernel_ir.py`) and stops it where its
iterations die.

Legality: three facts, each established before anything is proposed, else the loop is left
alone with the reason.

1. **Dead past the cut.** One comparison of a `tl.where(mask, x, -inf)` mask in the loop grows
   with the loop variable at its own step. Its left side minus its right side is
   `(iv - start) + R(lanes, ...)` with R affine in the lanes at constant coefficients, so it
   fails at every lane once `iv >= start - min over lanes R` (+1 for `<=`): the cut. z3 proves
   for all sizes, program ids and lanes in range that every iteration at or past the cut makes
   the comparison false at every lane, so the where is -inf at every lane.
2. **A dead iteration changes nothing carried.** The body's value graph is evaluated over a
   small domain (a block all -inf, all 0, all 1, finite, or "the value carried in") with the
   where at -inf: `max(m, -inf) = m`, `m - m = 0` (m finite), `exp(0) = 1`, `exp(-inf) = 0`,
   `x * 1 = x`, `x + 0 = x`, `sum(0) = 0`, `dot(0, v) + acc = acc`. Every value the loop carries
   must come out as itself, exactly (IEEE: these identities are exact for finite operands).
3. **The running max is finite when an iteration dies.** The loop's first iteration is kept
   (z3: `start < stop` implies `start < cut`), and where a carried value starts at -inf and is
   a running max over the where (`m = max(m, max(w, axis))`), z3 proves that at the first
   iteration every row of it has a lane where the whole mask holds (witness: the first or the
   last lane of the reduced axis). So at every dead iteration that max is a real score.

The kernel is read with each cast to another value's dtype, `x.to(v.dtype)`, as `x`
(`analysable`): a cast applied again to a value it already made gives that value back, so a
dead iteration's cast changes nothing the live iterations before it (the first is always
kept) did not. Explicit casts are read: only a float cast keeps a block at -inf.

The iterations below the diagonal. Of the live iterations, most see a where's mask hold at
every lane (key blocks wholly at or below every query of the program's block, or before the
last partial block of keys): there the where is its second operand, and the masks of the
body's loads may hold everywhere too. For each `tl.where(mask, x, k)` of the loop (x a block
of the where's shape, k a float constant: the where is then x, with no broadcast or promotion)
whose every comparison either grows with the loop variable at its step (at constant lane
coefficients) or does not move with it, the growing ones give the value below which each holds
at every lane (`start - max over lanes R`, +1 for `<=`); the split is the least of them over
all such wheres, and z3 proves that for every iteration below it, each of their whole masks
holds at every lane in range (and, one by one, each load mask it keeps off). This needs no
cut and no -inf: a loop that stores or carries pointers is split all the same, since both
parts run the original's body on the original's iterations. The loop, cut where it has a
cut, is then proposed as two:

    n0_full = min(stop, split...)                  the iterations below the split, with the
    for n0 in range(start, n0_full, step): ...     where replaced by its operand and the
    n0_rest = start + step*ceil(max(n0_full - start, 0) / step)   proved loads unmasked,
    for n0 in range(n0_rest, stop, step): ...      then the rest as before

`range(start, X, step)` (step > 0) runs `start + step*k` for `0 <= k < ceil(max(X - start,
0) / step)`, so the second loop starts at the first of the original iterations the first does
not run, and the two run the original's iterations in order. Where a loop was also cut, the
cut alone is proposed too: a GPU times both.

Assumed, as the whole of Forge's numerics assume: finite inputs and finite scores (an inf or
NaN in a key or value past the cut would reach the original's output and not the cut one's).
The loop must not store, hold another loop or carry anything but data blocks (a pointer it
advances would end elsewhere). The cascade checks the outputs against the original kernel's at
several shapes all the same, and on a GPU keeps the cut only if it is faster.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import z3

from axon.dialects.form.intexpr import IntExpr
from axon.forge.edits import drop_keyword, keyword_node, plain_range, triton_alias
from axon.forge.source import (
    Edit,
    KernelFile,
    apply_edits,
    fresh_name,
    indent_of,
    node_span,
    statement_span,
)
from axon.forge.stages.analysis import analysable, analyse_file
from axon.forge.stages.base import Applicability, Proposal
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.analysis import KernelAnalysis, Loop, coefficient
from axon.frontend.triton.kernel_ir import analyse_kernel
from axon.frontend.triton.values import (
    Bound,
    DataValue,
    FloatValue,
    IndexValue,
    MaskValue,
    Value,
)
from axon.targets.xe_triton.kb import Device

__all__ = ["AlgorithmicStage", "DeadLoop", "FullPrefix", "LoopFindings", "dead_loops", "find_loops"]

#: the seconds z3 may take on one fact; past them it is not proved
PROOF_TIMEOUT_S = 10
#: the comparisons a loop's cut is tried from (each up to four z3 facts)
MAX_CUTS_TRIED = 8

# The abstract values of a block: every lane -inf, 0, 1, a positive real, a real, unknown, or
# "=name": exactly the value the loop carries in as `name`.
NEG_INF, ZERO, ONE, POSITIVE, FINITE, TOP = "-inf", "0", "1", "positive", "finite", "unknown"
_REALS = (ZERO, ONE, POSITIVE, FINITE)
_SHAPE_OPS = ("expand_dims", "broadcast_to", "reshape", "permute", "trans")
_BOUNDED_MATH = ("abs", "sigmoid", "tanh", "sin", "cos")


class _NotProved(ValueError):
    """A fact the stage needs that z3 did not prove (refuted, unknown or not expressible)."""


@dataclass(frozen=True)
class FullPrefix:
    """A loop whose iterations before `split` (kernel text: the least of `splits`) see the
    masks of its `tl.where` calls `wheres` hold at every lane: there each where is its second
    operand and the loads `loads` need no mask."""

    kernel: str
    loop: ast.For
    splits: tuple[str, ...]
    wheres: tuple[ast.Call, ...]
    loads: tuple[ast.Call, ...]
    why: str


@dataclass(frozen=True)
class DeadLoop:
    """A loop whose iterations from `cut` on change nothing: where, and why."""

    kernel: str
    loop: ast.For
    cut: str
    """The cut as kernel text (program ids by the names the kernel gives them)."""
    why: str


def _symbol_value(value: Value) -> str:
    if isinstance(value, FloatValue):
        v = value.value
        if v == -math.inf:
            return NEG_INF
        if not math.isfinite(v):
            return TOP
        return ZERO if v == 0 else ONE if v == 1 else POSITIVE if v > 0 else FINITE
    if isinstance(value, IndexValue) and value.expr.is_const:
        v = value.expr.value
        return ZERO if v == 0 else ONE if v == 1 else POSITIVE if v > 0 else FINITE
    return FINITE  # an integer block, a mask, a dtype: real, never -inf


class _Domain:
    """The abstract evaluation of a kernel's value graph with one where held at -inf."""

    def __init__(self, loop: Loop, dead: DataValue, finite_carried: set[str]) -> None:
        self.loop = str(loop.number)
        self.dead = dead
        self.finite_carried = finite_carried

    def real(self, a: str) -> bool:
        return a in _REALS or (a.startswith("=") and a[1:] in self.finite_carried)

    def run(self, values: Sequence[DataValue]) -> dict[int, str]:
        """Each node's abstract value, by id(); `values` in the order they were made."""
        memo: dict[int, str] = {}
        for node in values:
            args = [memo.get(id(o)) or (_symbol_value(o) if not isinstance(o, DataValue)
                                        else TOP) for o in node.operands]
            memo[id(node)] = self.rule(node, args)
        return memo

    def rule(self, node: DataValue, xs: list[str]) -> str:  # noqa: C901 - one rule per op
        op, real = node.op, self.real
        if node is self.dead:
            return NEG_INF
        if op == "carried":
            return "=" + node.attrs["name"] if node.attrs.get("loop") == self.loop else TOP
        if op == "full":
            try:
                return _symbol_value(FloatValue((), node.loc, float(node.attrs["value"])))
            except (KeyError, ValueError):
                return TOP
        if op == "load":
            return FINITE
        if op in _SHAPE_OPS:
            # a block every lane of which is one value keeps it; "the carried value itself"
            # does not: `m[:, None] - m[None, :]` is no zero block
            return xs[0] if not xs[0].startswith("=") else FINITE if real(xs[0]) else TOP
        if op == "to":
            floating = node.attrs.get("dtype", "").startswith(("float", "bfloat"))
            keeps = (ZERO, ONE, NEG_INF) if floating else (ZERO, ONE)
            return xs[0] if xs[0] in keeps else FINITE if real(xs[0]) else TOP
        if op in ("exp", "exp2"):
            return {ZERO: ONE, NEG_INF: ZERO}.get(xs[0], FINITE if real(xs[0]) else TOP)
        if op == "where":
            x, y = xs[1], xs[2]
            return x if x == y else FINITE if real(x) and real(y) else TOP
        if op == "reduce":
            kind, x = node.attrs.get("kind"), xs[0]
            if kind in ("max", "min") and x in (NEG_INF, ZERO, ONE):
                return x
            if kind == "add" and x == ZERO:
                return ZERO
            return FINITE if kind in ("add", "max", "min") and real(x) else TOP
        if op == "dot":
            a, b, acc = xs[0], xs[1], (xs[2] if len(xs) > 2 else None)
            if (a == ZERO and real(b)) or (b == ZERO and real(a)):
                return acc if acc is not None else ZERO
            return FINITE if real(a) and real(b) and (acc is None or real(acc)) else TOP
        if len(xs) == 2:
            return self.binary(op, *xs)
        if op == "neg":
            return ZERO if xs[0] == ZERO else FINITE if real(xs[0]) else TOP
        if op in _BOUNDED_MATH:
            return FINITE if real(xs[0]) else TOP
        return TOP

    def binary(self, op: str, a: str, b: str) -> str:  # noqa: C901 - one rule per op
        real = self.real
        both = FINITE if real(a) and real(b) else TOP
        if op == "maximum":
            return b if a == NEG_INF else a if b == NEG_INF or a == b else both
        if op == "minimum":
            return NEG_INF if NEG_INF in (a, b) else a if a == b else both
        if op == "add":
            if b == ZERO or a == ZERO:
                return a if b == ZERO else b
            return NEG_INF if NEG_INF in (a, b) and real(a if b == NEG_INF else b) else both
        if op == "sub":
            if a == b and a.startswith("=") and real(a):
                return ZERO
            if b == ZERO:
                return a
            return NEG_INF if a == NEG_INF and real(b) else both
        if op == "mul":
            if b == ONE or a == ONE:
                return a if b == ONE else b
            if (a == ZERO and real(b)) or (b == ZERO and real(a)):
                return ZERO
            if NEG_INF in (a, b) and POSITIVE in (a, b):
                return NEG_INF
            return both
        if op == "truediv":
            if b == ONE:
                return a
            if b == POSITIVE:
                return a if a in (ZERO, NEG_INF) else FINITE if real(a) else TOP
            return TOP
        return TOP


def _z3(expr: IntExpr, env: Mapping[str, z3.ArithRef]) -> z3.ArithRef:
    def apply(kind: str, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        if kind == "min":
            return z3.If(a <= b, a, b)
        if kind == "max":
            return z3.If(a >= b, a, b)
        raise _NotProved(f"{kind} is not encoded")

    def sym(name: str) -> z3.ArithRef:
        if name not in env:
            raise _NotProved(f"the symbol {name} is not one of the kernel's")
        return env[name]

    return expr.fold(z3.IntVal, sym, apply)


def _holds(bound: Bound, env: Mapping[str, z3.ArithRef]) -> z3.BoolRef:
    lhs, rhs = _z3(bound.lhs, env), _z3(bound.rhs, env)
    return {"<": lhs < rhs, "<=": lhs <= rhs, ">": lhs > rhs, ">=": lhs >= rhs,
            "==": lhs == rhs, "!=": lhs != rhs}[bound.op]


def _prove(hypotheses: list[z3.BoolRef], goal: z3.BoolRef, what: str) -> None:
    solver = z3.Solver()
    solver.set("timeout", PROOF_TIMEOUT_S * 1000)
    solver.add(*hypotheses, z3.Not(goal))
    verdict = solver.check()
    if verdict == z3.unsat:
        return
    if verdict == z3.unknown:
        raise _NotProved(f"{what}: z3 answered unknown ({solver.reason_unknown()})")
    model = solver.model()
    shown = ", ".join(f"{d.name()}={model[d]}" for d in sorted(model.decls(), key=str))
    raise _NotProved(f"{what}: refuted at {shown}")


class _Kernel:
    """One kernel's analysis and the names its text gives program ids and parameters."""

    def __init__(self, file: KernelFile, name: str, analysis: KernelAnalysis) -> None:
        self.file, self.name, self.analysis = file, name, analysis
        node = file.kernel_node(name)
        assigned: dict[str, int] = {}
        for stmt in ast.walk(node):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
            for target in targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        assigned[n.id] = assigned.get(n.id, 0) + 1
        self.pid_names: dict[str, str] = {}
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name) \
                    and assigned.get(stmt.targets[0].id) == 1 \
                    and isinstance(stmt.value, ast.Call) \
                    and file.module.qualified(stmt.value.func) == "triton.language.program_id":
                axis = _static_axis(stmt.value)
                if axis in analysis.program_ids:
                    self.pid_names[analysis.program_ids[axis]] = stmt.targets[0].id
        self.params = {p: kind for p, kind in analysis.param_kinds.items()
                       if kind != "pointer" and p not in assigned}
        self.positive = {d.as_symbol for v in analysis.values for d in v.shape
                         if d.as_symbol is not None}

    def env(self, loop: Loop, lanes: Sequence[str]) -> tuple[dict[str, z3.ArithRef],
                                                            list[z3.BoolRef]]:
        """z3 variables for the sizes, program ids, lanes and the loop's iteration, and what is
        known of them: program ids and the iteration >= 0, a block dim >= 1."""
        env: dict[str, z3.ArithRef] = {}
        facts: list[z3.BoolRef] = []
        for name in self.analysis.param_kinds:
            env[name] = z3.Int(name)
            if name in self.positive:
                facts.append(env[name] >= 1)
        for pid in self.analysis.program_ids.values():
            env[pid] = z3.Int(pid)
            facts.append(env[pid] >= 0)
        env[loop.iteration] = z3.Int(loop.iteration)
        facts.append(env[loop.iteration] >= 0)
        for lane in lanes:
            env[lane] = z3.Int(lane)
        return env, facts

    def text(self, expr: IntExpr) -> str:
        """`expr` as kernel text (program ids by their names), or _NotProved."""
        if any(atom.kind != "sym" for mono, _ in expr.terms for atom in mono):
            raise _NotProved(f"the cut {expr} is not a polynomial")
        names: dict[str, str] = {}
        for symbol in expr.symbols():
            if symbol in self.pid_names:
                names[symbol] = self.pid_names[symbol]
            elif symbol in self.params:
                names[symbol] = symbol
            else:
                raise _NotProved(f"the cut {expr} reads {symbol}, which the kernel does not "
                                 "name once at its top level")
        return str(expr.substitute({k: IntExpr.sym(v) for k, v in names.items()}))


def _static_axis(call: ast.Call) -> int | None:
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "axis")]
    if len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, int):
        return args[0].value
    return None


def _normalized(bound: Bound) -> tuple[IntExpr, bool] | None:
    """`E` and strictness with the bound stated as `E < 0` or `E <= 0`."""
    if bound.op in ("<", "<="):
        return bound.lhs - bound.rhs, bound.op == "<"
    if bound.op in (">", ">="):
        return bound.rhs - bound.lhs, bound.op == ">"
    return None


def _cut_of(bound: Bound, loop: Loop, lanes: Sequence[str],
            dims: Sequence[IntExpr], holds: bool = False) -> IntExpr | None:
    """The loop variable's value from which `bound` fails at every lane (see the module
    docstring), or None where the bound does not grow with the loop at its step. With `holds`,
    the value below which it holds at every lane instead (the lanes' largest left side where
    the cut takes the smallest)."""
    norm = _normalized(bound)
    if norm is None:
        return None
    e, strict = norm
    if coefficient(e, loop.iteration) != loop.step:
        return None
    rest = e - loop.step * IntExpr.sym(loop.iteration)
    if loop.iteration in rest.symbols() or not rest.is_affine_in(lanes):
        return None
    extreme: dict[str, IntExpr] = {}
    for lane, dim in zip(lanes, dims, strict=True):
        c = coefficient(rest, lane)
        if not c.is_const:
            return None
        extreme[lane] = IntExpr.const(0) if (c.value >= 0) != holds else dim - 1
    return loop.start - rest.substitute(extreme) + (0 if strict else 1)


def _calls_at(kernel: _Kernel, node: ast.For, name: str) -> dict[tuple[int, int], ast.Call]:
    """The loop body's calls of `triton.language.<name>`, by (line, column from 1)."""
    qualified = kernel.file.module.qualified
    return {(n.lineno, n.col_offset + 1): n for s in node.body for n in ast.walk(s)
            if isinstance(n, ast.Call) and qualified(n.func) == f"triton.language.{name}"}


def _full_prefix(kernel: _Kernel, loop: Loop, node: ast.For) -> FullPrefix:
    """The loop's first iterations where every comparison of some `tl.where` masks holds at
    every lane (see the module docstring, "The iterations below the diagonal"), else
    _NotProved."""
    where = f"kernel `{kernel.name}`, loop at line {node.lineno}"
    if any(isinstance(n, (ast.For, ast.While)) for s in node.body for n in ast.walk(s)):
        raise _NotProved(f"{where}: it holds a loop")
    calls = _calls_at(kernel, node, "where")
    masked: list[tuple[DataValue, MaskValue, ast.Call]] = []
    splits: list[IntExpr] = []
    reasons: list[str] = []
    for value in kernel.analysis.values:
        call = calls.get(value.loc)
        mask = value.operands[0] if value.operands else None
        if value.op != "where" or value.loops[-1:] != (loop.number,) or call is None \
                or not isinstance(mask, MaskValue) or len(call.args) != 3 or call.keywords:
            continue
        kept, other = value.operands[1], value.operands[2]
        if not isinstance(kept, DataValue) or kept.shape != value.shape \
                or not isinstance(other, FloatValue):
            # the where is its second operand only where that has the where's shape and
            # dtype: a float block against a float constant (no broadcast, no promotion)
            reasons.append(f"the tl.where at line {value.loc[0]} is not a float block against "
                           "a constant of its shape")
            continue
        lanes = [f"lane{k}" for k in range(len(mask.shape))]
        own: list[IntExpr] = []
        for bound in mask.bounds:
            norm = _normalized(bound)
            grows = coefficient(norm[0], loop.iteration) if norm is not None else None
            if grows is not None and grows.is_const and grows.value == 0:
                continue  # it does not move with the loop: proved below to hold everywhere
            split = _cut_of(bound, loop, lanes, mask.shape, holds=True)
            if split is None:
                reasons.append(f"`{bound}` at line {value.loc[0]} does not grow with the loop "
                               "at its step")
                break
            own.append(split)
        else:
            if own:
                masked.append((value, mask, call))
                splits += [x for x in own if x not in splits]
    if not masked:
        raise _NotProved("; ".join(reasons) or f"{where}: no tl.where mask in it moves with the "
                         "loop")
    lanes = [f"lane{k}" for k in range(max(len(m.shape) for _, m, _ in masked))]
    env, facts = kernel.env(loop, lanes)
    _prove(facts, _z3(loop.step, env) >= 1, "the loop's step is positive")
    iv = _z3(loop.start, env) + _z3(loop.step, env) * env[loop.iteration]
    below = [iv < _z3(split, env) for split in splits]

    def everywhere(bounds: Sequence[Bound], dims: Sequence[IntExpr], what: str) -> None:
        in_range = [z3.And(env[f"lane{k}"] >= 0, env[f"lane{k}"] < _z3(d, env))
                    for k, d in enumerate(dims)]
        _prove(facts + in_range + below, z3.And(*[_holds(b, env) for b in bounds]), what)

    for value, mask, _ in masked:
        everywhere(mask.bounds, mask.shape,
                   f"the mask of the tl.where at line {value.loc[0]} holds at every lane below "
                   "the split")
    loads: list[ast.Call] = []
    load_calls = _calls_at(kernel, node, "load")
    for access in kernel.analysis.accesses:
        call = load_calls.get(access.loc)
        if access.kind != "load" or access.loops[-1:] != (loop.number,) or call is None \
                or not isinstance(access.mask, MaskValue) or access.via != "pointer" \
                or keyword_node(call, "mask") is None or len(call.args) != 1 \
                or len(access.shape) > len(lanes):
            continue
        try:
            everywhere(access.mask.bounds, access.shape, "a load's mask")
        except _NotProved:
            continue
        loads.append(call)
    texts = tuple(kernel.text(split) for split in splits)
    lines = ", ".join(str(v.loc[0]) for v, _, _ in masked)
    dropped = f" and {len(loads)} load(s) unmasked" if loads else ""
    return FullPrefix(kernel.name, node, texts, tuple(c for _, _, c in masked), tuple(loads),
                      f"`{kernel.name}`: the loop at line {node.lineno} below "
                      f"{' and '.join(texts)} sees every lane of the mask of the tl.where at "
                      f"line(s) {lines} hold (z3): split there, the where dropped{dropped}")


def _running_max(carried_next: Value, entry: Value, dead: DataValue) -> int | None:
    """The reduced axis where `carried_next` is `maximum(entry, max(dead, axis))`."""
    if not (isinstance(carried_next, DataValue) and carried_next.op == "maximum"):
        return None
    a, b = carried_next.operands
    other = b if a is entry else a if b is entry else None
    if isinstance(other, DataValue) and other.op == "reduce" \
            and other.attrs.get("kind") == "max" and other.operands[0] is dead \
            and other.attrs.get("axis", "None") != "None":
        return int(other.attrs["axis"])
    return None


def _dead_loop(kernel: _Kernel, loop: Loop, node: ast.For) -> DeadLoop | str:
    """The loop's cut with its proofs, or why there is none."""
    analysis, where = kernel.analysis, f"kernel `{kernel.name}`, loop at line {node.lineno}"
    if any(isinstance(n, (ast.For, ast.While)) for s in node.body for n in ast.walk(s)):
        return f"{where}: it holds a loop"
    if any(a.kind == "store" and loop.number in a.loops for a in analysis.accesses) or any(
            isinstance(n, ast.Call) and (kernel.file.module.qualified(n.func) or "")
            .startswith("triton.language.atomic") for s in node.body for n in ast.walk(s)):
        return f"{where}: it stores (a cut iteration's store would be lost)"
    other = [c for c in loop.carried if c.kind != "data"]
    if other:
        return (f"{where}: it carries `{other[0].name}` ({other[0].kind}), which a cut loop "
                "would leave elsewhere")
    if not loop.carried:
        return f"{where}: it carries nothing"
    wheres = [v for v in analysis.values if v.op == "where" and v.loops[-1:] == (loop.number,)
              and isinstance(v.operands[0], MaskValue)
              and _symbol_value(v.operands[2]) == NEG_INF]
    if not wheres:
        return f"{where}: no tl.where(mask, x, -inf) in it"
    reasons: list[str] = []
    tries = 0
    for dead in wheres:
        mask = dead.operands[0]
        assert isinstance(mask, MaskValue)
        lanes = [f"lane{k}" for k in range(len(mask.shape))]
        for bound in mask.bounds:
            cut = _cut_of(bound, loop, lanes, mask.shape)
            if cut is None or cut == loop.stop:
                continue
            tries += 1
            if tries > MAX_CUTS_TRIED:
                reasons.append(f"{where}: {MAX_CUTS_TRIED} cuts tried, the rest not")
                return "; ".join(reasons)
            try:
                return _proved(kernel, loop, node, dead, mask, bound, cut)
            except _NotProved as err:
                reasons.append(f"{where}: `{bound}` at line {dead.loc[0]}: {err}")
    return "; ".join(reasons) or (f"{where}: no comparison of its tl.where masks grows with "
                                  "the loop at its step")


def _proved(kernel: _Kernel, loop: Loop, node: ast.For, dead: DataValue, mask: MaskValue,
            bound: Bound, cut: IntExpr) -> DeadLoop:
    """The DeadLoop once the three facts of the module docstring are proved (else
    _NotProved)."""
    lanes = [f"lane{k}" for k in range(len(mask.shape))]
    env, facts = kernel.env(loop, lanes)
    in_range = [z3.And(env[lane] >= 0, env[lane] < _z3(dim, env))
                for lane, dim in zip(lanes, mask.shape, strict=True)]
    step = _z3(loop.step, env)
    _prove(facts, step >= 1, "the loop's step is positive")
    iv = _z3(loop.start, env) + step * env[loop.iteration]
    # 1. every lane of the where is -inf at or past the cut
    _prove(facts + in_range + [iv >= _z3(cut, env)], z3.Not(_holds(bound, env)),
           "dead past the cut")
    start, stop, cut_z = _z3(loop.start, env), _z3(loop.stop, env), _z3(cut, env)
    _prove(facts, z3.Implies(start < stop, start < cut_z), "the first iteration is kept")
    # 3. a carried max that starts at -inf is real at every dead iteration
    analysis = kernel.analysis
    first = {loop.iteration: IntExpr.const(0)}
    finite: set[str] = set()
    probe = _Domain(loop, dead, set()).run(analysis.values)
    for c in loop.carried:
        if probe.get(id(c.init), _symbol_value(c.init)) in _REALS:
            finite.add(c.name)
            continue
        axis = _running_max(c.next, c.entry, dead) if c.next is not None else None
        if axis is None or mask.shape != dead.shape:
            continue
        lane = lanes[axis]
        live = [_holds(b.substitute(first), env) for b in mask.bounds]
        others = [r for k, r in enumerate(in_range) if k != axis]
        for witness in (IntExpr.const(0), mask.shape[axis] - 1):
            try:
                _prove(facts + others + [start < stop],
                       z3.substitute(z3.And(*live), (env[lane], _z3(witness, env))),
                       f"every row of `{c.name}` has a live lane at the first iteration")
                finite.add(c.name)
                break
            except _NotProved:
                continue
    # 2. a dead iteration gives back every carried value unchanged
    memo = _Domain(loop, dead, finite).run(analysis.values)
    for c in loop.carried:
        got = memo.get(id(c.next), TOP) if c.next is not None else TOP
        if got != "=" + c.name:
            why = "" if c.name in finite else \
                " (it starts at -inf and is not a running max proved live at the first iteration)"
            raise _NotProved(f"a dead iteration leaves `{c.name}` {got}, not itself{why}")
    text = kernel.text(cut)
    carried = ", ".join(f"`{c.name}`" for c in loop.carried)
    why = (f"`{kernel.name}`: the loop at line {node.lineno} stops at {text}: past it "
           f"`{bound}` fails at every lane of the tl.where at line {dead.loc[0]} (z3), so an "
           f"iteration gives back {carried} unchanged")
    return DeadLoop(kernel.name, node, text, why)


@dataclass
class LoopFindings:
    """What the stage found in a file: cuts, full prefixes, and why other loops have none."""

    cuts: list[DeadLoop]
    prefixes: list[FullPrefix]
    reasons: list[str]


def find_loops(file: KernelFile) -> LoopFindings:
    """Every launched kernel's `range` loops with dead iterations (at most one cut a loop) or
    a first run of iterations whose where masks hold at every lane, and why the others have
    neither."""
    report = analyse_file(file)
    if report.error:
        return LoopFindings([], [], [report.error])
    module = analysable(file, value_dtype_casts=True)
    found = LoopFindings([], [], [])
    for name in report.kernels:
        try:
            analysis = analyse_kernel(module, name)
        except SourceError as err:
            found.reasons.append(f"kernel `{name}` is not read: {err.message}")
            continue
        kernel = _Kernel(file, name, analysis)
        fors = {(n.lineno, n.col_offset + 1): n for n in ast.walk(file.kernel_node(name))
                if isinstance(n, ast.For)}
        loops = [(loop, fors.get(loop.loc)) for loop in analysis.loops]
        if not loops:
            found.reasons.append(f"kernel `{name}` has no loop")
        for loop, node in loops:
            if node is None or not plain_range(file, node):
                found.reasons.append(f"kernel `{name}`, loop at line {loop.loc[0]}: not a "
                                     "`range(...)` loop")
                continue
            outcome = _dead_loop(kernel, loop, node)
            if isinstance(outcome, str):
                found.reasons.append(outcome)
            else:
                found.cuts.append(outcome)
            try:
                found.prefixes.append(_full_prefix(kernel, loop, node))
            except _NotProved as err:
                found.reasons.append(f"no split: {err}")
    if not report.kernels:
        found.reasons.append("no launched kernels")
    return found


def dead_loops(file: KernelFile) -> tuple[list[DeadLoop], list[str]]:
    """Every launched kernel's loops with dead iterations (at most one cut a loop), and why
    the others have none (`find_loops`' cuts)."""
    found = find_loops(file)
    return found.cuts, found.reasons


class AlgorithmicStage:
    """Redundant work removed at the Triton level: a loop's dead iterations cut off, its
    iterations whose masks hold everywhere split off (see the module docstring)."""

    name = "algorithmic"

    def __init__(self) -> None:
        self._last: tuple[str, LoopFindings] | None = None

    def _found(self, kernel_file: KernelFile) -> LoopFindings:
        """`find_loops` of the file, proved once for the driver's `applies` and `propose` on
        the same text (the proofs are z3 calls)."""
        if self._last is None or self._last[0] != kernel_file.source:
            self._last = (kernel_file.source, find_loops(kernel_file))
        return self._last[1]

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where some launched kernel has a loop whose iterations past a cut are proved dead,
        or whose first iterations are proved to see a where's mask hold at every lane."""
        if kernel_file.error is not None:
            return Applicability(False, f"algorithmic: not applicable: {kernel_file.error}")
        found = self._found(kernel_file)
        if not found.cuts and not found.prefixes:
            return Applicability(False, "algorithmic: not applicable: "
                                 + "; ".join(found.reasons))
        return Applicability(True, "algorithmic: " + "; ".join(
            [d.why for d in found.cuts] + [p.why for p in found.prefixes]))

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """Every dead loop stopped at its cut (`min(stop, cut)`) and every loop with a proved
        prefix split there (first); then, where both were found, the cuts alone (a GPU times
        both; on a CPU the first that passes is kept)."""
        found = self._found(kernel_file)
        tl = triton_alias(kernel_file, "triton.language")
        if tl is None or not (found.cuts or found.prefixes):
            return []
        stops: dict[int, tuple[ast.expr, str]] = {}
        for dead in found.cuts:
            call = dead.loop.iter
            assert isinstance(call, ast.Call)
            stop = call.args[0] if len(call.args) == 1 else call.args[1]
            stops[id(dead.loop)] = (stop, f"{tl}.minimum({kernel_file.segment(stop)}, "
                                          f"{dead.cut})")
        cuts = [Edit(*node_span(kernel_file, stop), text) for stop, text in stops.values()]
        split: list[Edit] = []
        for prefix in found.prefixes:
            loop = prefix.loop
            assert isinstance(loop.iter, ast.Call)
            args = loop.iter.args
            stop_text = stops.get(id(loop), (None, kernel_file.segment(
                args[0] if len(args) == 1 else args[1])))[1]
            edit = _split_loop(kernel_file, prefix, tl, stop_text)
            if edit is not None:
                split.append(edit)
                stops.pop(id(loop), None)  # the split loop carries its cut itself
        proposals: list[Proposal] = []
        why = "; ".join(d.why for d in found.cuts)
        if split:
            split += [Edit(*node_span(kernel_file, stop), text) for stop, text in stops.values()]
            what = "dead iterations cut, " if found.cuts else ""
            proposals.append(Proposal(self.name, f"{what}the full iterations split off: "
                                      + "; ".join([d.why for d in found.cuts]
                                                  + [p.why for p in found.prefixes]),
                                      apply_edits(kernel_file.source, split)))
        if cuts:
            proposals.append(Proposal(self.name, "dead iterations cut: " + why,
                                      apply_edits(kernel_file.source, cuts)))
        return proposals


def _where_kept(file: KernelFile, loop: ast.For, where: ast.Call) -> Edit:
    """`where` replaced by its second operand; a statement `x = tl.where(m, x, y)` goes."""
    kept = where.args[1]
    for stmt in loop.body:
        if isinstance(stmt, ast.Assign) and stmt.value is where and isinstance(kept, ast.Name) \
                and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == kept.id:
            return Edit(*statement_span(file, stmt), "")
    text = file.segment(kept)
    return Edit(*node_span(file, where), text if isinstance(kept, ast.Name) else f"({text})")


def _split_loop(file: KernelFile, prefix: FullPrefix, tl: str, stop: str) -> Edit | None:
    """The loop as two: its first iterations, where the masks hold at every lane, with the
    wheres and the proved loads' masks dropped, then the rest as it was, up to `stop`. None
    where the loop's text does not allow it (a body on the `for` line, nested wheres)."""
    node = prefix.loop
    if node.body[0].lineno == node.lineno:
        return None
    assert isinstance(node.iter, ast.Call)
    args = [file.segment(a) for a in node.iter.args]
    start = "0" if len(args) == 1 else args[0]
    step = args[2] if len(args) == 3 else "1"
    source, indent = file.source, indent_of(file, node)
    body_start = file.line_starts[node.body[0].lineno - 1]
    body_end = statement_span(file, node)[1]
    edits = [_where_kept(file, node, where) for where in prefix.wheres]
    for load in prefix.loads:
        edits += [e for e in (drop_keyword(file, load, "mask"), drop_keyword(file, load, "other"))
                  if e is not None]
    try:
        full = apply_edits(source, edits)
    except ValueError:
        return None  # a where inside another's kept operand: the two edits overlap
    first_body = full[body_start:body_end + len(full) - len(source)]
    taken = {n.id for n in ast.walk(file.kernel_node(prefix.kernel)) if isinstance(n, ast.Name)}
    target = file.segment(node.target)
    name = fresh_name(f"{target}_full", taken)
    rest = fresh_name(f"{target}_rest", taken | {name})
    bounds = "".join(f"{indent}{name} = {tl}.minimum({name}, {split})\n"
                     for split in prefix.splits)
    if step == "1":
        rest_start = f"{tl}.maximum({name}, {start})"
    else:
        past = name if start == "0" else f"{name} - ({start})"
        rest_start = f"(({tl}.maximum({past}, 0) + {step} - 1) // {step}) * {step}"
        rest_start = rest_start if start == "0" else f"{start} + {rest_start}"
    text = (f"{indent}{name} = {stop}\n{bounds}"
            f"{indent}for {target} in range({start}, {name}, {step}):\n{first_body}"
            f"{indent}{rest} = {rest_start}\n"
            f"{indent}for {target} in range({rest}, {stop}, {step}):\n"
            f"{source[body_start:body_end]}")
    return Edit(file.line_starts[node.lineno - 1], body_end, text)
