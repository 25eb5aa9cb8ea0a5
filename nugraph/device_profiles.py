"""Roofline device profiles: the peak numbers the default extraction cost uses, with sources.

One place for these numbers in the nu-graph engine; the target folders hold the detailed models.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceProfile:
    """Peak dense matrix throughput, peak vector throughput, memory bandwidth, per-op overhead."""

    name: str
    matrix_flops: float
    """FLOP/s of the matrix unit at bf16 (contractions: reductions whose body multiplies reads)."""
    vector_flops: float
    """FLOP/s for everything else (elementwise, plain reductions)."""
    bytes_per_s: float
    op_overhead_s: float
    """Fixed cost of one op (launch / instruction issue): makes fewer, fused ops cheaper."""


PROFILES: dict[str, DeviceProfile] = {
    # 790 TFLOP/s bf16 dense and 4.3 TB/s: measured on one H200 (../shared/design/benchmarks.md,
    # "Peaks used for the floor"). Vector: 67 TFLOP/s fp32 (NVIDIA H200 datasheet, FP32).
    # Overhead: ~4 us per kernel launch under do_bench (same page: "small kernels are dominated by
    # launch overhead").
    "h200": DeviceProfile("h200", 790e12, 67e12, 4.3e12, 4e-6),
    # One Trn1 NeuronCore-v2: TensorE 92 TF bf16, HBM ~410 GB/s per NC (820 GB/s per chip / 2),
    # VectorE 128 lanes at 1.12 GHz (../shared/reference/nki.md section 5, sources A1, H1).
    # Overhead: ~2 us per instruction-stream launch (order of magnitude; no published figure).
    "trn1": DeviceProfile("trn1", 92e12, 128 * 1.12e9, 410e9, 2e-6),
}

DEFAULT_PROFILE = "h200"


def profile(name: str) -> DeviceProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown device profile '{name}'; known: {', '.join(PROFILES)}") from None
