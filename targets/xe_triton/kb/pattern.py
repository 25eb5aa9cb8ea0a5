"""Optimization patterns of the knowledge base: what to prefer, on which device, for which kernel.

Patterns live in `kb/patterns/*.yaml`, a list each:

    patterns:
      - id: large_grf_for_big_dot_tiles
        summary: a DPAS matmul whose tiles outgrow 128 registers a thread takes 256
        when: device.large_grf and kernel.has_dot and kernel.tile_bytes >= 32768
        sets: {grf_mode: ["256"]}
        priority: 70
        source: ../shared/reference/xe_triton.md 1.5 (every tuned GEMM tile runs at '256')
        estimate: true          # the threshold is ours

`when` is a condition (`condition.py`) over the device facts (`device_facts`) and the kernel
facts (`KernelFacts`), checked when the file is read: a name that is no fact, a comparison of a
number with a name, a symbol no fact can take, each a located error. `sets` is a `Settings`:
axes the tuner sweeps (block sizes, `num_warps`, `num_stages`, `warp_size`, `grf_mode`,
`group_size_m`) and choices the emitter makes (`block_io`, `persistent`, ...).

`select_patterns` gives the patterns that apply, highest priority first; `merge_settings` merges
their settings (a higher priority wins a field); `grid_of` turns the axes into launch
configurations, keeps only those the device can run (`config_error`), and bounds the list. The
package (`kb/__init__.py`) offers them over the shipped KB as `patterns_for`, `settings_for`
and `autotune_grid`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from axon.targets.profiles import ProfileError, SchemaReader, display_path
from axon.targets.xe_triton.kb.condition import (
    Condition,
    ConditionError,
    Fact,
    parse_condition,
)
from axon.targets.xe_triton.kb.device import DTYPE_BITS, Device, Dtype

KernelKind = Literal["matmul", "batched_matmul", "attention", "softmax", "reduction", "norm",
                     "elementwise"]
GrfModeOption = Literal["default", "auto", "128", "256", "512"]


#: `KernelFacts.head_dim` where it is not known: larger than any head dim, so a condition
#: `kernel.head_dim <= D` holds only for a kernel whose head dim is known to be at most D
UNKNOWN_HEAD_DIM = 1 << 16


@dataclass(frozen=True)
class KernelFacts:
    """What the emitter knows of a kernel when it asks the KB (sizes in elements)."""

    kind: KernelKind
    dtype: Dtype = "bf16"
    has_dot: bool = False
    """The kernel calls `tl.dot`."""
    m: int = 1
    n: int = 1
    k: int = 1
    batch: int = 1
    grid_dims: int = 1
    """Dims of the output tiled over programs (2 for a matmul tiled over rows and columns)."""
    tile_bytes: int = 0
    """Bytes of the tiles one program holds at once (operand tiles and accumulator)."""
    programs: int = 1
    """Programs of the launch at the emitter's tile sizes."""
    dots: int = 1
    """`tl.dot`s in the K loop: each carries its own fp32 accumulator and B tile (the A tile
    is taken as shared, as in a gated MLP's two dots)."""
    head_dim: int = UNKNOWN_HEAD_DIM
    """An attention kernel's head dim (the dim `q @ k^T` contracts, in elements);
    `UNKNOWN_HEAD_DIM` for another kernel or where the caller does not know it."""


#: every fact a condition may name
FACTS: dict[str, Fact] = {
    "device.name": Fact("symbol", (), "the device file's name"),
    "device.vendor": Fact("symbol", ("intel", "nvidia")),
    "device.arch": Fact("symbol", ("pvc", "bmg", "dg2", "sm90")),
    "device.dot_unit": Fact("symbol", ("dpas", "mma", "wgmma", "fma"),
                            "what tl.dot runs on (fma: no matrix unit Triton uses)"),
    "device.large_grf": Fact("bool", (), "a GRF mode of more than 128 registers exists"),
    "device.block_io": Fact("bool", (), "Intel 2D block loads and stores"),
    "device.tma": Fact("bool", (), "NVIDIA tensor memory access"),
    "device.loads_staged_in_shared_memory": Fact(
        "bool", (), "the software pipeliner copies a loop's loads ahead into shared memory"),
    "device.cores": Fact("number", (), "Xe-cores or SMs"),
    "device.sub_group_size_min": Fact("number"),
    "kernel.kind": Fact("symbol", get_args(KernelKind)),
    "kernel.dtype": Fact("symbol", tuple(DTYPE_BITS)),
    "kernel.has_dot": Fact("bool"),
    "kernel.m": Fact("number"),
    "kernel.n": Fact("number"),
    "kernel.k": Fact("number"),
    "kernel.batch": Fact("number"),
    "kernel.grid_dims": Fact("number"),
    "kernel.tile_bytes": Fact("number"),
    "kernel.programs": Fact("number"),
    "kernel.dots": Fact("number"),
    "kernel.head_dim": Fact("number", (), "an attention kernel's head dim (q @ k^T's "
                            "contracted dim); larger than any real one where unknown"),
}


