"""Small stand-ins for a program's concrete sizes, for the numeric tests that run it (the prover's
pre-test and the float-error check): they choose their own small sizes for size symbols, and a
concrete dim must shrink too, or `x: f32[16384, 8192]` is run at its own size.

A `Shrink` rewrites the integer constants of a program (in types, in op properties such as a
reshape's shape or a slice's bounds, and in `ax.generic` forms) in one of two ways:

- every constant of magnitude at least `threshold` divided by one `factor`, the others kept.
  Dividing by a common factor keeps equal dims equal and sums exact (a concatenation of 4096 and
  4096 is 8192, a slice at 2048 of 4096 stays in the middle), and a product stays one when only
  one of its factors is scaled (a reshape of 4096 into 32 x 128 scales 128 and 4096):

      [16384, 8192] @ [8192, 8192], max_dim 64   ->   [64, 32] @ [32, 32]   (factor 256)

- each large constant replaced on its own by a distinct divisor of it (`own`), for sizes with no
  useful common factor: `[10**12, 4096]` -> `[64, 63]`... whichever divisors fit.

`plan` tries the first way for thresholds from the smallest constant that is too large
downwards, then the second. A program is rewritten op by op through each op's builder, and a
rewrite holds only when every op rebuilds to exactly the rewritten types: a relation it breaks
(a reshape of 4096 into 64 x 64) shows there, and `apply` raises `Unshrinkable`. When no rewrite
holds, `plan` returns the reason instead: the numeric tests then skip the program (they only
filter candidates and report; the verifier alone decides what is equal).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from axon.dialects.ax import GenericOp, TensorType
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.interface import form_op, generic_form, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import map_index
from axon.nugraph.convert import OpBuilder
from axon.nugraph.eclass import ENode

#: thresholds `plan` tries (each a constant of the program's types) before it gives up
MAX_TRIES = 4


class Unshrinkable(ValueError):
    """A program whose ops do not rebuild to the scaled types (the message names the op)."""


@dataclass(frozen=True)
class Shrink:
    """Divide every integer constant of magnitude at least `threshold` by `factor` (which divides
    each of them), and replace the constants of `own` by their stand-ins; the default is the
    identity."""

    threshold: int = 0
    factor: int = 1
    own: Mapping[int, int] = field(default_factory=dict)
    """Stand-ins for constants scaled one by one (by magnitude; the sign is kept)."""

    @property
    def is_identity(self) -> bool:
        return self.factor == 1 and not self.own

    def constant(self, c: int) -> int:
        m = abs(c)
        if m in self.own:
            return self.own[m] if c > 0 else -self.own[m]
        if self.factor == 1 or m < self.threshold:
            return c
        if c % self.factor:
            raise Unshrinkable(f"the constant {c} (not a multiple of {self.factor})")
        return c // self.factor

    def expr(self, e: IntExpr) -> IntExpr:
        if self.is_identity:
            return e
        return e.fold(lambda c: IntExpr.const(self.constant(c)), IntExpr.sym,
                      lambda kind, a, b: getattr(a, kind)(b))

    def type(self, t: Attribute) -> Attribute:
        if self.is_identity or not isinstance(t, TensorType):
            return t
        return TensorType([self.expr(d) for d in t.shape], t.dtype)

    def form(self, form: GenericForm) -> GenericForm:
        def dims(ds: tuple[LoopDim, ...]) -> tuple[LoopDim, ...]:
            return tuple(LoopDim(d.name, self.expr(d.lower), self.expr(d.upper)) for d in ds)

        return GenericForm(dims(form.parallel), map_index(form.body, self.expr),
                           form.num_operands, form.reduction, dims(form.reduced),
                           None if form.finalize is None else map_index(form.finalize, self.expr))

    def value(self, v: Any) -> Any:
        """An op property with its integer expressions scaled (plain ints are axes, not sizes)."""
        if isinstance(v, IntExpr):
            return self.expr(v)
        if isinstance(v, tuple):
            return tuple(self.value(x) for x in v)
        return v

    def apply(self, func: FuncOp) -> FuncOp:
        """`func` with its constants scaled; `func` itself for the identity. Unshrinkable when an
        op does not rebuild to the scaled type of its result."""
        if self.is_identity:
            return func
        block = func.body.blocks.first
        if block is None:
            raise Unshrinkable(f"function '{func.sym_name.data}' (it has no body)")
        inputs = [self.type(t) for t in func.function_type.inputs.data]
        new = Block(arg_types=inputs)
        values: dict[SSAValue, SSAValue] = dict(zip(block.args, new.args, strict=True))
        build = OpBuilder()
        for op in block.ops:
            if isinstance(op, ReturnOp):
                new.add_op(ReturnOp(*(values[v] for v in op.arguments)))
                continue
            if not has_form(op) or op.regions:
                raise Unshrinkable(f"'{op.name}' (it has no generic form to scale)")
            try:
                made = build(ENode.make(op.name, self._attrs(op), ()),
                             [values[v] for v in op.operands])
            except (ValueError, TypeError, IndexError, KeyError) as err:  # a ShapeError, ...
                raise Unshrinkable(f"'{op.name}' ({err})") from None
            want = self.type(op.results[0].type)
            if made.results[0].type != want:
                raise Unshrinkable(f"'{op.name}', which makes {made.results[0].type} "
                                   f"instead of {want}")
            new.add_op(made)
            values[op.results[0]] = made.results[0]
        outputs = [self.type(t) for t in func.function_type.outputs.data]
        return FuncOp(func.sym_name.data, FunctionType.from_lists(inputs, outputs), Region(new))

    def _attrs(self, op: Operation) -> dict[str, Any]:
        attrs = {k: self.value(v) for k, v in form_op(op).attrs().items()}
        if op.name == GenericOp.name:
            # the form is text: its bounds and index maps are the op's sizes
            attrs["form"] = str(self.form(generic_form(op)))
        return attrs


IDENTITY = Shrink()


def plan(funcs: Sequence[FuncOp], max_dim: int) -> tuple[Shrink, list[FuncOp]] | str:
    """The shrink that brings every constant in the types of `funcs` within `max_dim` and
    rebuilds them all (identity when they are within it already) with `funcs` rewritten by it,
    or why there is none."""
    in_types = _constants(_type_exprs(funcs))
    too_large = sorted(c for c in in_types if c > max_dim)
    if not too_large:
        return IDENTITY, list(funcs)
    everywhere = in_types | _constants(_op_exprs(funcs))
    why = f"no divisor of {too_large[-1]} is within {max_dim}"
    thresholds = sorted((c for c in everywhere if 2 <= c <= too_large[0]), reverse=True)
    tries = []
    for threshold in thresholds[:MAX_TRIES]:
        scaled = [c for c in everywhere if c >= threshold]
        factor = _least_divisor_at_least(math.gcd(*scaled), math.ceil(max(scaled) / max_dim))
        # a dim scaled below 2 would broadcast where the program does not
        if factor is not None and min(c for c in in_types if c >= threshold) >= 2 * factor:
            tries.append(Shrink(threshold, factor))
    # unrelated sizes (a batch of 10^12 rows of 4096) have no useful common factor: each
    # large constant on its own, to a distinct small divisor of it
    kept = {c for c in in_types if c <= max_dim}
    own: dict[int, int] = {}
    for c in too_large:
        stand_in = next((r for r in range(max_dim, 1, -1) if c % r == 0 and r not in kept), None)
        if stand_in is None:
            break
        own[c] = stand_in
        kept.add(stand_in)
    else:
        tries.append(Shrink(own=own))
    failures = []
    for shrink in tries:
        try:
            return shrink, [shrink.apply(f) for f in funcs]
        except Unshrinkable as err:
            how = f"dividing them by {shrink.factor}" if shrink.factor > 1 else "each on its own"
            failures.append(f"{how} breaks {err}")
    return failures[0] if failures else why


def _type_exprs(funcs: Sequence[FuncOp]) -> Iterator[IntExpr]:
    for f in funcs:
        for op in f.walk():
            for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
                if isinstance(v.type, TensorType):
                    yield from v.type.shape


def _op_exprs(funcs: Sequence[FuncOp]) -> Iterator[IntExpr]:
    """The integer expressions of op properties and `ax.generic` forms."""
    for f in funcs:
        for op in f.walk():
            if has_form(op):
                yield from _exprs_of(tuple(form_op(op).attrs().values()))
                if op.name == GenericOp.name:
                    yield from _form_exprs(generic_form(op))


def _form_exprs(form: GenericForm) -> list[IntExpr]:
    found = [e for d in (*form.parallel, *form.reduced) for e in (d.lower, d.upper)]

    def keep(e: IntExpr) -> IntExpr:
        found.append(e)
        return e

    for part in (form.body, form.finalize):
        if part is not None:
            map_index(part, keep)
    return found


def _exprs_of(v: Any) -> Iterator[IntExpr]:
    if isinstance(v, IntExpr):
        yield v
    elif isinstance(v, tuple):
        for x in v:
            yield from _exprs_of(x)


def _constants(exprs: Iterator[IntExpr]) -> set[int]:
    """The magnitudes of every constant (coefficients included) of the expressions."""
    out: set[int] = set()

    def const(c: int) -> int:
        out.add(abs(c))
        return 0

    for e in exprs:
        e.fold(const, lambda _: 0, lambda _kind, _a, _b: 0)
    return out


def _least_divisor_at_least(n: int, least: int) -> int | None:
    """The smallest divisor of `n` that is at least `least` (None when `least` > n)."""
    if least > n:
        return None
    small = least <= math.isqrt(n)
    for d in range(max(least, 1), math.isqrt(n) + 1) if small else ():
        if n % d == 0:
            return d
    # divisors above sqrt(n) are n // e for the divisors e below it, largest e first
    for e in range(min(n // max(least, 1), math.isqrt(n)), 0, -1):
        if n % e == 0 and n // e >= least:
            return n // e
    return None
