"""Where Forge's proposals come from: the built-in stages, or anything that proposes.

    class Proposer(Protocol):
        name: str
        def propose(self, source, report, profile) -> Iterable[Proposal]: ...

A proposer gets the current module text, the analysis report of it and the device's KB profile,
and returns whole new module texts. A language model, a search, a user's hand: all the same to
the driver, which admits nothing except through the injected check (the cascade). The built-in
stages are proposers through `StageProposer`; `load_proposer("package.module:attr")` loads one
by name (an instance, a class or a factory taking no arguments), for a command line or an entry
point, with a ProposerError that says which part of the name failed and why.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from axon.forge.source import KernelFile
from axon.forge.stages import AnalysisReport, Proposal, Stage
from axon.targets.xe_triton.kb import Device

__all__ = ["Proposer", "ProposerError", "StageProposer", "load_proposer"]


@runtime_checkable
class Proposer(Protocol):
    """Anything that proposes new module texts for a kernel file."""

    name: str

    def propose(self, source: str, report: AnalysisReport,
                profile: Device) -> Iterable[Proposal]:
        """New module texts for `source` (`report` is its analysis) on `profile`'s device."""
        ...


class StageProposer:
    """A built-in stage as a Proposer (it proposes nothing where it does not apply)."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.name = stage.name

    def propose(self, source: str, report: AnalysisReport,
                profile: Device) -> Iterable[Proposal]:
        """The stage's proposals on `source` (the file named as `report` names it)."""
        kernel_file = KernelFile(source, report.filename)
        if not self.stage.applies(kernel_file).applies:
            return []
        return self.stage.propose(kernel_file, profile)


class ProposerError(ValueError):
    """A proposer name that does not load."""


def load_proposer(spec: str) -> Proposer:
    """The proposer `spec` names: `module:attr` (attr dotted within the module), an instance
    with `name` and `propose`, or a class / function that makes one with no arguments."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ProposerError(f"proposer {spec!r}: expected 'package.module:attribute'")
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as err:
        raise ProposerError(f"proposer {spec!r}: module {module_name!r} does not import: "
                            f"{err}") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ProposerError(f"proposer {spec!r}: {module_name!r} has no attribute "
                                f"{attr!r} (missing {part!r})")
        target = getattr(target, part)
    if isinstance(target, type) or (not isinstance(target, Proposer) and callable(target)):
        try:
            target = target()
        except Exception as err:  # a user's constructor: report it, do not crash the driver
            raise ProposerError(f"proposer {spec!r}: calling {attr} with no arguments failed: "
                                f"{type(err).__name__}: {err}") from None
    if not isinstance(target, Proposer):
        raise ProposerError(f"proposer {spec!r}: {attr} is not a proposer (expected a `name` "
                            "and a `propose(source, report, profile)` method)")
    return target