def device_facts(device: Device) -> dict[str, float | bool | str]:
    """The `device.*` facts of `device`."""
    unit = device.dot_unit()
    return {
        "device.name": device.name,
        "device.vendor": device.vendor,
        "device.arch": device.arch,
        "device.dot_unit": unit.unit if unit else "fma",
        "device.large_grf": any(m.registers_per_thread > 128 for m in device.grf_modes()),
        "device.block_io": device.block_io is not None,
        "device.tma": device.tma is not None,
        "device.loads_staged_in_shared_memory": (device.pipeline is not None
                                                 and device.pipeline.stages_in_shared_memory),
        "device.cores": device.cores,
        "device.sub_group_size_min": min(device.sub_group_sizes),
    }


def kernel_facts(kernel: KernelFacts) -> dict[str, float | bool | str]:
    """The `kernel.*` facts of `kernel`."""
    return {f"kernel.{f.name}": getattr(kernel, f.name) for f in dataclasses.fields(kernel)}


@dataclass(frozen=True)
class Settings:
    """What a pattern sets. Tuple fields are axes the tuner sweeps, in order of preference."""

    block_m: tuple[int, ...] | None = None
    block_n: tuple[int, ...] | None = None
    block_k: tuple[int, ...] | None = None
    group_size_m: tuple[int, ...] | None = None
    """GROUP_SIZE_M of the grouped (swizzled) program order; 1 is row-major."""
    num_warps: tuple[int, ...] | None = None
    num_stages: tuple[int, ...] | None = None
    warp_size: tuple[int, ...] | None = None
    grf_mode: tuple[GrfModeOption, ...] | None = None
    block_io: Literal["tensor_descriptor", "block_ptr", "pointer", "host_descriptor"] | None = None
    """How tiles are loaded and stored: tensor descriptors, block pointers, or pointer
    tensors with masks."""
    persistent: bool | None = None
    """One program per core looping over the tiles (stream-K style) instead of one per tile."""
    tiles_on_axis_0: bool | None = None
    """The tile index on grid axis 0, batch (or expert) on axis 1 and up."""
    explicit_accumulator: bool | None = None
    """`acc = tl.dot(a, b, acc)` rather than `acc += tl.dot(a, b)`."""
    input_precision: Literal["ieee", "tf32", "tf32x3"] | None = None
    """`tl.dot`'s input precision for fp32 operands."""
    loop_num_stages: tuple[int, ...] | None = None
    """`num_stages` of `tl.range` on a loop without `tl.dot` whose loads advance with it (the
    Forge memory-access stage's prefetch), in order of preference."""


#: the settings the tuner sweeps, in the order a configuration lists them
AXES = ("block_m", "block_n", "block_k", "group_size_m", "num_warps", "num_stages",
        "warp_size", "grf_mode")
#: axes whose values must be powers of two (Triton's block shapes and warp counts)
POWER_OF_TWO_AXES = ("block_m", "block_n", "block_k", "num_warps", "warp_size")


@dataclass(frozen=True)
class Pattern:
    """One optimization pattern: when it applies, what it sets, how strongly, and why."""

    id: str
    summary: str
    when: Condition
    sets: Settings
    priority: int
    source: str
    estimate: bool = False
    """True where a threshold of `when` or a value of `sets` is ours, not the source's."""


@dataclass(frozen=True)
class PatternFile:
    """A file of patterns."""

    patterns: tuple[Pattern, ...]


def _read_condition(reader: SchemaReader, node: yaml.Node, path: str) -> Condition:
    text = reader.string(node, path)
    try:
        return parse_condition(text, FACTS)
    except ConditionError as err:
        mark = node.start_mark
        line, column = mark.line + 1, mark.column + 1
        if node.style in (None, "'", '"') and node.start_mark.line == node.end_mark.line:
            # a one-line scalar: point at the offending character (past an opening quote)
            column += err.offset + (1 if node.style else 0)
        raise ProfileError(f"{path}: {err.message}", reader.filename, line, column) from None


