"""The limits the `nki` op verifier checks, read from the NKI target's hardware profiles.

Every number lives in `targets/nki/profiles/<name>.yaml` with its source; this module only
collects them. An op is checked against the *generic* limits: the smallest value of each limit
over every NeuronCore profile, so that an op the verifier accepts is valid on each of them
(a NeuronCore-v4 matmul may stream up to 4096 moving columns, but no profile here is v4, and
a profile that allows more never lowers the generic bound).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from axon.targets.profiles import DeviceProfile, Quantity, load_profile_file, profile_paths

#: the target whose profiles hold the NeuronCore numbers (`targets/nki/profiles/`)
NKI_TARGET = "nki"


@dataclass(frozen=True)
class IsaLimits:
    """Shape limits of NeuronCore instructions (element and byte counts per partition)."""

    partitions: int
    """SBUF / PSUM partitions: the largest partition dim of an on-chip tile, and of a matmul's
    contraction."""
    sbuf_partition_bytes: int
    """What one SBUF partition may hold for a kernel (a tile's free bytes)."""
    psum_bank_bytes: int
    """One PSUM bank in one partition: the most free bytes of a PSUM tile."""
    matmul_stationary_free_max: int
    matmul_moving_free_max: int
    vector_transpose_max: int
    """The largest partition and free size of a VectorE transpose."""
    free_dims_max: int
    """The most free dims of an on-chip tile (an engine's access pattern)."""
    bn_stats_free_max: int
    """The most elements per partition `bn_stats` reads."""
    neuron_core_versions: tuple[tuple[str, int], ...]
    """Each NKI profile's NeuronCore generation, by profile name: an instruction of a later
    generation is valid only where every profile has it."""

    def lacking(self, version: int) -> list[tuple[str, int]]:
        """The profiles (name, generation) older than NeuronCore-v`version`."""
        return [(name, v) for name, v in self.neuron_core_versions if v < version]


def nki_profiles() -> list[DeviceProfile]:
    """Every profile of the NKI target, by name."""
    return [load_profile_file(path) for name, path in sorted(profile_paths().items())
            if path.parent.parent.name == NKI_TARGET]


@functools.cache
def generic_limits() -> IsaLimits:
    """The smallest value of each limit over the NKI target's profiles."""
    profiles = nki_profiles()
    if not profiles:
        raise ValueError(f"no hardware profile of the '{NKI_TARGET}' target")

    def smallest(*keys: str) -> int:
        """The least value over the profiles of the first of `keys` each profile gives."""
        found: list[Quantity] = []
        for profile in profiles:
            quantities = profile.quantities()
            quantity = next((quantities[k] for k in keys if k in quantities), None)
            if quantity is None:
                raise ValueError(f"profile '{profile.name}' has none of {', '.join(keys)}, "
                                 "which the nki op verifier checks")
            found.append(quantity)
        return int(min(q.value for q in found))

    return IsaLimits(
        partitions=smallest("memory.partitions"),
        sbuf_partition_bytes=smallest("memory.sbuf_partition_usable_bytes",
                                      "memory.sbuf_partition_bytes"),
        psum_bank_bytes=smallest("memory.psum_bank_bytes"),
        matmul_stationary_free_max=smallest("limits.matmul_stationary_free_max"),
        matmul_moving_free_max=smallest("limits.matmul_moving_free_max"),
        vector_transpose_max=smallest("limits.vector_transpose_max"),
        free_dims_max=smallest("limits.free_dims_max"),
        bn_stats_free_max=smallest("limits.bn_stats_free_max"),
        neuron_core_versions=tuple((p.name, _version(p)) for p in profiles),
    )


def _version(profile: DeviceProfile) -> int:
    """A profile's NeuronCore generation (`limits.neuron_core_version`)."""
    quantity = profile.quantities().get("limits.neuron_core_version")
    if quantity is None:
        raise ValueError(f"profile '{profile.name}' has no limits.neuron_core_version, which the "
                         "nki op verifier checks")
    return int(quantity.value)
