"""Test-wide settings: hypothesis runs derandomized under CI; Triton runs on its CPU interpreter.

Property tests search randomly on a developer's machine, where a new counterexample is welcome.
In CI (`CI` set, as `.ci/run`'s environment does) the same examples run every time, so a landing
never depends on the luck of the draw; the example counts stay those each test states.

Triton reads `TRITON_INTERPRET` when `triton.language` is imported (its library functions are
decorated then), and torch imports Triton as a side effect of some operations (a division on the
meta device loads torch._dynamo, which imports Triton): set before any test runs, the emitted
kernels' checks find the interpreter whatever ran first.

The child processes tests start (the harness's, the command-line tools') may write compiled
bytecode: where the environment says not to (`PYTHONDONTWRITEBYTECODE`), each child would compile
Axon's modules from source again, about half a second a child.
"""

from __future__ import annotations

import os

from hypothesis import settings

os.environ["TRITON_INTERPRET"] = "1"
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
