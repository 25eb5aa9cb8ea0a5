"""Enumerating a sketch's fillings: the product of its holes' domains, iteratively, under a
hard cap checked before the first filling is made."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from axon.synth.sketch import Filling, Sketch

#: the most fillings one sketch may have unless the caller says otherwise
DEFAULT_CAP = 512


class SketchTooLarge(ValueError):
    """A sketch with more fillings than the cap allows: nothing of it is enumerated."""


def fillings(sketch: Sketch, cap: int = DEFAULT_CAP) -> Iterator[Filling]:
    """Every filling of `sketch`, the first hole varying slowest (itertools.product: no
    recursion); SketchTooLarge, before any filling, when there are more than `cap`."""
    holes = sketch.holes()
    total = sketch.size()
    if total > cap:
        sizes = " x ".join(f"{len(hole.domain)} ({name})" for name, hole in holes)
        raise SketchTooLarge(f"sketch '{sketch.id}' has {total} fillings ({sizes}), more than "
                             f"the cap of {cap}: narrow a hole's domain, split the sketch, or "
                             "raise the cap")
    names = [name for name, _ in holes]
    for values in itertools.product(*(hole.domain for _, hole in holes)):
        yield dict(zip(names, values, strict=True))
