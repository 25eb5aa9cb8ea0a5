"""What every Forge stage is: a name, whether it applies to a file (and why not), proposals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from axon.forge.source import KernelFile
from axon.targets.xe_triton.kb import Device

__all__ = ["Applicability", "Proposal", "Stage"]


@dataclass(frozen=True)
class Applicability:
    """Whether a stage has something to do on a file; `why` is one line either way."""

    applies: bool
    why: str


@dataclass(frozen=True)
class Proposal:
    """A whole new module text (`ModelNew` and the entry points kept) and what changed."""

    stage: str
    description: str
    source: str


class Stage(Protocol):
    """A Triton-level rewrite (or, for `analysis`, a report) of a kernel file."""

    name: str

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Whether the stage has work on `kernel_file`, and why (not)."""
        ...

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """New module texts for `profile`'s device (empty when the stage does not apply)."""
        ...