def load_pattern_file(path: Path, seen: dict[str, str] | None = None) -> tuple[Pattern, ...]:
    """Read and check one file of patterns; ProfileError at the offending line and column.
    `seen` maps the ids of files already read to their file, and takes this file's."""
    seen = {} if seen is None else seen
    reader = SchemaReader(display_path(path), path.read_text(),
                          leaves={Condition: _read_condition}, root="patterns file")
    patterns = reader.read(PatternFile, "empty patterns file; expected a mapping with "
                                        "'patterns', a list").patterns
    for i, pattern in enumerate(patterns):
        if pattern.id in seen:
            raise reader.error_at(f"patterns[{i}].id", f"patterns[{i}].id: duplicate id "
                                                       f"'{pattern.id}' (first in "
                                                       f"{seen[pattern.id]})")
        seen[pattern.id] = reader.filename
        for axis in POWER_OF_TWO_AXES:
            for j, value in enumerate(getattr(pattern.sets, axis) or ()):
                if value & (value - 1):
                    where = f"patterns[{i}].sets.{axis}[{j}]"
                    raise reader.error_at(where, f"{where}: expected a power of two, got "
                                                 f"{value}")
    return patterns


def select_patterns(device: Device, kernel: KernelFacts,
                    patterns: Iterable[Pattern]) -> list[Pattern]:
    """The patterns whose condition holds, highest priority first (ties by id)."""
    facts: Mapping[str, float | bool | str] = {**device_facts(device), **kernel_facts(kernel)}
    found = [p for p in patterns if p.when.holds(facts)]
    return sorted(found, key=lambda p: (-p.priority, p.id))


def merge_settings(device: Device, kernel: KernelFacts,
                   patterns: Iterable[Pattern]) -> Settings:
    """The settings of the applying patterns merged: each field from the highest-priority
    pattern that sets it."""
    merged: dict[str, Any] = {}
    for pattern in select_patterns(device, kernel, patterns):
        for f in dataclasses.fields(Settings):
            value = getattr(pattern.sets, f.name)
            if value is not None and f.name not in merged:
                merged[f.name] = value
    return Settings(**merged)


@dataclass(frozen=True)
class Config:
    """One launch configuration to time; None where the tuner leaves a knob to the compiler."""

    block_m: int | None = None
    block_n: int | None = None
    block_k: int | None = None
    group_size_m: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    warp_size: int | None = None
    grf_mode: str | None = None


def grid_of(device: Device, kernel: KernelFacts, patterns: Iterable[Pattern],
            limit: int = 64) -> list[Config]:
    """The configurations to time for `kernel` on `device`: the product of the applying
    patterns' axes, block sizes clamped to the problem, only configurations the device can
    run, no two alike, the most preferred first (the smallest sum of each axis' preference
    rank), at most `limit`."""
    settings = merge_settings(device, kernel, patterns)
    axes = {axis: getattr(settings, axis) for axis in AXES if getattr(settings, axis)}
    if "num_warps" not in axes:
        assert device.launch.num_warps_default is not None
        axes["num_warps"] = (int(device.launch.num_warps_default.value),)
    names = list(axes)
    ranked = sorted(itertools.product(*(enumerate(axes[n]) for n in names)),
                    key=lambda combo: sum(rank for rank, _ in combo))
    found: list[Config] = []
    seen: set[Config] = set()
    for combo in ranked:
        config = _clamped(device, kernel, Config(**{n: v for n, (_, v) in zip(names, combo,
                                                                             strict=True)}))
        if config in seen or config_error(device, kernel, config) is not None:
            continue
        seen.add(config)
        found.append(config)
        if len(found) == limit:
            break
    return found


def _clamped(device: Device, kernel: KernelFacts, config: Config) -> Config:
    """Block sizes no larger than the problem needs: the next power of two of its size, but at
    least the matrix unit's multiple."""
    shape = device.dot_shape(kernel.dtype) if kernel.has_dot else None
    changes = {}
    for axis, size, multiple in (("block_m", kernel.m, shape.m if shape else 1),
                                 ("block_n", kernel.n, shape.n if shape else 1),
                                 ("block_k", kernel.k, shape.k if shape else 1)):
        block = getattr(config, axis)
        if block is not None:
            changes[axis] = min(block, max(next_power_of_two(size), multiple))
    return dataclasses.replace(config, **changes)


def next_power_of_two(size: int) -> int:
    """`triton.next_power_of_2(size)`: the least power of two at least `size` (1 for 0)."""
    return 1 << max(size - 1, 0).bit_length()


