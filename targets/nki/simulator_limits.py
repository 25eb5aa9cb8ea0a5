"""The NKI simulator's limits from a NeuronCore profile (`targets/nki/profiles/<name>.yaml`).

The simulator (`targets/nki/simulator/`) is a leaf that imports nothing of Axon; this module is
the loader outside it that turns a checked `DeviceProfile` into its `HardwareLimits`.
"""

from __future__ import annotations

from axon.targets.nki.simulator.limits import HardwareLimits
from axon.targets.profiles import DeviceProfile, Quantity, load_profile


def _whole(profile: DeviceProfile, key: str, quantity: Quantity | None) -> int:
    if quantity is None:
        raise ValueError(f"profile '{profile.name}' has no {key}: the NKI simulator needs it")
    if quantity.value != int(quantity.value):
        raise ValueError(f"profile '{profile.name}': {key} = {quantity.value} is not a whole "
                         f"number")
    return int(quantity.value)


def limits_from_profile(profile: DeviceProfile) -> HardwareLimits:
    """The simulator's limits from a NeuronCore profile; ValueError naming a missing key."""
    memory, limits = profile.memory, profile.limits
    if memory is None or limits is None:
        raise ValueError(f"profile '{profile.name}' has no memory or limits section: it is not a "
                         f"NeuronCore profile")
    sbuf = memory.sbuf_partition_usable_bytes or memory.sbuf_partition_bytes
    return HardwareLimits(
        profile=profile.name,
        partitions=_whole(profile, "memory.partitions", memory.partitions),
        sbuf_partition_bytes=_whole(profile, "memory.sbuf_partition_usable_bytes", sbuf),
        psum_banks=_whole(profile, "memory.psum_banks", memory.psum_banks),
        psum_bank_bytes=_whole(profile, "memory.psum_bank_bytes", memory.psum_bank_bytes),
        psum_bank_free_max=_whole(profile, "limits.psum_bank_free_max",
                                  limits.psum_bank_free_max),
        matmul_stationary_free_max=_whole(profile, "limits.matmul_stationary_free_max",
                                          limits.matmul_stationary_free_max),
        matmul_moving_free_max=_whole(profile, "limits.matmul_moving_free_max",
                                      limits.matmul_moving_free_max),
        bn_stats_free_max=_whole(profile, "limits.bn_stats_free_max", limits.bn_stats_free_max),
        neuron_core_version=_whole(profile, "limits.neuron_core_version",
                                   limits.neuron_core_version),
    )


def load_limits(name: str) -> HardwareLimits:
    """The simulator's limits for the profile called `name` (`trn1`, `trn2`)."""
    return limits_from_profile(load_profile(name))
