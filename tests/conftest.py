"""Test-wide settings: hypothesis runs derandomized under CI.

Property tests search randomly on a developer's machine, where a new counterexample is welcome.
In CI (`CI` set, as `.ci/run`'s environment does) the same examples run every time, so a landing
never depends on the luck of the draw; the example counts stay those each test states.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
