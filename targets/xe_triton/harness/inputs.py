"""Inputs drawn by the harness from the bundle's seed (the candidate only maps them to outputs).

The distributions are the suite's (`benchmarks/suite.py`, `Init`): normal, uniform, and the rotary
cos / sin tables, times a scale. They are drawn with torch's CPU generator, so a seed gives the
same inputs on every machine and device; they follow numpy's `make_inputs` in distribution, not
bit for bit.
"""

from __future__ import annotations

import torch

from axon.targets.xe_triton.harness.bundle import Case, Init

#: torch's dtype of each bundle dtype
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def _rotary_angles(shape: tuple[int, ...]) -> torch.Tensor:
    """theta[t, i] = t * 10000^(-i / D2) for a [T, D2] table (the suite's `_rotary_angles`)."""
    t_len, half = shape
    inv_freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64) / max(half, 1))
    return torch.arange(t_len, dtype=torch.float64)[:, None] * inv_freq[None, :]


def draw(init: Init, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """One float32 tensor of `shape` drawn as `init` says."""
    if init.kind == "normal":
        value = torch.randn(shape, generator=generator, dtype=torch.float64)
    elif init.kind == "uniform":
        value = torch.rand(shape, generator=generator, dtype=torch.float64)
        value = value * (init.high - init.low) + init.low
    elif len(shape) != 2:
        raise ValueError(f"a {init.kind} table is [T, D2], got a shape of rank {len(shape)}")
    else:
        angles = _rotary_angles(shape)
        value = torch.cos(angles) if init.kind == "cos" else torch.sin(angles)
    return (value * init.scale).to(torch.float32)


def make_inputs(case: Case, seed: int) -> list[torch.Tensor]:
    """The case's inputs on the CPU, in their dtypes, drawn in order from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    return [draw(spec.init or Init(), spec.shape, generator).to(TORCH_DTYPES[spec.dtype])
            for spec in case.inputs]
