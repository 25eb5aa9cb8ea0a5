"""The cost model's constants, read from a NeuronCore profile's `cost` section.

Every number lives in `targets/nki/profiles/<name>.yaml` with its source; this module only turns
the checked `DeviceProfile` into plain floats the timeline reads in its inner loop, and lets the
calibration try other values of the fitted ones (`dataclasses.replace`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from axon.targets.profiles import DeviceProfile, load_profile


@dataclass(frozen=True)
class CostConstants:
    """One NeuronCore's cost constants, by the profile keys (`cost.<name>`) they come from."""

    profile: str
    pe_hz: float
    act_hz: float
    dve_hz: float
    pool_hz: float
    min_ii_cycles: float
    gpsimd_start_cycles: float
    act_read_accumulator_cycles: float
    dynamic_copy_cycles: float
    sync_cycles: float
    dma_queues: int
    dma_bytes_per_s: float
    dma_fixed_s: float
    dma_efficient_row_bytes: float
    dma_efficiency: float
    dma_small_row_efficiency: float
    sbuf_ports_dve_pool: int
    psum_ports_dve_act: int
    dve_perf_mode_copy_speedup: float = 1.0
    dve_perf_mode_speedup: float = 1.0

    def with_value(self, name: str, value: float) -> CostConstants:
        """A copy with constant `name` (one of `FITTED`) set to `value`: what the calibration
        tries."""
        if name not in FITTED:
            raise ValueError(f"cost constant {name!r} is not a fitted one ({', '.join(FITTED)})")
        values = dataclasses.asdict(self)
        values[name] = value
        return CostConstants(**values)

    def clock_hz(self, engine: str) -> float:
        """The clock of a compute engine of the trace (`PE`, `ACT`, `DVE`, `POOL`)."""
        return {"PE": self.pe_hz, "ACT": self.act_hz, "DVE": self.dve_hz,
                "POOL": self.pool_hz}[engine]


#: the constants the calibration may fit (the others are published figures)
FITTED = ("dma_efficiency", "dma_small_row_efficiency")


def constants_from_profile(profile: DeviceProfile) -> CostConstants:
    """The cost constants of a NeuronCore profile; ValueError when it has no `cost` section."""
    cost = profile.cost
    if cost is None:
        raise ValueError(f"profile '{profile.name}' has no cost section: the NeuronCore cost "
                         f"model needs one (targets/nki/profiles/*.yaml)")
    whole = ("dma_queues", "sbuf_ports_dve_pool", "psum_ports_dve_act")
    values: dict[str, float | int | str] = {"profile": profile.name}
    for f in dataclasses.fields(cost):
        quantity = getattr(cost, f.name)
        if quantity is None:
            continue
        if f.name in whole:
            if quantity.value != int(quantity.value):
                raise ValueError(f"profile '{profile.name}': cost.{f.name} = {quantity.value} "
                                 f"is not a whole number")
            values[f.name] = int(quantity.value)
        else:
            values[f.name] = float(quantity.value)
    for name in ("dma_efficiency", "dma_small_row_efficiency"):
        if not 0 < float(values[name]) <= 1:
            raise ValueError(f"profile '{profile.name}': cost.{name} must lie in (0, 1], got "
                             f"{values[name]}")
    return CostConstants(**values)  # type: ignore[arg-type]


def load_constants(name: str) -> CostConstants:
    """The cost constants of the profile called `name` (`trn1`, `trn2`)."""
    return constants_from_profile(load_profile(name))
