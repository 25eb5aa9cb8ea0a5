"""The budget of one verifier query: counts of work that repeat exactly, a clock as a safety net,
and limits on term size.

`prove_equivalent(..., budget=ProofBudget(steps, rlimit, seconds))` opens the budget
(`spending`). Normalization calls `tick()` in its hot constructors, one step each, and raises
`OutOfSteps` once `steps` are spent; every z3 call is given what is left of `rlimit` (z3's
resource count, deterministic for the same input on the same z3 version) and spends what it
used (`spend_rlimit`), `OutOfRlimit` once none is left. Both counts are functions of the query
alone (the verifier opens its memos afresh per query, `sums.reset`), so an Unknown they decide
is decided again by every run with the same budget: the proof cache may store it, keyed by the
budget (`ProofBudget.key`).

`seconds` is a safety net for work neither count sees (replaying counterexamples in the
interpreter, a z3 call that takes long for few resource units): the clock is read every
`_STRIDE` steps and given to z3 as its timeout, and running past it raises `OutOfTime`. A
verdict the clock decided depends on the machine and its load, so it is never stored.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction


class OutOfBudget(Exception):
    """A budget of the query ran out (the verdict becomes Unknown); `budget` names which."""

    budget = ""


class OutOfSteps(OutOfBudget):
    """Normalization took more steps than the query's `steps`."""

    budget = "steps"


class OutOfRlimit(OutOfBudget):
    """z3 spent the query's `rlimit`."""

    budget = "rlimit"


class OutOfTime(OutOfBudget):
    """The query ran past its safety-net `seconds` (a verdict that depends on the machine)."""

    budget = "seconds"


class Unsupported(ValueError):
    """The function uses something the verifier cannot encode (the verdict becomes Unknown)."""


class TooLarge(Exception):
    """A term outgrew the normalizer's size limits (the verdict becomes Unknown)."""


#: limits on one term, so that normalization whose terms grow exponentially (nested activations
#: over sums, products of many binomials) stops with Unknown before it exhausts memory: the
#: canonical text of one atom, and the monomials of one polynomial
MAX_TERM_CHARS = 200_000
MAX_MONOMIALS = 20_000
#: the bits of a coefficient's numerator or denominator. Exact rationals grow with a program's
#: length: `y = y * 1.0001 + c` multiplies by a 53-bit fraction per statement, so 10,000 of them
#: would need coefficients of half a million bits, each step costlier than the last (and Python
#: prints no integer over 4,300 digits). 8,192 bits (about 2,500 digits) holds 150 such steps.
MAX_COEFFICIENT_BITS = 8_192
#: how deep normalization may nest: a reduction built while normalizing another (a sum of sums,
#: a select lifted out of a sum, a substitution below a binder) is one level of Python recursion
#: (a handful of frames), so terms that nest deeper answer Unknown well inside Python's stack
#: instead of failing on it; the verifier's benchmark and tests nest at most 9 levels
MAX_NESTING = 64

#: how much work a second of a query buys, measured on the 2-core development machine (z3
#: 5.4.1, CPU seconds): normalization steps per second where steps come fastest (Fubini over a
#: product of four row sums, 56,096 steps in 2.2 s; a product of twelve binomials in distinct
#: tensors takes 16,401 in 3.9 s, a tiled kernel's proof about 1,000 a second), so that no
#: normalization the clock let finish is cut; and z3 resource units per second of a hard call
#: (qknorm_gqa's online kernel: an induction obligation of 436,068 units in 4.1 s, the value
#: query of the batched one 300,000 in 1.2 s and 600,000 in 11 s; easy calls spend
#: 300,000-700,000 a second). Under these rates `nominal(5.0)` stops about where the clock of
#: 5 s stopped a proof before.
STEPS_PER_SECOND = 20_000
RLIMIT_PER_SECOND = 100_000
#: the safety net's allowance over the time the counts nominally stand for: z3 spends some
#: calls' time in work it hardly counts (the batched online kernel's value query took 66 s for
#: 736,593 units), a loaded machine runs the same count several times slower, and only a
#: verdict the counts decide is stored, so the clock should stop only a query stuck outside them
SAFETY_FACTOR = 10


@dataclass(frozen=True)
class ProofBudget:
    """What one query may spend: normalization `steps` and z3 resource units `rlimit` (both
    counts of work, so a verdict they decide repeats exactly), and `seconds` of wall clock as
    a safety net (a verdict it decides is never stored)."""

    steps: int
    rlimit: int
    seconds: float

    @classmethod
    def nominal(cls, seconds: float) -> ProofBudget:
        """The counts that take about `seconds` each on the reference machine
        (`STEPS_PER_SECOND`, `RLIMIT_PER_SECOND`), with a safety net `SAFETY_FACTOR` times
        longer."""
        return cls(max(1, round(seconds * STEPS_PER_SECOND)),
                   max(1, round(seconds * RLIMIT_PER_SECOND)), seconds * SAFETY_FACTOR)

    def scaled(self, factor: int) -> ProofBudget:
        """`factor` times this budget (a query known to be that many proofs' worth)."""
        return ProofBudget(self.steps * factor, self.rlimit * factor, self.seconds * factor)

    def key(self) -> str:
        """The counts as text: what a stored verdict that a count decided is keyed by (the
        safety net is not part of it: a verdict it decided is never stored)."""
        return f"steps={self.steps} rlimit={self.rlimit}"

    def __str__(self) -> str:
        return f"{self.key()} seconds={self.seconds:g}"


