"""The optional timeline plot and the cost constants' profile data."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from axon.targets.nki.cost import PlotUnavailable, estimate, load_constants, plot_timeline
from axon.targets.nki.cost.constants import FITTED, constants_from_profile
from axon.targets.nki.simulator import Trace
from axon.targets.profiles import load_profile

from .helpers import inst, tile


def _result() -> object:
    return estimate(Trace([inst("tensor_scalar", "DVE", {"data": tile(1, 512)},
                                {"dst": tile(2, 512)}, op0="add")]), load_constants("trn1"))


def test_plot_without_matplotlib_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(PlotUnavailable, match="pip install matplotlib"):
        plot_timeline(_result(), tmp_path / "t.png")  # type: ignore[arg-type]
    assert not (tmp_path / "t.png").exists()


def test_plot_writes_a_png_when_matplotlib_is_there(tmp_path: Path) -> None:
    path = plot_timeline(_result(), tmp_path / "t.png")  # type: ignore[arg-type]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", ["trn1", "trn2"])
def test_profiles_carry_the_cost_constants_with_fitted_ones_marked(name: str) -> None:
    profile = load_profile(name)
    assert profile.cost is not None
    constants = constants_from_profile(profile)
    assert constants.dma_queues == 16
    for key in FITTED:
        assert getattr(profile.cost, key).estimate, f"{name}: cost.{key} is fitted"


def test_a_profile_without_cost_constants_is_refused() -> None:
    with pytest.raises(ValueError, match="'h200' has no cost section"):
        constants_from_profile(load_profile("h200"))
