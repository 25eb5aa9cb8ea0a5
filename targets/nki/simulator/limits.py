"""The hardware limits the simulator enforces, as a plain argument object.

The simulator is a leaf package (numpy and ml_dtypes only), so it does not read the profile data
files itself: the caller passes a `HardwareLimits`, and `axon.targets.nki.simulator_limits`
(outside the leaf) builds one from `targets/nki/profiles/<name>.yaml`, where every number carries
its source. Nothing here holds a hardware number of its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HardwareLimits:
    """One NeuronCore's limits, by the profile keys they come from."""

    profile: str
    """The profile's name, quoted by every limit error (`trn2`)."""
    partitions: int
    """`memory.partitions`: the largest partition dim of an SBUF/PSUM tile."""
    sbuf_partition_bytes: int
    """`memory.sbuf_partition_usable_bytes` (or `sbuf_partition_bytes` where the profile has no
    usable figure): what live SBUF tiles may take in one partition."""
    psum_banks: int
    """`memory.psum_banks`: banks per PSUM partition."""
    psum_bank_bytes: int
    """`memory.psum_bank_bytes`: bytes of one bank in one partition."""
    psum_bank_free_max: int
    """`limits.psum_bank_free_max`: fp32 elements of a matmul result per partition."""
    matmul_stationary_free_max: int
    """`limits.matmul_stationary_free_max`: the largest free size of the stationary operand."""
    matmul_moving_free_max: int
    """`limits.matmul_moving_free_max`: the largest free size of the moving operand."""
    bn_stats_free_max: int
    """`limits.bn_stats_free_max`: the most elements per partition `bn_stats` reads."""
    neuron_core_version: int
    """`limits.neuron_core_version`: the core's generation (2 for NeuronCore-v2), which decides
    the instructions it has (`exponential`: v4 and newer)."""

    def __post_init__(self) -> None:
        for name in ("partitions", "sbuf_partition_bytes", "psum_banks", "psum_bank_bytes",
                     "psum_bank_free_max", "matmul_stationary_free_max",
                     "matmul_moving_free_max", "bn_stats_free_max", "neuron_core_version"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"HardwareLimits.{name}: expected a positive int, got {value!r}")
