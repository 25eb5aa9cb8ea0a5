"""The calibration's fit: fitted on its fit half only, and it recovers a known constant."""

from __future__ import annotations

import dataclasses
import math

import pytest

from axon.benchmarks.nki_calibration import (
    BOUNDS,
    CASES,
    MATMUL_ORDER,
    Case,
    constants_used,
    fit,
    geomean_error,
)
from axon.targets.nki.cost import estimate, load_constants
from axon.targets.nki.simulator import Trace

from ..targets.nki.cost.helpers import hbm, inst, tile


def _no_inputs(_: object) -> list[object]:
    return []


def _case(name: str, published_s: float, fit_half: bool) -> Case:
    return Case(name, name, published_s, "test", _no_inputs, fit_half)  # type: ignore[arg-type]


def _wide_load() -> Trace:
    return Trace([inst("dma_copy", "SP-DMA", {"src": hbm(1, 128, 8192, 8192)},
                       {"dst": tile(2, 8192)}, dge_mode="unknown")])


def _narrow_load() -> Trace:
    return Trace([inst("dma_copy", "SP-DMA", {"src": hbm(1, 128, 64, 8192)},
                       {"dst": tile(2, 64)}, dge_mode="unknown")])


def test_fit_recovers_the_efficiencies_that_produced_the_latencies() -> None:
    truth = dataclasses.replace(load_constants("trn1"), dma_efficiency=0.6,
                                dma_small_row_efficiency=0.3)
    traces = [(_case("wide", estimate(_wide_load(), truth).total_s, True), _wide_load()),
              (_case("narrow", estimate(_narrow_load(), truth).total_s, True), _narrow_load())]
    start = dataclasses.replace(truth, dma_efficiency=1.0, dma_small_row_efficiency=1.0)
    fitted = fit(traces, start)
    assert fitted.dma_efficiency == pytest.approx(0.6, abs=0.01)
    assert fitted.dma_small_row_efficiency == pytest.approx(0.3, abs=0.01)


def test_geomean_error_is_the_typical_relative_error() -> None:
    assert geomean_error([math.log(1.1), math.log(1.1)]) == pytest.approx(0.1)
    assert geomean_error([]) == 0.0


def test_the_cases_split_into_halves_and_hold_the_four_matmuls() -> None:
    fit_half = [c for c in CASES if c.fit]
    held_out = [c for c in CASES if not c.fit]
    assert fit_half and held_out and len(fit_half) == len(held_out)
    names = {c.name for c in CASES}
    assert set(MATMUL_ORDER) <= names
    published = {c.name: c.published_s for c in CASES}
    assert [published[n] for n in MATMUL_ORDER] == sorted(
        (published[n] for n in MATMUL_ORDER), reverse=True)


def test_a_fit_searches_each_constant_over_the_traces_that_use_it() -> None:
    trn1 = load_constants("trn1")
    assert constants_used(_wide_load(), trn1) == {"dma_efficiency"}
    assert constants_used(_narrow_load(), trn1) == {"dma_small_row_efficiency"}
    assert constants_used(Trace([]), trn1) == set()
    # the narrow load's latency does not move the wide-row efficiency, nor the other way round
    truth = dataclasses.replace(trn1, dma_efficiency=0.6, dma_small_row_efficiency=0.3)
    traces = [(_case("wide", estimate(_wide_load(), truth).total_s, True), _wide_load()),
              (_case("narrow", 2 * estimate(_narrow_load(), truth).total_s, True),
               _narrow_load())]
    fitted = fit(traces, trn1)
    assert fitted.dma_efficiency == pytest.approx(0.6, abs=0.01)


def test_the_mamba_cases_and_the_attention_bounds() -> None:
    names = {c.name for c in CASES}
    assert {"mamba v1 C=256", "mamba v1 C=4096", "mamba v2", "mamba v3 L=512",
            "mamba v3 L=8192"} <= names
    # a bound is not a latency: never a case, so never fitted nor in the geomean
    assert not names & {b.name for b in BOUNDS}
    assert all(b.kernel == "calibration/sd_attention" for b in BOUNDS)