#: a query's budget where its caller names none (`prove_equivalent`, `verify-equivalence`)
DEFAULT_BUDGET = ProofBudget.nominal(10.0)
#: one proof's budget in a search that makes many (`propagate`, `tile`)
SEARCH_BUDGET = ProofBudget.nominal(5.0)


def check_size(size: int, limit: int, unit: str) -> None:
    """Raise `TooLarge` when a term's `size` exceeds `limit`."""
    if size > limit:
        raise TooLarge(f"a term grew past {limit} {unit}")


def check_coefficient(value: Fraction) -> None:
    """Raise `TooLarge` when a coefficient needs more than `MAX_COEFFICIENT_BITS` bits."""
    if max(abs(value.numerator).bit_length(), value.denominator.bit_length()) \
            > MAX_COEFFICIENT_BITS:
        raise TooLarge(f"a coefficient grew past {MAX_COEFFICIENT_BITS} bits")


_nesting = 0


@contextmanager
def nested() -> Iterator[None]:
    """One level of normalization nesting; `TooLarge` past `MAX_NESTING` levels."""
    global _nesting
    if _nesting >= MAX_NESTING:
        raise TooLarge(f"normalization nested deeper than {MAX_NESTING} levels (reductions "
                       "inside reductions)")
    _nesting += 1
    try:
        yield
    finally:
        _nesting -= 1


#: how many steps pass between two clock reads (a clock read per step would cost more than the
#: work it guards; 256 cheap steps take well under a millisecond)
_STRIDE = 256

#: the open query's budget, what it has spent, and when its safety net ends (module state, as
#: `tick` is called in normalization's hottest constructors)
_budget: ProofBudget | None = None
_steps = 0
_rlimit_spent = 0
_deadline = 0.0


@contextmanager
def spending(budget: ProofBudget) -> Iterator[None]:
    """Run the body as one query under `budget`, its counts starting at 0; a query opened
    inside another keeps the outer one's safety net where that ends earlier."""
    global _budget, _steps, _rlimit_spent, _deadline
    saved = (_budget, _steps, _rlimit_spent, _deadline)
    end = time.perf_counter() + budget.seconds
    _deadline = end if _budget is None else min(_deadline, end)
    _budget, _steps, _rlimit_spent = budget, 0, 0
    try:
        yield
    finally:
        _budget, _steps, _rlimit_spent, _deadline = saved


def tick() -> None:
    """A step of normalization: raise `OutOfSteps` past the query's `steps` (and `OutOfTime`
    once its safety net has passed, read every `_STRIDE` steps)."""
    global _steps
    if _budget is None:
        return
    _steps += 1
    if _steps > _budget.steps:
        raise OutOfSteps(f"normalization took more than its {_budget.steps} steps")
    if _steps % _STRIDE == 0 and time.perf_counter() > _deadline:
        raise OutOfTime(f"the query ran past its safety net of {_budget.seconds:g} s during "
                        "normalization")


def steps_spent() -> int:
    """The open query's normalization steps so far (0 without one)."""
    return _steps


def rlimit_left() -> int:
    """z3 resource units the open query has left (0, z3's "no limit", without one);
    `OutOfRlimit` when none are."""
    if _budget is None:
        return 0
    left = _budget.rlimit - _rlimit_spent
    if left <= 0:
        raise out_of_rlimit()
    return left


def out_of_rlimit() -> OutOfRlimit:
    """`OutOfRlimit` for the open query, naming its rlimit."""
    return OutOfRlimit(f"z3 spent the query's rlimit of "
                       f"{_budget.rlimit if _budget is not None else 0} resource units")


def spend_rlimit(units: int) -> None:
    """Charge `units` z3 resource units to the open query."""
    global _rlimit_spent
    if _budget is not None:
        _rlimit_spent += units


def rlimit_spent() -> int:
    """The open query's z3 resource units so far (0 without one)."""
    return _rlimit_spent


def remaining_ms() -> int:
    """Milliseconds left to the open safety net (at least 1), or a large number without one."""
    if _budget is None:
        return 2**31 - 1
    return max(1, int((_deadline - time.perf_counter()) * 1000))


def expired() -> bool:
    """True when the open query's safety net has passed."""
    return _budget is not None and time.perf_counter() > _deadline
