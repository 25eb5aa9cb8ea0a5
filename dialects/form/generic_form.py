"""The generic form: the one semantic definition of every tensor-level op.

    out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[d0, r0] * in1[r0, d1]

A form has parallel dims (the output's, each `name < extent`), an optional reduction (`add`, `max`,
`min`, `mul`) over reduced dims whose bounds may depend on outer dims (triangular domains such as
cumsum), a scalar body reading operands through quasi-affine index maps, and an optional finalizer
applied to the reduced value (`then acc / idx(K)` for mean). The interpreter, the naive evaluator,
the SMT encoder and (later) propagation and tiling all read this one structure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import (
    Call,
    Const,
    Index,
    Read,
    Reduced,
    ScalarExpr,
    reads,
    substitute,
)

REDUCTIONS = ("add", "max", "min", "mul")


class FormError(ValueError):
    """A generic form that breaks a structural rule (unknown dim, bad bound, ...)."""


@dataclass(frozen=True)
class LoopDim:
    """`name in [lower, upper)`; bounds may mention sizes and outer loop dims."""

    name: str
    lower: IntExpr
    upper: IntExpr

    @property
    def extent(self) -> IntExpr:
        return self.upper - self.lower

    def __str__(self) -> str:
        return f"{self.name} in [{self.lower}, {self.upper})"


@dataclass(frozen=True)
class GenericForm:
    """out[parallel...] = reduction over reduced of body [then finalize]."""

    parallel: tuple[LoopDim, ...]
    body: ScalarExpr
    num_operands: int
    reduction: str | None = None
    reduced: tuple[LoopDim, ...] = ()
    finalize: ScalarExpr | None = None

    def __post_init__(self) -> None:
        self._check()

    # ---- derived facts ------------------------------------------------------------------------
    @property
    def output_shape(self) -> tuple[IntExpr, ...]:
        return tuple(d.upper for d in self.parallel)

    @property
    def loop_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in (*self.parallel, *self.reduced))

    def reads(self) -> list[Read]:
        return reads(self.body)

    def size_symbols(self) -> frozenset[str]:
        """Symbols of the form that are sizes (not loop dims)."""
        from axon.dialects.form.scalar import index_exprs

        exprs = [*(b for d in (*self.parallel, *self.reduced) for b in (d.lower, d.upper)),
                 *index_exprs(self.body),
                 *(index_exprs(self.finalize) if self.finalize is not None else [])]
        names: set[str] = set()
        for e in exprs:
            names |= e.symbols()
        return frozenset(names - set(self.loop_names))

    # ---- structural rules ---------------------------------------------------------------------
    def _check(self) -> None:
        names = self.loop_names
        if len(set(names)) != len(names):
            raise FormError(f"loop dims repeat a name: {', '.join(names)}")
        for d in self.parallel:
            if d.lower != IntExpr.const(0):
                raise FormError(f"parallel dim '{d.name}' must start at 0, starts at {d.lower}")
            if d.upper.symbols() & set(names):
                raise FormError(f"extent of parallel dim '{d.name}' depends on a loop dim: "
                                f"{d.upper}")
        if self.reduction is None and self.reduced:
            raise FormError("reduced dims given without a reduction kind")
        if self.reduction is not None and self.reduction not in REDUCTIONS:
            raise FormError(f"unknown reduction '{self.reduction}'; expected one of "
                            f"{', '.join(REDUCTIONS)}")
        if self.finalize is not None and self.reduction is None:
            raise FormError("a finalizer needs a reduction")
        visible = {d.name for d in self.parallel}
        for d in self.reduced:
            for bound in (d.lower, d.upper):
                stray = bound.symbols() & (set(names) - visible)
                if stray:
                    raise FormError(f"bound of reduced dim '{d.name}' uses inner dim "
                                    f"{', '.join(sorted(stray))}")
            visible.add(d.name)
        for r in self.reads():
            if not 0 <= r.operand < self.num_operands:
                raise FormError(f"body reads in{r.operand}, but the op has "
                                f"{self.num_operands} operand(s)")
        if _contains_reduced(self.body):
            raise FormError("'acc' may only appear in the finalizer")
        if self.finalize is not None and reads(self.finalize):
            raise FormError("the finalizer may not read operands")

    # ---- text -------------------------------------------------------------------------------
    def __str__(self) -> str:
        out = ", ".join(f"{d.name} < {d.upper}" for d in self.parallel)
        text = f"out[{out}] = "
        if self.reduction is not None:
            over = ", ".join(str(d) for d in self.reduced)
            text += f"{self.reduction} over {over} of "
        text += _strip_parens(str(self.body))
        if self.finalize is not None:
            text += f" then {_strip_parens(str(self.finalize))}"
        return text


def _strip_parens(text: str) -> str:
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(text) - 1:
                return text
        return text[1:-1]
    return text


def _contains_reduced(expr: ScalarExpr) -> bool:
    if isinstance(expr, Reduced):
        return True
    if isinstance(expr, Call):
        return any(_contains_reduced(a) for a in expr.args)
    return False


@dataclass(frozen=True)
class Instance:
    """A form bound at one output index: its reduced dims under fresh names (bounds substituted,
    outermost first), its body with every dim replaced, its finalizer with the parallel dims
    replaced."""

    reduced: tuple[LoopDim, ...]
    body: ScalarExpr
    finalize: ScalarExpr | None


def instantiate(form: GenericForm, index: Sequence[IntExpr], fresh: Callable[[], str]
                ) -> Instance:
    """Bind `form`'s parallel dims to `index` and its reduced dims to names from `fresh`.

    The one place a form meets the context it is used in: the verifier inlines programs through
    it and the nu-graph composes producers into consumers through it. `fresh` must return names
    no size or enclosing loop variable has, which is what keeps the substitution capture-free.
    """
    env = {d.name: i for d, i in zip(form.parallel, index, strict=True)}
    outer = dict(env)
    reduced = []
    for d in form.reduced:
        name = fresh()
        reduced.append(LoopDim(name, d.lower.substitute(env), d.upper.substitute(env)))
        env[d.name] = IntExpr.sym(name)
    finalize = None if form.finalize is None else substitute(form.finalize, outer)
    return Instance(tuple(reduced), substitute(form.body, env), finalize)


def fresh_names(prefix: str, count: int, avoid: Iterable[str]) -> tuple[str, ...]:
    """`prefix0, prefix1, ...`, skipping names in `avoid` (size symbols of the operands)."""
    taken = set(avoid)
    out: list[str] = []
    n = 0
    while len(out) < count:
        name = f"{prefix}{n}"
        if name not in taken:
            out.append(name)
        n += 1
    return tuple(out)


def loop(name: str, upper: IntExpr | int | str, lower: IntExpr | int | str = 0) -> LoopDim:
    """Shorthand for LoopDim with lifted bounds."""
    return LoopDim(name, IntExpr.lift(lower), IntExpr.lift(upper))


__all__ = ["REDUCTIONS", "Call", "Const", "FormError", "GenericForm", "Index", "Instance",
           "LoopDim", "Read", "Reduced", "fresh_names", "instantiate", "loop"]
