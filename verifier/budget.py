"""The budget of one verifier query: time shared by all of its phases, and limits on term size.

`prove_equivalent(..., timeout_ms)` opens a `deadline`; normalization calls `tick()` in its hot
constructors, which raises `OutOfTime` once the budget is spent, and z3 gets whatever remains. A
query that runs out answers Unknown: normalization that explodes (a product of many binomials,
deeply nested activations) can no longer run unbounded while only z3 was limited.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction


class OutOfTime(Exception):
    """The query's time budget ran out (the verdict becomes Unknown)."""


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


#: how many ticks pass between two clock reads (a clock read per tick would cost more than the
#: work it guards; 256 cheap steps take well under a millisecond)
_STRIDE = 256

_deadline: float | None = None
_ticks = 0


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Run the body under a budget of `seconds`; nested deadlines keep the earlier end."""
    global _deadline
    saved = _deadline
    end = time.perf_counter() + seconds
    _deadline = end if saved is None else min(saved, end)
    try:
        yield
    finally:
        _deadline = saved


def tick() -> None:
    """A unit of normalization work: raise `OutOfTime` when the open deadline has passed."""
    global _ticks
    if _deadline is None:
        return
    _ticks += 1
    if _ticks % _STRIDE == 0 and time.perf_counter() > _deadline:
        raise OutOfTime("the query's time budget ran out during normalization")


def remaining_ms() -> int:
    """Milliseconds left under the open deadline (at least 1), or a large number without one."""
    if _deadline is None:
        return 2**31 - 1
    return max(1, int((_deadline - time.perf_counter()) * 1000))


def expired() -> bool:
    """True when an open deadline has passed."""
    return _deadline is not None and time.perf_counter() > _deadline
