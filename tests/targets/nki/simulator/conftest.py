"""Shared fixtures of the NKI simulator tests: the trn2 limits and the tutorial kernels' folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon.targets.nki.simulator import HardwareLimits
from axon.targets.nki.simulator_limits import load_limits

#: the kernels written in the project from the public NKI tutorials' algorithms
KERNELS = Path(__file__).resolve().parents[4] / "benchmarks" / "nki_kernels"


@pytest.fixture(scope="session")
def trn2() -> HardwareLimits:
    """The limits of a Trn2 NeuronCore, from targets/nki/profiles/trn2.yaml."""
    return load_limits("trn2")
