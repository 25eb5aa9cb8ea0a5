"""Device profiles: each target's hardware numbers, read from cited YAML data files.

A target keeps its profiles in `targets/<target>/profiles/<name>.yaml`; `load_profile(name)` finds
one by name across targets. Every number is a mapping holding its value and its source, and
`estimate: true` where the number is ours rather than published or measured:

    name: trn2
    description: One Trn2 NeuronCore-v3
    roofline:
      matrix_flops:
        value: 79e12
        source: "SDK@HEAD:nki/guides/architecture/trainium2_arch.rst"
      ...
    memory:            # optional sections; each of their keys is optional too
      psum_banks: {value: 8, source: "..."}

A file is checked when it is read: only known keys, every required key, positive finite numbers, a
non-empty source for each number. A mistake is a ProfileError at the file, line and column of the
offending node (`targets/nki/profiles/trn2.yaml:12:5: error: roofline.bytes_per_s: expected a
positive number, got 'fast'`). The schema is the dataclasses below: a later issue adds a number by
adding a `Quantity | None` field to a section (or a section to `DeviceProfile`), and the loader
reads it with no other change. The reader (`SchemaReader`) reads any such dataclass schema; the
Xe / Triton knowledge base (`targets/xe_triton/kb/`) reads its device and pattern files with it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import yaml

T = TypeVar("T")

#: the `targets` package folder: profiles live in its target subfolders
TARGETS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Quantity:
    """One hardware number and where it comes from."""

    value: float
    source: str
    """The document (and section) the number is taken or derived from."""
    estimate: bool = False
    """True where the number is our own estimate, not a published or measured figure."""


@dataclass(frozen=True)
class Roofline:
    """The peaks of the roofline cost: time(op) = op_overhead_s + max(flops / peak, bytes / bw);
    the tiled cost model (`tiling/cost.py`) also takes a loop's latency floor."""

    matrix_flops: Quantity
    """FLOP/s of the matrix unit at bf16 (contractions: reductions whose body multiplies reads)."""
    vector_flops: Quantity
    """FLOP/s for everything else (elementwise, plain reductions)."""
    bytes_per_s: Quantity
    """Bandwidth of the device memory (HBM) seen by one core."""
    op_overhead_s: Quantity
    """Fixed cost of one op (launch / instruction issue): makes fewer, fused ops cheaper."""
    loop_iteration_s: Quantity | None = None
    """GPU: the least time one iteration of a program's sequential loop takes, whatever it
    computes (the latency of its loads and of the loop-carried chain that pipelining leaves
    exposed): a launch takes at least its waves x one program's iterations x this. Absent on
    a profile whose cost model leaves the term out (the NeuronCores)."""
    unpipelined_loop_iteration_s: Quantity | None = None
    """GPU: the same floor for an iteration of a loop without a contraction in its body. Its
    loads are not software-pipelined (Triton prefetches the loads that feed a `tl.dot`), so
    each iteration waits for its own loads: the floor is the memory latency, several times
    `loop_iteration_s`. Absent: such loops take `loop_iteration_s` too."""


@dataclass(frozen=True)
class Memory:
    """On-chip memory of one core; a target gives the keys that apply to it."""

    partitions: Quantity | None = None
    """NeuronCore: partitions of SBUF and PSUM (the largest partition dim of a tile)."""
    sbuf_bytes: Quantity | None = None
    sbuf_partition_bytes: Quantity | None = None
    sbuf_partition_usable_bytes: Quantity | None = None
    """What a kernel may allocate in one SBUF partition (the rest is reserved)."""
    psum_bytes: Quantity | None = None
    psum_partition_bytes: Quantity | None = None
    psum_banks: Quantity | None = None
    """Banks per PSUM partition: at most this many accumulation groups in flight."""
    psum_bank_bytes: Quantity | None = None
    """Bytes of one PSUM bank in one partition."""
    l2_bytes: Quantity | None = None
    """GPU: the L2 cache every SM shares (serves re-reads of tiles before they reach HBM)."""
    l2_bytes_per_s: Quantity | None = None
    """GPU: bandwidth from L2 to the SMs (every tile a program loads passes through it)."""
    sector_bytes: Quantity | None = None
    """GPU: the unit L2 moves to the SMs; a load narrower than it still moves all of it."""
    shared_per_core_bytes: Quantity | None = None
    """GPU: shared memory of one SM, split among the programs resident on it."""
    shared_per_program_bytes: Quantity | None = None
    """GPU: the most shared memory one program (thread block) may allocate."""
    registers_per_core_bytes: Quantity | None = None
    """GPU: the register file of one SM, split among the programs resident on it."""
    registers_per_program_bytes: Quantity | None = None
    """GPU: the most register bytes one program (thread block) may hold."""
    registers_per_thread_bytes: Quantity | None = None
    """GPU: the most register bytes one thread may hold (a program of W warps: W x
    `warp_threads` times this)."""


