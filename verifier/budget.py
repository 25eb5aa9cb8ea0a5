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


class OutOfTime(Exception):
    """The query's time budget ran out (the verdict becomes Unknown)."""


class TooLarge(Exception):
    """A term outgrew the normalizer's size limits (the verdict becomes Unknown)."""


#: limits on one term, so that normalization whose terms grow exponentially (nested activations
#: over sums, products of many binomials) stops with Unknown before it exhausts memory: the
#: canonical text of one atom, and the monomials of one polynomial
MAX_TERM_CHARS = 200_000
MAX_MONOMIALS = 20_000


def check_size(size: int, limit: int, unit: str) -> None:
    """Raise `TooLarge` when a term's `size` exceeds `limit`."""
    if size > limit:
        raise TooLarge(f"a term grew past {limit} {unit}")


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
