"""The top-level `nki` surface a kernel imports: `nki.jit`, `nki.language`, `nki.isa`."""

from __future__ import annotations

from axon.targets.nki.simulator import isa, language
from axon.targets.nki.simulator.kernel import JitKernel, jit

__all__ = ["JitKernel", "isa", "jit", "language"]
