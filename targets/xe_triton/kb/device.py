"""Device files of the knowledge base: what a Triton kernel may be on one GPU, and its peaks.

One YAML file per device in `kb/devices/<name>.yaml`, read by the shared schema reader of
`targets/profiles.py` (every number a `Quantity` with its source, or a record of plain integers
with one `source`; a mistake is a ProfileError at its file, line and column). The words are
Triton's and Intel's at once: a *core* is an Xe-core or an SM, a *work-group* a program (thread
block), a *sub-group* a warp, whose size is Triton's `warp_size`, and `num_warps` counts the
sub-groups of a work-group.

A device whose numbers the tiled cost model already reads names that profile (`profile: h200`):
those numbers are then not stated again in the KB file (stating one is an error pointing at it),
and the loaded `Device` takes them from the profile (`PROFILE_FIELDS`), so each number lives in
one file. Checked on load, beyond the schema: `num_warps` values are powers of two that fit a
work-group at the smallest sub-group size; a DPAS unit's execution size is the smallest
sub-group size and each of its shapes has N = that size, M one of its repeat counts and
K = systolic depth x operations per channel of its dtype; a GRF mode's `num_warps_max` is one
of the device's `num_warps`; the constraints every device needs (`REQUIRED`) are present.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from axon.targets.profiles import (
    DeviceProfile,
    Quantity,
    SchemaReader,
    display_path,
    load_profile,
    profile_names,
)

#: element types of a matrix unit's operands, and their bits
DTYPE_BITS = {"bf16": 16, "fp16": 16, "tf32": 32, "fp32": 32, "int8": 8, "fp8": 8}
Dtype = Literal["bf16", "fp16", "tf32", "fp32", "int8", "fp8"]
#: Triton's `grf_mode` values that name a register count (the rest, `default` and `auto`,
#: leave the count to the compiler)
GrfModeName = Literal["128", "256", "512"]


@dataclass(frozen=True)
class ValueSet:
    """A set of allowed integer values (the `num_warps` a launch may take) and its source."""

    values: tuple[int, ...]
    source: str
    estimate: bool = False


@dataclass(frozen=True)
class Launch:
    """What a Triton launch on the device may ask for."""

    num_warps: ValueSet | None = None
    """The `num_warps` (sub-groups per work-group) a launch may take: powers of two."""
    num_warps_default: Quantity | None = None
    """The `num_warps` a launch gets unless it asks for another."""
    num_stages_default: Quantity | None = None
    """The `num_stages` a launch (not an autotune config) gets unless it asks for another."""
    sub_group_sizes: ValueSet | None = None
    """The sub-group sizes (Triton `warp_size`) the device runs."""
    sub_group_size_default: Quantity | None = None
    """The sub-group size a launch gets unless it asks for another (or a dot forces one)."""
    dot_sub_group_size: Quantity | None = None
    """Intel: the sub-group size Triton forces on a kernel whose `tl.dot` runs on DPAS."""
    work_group_size_max: Quantity | None = None
    """The most work-items (threads) of one work-group: num_warps x sub-group size at most."""


@dataclass(frozen=True)
class GrfMode:
    """One register-file mode of an Intel GPU (Triton's `grf_mode`)."""

    mode: GrfModeName
    registers_per_thread: int
    """GRF registers of one hardware thread (one sub-group instance)."""
    threads_per_eu: int
    """Hardware threads an XVE (EU) holds in this mode."""
    source: str
    num_warps_max: int | None = None
    """The most sub-groups of a work-group in this mode, where it lowers the device's."""


@dataclass(frozen=True)
class Registers:
    """The register budget: GRF modes on Intel, registers per thread on NVIDIA."""

    register_bytes: Quantity | None = None
    """Intel: bytes of one GRF register."""
    grf_modes: tuple[GrfMode, ...] | None = None
    """Intel: the register-count modes the device has (the first is the default)."""
    per_thread_bytes: Quantity | None = None
    """NVIDIA: the most register bytes of one thread."""


@dataclass(frozen=True)
class MatrixShape:
    """One instruction shape of a matrix unit: M x N x K for operands of `dtype`."""

    dtype: Dtype
    m: int
    n: int
    k: int
    n_max: int | None = None
    """Where N may grow in steps of `n` (Hopper's wgmma): the largest N."""


@dataclass(frozen=True)
class MatrixUnit:
    """A matrix engine: Intel DPAS (XMX) or an NVIDIA MMA instruction family."""

    unit: Literal["dpas", "mma", "wgmma"]
    used_by_triton: bool
    """False where the hardware has the unit but Triton's `tl.dot` does not use it."""
    shapes: tuple[MatrixShape, ...]
    source: str
    execution_size: int | None = None
    """DPAS: work-items of one instruction (N of every shape)."""
    systolic_depth: int | None = None
    """DPAS: the systolic depth (K = depth x operations per channel)."""
    repeat_counts: tuple[int, ...] | None = None
    """DPAS: the repeat counts (the M of a shape)."""


@dataclass(frozen=True)
class BlockIO:
    """Intel 2D block loads and stores: the hardware limits a tile access must meet."""

    row_bits_max: int
    """elem_bits x tile_width x v_blocks at most this (bits of one row of a block access)."""
    tile_height_max: int
    v_blocks_max: int
    pitch_alignment_bytes: int
    pitch_bytes_min: int
    base_alignment_bytes: int
    width_bytes_min: int
    surface_max: int
    """Surface width and pitch (bytes) and height (rows) at most this."""
    elem_bits: tuple[int, ...]
    source: str


@dataclass(frozen=True)
class Tma:
    """NVIDIA tensor memory access: what a tensor descriptor needs."""

    dims_min: int
    dims_max: int
    base_alignment_bytes: int
    stride_alignment_bytes: int
    source: str
    store_staged_in_shared_memory: bool = False
    """True where a store through a descriptor writes its tile to shared memory first (the
    TMA engine copies it out from there), so the stored tile counts against a work-group's
    share beside the pipeliner's stages."""


@dataclass(frozen=True)
class Pipeline:
    """How Triton's software pipeliner holds the `num_stages` in flight."""

    stages_in_shared_memory: bool
    """True where each stage buffers the operand tiles in shared memory (SLM), so
    num_stages x tile bytes must fit a work-group's share."""
    source: str


@dataclass(frozen=True)
class Compute:
    """Cores, vector engines and clocks."""

    cores: Quantity | None = None
    """Xe-cores or SMs."""
    stacks: Quantity | None = None
    eus: Quantity | None = None
    """Intel: XVEs (EUs) of the whole device."""
    eus_per_core: Quantity | None = None
    threads_per_eu: Quantity | None = None
    """Intel: hardware threads per XVE at the default GRF mode."""
    clock_hz: Quantity | None = None
    """The peak (boost) clock."""
    base_clock_hz: Quantity | None = None


@dataclass(frozen=True)
class Memory:
    """Shared local memory, caches and device memory."""

    slm_per_core_bytes: Quantity | None = None
    slm_per_work_group_bytes: Quantity | None = None
    l1_bytes: Quantity | None = None
    """Per core (on Intel Xe2 and Xe-HPG shared with SLM)."""
    l2_bytes: Quantity | None = None
    device_bytes: Quantity | None = None


@dataclass(frozen=True)
class Peaks:
    """Peak figures of the whole device."""

    matrix_bf16_flops: Quantity | None = None
    vector_fp32_flops: Quantity | None = None
    memory_bytes_per_s: Quantity | None = None


@dataclass(frozen=True)
class Device:
    """One GPU of the Xe / Triton target: its Triton constraints and its peaks."""

    name: str
    description: str
    vendor: Literal["intel", "nvidia"]
    arch: Literal["pvc", "bmg", "dg2", "sm90"]
    """Triton's arch string on Intel (`pvc`, `bmg`, `dg2`); `sm90` for compute capability 9.0."""
    launch: Launch
    profile: str | None = None
    """The cost-model profile (`targets/*/profiles/<name>.yaml`) that holds this device's
    shared numbers; they are then taken from it, not stated here."""
    registers: Registers | None = None
    matrix: tuple[MatrixUnit, ...] | None = None
    block_io: BlockIO | None = None
    tma: Tma | None = None
    pipeline: Pipeline | None = None
    compute: Compute | None = None
    memory: Memory | None = None
    peaks: Peaks | None = None

    def quantities(self) -> dict[str, Quantity]:
        """Every sourced number of the device by dotted key (`peaks.matrix_bf16_flops`)."""
        found: dict[str, Quantity] = {}
        for section in dataclasses.fields(self):
            value = getattr(self, section.name)
            if dataclasses.is_dataclass(value):
                for f in dataclasses.fields(value):
                    quantity = getattr(value, f.name)
                    if isinstance(quantity, Quantity):
                        found[f"{section.name}.{f.name}"] = quantity
        return found

    def sources(self) -> set[str]:
        """Every source the device's numbers cite."""
        found = {q.source for q in self.quantities().values()}
        launch = self.launch
        found |= {s.source for s in (launch.num_warps, launch.sub_group_sizes) if s}
        for records in (self.matrix or (), (self.registers.grf_modes or ())
                        if self.registers else ()):
            found |= {r.source for r in records}
        found |= {r.source for r in (self.block_io, self.tma, self.pipeline) if r}
        return found

    # ---- the constraints, resolved (every one is present after loading: see REQUIRED) ----
    @property
    def num_warps(self) -> tuple[int, ...]:
        """The `num_warps` a launch may take."""
        assert self.launch.num_warps is not None
        return self.launch.num_warps.values

    @property
    def sub_group_sizes(self) -> tuple[int, ...]:
        """The sub-group sizes (Triton `warp_size`) the device runs."""
        assert self.launch.sub_group_sizes is not None
        return self.launch.sub_group_sizes.values

    @property
    def work_group_size_max(self) -> int:
        """The most work-items of one work-group."""
        assert self.launch.work_group_size_max is not None
        return int(self.launch.work_group_size_max.value)

    @property
    def cores(self) -> int:
        """Xe-cores or SMs."""
        assert self.compute is not None and self.compute.cores is not None
        return int(self.compute.cores.value)

    def grf_modes(self) -> tuple[GrfMode, ...]:
        """The register-count GRF modes (none on NVIDIA)."""
        return (self.registers.grf_modes or ()) if self.registers else ()

    def dot_unit(self) -> MatrixUnit | None:
        """The matrix unit Triton's `tl.dot` runs on (None: FMA, as on the Arc A770)."""
        return next((u for u in self.matrix or () if u.used_by_triton), None)

    def dot_shape(self, dtype: str) -> MatrixShape | None:
        """The smallest shape of `dtype` that `tl.dot` runs on the device (None: no such)."""
        unit = self.dot_unit()
        shapes = [s for s in unit.shapes if s.dtype == dtype] if unit else []
        return min(shapes, key=lambda s: (s.m * s.n * s.k)) if shapes else None


#: constraints every device has once its profile is applied
REQUIRED = ("launch.num_warps", "launch.num_warps_default", "launch.sub_group_sizes",
            "launch.sub_group_size_default", "launch.work_group_size_max", "compute.cores",
            "peaks.matrix_bf16_flops")


@dataclass(frozen=True)
class _ProfileField:
    """A KB key a profile gives: the profile's key, how to read it, how to turn it into the KB
    value (None: the quantity as it is)."""

    profile_key: str
    get: Callable[[DeviceProfile], Quantity | None]
    derive: Callable[[Quantity], object] | None = None


def _powers_of_two_up_to(quantity: Quantity) -> ValueSet:
    top = int(quantity.value)
    return ValueSet(tuple(1 << i for i in range(top.bit_length()) if 1 << i <= top),
                    f"the powers of two up to {top}: {quantity.source}", quantity.estimate)


def _threads_per_program(profile: DeviceProfile) -> Quantity | None:
    parallelism = profile.parallelism
    if parallelism is None or not (parallelism.warps_per_program_max
                                   and parallelism.warp_threads):
        return None
    warps, threads = parallelism.warps_per_program_max, parallelism.warp_threads
    return Quantity(warps.value * threads.value,
                    f"{int(warps.value)} warps of {int(threads.value)} threads: "
                    f"{warps.source}; {threads.source}", warps.estimate or threads.estimate)


def _one_value(quantity: Quantity) -> ValueSet:
    return ValueSet((int(quantity.value),), quantity.source, quantity.estimate)


#: KB keys that a named profile gives, with the profile key they come from
PROFILE_FIELDS: dict[str, _ProfileField] = {
    "launch.num_warps": _ProfileField(
        "parallelism.warps_per_program_max",
        lambda p: p.parallelism.warps_per_program_max if p.parallelism else None,
        _powers_of_two_up_to),
    "launch.num_warps_default": _ProfileField(
        "parallelism.warps_per_program_default",
        lambda p: p.parallelism.warps_per_program_default if p.parallelism else None),
    "launch.sub_group_sizes": _ProfileField(
        "parallelism.warp_threads",
        lambda p: p.parallelism.warp_threads if p.parallelism else None, _one_value),
    "launch.sub_group_size_default": _ProfileField(
        "parallelism.warp_threads",
        lambda p: p.parallelism.warp_threads if p.parallelism else None),
    "launch.work_group_size_max": _ProfileField(
        "parallelism.warps_per_program_max x parallelism.warp_threads", _threads_per_program),
    "compute.cores": _ProfileField(
        "parallelism.cores", lambda p: p.parallelism.cores if p.parallelism else None),
    "registers.per_thread_bytes": _ProfileField(
        "memory.registers_per_thread_bytes",
        lambda p: p.memory.registers_per_thread_bytes if p.memory else None),
    "memory.slm_per_core_bytes": _ProfileField(
        "memory.shared_per_core_bytes",
        lambda p: p.memory.shared_per_core_bytes if p.memory else None),
    "memory.slm_per_work_group_bytes": _ProfileField(
        "memory.shared_per_program_bytes",
        lambda p: p.memory.shared_per_program_bytes if p.memory else None),
    "memory.l2_bytes": _ProfileField(
        "memory.l2_bytes", lambda p: p.memory.l2_bytes if p.memory else None),
    "peaks.matrix_bf16_flops": _ProfileField(
        "roofline.matrix_flops", lambda p: p.roofline.matrix_flops),
    "peaks.vector_fp32_flops": _ProfileField(
        "roofline.vector_flops", lambda p: p.roofline.vector_flops),
    "peaks.memory_bytes_per_s": _ProfileField(
        "roofline.bytes_per_s", lambda p: p.roofline.bytes_per_s),
}


def load_device_file(path: Path) -> Device:
    """Read and check one device file; ProfileError at the offending line and column."""
    reader = SchemaReader(display_path(path), path.read_text(), root="device")
    device = reader.read(Device, "empty device file; expected a mapping with name, "
                                 "description, vendor, arch and launch")
    if device.name != path.stem:
        raise reader.error_at("name", f"name: '{device.name}' does not match the file name "
                                      f"'{path.name}'")
    device = _apply_profile(device, reader)
    _check(device, reader)
    return device


def _apply_profile(device: Device, reader: SchemaReader) -> Device:
    """The device with the numbers of its profile filled in; an error where the file states
    one of them itself."""
    if device.profile is None:
        return device
    if device.profile not in profile_names():
        raise reader.error_at("profile", f"profile: unknown profile '{device.profile}'; "
                                         f"known: {', '.join(profile_names())}")
    profile = load_profile(device.profile)
    sections: dict[str, dict[str, object]] = {}
    for key, field in PROFILE_FIELDS.items():
        if key in reader.nodes:
            raise reader.error_at(key, f"{key}: given by profile '{device.profile}' "
                                       f"({field.profile_key}); a number is stated once")
        quantity = field.get(profile)
        if quantity is not None:
            section, name = key.split(".")
            sections.setdefault(section, {})[name] = (
                field.derive(quantity) if field.derive else quantity)
    replaced: dict[str, Any] = {}
    for section, values in sections.items():
        current = getattr(device, section) or _SECTION_TYPES[section]()
        replaced[section] = dataclasses.replace(current, **values)
    return dataclasses.replace(device, **replaced)


_SECTION_TYPES: dict[str, type] = {"launch": Launch, "registers": Registers,
                                   "compute": Compute, "memory": Memory, "peaks": Peaks}


def _check(device: Device, reader: SchemaReader) -> None:
    for key in REQUIRED:
        section, name = key.split(".")
        holder = getattr(device, section)
        if holder is None or getattr(holder, name) is None:
            raise reader.error_at(section if section in reader.nodes else "",
                                  f"{section}: missing required key '{name}'")
    if device.vendor == "intel":
        registers = device.registers
        for name in ("register_bytes", "grf_modes"):
            if registers is None or getattr(registers, name) is None:
                raise reader.error_at("registers" if registers else "",
                                      f"registers: missing required key '{name}' (an Intel "
                                      "device's GRF)")
    work_group_max = device.work_group_size_max
    smallest_sub_group = min(device.sub_group_sizes)
    for i, warps in enumerate(device.num_warps):
        where = f"launch.num_warps.values[{i}]"
        if warps & (warps - 1):
            raise reader.error_at(where, f"launch.num_warps: expected powers of two, got "
                                         f"{warps}")
        if warps * smallest_sub_group > work_group_max:
            raise reader.error_at(where, f"launch.num_warps: {warps} sub-groups of "
                                         f"{smallest_sub_group} exceed the work-group size "
                                         f"{work_group_max}")
    for i, mode in enumerate(device.grf_modes()):
        if mode.num_warps_max is not None and mode.num_warps_max not in device.num_warps:
            raise reader.error_at(f"registers.grf_modes[{i}].num_warps_max",
                                  f"registers.grf_modes[{i}].num_warps_max: expected one of "
                                  f"launch.num_warps, got {mode.num_warps_max}")
    for i, unit in enumerate(device.matrix or ()):
        if unit.unit == "dpas":
            _check_dpas(unit, f"matrix[{i}]", smallest_sub_group, reader)


def _check_dpas(unit: MatrixUnit, path: str, sub_group: int, reader: SchemaReader) -> None:
    """DPAS shapes follow from the sub-group size, the systolic depth and the repeat counts
    (`../shared/reference/xe_triton.md` section 1.3)."""
    for key in ("execution_size", "systolic_depth", "repeat_counts"):
        if getattr(unit, key) is None:
            raise reader.error_at(path, f"{path}: missing required key '{key}' (a DPAS unit)")
    assert unit.execution_size and unit.systolic_depth and unit.repeat_counts
    if unit.execution_size != sub_group:
        raise reader.error_at(f"{path}.execution_size",
                              f"{path}.execution_size: expected the smallest sub-group size "
                              f"{sub_group}, got {unit.execution_size}")
    for j, shape in enumerate(unit.shapes):
        where = f"{path}.shapes[{j}]"
        if shape.n != unit.execution_size:
            raise reader.error_at(f"{where}.n", f"{where}.n: expected the execution size "
                                                f"{unit.execution_size} (a DPAS N is the "
                                                f"sub-group size), got {shape.n}")
        if shape.m not in unit.repeat_counts:
            raise reader.error_at(f"{where}.m", f"{where}.m: expected a repeat count "
                                                f"({', '.join(map(str, unit.repeat_counts))})"
                                                f", got {shape.m}")
        ops_per_channel = min(32 // DTYPE_BITS[shape.dtype], 8)
        k = unit.systolic_depth * ops_per_channel
        if shape.k != k:
            raise reader.error_at(f"{where}.k", f"{where}.k: expected systolic depth "
                                                f"{unit.systolic_depth} x {ops_per_channel} "
                                                f"{shape.dtype} per channel = {k}, got "
                                                f"{shape.k}")
