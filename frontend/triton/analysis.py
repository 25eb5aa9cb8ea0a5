"""What the symbolic evaluation of a Triton kernel finds, and the analysis of its accesses.

`kernel_ir.py` evaluates a kernel's body into these records (`Loop`, `Carried`, `Access`,
`KernelAnalysis`); `classify` then splits each access's pointer into a base parameter and an
offset, and says whether the access is affine (raisable to `xt` / `tile`) or why not;
`check_affine` turns the first access that is not into a located SourceError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from axon.dialects.form.intexpr import Atom, IntExpr
from axon.frontend.triton.parse import JitKernel, Loc, TritonModule
from axon.frontend.triton.values import (
    Bound,
    DataValue,
    IndexValue,
    MaskValue,
    Shape,
    Value,
)

__all__ = ["Access", "Carried", "KernelAnalysis", "Loop", "check_affine", "classify",
           "coefficient"]


@dataclass
class Carried:
    """A value a loop carries: `step` (an integer advanced by the loop-invariant `steps[0]`
    each iteration), `index` (an integer updated some other way: opaque), `last` (an integer
    the body reassigns before reading it: after the loop, the last iteration's, opaque),
    `block_ptr` (a block pointer whose offset of dim d advances by `steps[d]`, None where it is
    opaque) or `data` (a block of data); `entry` is its value at the top of an iteration,
    `next` at the bottom, `symbols` the fresh symbol of each integer slot (`entry == init +
    symbol`)."""

    name: str
    kind: str
    init: Value
    entry: Value
    symbols: tuple[str, ...] = ()
    steps: list[IntExpr | None] = field(default_factory=list)
    next: Value | None = None

    @property
    def step(self) -> IntExpr | None:
        """The step of a carried integer (None when it has none)."""
        return self.steps[0] if self.kind in ("step", "index") and self.steps else None


@dataclass
class Loop:
    """`for iv in range(start, stop, step)`: `iteration` is the symbol counting iterations
    from 0 (`iv == start + step*iteration`), `trip` the number of iterations."""

    number: int
    iv: str
    iteration: str
    start: IntExpr
    stop: IntExpr
    step: IntExpr
    trip: IntExpr
    loc: Loc
    carried: list[Carried] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class Access:
    """A `tl.load` or `tl.store` of a block of `shape`, and its analysis.

    `base` is the pointer parameter, `offset` the offset from it in elements (a polynomial over
    program ids, lanes, loop iterations and parameters), `origin` the offset of lane 0 of every
    axis and `strides` the offset's coefficient of each axis' lane; `bounds` the mask's
    comparisons; `via` is "pointer", "block_ptr" or "descriptor" (a block pointer's or a
    descriptor's access is analysed as the pointer arithmetic it stands for); `position` is
    the number of value-graph nodes made before it (its place in program order). `affine` says the
    offset is affine in the lanes and loop iterations with strides made of parameters, and
    the mask a conjunction of bounds (the access then raises to `xt` / `tile`); `reason` says
    why not."""

    kind: str
    loc: Loc
    shape: Shape
    pointer: Value
    mask: Value | None
    other: Value | None
    value: Value | None
    loops: tuple[int, ...]
    via: str = "pointer"
    position: int = 0
    base: str | None = None
    offset: IntExpr | None = None
    origin: IntExpr | None = None
    strides: tuple[IntExpr, ...] = ()
    bounds: tuple[Bound, ...] = ()
    affine: bool = False
    reason: str = ""


@dataclass
class KernelAnalysis:
    """What the symbolic evaluation of one kernel found (see the module docstring)."""

    module: TritonModule
    kernel: JitKernel
    param_kinds: dict[str, str]
    program_ids: dict[int, str]
    num_programs: dict[int, str]
    lanes: list[str]
    loops: list[Loop]
    accesses: list[Access]
    values: list[DataValue]
    bindings: dict[str, IntExpr]
    opaque: dict[str, str]

    def resolve(self, expr: IntExpr) -> IntExpr:
        """`expr` with every bound loop-carried symbol replaced by its closed form."""
        for _ in range(len(self.loops) + 1):
            if not expr.symbols() & self.bindings.keys():
                break
            expr = expr.substitute(self.bindings)
        return expr

    def lane_axes(self, expr: IntExpr) -> list[int]:
        """The axes whose lanes `expr` uses."""
        names = expr.symbols()
        return [k for k, lane in enumerate(self.lanes) if lane in names]


def check_affine(analysis: KernelAnalysis) -> None:
    """Raise a SourceError at the first access that is not affine, saying why."""
    for access in analysis.accesses:
        if not access.affine:
            raise analysis.module.error_at(
                access.loc,
                f"tl.{access.kind} cannot be raised: {access.reason}; expected a pointer "
                "parameter plus an offset affine in tl.arange lanes and loop ivs, with a mask "
                "of bounds")


def _base_candidates(expr: IntExpr, params: Sequence[str]) -> list[str]:
    """Parameters that occur in `expr` exactly as `+ P` and nowhere else."""
    out: list[str] = []
    for p in params:
        alone = ((Atom("sym", p),), 1) in expr.terms
        others = [m for m, _ in expr.terms if m != (Atom("sym", p),)
                  and p in IntExpr(((m, 1),)).symbols()]
        if alone and not others:
            out.append(p)
    return out


def coefficient(expr: IntExpr, name: str) -> IntExpr:
    """The coefficient of symbol `name` in an expression linear in it."""
    atom = Atom("sym", name)
    total = IntExpr.const(0)
    for mono, coeff in expr.terms:
        if atom in mono:
            rest = list(mono)
            rest.remove(atom)
            total = total + (IntExpr(((tuple(rest), coeff),)) if rest else IntExpr.const(coeff))
    return total


def _first_load(value: Value) -> DataValue | None:
    """The first tl.load among the nodes `value` is computed from."""
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, DataValue):
            if v.op == "load":
                return v
            stack.extend(v.operands)
    return None


def _index_leaves(value: Value) -> list[IndexValue]:
    stack, out, seen = [value], [], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, IndexValue):
            out.append(v)
        elif isinstance(v, DataValue) and v.op != "load":
            stack.extend(v.operands)
    return out


def classify(analysis: KernelAnalysis) -> None:
    """Fill in each access's base, offset, strides, bounds and verdict, and the parameters'
    kinds (a parameter some access uses as its base is a pointer)."""
    kernel = analysis.kernel
    runtime = [p.name for p in kernel.params if not p.constexpr]
    pointers: set[str] = set()
    candidates: list[list[str]] = []
    for access in analysis.accesses:
        exprs = [analysis.resolve(v.expr) for v in
                 ([access.pointer] if isinstance(access.pointer, IndexValue)
                  else _index_leaves(access.pointer))]
        found = sorted({c for e in exprs for c in _base_candidates(e, runtime)})
        candidates.append(found)
        if len(found) == 1:
            pointers.add(found[0])
    for access, found in zip(analysis.accesses, candidates, strict=True):
        if len(found) > 1:
            found = [c for c in found if c in pointers] or \
                    [c for c in found if c.lower().endswith("ptr")] or found
        if len(found) == 1:
            access.base = found[0]
            pointers.add(found[0])
        _verdict(analysis, access, found)
    analysis.param_kinds = {p.name: "constexpr" if p.constexpr else
                            "pointer" if p.name in pointers else "scalar"
                            for p in kernel.params}


def _verdict(analysis: KernelAnalysis, access: Access, found: list[str]) -> None:
    module = analysis.module
    reasons: list[str] = []
    if isinstance(access.pointer, DataValue):
        load = _first_load(access.pointer)
        if load is not None:
            line, col = load.loc
            reasons.append(f"the offset depends on the value loaded at {module.filename}:"
                           f"{line}:{col} (a gather)")
        else:
            reasons.append(f"the pointer is computed by {access.pointer.op}, not by integer "
                           "arithmetic")
    elif access.base is None:
        reasons.append("no base pointer: expected `pointer parameter + offset`"
                       if not found else f"the base pointer could be any of {', '.join(found)}")
    else:
        assert isinstance(access.pointer, IndexValue)
        offset = analysis.resolve(access.pointer.expr) - IntExpr.sym(access.base)
        access.offset = offset
        reasons += _offset_reasons(analysis, access, offset)
    if isinstance(access.mask, MaskValue):
        access.bounds = tuple(Bound(analysis.resolve(b.lhs), b.op, analysis.resolve(b.rhs))
                              for b in access.mask.bounds)
        for b in access.bounds:
            stray = sorted((b.lhs - b.rhs).symbols() & analysis.opaque.keys())
            if stray:
                reasons.append(f"the mask depends on {analysis.opaque[stray[0]]}")
    elif isinstance(access.mask, IndexValue):
        if not access.mask.expr.is_const:
            reasons.append("the mask is an integer, not a comparison")
    elif access.mask is not None:
        line, col = access.mask.loc
        op = access.mask.op if isinstance(access.mask, DataValue) else "a value"
        reasons.append(f"the mask is not a conjunction of comparisons of integers ({op} at "
                       f"{line}:{col})")
    access.affine = not reasons
    access.reason = "; ".join(reasons)


def _offset_reasons(analysis: KernelAnalysis, access: Access, offset: IntExpr) -> list[str]:
    stray = sorted(offset.symbols() & analysis.opaque.keys())
    if stray:
        return [f"the offset depends on {analysis.opaque[stray[0]]}"]
    lanes = analysis.lanes[:len(access.shape)]
    iterations = [loop.iteration for loop in analysis.loops]
    if not offset.is_affine_in([*lanes, *iterations]):
        return [f"the offset {offset} is not affine in the lanes and loop iterations"]
    varying = set(analysis.lanes) | set(iterations) | set(analysis.program_ids.values())
    strides: list[IntExpr] = []
    reasons: list[str] = []
    for axis, lane in enumerate(lanes):
        stride = coefficient(offset, lane)
        strides.append(stride)
        if stride.symbols() & varying:
            reasons.append(f"the stride of axis {axis} ({stride}) varies with program ids or "
                           "loop iterations")
    access.strides = tuple(strides)
    access.origin = offset.substitute({lane: 0 for lane in analysis.lanes})
    return reasons
