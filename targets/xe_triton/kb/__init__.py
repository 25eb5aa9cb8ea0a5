"""The Intel Xe / Triton knowledge base: device constraints and optimization patterns as data.

`devices/<name>.yaml` holds one GPU's Triton constraints and peaks (`device.py`),
`patterns/*.yaml` the optimization patterns (`pattern.py`), whose conditions are parsed by
`condition.py`. Everything is checked when it is read; a mistake is a ProfileError at its file,
line and column, and nothing is returned. The emitter and the tuner call:

    device = load_device("max1550")
    kernel = KernelFacts("matmul", "bf16", has_dot=True, m=4096, n=4096, k=4096, grid_dims=2,
                         tile_bytes=...)
    patterns_for(device, kernel)     # the patterns that apply, highest priority first
    settings_for(device, kernel)     # their settings merged (block_io, grf_mode, ...)
    autotune_grid(device, kernel)    # the configurations to time, all valid on the device

`python -m axon.targets.xe_triton.kb --check` checks the shipped KB (docs/xe_triton_kb.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from axon.targets.xe_triton.kb.device import Device, load_device_file
from axon.targets.xe_triton.kb.pattern import (
    UNKNOWN_HEAD_DIM,
    Config,
    KernelFacts,
    Pattern,
    Settings,
    config_error,
    grid_of,
    load_pattern_file,
    merge_settings,
    select_patterns,
)

#: the shipped knowledge base
KB_DIR = Path(__file__).resolve().parent

__all__ = ["KB_DIR", "UNKNOWN_HEAD_DIM", "Config", "Device", "KernelFacts", "KnowledgeBase",
           "Pattern", "Settings", "autotune_grid", "config_error", "device_names", "load_device",
           "load_kb", "patterns_for", "settings_for"]


@dataclass(frozen=True)
class KnowledgeBase:
    """Every device and every pattern of one KB folder."""

    devices: dict[str, Device]
    patterns: tuple[Pattern, ...]

    def sources(self) -> set[str]:
        """Every source the KB cites."""
        found = {p.source for p in self.patterns}
        for device in self.devices.values():
            found |= device.sources()
        return found


def load_kb(root: Path = KB_DIR) -> KnowledgeBase:
    """Read and check every file under `root` (`devices/*.yaml`, `patterns/*.yaml`)."""
    if root == KB_DIR:
        return _shipped()
    return _load(root)


@functools.cache
def _shipped() -> KnowledgeBase:
    return _load(KB_DIR)


def _load(root: Path) -> KnowledgeBase:
    devices = {path.stem: load_device_file(path)
               for path in sorted((root / "devices").glob("*.yaml"))}
    seen: dict[str, str] = {}
    patterns = tuple(pattern for path in sorted((root / "patterns").glob("*.yaml"))
                     for pattern in load_pattern_file(path, seen))
    return KnowledgeBase(devices, patterns)


def device_names() -> list[str]:
    """The shipped devices' names, sorted."""
    return sorted(_shipped().devices)


def load_device(name: str) -> Device:
    """The shipped device called `name`; ValueError listing the known ones when there is none."""
    devices = _shipped().devices
    if name not in devices:
        raise ValueError(f"unknown device '{name}'; known: {', '.join(sorted(devices))}")
    return devices[name]


def patterns_for(device: Device, kernel: KernelFacts,
                 kb: KnowledgeBase | None = None) -> list[Pattern]:
    """The patterns of `kb` (the shipped KB by default) that apply to `kernel` on `device`,
    highest priority first."""
    return select_patterns(device, kernel, (kb or _shipped()).patterns)


def settings_for(device: Device, kernel: KernelFacts,
                 kb: KnowledgeBase | None = None) -> Settings:
    """The applying patterns' settings merged, each field from the highest priority."""
    return merge_settings(device, kernel, (kb or _shipped()).patterns)


def autotune_grid(device: Device, kernel: KernelFacts, limit: int = 64,
                  kb: KnowledgeBase | None = None) -> list[Config]:
    """The configurations to time: bounded by `limit`, no two alike, all valid on `device`."""
    return grid_of(device, kernel, (kb or _shipped()).patterns, limit)