@dataclass(frozen=True)
class Limits:
    """Tile-size limits of the core's engines; a target gives the keys that apply to it."""

    psum_bank_free_max: Quantity | None = None
    """Largest free size (fp32 elements per partition) of a PSUM tile."""
    matmul_stationary_free_max: Quantity | None = None
    """Largest free size of a matmul's stationary operand."""
    matmul_moving_free_max: Quantity | None = None
    """Largest free size of a matmul's moving operand."""
    vector_transpose_max: Quantity | None = None
    """NeuronCore: largest partition and free size of a VectorE transpose (`nc_transpose` on
    the Vector engine)."""
    free_dims_max: Quantity | None = None
    """NeuronCore: most free dims an engine's access pattern over an on-chip tile has."""
    neuron_core_version: Quantity | None = None
    """NeuronCore: the core's generation (2 for Trn1's NeuronCore-v2, `nisa.nc_version.gen2`):
    which instructions it has (`nki.isa.exponential` needs NeuronCore-v4)."""
    bn_stats_free_max: Quantity | None = None
    """NeuronCore: the most elements per partition `bn_stats` reads
    (`nl.tile_size.bn_stats_fmax`)."""


@dataclass(frozen=True)
class Parallelism:
    """How many programs of a launch run at once."""

    cores: Quantity | None = None
    """Cores that run programs side by side: SMs on a GPU, 1 for a profile of one NeuronCore."""
    programs_per_core_max: Quantity | None = None
    """GPU: the most programs (thread blocks) resident on one SM at once."""
    warp_threads: Quantity | None = None
    """GPU: the threads of one warp (the unit a program's thread count is counted in)."""
    warps_per_core_max: Quantity | None = None
    """GPU: the most warps resident on one SM at once, over all its programs."""
    warps_per_program_max: Quantity | None = None
    """GPU: the most warps of one program; the counts tried are its powers of two."""
    warps_per_program_default: Quantity | None = None
    """GPU: the warp count a program gets unless another is measurably better (the compiler's
    default)."""


@dataclass(frozen=True)
class NeuronCost:
    """The NeuronCore cost model's constants (`targets/nki/cost/`): engine clocks, per-instruction
    fixed costs, DMA and synchronization. Keys absent on a profile leave their effect out (no
    VectorE perf mode on NC-v2)."""

    pe_hz: Quantity
    """TensorE clock."""
    act_hz: Quantity
    """ScalarE clock."""
    dve_hz: Quantity
    """VectorE clock."""
    pool_hz: Quantity
    """GpSimdE clock."""
    min_ii_cycles: Quantity
    """MIN_II: the least cycles of a VectorE/ScalarE instruction and TensorE's MultiplyMoving
    initiation interval (MM_INIT_LATENCY)."""
    gpsimd_start_cycles: Quantity
    """GPSIMD_START: the fixed part of a GpSimd instruction (iota, affine_select)."""
    act_read_accumulator_cycles: Quantity
    """ActReadAccumulator: reading ScalarE's accumulator registers out (activation's reduce_res)."""
    dynamic_copy_cycles: Quantity
    """The least cycles of tensor_copy_dynamic_src/dst."""
    sync_cycles: Quantity
    """Cycles (at the consumer engine's clock) between a producer's end and a dependent
    instruction's start: semaphore wait plus the SBUF/PSUM access start."""
    dma_queues: Quantity
    """DMA queues a core's transfers are spread over (FIFO within one)."""
    dma_bytes_per_s: Quantity
    """Sustained bandwidth of all of a core's DMA engines together."""
    dma_fixed_s: Quantity
    """Fixed latency of one DMA transfer (descriptors, semaphores), overlapped across queues."""
    dma_efficient_row_bytes: Quantity
    """Contiguous bytes per partition (or HBM row) a transfer needs for full bandwidth."""
    dma_efficiency: Quantity
    """Fraction of `dma_bytes_per_s` a kernel's transfers with long enough rows reach."""
    dma_small_row_efficiency: Quantity
    """Fraction of `dma_bytes_per_s` a transfer with shorter rows reaches."""
    sbuf_ports_dve_pool: Quantity
    """SBUF access ports VectorE and GpSimdE have between them (1: they take turns)."""
    psum_ports_dve_act: Quantity
    """PSUM access ports VectorE and ScalarE have between them (1: they take turns)."""
    dve_perf_mode_copy_speedup: Quantity | None = None
    """VectorE perf mode: throughput factor of tensor_copy/tensor_scalar with 16-bit operands on
    both sides, in SBUF and contiguous."""
    dve_perf_mode_speedup: Quantity | None = None
    """VectorE perf mode: the factor for those ops otherwise (strided, or one side in PSUM) and
    for tensor_tensor with 16-bit operands in SBUF."""


