"""Scalar terms proved constant under integer facts: the raise's pad analysis (the value at the
lanes past a dim a block holds whole, `frontend/triton/raise_tile.py`) asks these of a map's
scalar function, built with the terms `inline` builds and encoded by `Encoder`.

    with spending(budget):
        facts = IntegerFacts([n - S, B - 1 - n])    # each expression >= 0
        facts.holds(T.compare("lt", T.idx(n), T.idx(S)))    # False: not proved
        facts.constant(scalar_term("mul", [T.ZERO, x], None))    # Fraction(0)

Proved only on z3's unsat of the negation; unknown, a model, a budget that runs out or a term
the verifier cannot encode is "not proved" (False, None), never a proof. Reads are real
functions of their indices (any contents), integer symbols of the verifier's own names
(`terms.OUTPUT_INDEX` ...) are >= 0 and every other symbol is a size (>= 1), as the
normalizer takes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import z3

from axon.dialects.form.intexpr import IntExpr
from axon.verifier import terms as T
from axon.verifier.budget import OutOfBudget, TooLarge, Unsupported
from axon.verifier.encode import Encoder
from axon.verifier.inline import Value, _call
from axon.verifier.prove import _check

__all__ = ["NOT_PROVED", "IntegerFacts", "scalar_term"]

#: what stops a query short of a proof (the answer is then "not proved"): a budget, a term the
#: verifier does not encode or outgrows, and its internal errors (as `prove_equivalent` takes them)
NOT_PROVED = (OutOfBudget, Unsupported, TooLarge, ArithmeticError, RecursionError, ValueError,
              z3.Z3Exception)


def scalar_term(fn: str, args: Sequence[Value], param: float | str | None) -> Value:
    """The term of the primitive scalar function `fn` (after `expand`) applied to `args`:
    `inline`'s, so a pad is read as the verifier reads the kernel."""
    return _call(fn, list(args), param)


class IntegerFacts:
    """A z3 solver holding integer facts (each expression >= 0, and every size symbol met
    >= 1), asked whether a boolean term holds and whether a term is constant at every point
    that satisfies them. Call inside `budget.spending(...)`: each z3 call spends its units."""

    def __init__(self, nonnegative: Sequence[IntExpr]) -> None:
        self.enc = Encoder()
        self.solver = z3.Solver(ctx=self.enc.ctx)
        self.solver.add(*(self.enc.int_expr(e, {}) >= 0 for e in nonnegative))
        self._axioms = 0

    def _encode(self, value: Value) -> z3.ExprRef:
        """`value` in z3, the axioms of its atoms and the sizes it meets added to the facts."""
        out = self.enc.bool(value) if isinstance(value, T.Bool) else self.enc.poly(value)
        self.enc.close()
        self.solver.add(*self.enc.axioms[self._axioms:])
        self._axioms = len(self.enc.axioms)
        self.solver.add(*(v >= 1 for v in self.enc.sizes.values()))
        return out

    def _unsat(self, claim: z3.BoolRef) -> bool:
        self.solver.push()
        self.solver.add(claim)
        try:
            return _check(self.solver) == z3.unsat
        finally:
            self.solver.pop()

    def holds(self, cond: T.Bool) -> bool:
        """`cond` holds at every point of the facts (proved)."""
        return self._unsat(z3.Not(self._encode(cond)))

    def constant(self, value: Value) -> Fraction | bool | None:
        """The value `value` has at every point of the facts (for every read's contents), or
        None where that is not proved: a candidate read off a constant term or one model,
        then proved."""
        if isinstance(value, T.Poly) and value.is_const:
            return value.const_value
        if isinstance(value, T.Bool) and value.op == "const":
            return bool(value.args[0])
        term = self._encode(value)
        if _check(self.solver) != z3.sat:
            return None
        seen = self.solver.model().eval(term, model_completion=True)
        candidate: Fraction | bool
        if isinstance(value, T.Bool):
            if not (z3.is_true(seen) or z3.is_false(seen)):
                return None
            candidate = z3.is_true(seen)
            differs = term != z3.BoolVal(candidate, self.enc.ctx)
        else:
            if not z3.is_rational_value(seen):
                return None
            candidate = seen.as_fraction()
            differs = term != z3.RealVal(f"{candidate.numerator}/{candidate.denominator}",
                                         self.enc.ctx)
        return candidate if self._unsat(differs) else None