def config_error(device: Device, kernel: KernelFacts, config: Config) -> str | None:
    """Why `device` cannot run `config` for `kernel`, or None when it can."""
    launch = device.launch
    warps = config.num_warps
    if warps is not None and warps not in device.num_warps:
        return f"num_warps {warps} is not one of {device.num_warps}"
    unit = device.dot_unit()
    forced = (launch.dot_sub_group_size
              if kernel.has_dot and unit is not None and unit.unit == "dpas" else None)
    if config.warp_size is not None:
        if config.warp_size not in device.sub_group_sizes:
            return f"warp_size {config.warp_size} is not one of {device.sub_group_sizes}"
        if forced is not None and config.warp_size != forced.value:
            return f"a DPAS dot runs at warp_size {int(forced.value)}"
    assert launch.sub_group_size_default is not None
    sub_group = int((forced or launch.sub_group_size_default).value
                    if config.warp_size is None else config.warp_size)
    if warps is not None and warps * sub_group > device.work_group_size_max:
        return (f"{warps} warps of {sub_group} exceed the work-group size "
                f"{device.work_group_size_max}")
    if config.grf_mode not in (None, "default"):
        if device.vendor != "intel":
            return f"grf_mode {config.grf_mode} is Intel's"
        modes = {m.mode: m for m in device.grf_modes()}
        if config.grf_mode != "auto":
            if config.grf_mode not in modes:
                return f"grf_mode {config.grf_mode} is not one of {', '.join(modes)}"
            cap = modes[config.grf_mode].num_warps_max
            if cap is not None and warps is not None and warps > cap:
                return f"grf_mode {config.grf_mode} allows at most {cap} warps"
    shape = device.dot_shape(kernel.dtype) if kernel.has_dot else None
    if shape is not None:
        unit_is_dpas = unit is not None and unit.unit == "dpas"
        # a DPAS M is any repeat count up to the shape's, so only N and K need multiples
        for axis, multiple in (("block_m", 1 if unit_is_dpas else shape.m),
                               ("block_n", shape.n), ("block_k", shape.k)):
            block = getattr(config, axis)
            if block is not None and block % multiple:
                return f"{axis} {block} is not a multiple of the {kernel.dtype} dot's {multiple}"
    return _shared_memory_error(device, kernel, config) or _accumulator_error(device, kernel,
                                                                              config)


#: the most fp32 accumulator values one NVIDIA thread may hold before the dot's operands and
#: addresses spill (ours: on the H200 a 128x256 tile at 4 warps, 256 a thread, ran 5.6x slower
#: than at 8 warps, and a gated MLP's two 128x128 tiles at 4 warps 4.5x slower; one 128x128 tile
#: at 4 warps, 128 a thread, ran as fast as at 8; docs/design-notes.md, Triton emission)
ACCUMULATOR_VALUES_MAX = 128


def _accumulator_error(device: Device, kernel: KernelFacts, config: Config) -> str | None:
    """NVIDIA: the dots' accumulators spread over the warps' threads must leave registers."""
    if device.vendor != "nvidia" or not kernel.has_dot:
        return None
    if None in (config.block_m, config.block_n, config.num_warps):
        return None
    assert config.block_m and config.block_n and config.num_warps
    threads = config.num_warps * int(config.warp_size or 32)
    values = config.block_m * config.block_n * kernel.dots // threads
    if values > ACCUMULATOR_VALUES_MAX:
        return (f"{kernel.dots} accumulator(s) of {config.block_m}x{config.block_n} hold "
                f"{values} values a thread (at most {ACCUMULATOR_VALUES_MAX})")
    return None


def _shared_memory_error(device: Device, kernel: KernelFacts, config: Config) -> str | None:
    """Where the pipeliner buffers every stage in shared memory: num_stages operand tiles
    must fit a work-group's share."""
    if not (device.pipeline and device.pipeline.stages_in_shared_memory and kernel.has_dot):
        return None
    memory = device.memory
    if memory is None or memory.slm_per_work_group_bytes is None:
        return None
    if None in (config.block_m, config.block_n, config.block_k, config.num_stages):
        return None
    assert config.block_m and config.block_n and config.block_k and config.num_stages
    element = DTYPE_BITS[kernel.dtype] // 8
    stage = (config.block_m + kernel.dots * config.block_n) * config.block_k * element
    need = config.num_stages * stage
    share = int(memory.slm_per_work_group_bytes.value)
    if need > share:
        return f"{config.num_stages} stages of {stage} B exceed the {share} B of shared memory"
    return None