@dataclass(frozen=True)
class DeviceProfile:
    """One device's hardware numbers, each with its source."""

    name: str
    """The file's name without `.yaml`: what `propagate{device=...}` and `load_profile` take."""
    description: str
    roofline: Roofline
    memory: Memory | None = None
    limits: Limits | None = None
    parallelism: Parallelism | None = None
    cost: NeuronCost | None = None

    def quantities(self) -> dict[str, Quantity]:
        """Every number of the profile by its dotted key (`roofline.matrix_flops`)."""
        found: dict[str, Quantity] = {}
        for section in dataclasses.fields(self):
            value = getattr(self, section.name)
            if dataclasses.is_dataclass(value):
                for f in dataclasses.fields(value):
                    quantity = getattr(value, f.name)
                    if quantity is not None:
                        found[f"{section.name}.{f.name}"] = quantity
        return found


class ProfileError(ValueError):
    """A mistake in a profile or knowledge-base file, at a 1-based line and column.

    `str()` gives the compiler-style diagnostic `file:line:col: error: message`.
    """

    def __init__(self, message: str, filename: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.line = line
        self.column = column

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}: error: {self.message}"


def profile_paths() -> dict[str, Path]:
    """Every profile file of every target, by profile name."""
    found: dict[str, Path] = {}
    for path in sorted(TARGETS_DIR.glob("*/profiles/*.yaml")):
        if path.stem in found:
            raise ProfileError(f"profile '{path.stem}' is also defined in "
                               f"{display_path(found[path.stem])}", display_path(path), 1, 1)
        found[path.stem] = path
    return found


def profile_names() -> list[str]:
    """The names of the known profiles, sorted."""
    return sorted(profile_paths())


@functools.cache
def unknown_profile(name: str, what: str = "profile") -> str | None:
    """None when `name` is a profile, else the message a pass option gives (`what` names the
    option's role: a profile, a device)."""
    known = profile_names()
    return None if name in known else f"unknown {what} {name!r}; known: {', '.join(known)}"


def load_profile(name: str) -> DeviceProfile:
    """The profile called `name`; ValueError listing the known ones when there is none."""
    paths = profile_paths()
    if name not in paths:
        raise ValueError(f"unknown device profile '{name}'; known: {', '.join(sorted(paths))}")
    return load_profile_file(paths[name])


def load_profile_file(path: Path) -> DeviceProfile:
    """Read and check one profile file; ProfileError at the offending line and column. The
    file is read every time and parsed once per process for each text it holds (a selection
    asks for its profile dozens of times; the profile is immutable)."""
    return _parsed_profile(display_path(path), path.name, path.read_text())


@functools.lru_cache(maxsize=64)
def _parsed_profile(shown: str, filename: str, text: str) -> DeviceProfile:
    """The checked profile in `text`, the file `filename` shown as `shown` in diagnostics (an
    error is raised again on every read: lru_cache keeps only results)."""
    reader = SchemaReader(shown, text)
    profile = reader.read(DeviceProfile, "empty profile; expected a mapping with name, "
                                         "description and roofline")
    if profile.name != Path(filename).stem:
        raise reader.error_at("name", f"name: '{profile.name}' does not match the file "
                                      f"name '{filename}'")
    return profile


