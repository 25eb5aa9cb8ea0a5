"""The device numbers the harness needs, read from the knowledge base's files.

The roofline floor is max(flops / matrix peak, bytes / memory bandwidth) and the L2 flush writes
a buffer larger than the L2; those three numbers are the KB device's (`kb/devices/<name>.yaml`,
or the cost-model profile it names, `targets/*/profiles/<profile>.yaml`: see
`kb/device.py`, PROFILE_FIELDS). The harness may not import PyYAML or Axon's schema reader, so
it reads the few keys it needs with a reader of YAML block mappings (`key: value` lines nested
by indentation; block scalars and list items are skipped). A test checks its numbers equal
those `axon.targets.xe_triton.kb.load_device` loads, for every shipped device.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: targets/ (this file is targets/xe_triton/harness/device.py)
TARGETS_DIR = Path(__file__).resolve().parents[2]
KB_DEVICES_DIR = TARGETS_DIR / "xe_triton" / "kb" / "devices"

_KEY = re.compile(r"^( *)([A-Za-z_]\w*):(?:\s+(.*?))?\s*$")

#: (our name, the key in a device file, the key in the profile it names)
_NUMBERS = (("matrix_flops", "peaks.matrix_bf16_flops", "roofline.matrix_flops"),
            ("bytes_per_s", "peaks.memory_bytes_per_s", "roofline.bytes_per_s"),
            ("l2_bytes", "memory.l2_bytes", "memory.l2_bytes"))


@dataclass(frozen=True)
class DeviceNumbers:
    """A device's matrix peak (FLOP/s), memory bandwidth (bytes/s) and L2 size (bytes), and
    the files they came from; None where the KB states no such number."""

    name: str
    matrix_flops: float | None
    bytes_per_s: float | None
    l2_bytes: int | None
    source: str

    def floor_ms(self, flops: int, nbytes: int) -> float | None:
        """The roofline floor of `flops` and `nbytes` in milliseconds (None without both
        peaks)."""
        if self.matrix_flops is None or self.bytes_per_s is None:
            return None
        return max(flops / self.matrix_flops, nbytes / self.bytes_per_s) * 1e3


class DeviceError(Exception):
    """A device the KB does not hold, or a file missing a number the harness needs."""


def block_values(text: str) -> dict[str, str]:
    """Every `key: scalar` of a YAML text of block mappings by its dotted path
    (`roofline.matrix_flops.value`); values of block scalars (`>-`, `|`) and list items are
    left out."""
    values: dict[str, str] = {}
    path: list[tuple[int, str]] = []
    skip_deeper_than: int | None = None
    for line in text.splitlines():
        stripped = line.split(" #", 1)[0].rstrip() if not line.lstrip().startswith("#") else ""
        if not stripped.strip():
            continue
        indent = len(stripped) - len(stripped.lstrip(" "))
        if skip_deeper_than is not None:
            if indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if stripped.lstrip().startswith("-"):
            # a list item and the lines of its mapping: the harness reads no list
            skip_deeper_than = indent
            continue
        match = _KEY.match(stripped)
        if match is None:
            continue
        key, value = match.group(2), match.group(3) or ""
        while path and path[-1][0] >= indent:
            path.pop()
        dotted = ".".join([p for _, p in path] + [key])
        if value in (">", ">-", "|", "|-", ">+", "|+"):
            skip_deeper_than = indent
        elif value:
            values[dotted] = value.strip("'\"")
        else:
            path.append((indent, key))
    return values


def device_numbers(name: str) -> DeviceNumbers:
    """The numbers of the KB device `name`; DeviceError when there is no such device."""
    device_path = KB_DEVICES_DIR / f"{name}.yaml"
    if not device_path.is_file():
        known = sorted(p.stem for p in KB_DEVICES_DIR.glob("*.yaml"))
        raise DeviceError(f"unknown device profile '{name}'; the knowledge base holds "
                          f"{', '.join(known)}")
    device = block_values(device_path.read_text())
    profile_name = device.get("profile")
    profile: dict[str, str] = {}
    profile_path: Path | None = None
    if profile_name:
        paths = sorted(TARGETS_DIR.glob(f"*/profiles/{profile_name}.yaml"))
        if not paths:
            raise DeviceError(f"{device_path.name}: its profile '{profile_name}' is missing")
        profile_path = paths[0]
        profile = block_values(profile_path.read_text())
    found: dict[str, float | None] = {}
    for ours, device_key, profile_key in _NUMBERS:
        text = profile.get(f"{profile_key}.value") or device.get(f"{device_key}.value")
        found[ours] = None if text is None else float(text)
    source = " + ".join(str(p.relative_to(TARGETS_DIR)) for p in (device_path, profile_path) if p)
    l2_bytes = found["l2_bytes"]
    return DeviceNumbers(name, found["matrix_flops"], found["bytes_per_s"],
                         None if l2_bytes is None else int(l2_bytes), source)
