"""Reads that leave their operand: a generic form's index maps against its operands' dims.

A read `in0[d0, d0 + 5]` of a `[4, 3]` operand falls outside it at every point; the interpreter
refuses such a read when it runs (`interpreter/reference.py`), and an op verifier can refuse it
earlier with `stray_read`. Sizes are symbolic, and an op may be fine for some sizes only, as a
slice `x[0:2]` of an `[M]` operand is for M >= 2 (`ax.slice` accepts it and the interpreter checks
it at the sizes it runs with; a fused `ax.generic` holding that read must verify alike). So a read
is refused when z3 shows that it leaves its operand *for every* size assignment, and the
diagnostic shows one (sizes and a point, from a model):

- sizes are integers >= 1 and every dim of the operands and of the result is >= 0, as everywhere
  in Axon (the SMT verifier's premises); a `floordiv` or `mod` divisor is taken as >= 1, since a
  divisor below 1 is a different error;
- a point lies in the domain: `0 <= d < extent` for parallel dims, `lo <= r < hi` for reduced
  dims (a triangular bound included);
- a read is used at a point where every enclosing `select` whose condition is an integer
  comparison (`idx(d1) < idx(K)`, a concat's) picks the read's branch. Under a condition on data
  (a read of an operand) whether the read is used depends on the inputs: no verdict.

The query, per read: are there sizes at which every used point of the domain reads inside the
operand (a quantifier over the loop dims)? unsat refuses the read; sat, unknown or a timeout
(`TIMEOUT_MS`) accept it, and the interpreter checks it when it runs. Results are memoized on the
form and the operand shapes, as verification repeats after every pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import z3

from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Const, Index, Read, ScalarExpr

#: z3's time for one read's query; beyond it the read is accepted and checked at run time
TIMEOUT_MS = 200

_COMPARE = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}

#: memo of `stray_read`, cleared whole when full (a simple bound on memory)
_MEMO: dict[tuple[str, tuple[tuple[str, ...], ...]], StrayRead | None] = {}
_MEMO_LIMIT = 1 << 12


@dataclass(frozen=True)
class StrayRead:
    """A read that leaves its operand at every size: which read, which of the operand's dims,
    and a witness (sizes and loop indices) with the index it reaches there."""

    read: Read
    dim: int
    extent: IntExpr
    witness: dict[str, int]
    reached: int
    #: whether sizes are symbolic (the read leaves the operand whatever they are)
    symbolic: bool = False

    def __str__(self) -> str:
        at = ", ".join(f"{k} = {v}" for k, v in self.witness.items())
        every = " for every size" if self.symbolic else ""
        return (f"read {self.read} leaves operand #{self.read.operand}{every}: its index "
                f"{self.read.index[self.dim]} in dim {self.dim} reaches {self.reached}, outside "
                f"[0, {self.extent})" + (f" (at {at})" if at else ""))


def stray_read(form: GenericForm, operand_shapes: Sequence[Sequence[IntExpr]]
               ) -> StrayRead | None:
    """The first read of `form` that leaves its operand (`operand_shapes`: each operand's dims)
    at some used point of the domain for every size assignment, with a witness; None when some
    sizes keep it inside, or z3 cannot tell in `TIMEOUT_MS`. The form's reads must match the
    operands' ranks."""
    key = (str(form), tuple(tuple(str(d) for d in shape) for shape in operand_shapes))
    if key in _MEMO:
        return _MEMO[key]
    found = _Query(form, operand_shapes).first_stray()
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = found
    return found


class _Query:
    """One form's reads against its operands, in one z3 context."""

    def __init__(self, form: GenericForm, operand_shapes: Sequence[Sequence[IntExpr]]) -> None:
        self.form = form
        self.shapes = operand_shapes
        self.ctx = z3.Context()
        self.vars: dict[str, z3.ArithRef] = {}
        #: divisors met while encoding, each assumed >= 1
        self.divisors: list[z3.ArithRef] = []
        self.loops = [d.name for d in (*form.parallel, *form.reduced)]

    def var(self, name: str) -> z3.ArithRef:
        if name not in self.vars:
            self.vars[name] = z3.Int(name, self.ctx)
        return self.vars[name]

    def int_expr(self, e: IntExpr) -> z3.ArithRef:
        return e.fold(lambda c: z3.IntVal(c, self.ctx), self.var, self._atom)

    def _atom(self, kind: str, x: z3.ArithRef, y: z3.ArithRef) -> z3.ArithRef:
        if kind in ("floordiv", "mod"):
            self.divisors.append(y)
            # SMT-LIB div and mod round down for a positive divisor, as floordiv and mod do
            return x / y if kind == "floordiv" else x % y
        return z3.If(x <= y, x, y) if kind == "min" else z3.If(x >= y, x, y)

    def condition(self, e: ScalarExpr) -> z3.BoolRef | None:
        """An integer condition as z3, or None when it is about data (or not understood)."""
        if isinstance(e, Const) and isinstance(e.value, bool):
            return z3.BoolVal(e.value, self.ctx)
        if not isinstance(e, Call):
            return None
        if e.fn in _COMPARE:
            a, b = (self.number(x) for x in e.args)
            return None if a is None or b is None else _COMPARE[e.fn](a, b)
        parts = [self.condition(x) for x in e.args]
        if any(p is None for p in parts):
            return None
        if e.fn == "and":
            return z3.And(*parts)
        if e.fn == "or":
            return z3.Or(*parts)
        if e.fn == "not":
            return z3.Not(parts[0])
        return None

    def number(self, e: ScalarExpr) -> z3.ArithRef | None:
        if isinstance(e, Index):
            return self.int_expr(e.expr)
        if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return z3.IntVal(e.value, self.ctx)
        return None

    def guarded_reads(self) -> list[tuple[Read, list[z3.BoolRef]]]:
        """Every read with the conditions under which its value is used; reads under a
        condition on data are left out (whether they are used depends on the inputs)."""
        out: list[tuple[Read, list[z3.BoolRef]]] = []
        stack: list[tuple[ScalarExpr, list[z3.BoolRef] | None]] = [(self.form.body, [])]
        while stack:
            e, guards = stack.pop()
            if isinstance(e, Read):
                if guards is not None:
                    out.append((e, guards))
                continue
            if isinstance(e, Call) and e.fn == "select":
                cond, then, other = e.args
                c = self.condition(cond)
                stack.append((cond, guards))
                for branch, holds in ((then, c), (other, None if c is None else z3.Not(c))):
                    stack.append((branch, None if guards is None or holds is None
                                  else [*guards, holds]))
                continue
            stack.extend((child, guards) for child in e.children())
        out.reverse()  # in the body's order, so the first stray read named is the leftmost
        return out

    def domain(self) -> list[z3.BoolRef]:
        """The loop dims' ranges."""
        facts: list[z3.BoolRef] = []
        for d in self.form.parallel:
            facts += [self.var(d.name) >= 0, self.var(d.name) < self.int_expr(d.upper)]
        for d in self.form.reduced:
            facts += [self.var(d.name) >= self.int_expr(d.lower),
                      self.var(d.name) < self.int_expr(d.upper)]
        return facts

    def sizes(self) -> list[z3.BoolRef]:
        """What sizes satisfy: every size >= 1, every dim >= 0 (call after encoding all else, so
        every size has been met)."""
        dims = [*self.form.output_shape, *(d for shape in self.shapes for d in shape)]
        facts = [self.int_expr(d) >= 0 for d in dims]
        facts += [v >= 1 for n, v in self.vars.items() if n not in self.loops]
        return facts

    def first_stray(self) -> StrayRead | None:
        reads = self.guarded_reads()
        if not reads:
            return None
        domain = self.domain()
        outside = [[z3.Or(i < 0, i >= self.int_expr(n)) for i, n in
                    zip((self.int_expr(e) for e in r.index), self.shapes[r.operand], strict=True)]
                   for r, _ in reads]
        divisors = [d >= 1 for d in self.divisors]
        sizes = self.sizes()
        loops = [self.vars[n] for n in self.loops if n in self.vars]
        true = z3.BoolVal(True, self.ctx)
        for (read, guards), dims in zip(reads, outside, strict=True):
            if not dims:
                continue  # a read of a 0-d operand is always inside
            used = z3.And(true, *domain, *guards, *divisors)
            # sizes at which the read stays inside wherever it is used: the op can run there
            fits = z3.Implies(used, z3.Not(z3.Or(*dims)))
            solver = self._solver(*sizes, z3.ForAll(loops, fits) if loops else fits)
            if solver.check() != z3.unsat:
                continue
            # at every size the read leaves somewhere: show where, at some sizes
            solver = self._solver(*sizes, used, z3.Or(*dims))
            if solver.check() == z3.sat:
                model = solver.model()
                k = next(k for k, d in enumerate(dims)
                         if z3.is_true(model.eval(d, model_completion=True)))
                return self._stray(model, read, k)
        return None

    def _solver(self, *facts: z3.BoolRef) -> z3.Solver:
        solver = z3.Solver(ctx=self.ctx)
        solver.set("timeout", TIMEOUT_MS)
        solver.add(*facts)
        return solver

    def _stray(self, model: z3.ModelRef, read: Read, k: int) -> StrayRead:
        def value(e: z3.ArithRef) -> int:
            return model.eval(e, model_completion=True).as_long()

        sizes = sorted(n for n in self.vars if n not in self.loops)
        names = [*sizes, *(n for n in self.loops if n in self.vars)]
        extent = self.shapes[read.operand][k]
        return StrayRead(read, k, extent, {n: value(self.vars[n]) for n in names},
                         value(self.int_expr(read.index[k])), symbolic=bool(sizes))


__all__ = ["TIMEOUT_MS", "StrayRead", "stray_read"]