def display_path(path: Path) -> str:
    """The path as diagnostics print it: from the package root for the shipped files."""
    try:
        return path.resolve().relative_to(TARGETS_DIR.parent).as_posix()
    except ValueError:
        return str(path)


_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_INT_TAG = "tag:yaml.org,2002:int"
_STR_TAG = "tag:yaml.org,2002:str"
_BOOL_TAG = "tag:yaml.org,2002:bool"

#: reads a value of a type the schema reader does not know (a parsed condition), from its node
LeafReader = Callable[["SchemaReader", yaml.Node, str], object]


class SchemaReader:
    """Builds a typed dataclass tree from a YAML file's node tree, which keeps each node's
    position, so every mistake is a ProfileError at its line and column.

    The schema is the dataclasses' type hints: a dataclass is a mapping whose keys are its fields
    (`X | None` fields optional); `Quantity` a number with its source; `str`, `bool`, `int` (a
    positive integer), `Literal["a", "b"]` (one of the names); `tuple[X, ...]` a list of X; any
    type in `leaves` is read by its function (the knowledge base's conditions). `nodes` keeps the
    node of every value read by its dotted path (`launch.num_warps.values[2]`), so that checks
    made after reading can point at the offending value.
    """

    def __init__(self, filename: str, text: str,
                 leaves: dict[type, LeafReader] | None = None, root: str = "profile"):
        self.filename = filename
        self.root = root
        self.loader = yaml.SafeLoader(text)
        self.leaves = leaves or {}
        self.nodes: dict[str, yaml.Node] = {}

    def error(self, node: yaml.Node | None, message: str) -> ProfileError:
        """A ProfileError at `node` (the file's start when None)."""
        if node is None:
            return ProfileError(message, self.filename, 1, 1)
        mark = node.start_mark
        return ProfileError(message, self.filename, mark.line + 1, mark.column + 1)

    def error_at(self, path: str, message: str) -> ProfileError:
        """A ProfileError at the value read at dotted `path` (see `nodes`)."""
        return self.error(self.nodes.get(path), message)

    def read(self, cls: type[T], empty: str) -> T:
        """The file as a `cls`; `empty` says what an empty file should have held."""
        # the safe loader's own compose and construct steps (what `yaml.safe_load` runs), kept
        # apart so that every value still has its node, and so its position
        try:
            try:
                root = self.loader.get_single_node()
            except yaml.MarkedYAMLError as err:
                raise _syntax_error(err, self.filename) from None
            if root is None:
                raise self.error(None, empty)
            value = self.struct(cls, root, "")
        finally:
            self.loader.dispose()
        assert isinstance(value, cls)
        return value

    def struct(self, cls: type, node: yaml.Node, path: str) -> object:
        """A dataclass from a mapping node: its fields are the allowed keys."""
        self.nodes[path] = node
        entries = self.mapping(node, path)
        fields = dataclasses.fields(cls)
        hints = get_type_hints(cls)
        known = [f.name for f in fields]
        for key, (key_node, _) in entries.items():
            if key not in known:
                raise self.error(key_node, f"{_join(path, key)}: unknown key; expected one of "
                                           f"{', '.join(known)}")
        values: dict[str, Any] = {}
        for f in fields:
            kind, required = _unwrap_optional(hints[f.name])
            if f.name not in entries:
                if required and f.default is dataclasses.MISSING:
                    raise self.error(node, f"{path or self.root}: missing required key "
                                           f"'{f.name}'")
                continue
            _, value_node = entries[f.name]
            values[f.name] = self.value(kind, value_node, _join(path, f.name))
        return cls(**values)

    def value(self, kind: Any, node: yaml.Node, path: str) -> object:
        """A value of schema type `kind` from `node`."""
        self.nodes[path] = node
        if kind in self.leaves:
            return self.leaves[kind](self, node, path)
        if kind is Quantity:
            return self.quantity(node, path)
        if kind is str:
            return self.string(node, path)
        if kind is bool:
            if not (isinstance(node, yaml.ScalarNode) and node.tag == _BOOL_TAG):
                raise self.error(node, f"{path}: expected true or false, got {_shown(node)}")
            return self.loader.construct_object(node)
        if kind is int:
            return self.integer(node, path)
        if get_origin(kind) is Literal:
            return self.name(node, path, get_args(kind))
        if get_origin(kind) is tuple:
            (item, _) = get_args(kind)
            if not isinstance(node, yaml.SequenceNode):
                raise self.error(node, f"{path}: expected a list, got {_shown(node)}")
            return tuple(self.value(item, item_node, f"{path}[{i}]")
                         for i, item_node in enumerate(node.value))
        return self.struct(kind, node, path)

    def quantity(self, node: yaml.Node, path: str) -> Quantity:
        entries = self.mapping(node, path)
        for key in ("value", "source"):
            if key not in entries:
                raise self.error(node, f"{path}: missing '{key}' (every number carries its "
                                       "value and its source)")
        for key, (key_node, _) in entries.items():
            if key not in ("value", "source", "estimate"):
                raise self.error(key_node, f"{path}.{key}: unknown key; expected one of value, "
                                           "source, estimate")
        value = self.number(entries["value"][1], path)
        source = self.string(entries["source"][1], f"{path}.source")
        estimate = False
        if "estimate" in entries:
            estimate_value = self.value(bool, entries["estimate"][1], f"{path}.estimate")
            assert isinstance(estimate_value, bool)
            estimate = estimate_value
        return Quantity(value, source, estimate)

    def number(self, node: yaml.Node, path: str) -> float:
        value: object = None
        if isinstance(node, yaml.ScalarNode):
            if node.tag in _NUMBER_TAGS:
                value = self.loader.construct_object(node)
            elif node.tag == _STR_TAG and node.style is None:
                # YAML 1.1 reads `790e12` (no dot, no exponent sign) as a string: take it as the
                # number it plainly is
                try:
                    value = float(node.value)
                except ValueError:
                    value = None
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise self.error(node, f"{path}: expected a positive number, got {_shown(node)}")
        return value

    def integer(self, node: yaml.Node, path: str) -> int:
        value: object = None
        if isinstance(node, yaml.ScalarNode) and node.tag == _INT_TAG:
            value = self.loader.construct_object(node)
        if not (isinstance(value, int) and value > 0):
            raise self.error(node, f"{path}: expected a positive integer, got {_shown(node)}")
        return value

    def string(self, node: yaml.Node, path: str) -> str:
        if not (isinstance(node, yaml.ScalarNode) and node.tag == _STR_TAG
                and node.value.strip()):
            raise self.error(node, f"{path}: expected a non-empty string, got {_shown(node)}")
        return str(node.value)

    def name(self, node: yaml.Node, path: str, names: tuple[str, ...]) -> str:
        """One of `names`; a plain scalar's text is taken as written (`grf_mode: 256`)."""
        if not (isinstance(node, yaml.ScalarNode) and node.value in names):
            raise self.error(node, f"{path}: expected one of {', '.join(names)}, got "
                                   f"{_shown(node)}")
        return str(node.value)

    def mapping(self, node: yaml.Node, path: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """The entries of a mapping node by key; a located error for anything else."""
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{path or self.root}: expected a mapping, got "
                                   f"{_shown(node)}")
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not (isinstance(key_node, yaml.ScalarNode) and key_node.tag == _STR_TAG):
                raise self.error(key_node, f"{path or self.root}: keys are names, got "
                                           f"{_shown(key_node)}")
            key = key_node.value
            if key in entries:
                raise self.error(key_node, f"{_join(path, key)}: duplicate key")
            entries[key] = (key_node, value_node)
        return entries


def _syntax_error(err: yaml.MarkedYAMLError, filename: str) -> ProfileError:
    """The parser's complaint at its problem mark, naming where the unclosed construct began."""
    message = f"invalid YAML: {err.problem or err.context}"
    if err.problem and err.context and err.context_mark:
        context = err.context_mark
        message += f" ({err.context} from {context.line + 1}:{context.column + 1})"
    mark = err.problem_mark or err.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return ProfileError(message, filename, line, column)


def _unwrap_optional(hint: Any) -> tuple[type, bool]:
    """`X | None` -> (X, not required); `X` -> (X, required)."""
    if get_origin(hint) in (Union, types.UnionType):
        (kind,) = [a for a in get_args(hint) if a is not type(None)]
        return kind, False
    return hint, True


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return repr(node.value)
    return "a mapping" if isinstance(node, yaml.MappingNode) else "a list"
