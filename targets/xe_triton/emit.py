"""Printing a lowered kernel (`xt`) as a self-contained Triton 3.6 Python module.

    emitted = emit_triton(tiled_func, device="max1550")
    emitted.text     # the module: imports, one @triton.jit kernel, one host function

The module holds `<name>_kernel`, a `@triton.jit` function whose parameters are the input and
result pointers, the sizes, the block sizes as `tl.constexpr` and `grf_mode: tl.constexpr`
(so the Intel register-file mode reaches the XPU backend's options when passed at launch, and
NVIDIA's Triton, which rejects an unknown launch keyword, sees a kernel parameter), and the
host function `<name>(in0, in1, ..., *, BM=..., num_warps=..., grf_mode="default", out=None)`,
which takes torch tensors, checks their ranks, sizes and dtypes, allocates the results (or
writes them into `out`, tensors the caller passes: checked, row-major), computes the grid and
the padded blocks (`triton.next_power_of_2`) from the sizes and launches. The block sizes
and `num_warps` default to the kernel's concrete tile sizes (`axon.tile_sizes`) or, for
`num_warps`, the device's default from the knowledge base; `num_warps` must be one the device
takes. Only APIs of Triton 3.6 that the Intel XPU backend and the CPU interpreter also take are
used (no libdevice calls: tanh is written with `tl.sigmoid`).

A kernel with a `tl.dot` moves its 2D tiles by block I/O chosen at launch (`block_io`: tensor
descriptors, block pointers or pointers, a `BLOCK_IO` constexpr; the KB's choice by default)
and runs its 2D grid in Triton's grouped order (`GROUP_SIZE_M`); every host function takes
`num_stages` (the KB's default) and `int64` (pointer offsets in int64, by default where a tensor
holds 2**31 elements or more), and the module lists the KB's autotuning grid for the device in
`autotune_configs()`. See docs/xe_triton.md.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue

from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES, reciprocal_division_allowed
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.intexpr import Atom, IntExpr
from axon.dialects.form.scalar import Call, Const, Index, Read, ScalarExpr
from axon.dialects.form.syntax import parse_form
from axon.targets.xe_triton.exp2 import LN_2
from axon.targets.xe_triton.kb import (
    UNKNOWN_HEAD_DIM,
    Config,
    Device,
    KernelFacts,
    Settings,
    autotune_grid,
    load_device,
    settings_for,
)
from axon.targets.xe_triton.kb.pattern import next_power_of_two
from axon.targets.xe_triton.lower import NotSupported, lower_function

#: Triton's name of each dtype, and torch's
TL_DTYPES = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16", "i32": "tl.int32",
             "i1": "tl.int1"}
TORCH_DTYPES = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16",
                "i32": "torch.int32", "i1": "torch.bool"}
#: scalar functions that are one Triton call
#: the largest integer power printed as a product (larger ones through exp and log)
MAX_POWER_PRODUCT = 8
_CALLS = {"exp": "tl.exp", "log": "tl.log", "sqrt": "tl.sqrt", "rsqrt": "tl.rsqrt",
          "sigmoid": "tl.sigmoid", "erf": "tl.erf", "abs": "tl.abs", "max": "tl.maximum",
          "min": "tl.minimum", "select": "tl.where"}
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "eq": "==", "ne": "!=", "lt": "<",
          "le": "<=", "gt": ">", "ge": ">=", "and": "&", "or": "|"}
_REDUCE = {"add": ("tl.sum", "0.0"), "max": ("tl.max", 'float("-inf")'),
           "min": ("tl.min", 'float("inf")')}
#: at most three grid dims (tl.program_id(0..2)); a kernel's leading grid dims past those fold
#: into the first (`_folded`)
GRID_DIMS_MAX = 3


@dataclass(frozen=True)
class EmittedModule:
    """An emitted Triton module: its text, the host function's name, and the launch defaults
    (`options`: `GROUP_SIZE_M`, `num_stages`, `block_io` where the kernel takes them)."""

    text: str
    name: str
    defaults: dict[str, int]
    num_warps: int
    options: dict[str, int | str] = field(default_factory=dict)
    configs: tuple[dict[str, int | str], ...] = ()
    """The KB's autotuning grid for the device, as launch keywords (`autotune_configs()`)."""


def emit_triton(tiled: FuncOp, device: str = "h200",
                tile_sizes: dict[str, int] | None = None, *,
                sizes: Mapping[str, int] | None = None,
                block_io: str | None = None, prologue: str | None = None) -> EmittedModule:
    """`tiled` (one `tile.kernel` and its return) as a Triton module: lowered to `xt`, then
    printed. `tile_sizes` (block sizes, `num_warps`, `num_stages`, `GROUP_M`) override the
    function's `axon.tile_sizes`; `sizes` (the problem's, where known) shape the KB's autotuning
    grid; `block_io` (`tensor_descriptor`, `block_ptr`, `pointer`) overrides the KB's choice of
    the default 2D block I/O; `prologue` (`split`, `fused`) the default for a dot operand
    computed elementwise from one load (`split`: once, in a kernel before the GEMM).
    NotSupported for a kernel that does not lower; ValueError for an unknown device, a
    `num_warps` the device does not take or an unknown `block_io` or `prologue`."""
    return emit_module(lower_function(tiled), device, tile_sizes, sizes=sizes,
                       block_io=block_io, prologue=prologue)


def launch_block_io(kernel: xt.KernelOp, device: Device, tile_sizes: Mapping[str, int],
                    sizes: Mapping[str, int]) -> str | None:
    """How `emit_module` moves `kernel`'s 2-D tiles launched at `tile_sizes` (the KB's
    choice, `pointer` without one), or None where the kernel takes no `block_io`: what the
    structure check counts a descriptor's staged store by before the module is printed."""
    shape = _KernelShape.of(kernel)
    if not shape.block_io:
        return None
    defaults = {p: int(tile_sizes[p]) for p in kernel.param_names() if p in tile_sizes}
    return _default_block_io(settings_for(device, shape.facts(kernel, defaults, sizes)), shape)


def _default_block_io(settings: Settings, shape: _KernelShape) -> str:
    chosen = settings.block_io or "pointer"
    if shape.descriptor_hazard and chosen in DESCRIPTOR_MODES:
        return "block_ptr"
    return chosen


def emit_module(func: FuncOp, device: str = "h200",
                tile_sizes: dict[str, int] | None = None, *,
                sizes: Mapping[str, int] | None = None,
                block_io: str | None = None, prologue: str | None = None) -> EmittedModule:
    """A function holding one `xt.kernel` as a Triton module (see the module docstring)."""
    (kernel,) = [op for op in func.body.block.ops if isinstance(op, xt.KernelOp)]
    name = func.sym_name.data
    chosen = {**concrete_tile_sizes(func), **(tile_sizes or {})}
    dev = load_device(device)
    launch = dev.launch
    num_warps = int(chosen.pop("num_warps", 0) or (
        launch.num_warps_default.value if launch.num_warps_default else 4))
    allowed = launch.num_warps.values if launch.num_warps else (num_warps,)
    if num_warps not in allowed:
        raise ValueError(f"num_warps={num_warps} is not one {device} takes "
                         f"({', '.join(map(str, allowed))})")
    defaults = {p: chosen[p] for p in kernel.param_names() if p in chosen}
    for p, v in defaults.items():
        if v < 1 or v & (v - 1):
            raise ValueError(f"block size {p}={v} is not a power of two")
    if block_io is not None and block_io not in BLOCK_IO_MODES:
        raise ValueError(f"block_io={block_io!r} is not one of {', '.join(BLOCK_IO_MODES)}")
    if prologue is not None and prologue not in PROLOGUE_MODES:
        raise ValueError(f"prologue={prologue!r} is not one of {', '.join(PROLOGUE_MODES)}")
    shape = _KernelShape.of(kernel)
    settings = settings_for(dev, shape.facts(kernel, defaults, sizes or {}))
    options: dict[str, int | str] = {
        "num_stages": int(chosen.get("num_stages", 0)
                          or (settings.num_stages[0] if settings.num_stages else 2))}
    if shape.swizzled:
        options["GROUP_SIZE_M"] = int(chosen.get("GROUP_M", 0) or (
            settings.group_size_m[0] if settings.group_size_m else 1))
    if shape.block_io:
        options["block_io"] = block_io or _default_block_io(settings, shape)
    if shape.prologue:
        options["prologue"] = prologue or "split"
    configs = tuple(kb_launches(kernel, dev, defaults, sizes or {}, shape=shape))
    text = "\n".join([
        f'"""Triton kernel emitted by Axon from @{name}: one @triton.jit kernel and its host',
        'function (Triton 3.6; Intel XPU and NVIDIA; TRITON_INTERPRET=1 on CPU in float32)."""',
        "",
        "import torch",
        "import triton",
        "import triton.language as tl",
        *(["from triton.tools.tensor_descriptor import TensorDescriptor"]
          if shape.block_io else []),
        "", "",
        *_HELPERS,
        "", "",
        *_KernelPrinter(kernel, name, shape).lines(),
        "", "",
        *([*_KernelPrinter(kernel, name, shape).prologue_lines(shape.prologue), "", ""]
          if shape.prologue else []),
        *_host(kernel, name, defaults, num_warps, options, shape, dev),
        "", "",
        *_configs(configs),
        ""])
    return EmittedModule(text, name, defaults, num_warps, options, configs)


def kb_launches(kernel: xt.KernelOp, device: Device, defaults: Mapping[str, int],
                sizes: Mapping[str, int], limit: int = 64, *,
                shape: _KernelShape | None = None) -> list[dict[str, int | str]]:
    """The KB's autotuning grid for `kernel` on `device`, as its host function's keywords:
    the KB's axes on the kernel's own block parameters (an attention kernel's `block_m` on
    its query rows, `block_n` on its key blocks), most preferred first."""
    shape = shape or _KernelShape.of(kernel)
    facts = shape.facts(kernel, defaults, sizes)
    return [shape.launch_config(c) for c in autotune_grid(device, facts, limit=limit)]


def concrete_tile_sizes(func: FuncOp) -> dict[str, int]:
    """The first (best) entry of the function's `axon.tile_sizes`, as `NAME: value`
    (`BM=128 BN=256 BK=64 GROUP_M=1 num_warps=8: 0.238 ms, ...`); empty when it has none."""
    attr = func.attributes.get("axon.tile_sizes")
    if not isinstance(attr, ArrayAttr) or not attr.data:
        return {}
    first = attr.data[0]
    assert isinstance(first, StringAttr)
    head = first.data.split(":", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+)=(\d+)", head)}


#: the most dims of a tensor whose tiles move by block I/O (TMA takes 5)
TILE_RANK_MAX = 5
#: how the GEMM family's 2D tiles are loaded and stored, and the kernel's `BLOCK_IO` for each
#: (`host_descriptor`: a `TensorDescriptor` the host makes and passes, none made on the device)
BLOCK_IO_MODES = {"pointer": 0, "block_ptr": 1, "tensor_descriptor": 2, "host_descriptor": 3}
#: the modes that move tiles by tensor descriptor (the device's or the host's)
DESCRIPTOR_MODES = ("tensor_descriptor", "host_descriptor")
#: a size the emitter does not know (the KB grid's block sizes are then not clamped by it)
UNKNOWN_SIZE = 1 << 16
#: the KB's name of each dtype
_KB_DTYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}
#: names of the swizzled program order's scalars in the kernel
_SWIZZLE_NAMES = ("g_pid", "g_cols", "g_width", "g_first", "g_rows")
#: the kernel's name for the folded leading program ids (`_folded`)
_FOLDED = "f_pid"
#: the prologue kernel's names (`_Prologue`)
_PROLOGUE_NAMES = ("p_row", "p_col", "dst_ptr")
#: the host's `prologue` choices: the operand's maps in the GEMM, or once in a kernel before it
PROLOGUE_MODES = ("fused", "split")

#: a `@triton.jit` helper every module holds: pointer offsets in int64 when the launch says so
_HELPERS = [
    "@triton.jit",
    "def _wide(x, INT64: tl.constexpr):",
    '    """`x` in int64 where a tensor of the launch may hold 2**31 elements or more."""',
    "    if INT64:",
    "        x = x.to(tl.int64)",
    "    return x",
]


@dataclass
class _Tile:
    """A 2D load or store the GEMM family does with block I/O: its tensor, block and
    descriptor."""

    desc: str
    ptr: str
    tensor: TensorType
    block: tuple[IntExpr, ...]


@dataclass
class _KernelShape:
    """What the performance choices read off a lowered kernel: its dot, the params tiling M, N
    and K, whether its 2D grid is swizzled, and the 2D accesses that use block I/O."""

    has_dot: bool = False
    dots: int = 0
    kind: str = "elementwise"
    block_m: str | None = None
    block_n: str | None = None
    block_k: str | None = None
    m_size: str | None = None
    n_size: str | None = None
    k_size: str | None = None
    swizzled: bool = False
    head: IntExpr | None = None
    """An attention kernel's head dim: the block `q @ k^T` contracts (a parameter, a whole
    dim's block or a number)."""
    tiles: list[_Tile] = field(default_factory=list)
    access: dict[Operation, _Tile] = field(default_factory=dict)
    prologue: _Prologue | None = None
    descriptor_hazard: str | None = None
    """Why the kernel's tiles must not move by tensor descriptor (`transformed_loop_load`)."""

    @property
    def block_io(self) -> bool:
        return bool(self.access)

    def transformed_loop_load(self) -> str | None:
        """A tile loaded by block I/O inside a loop that arithmetic reads before a dot (14's
        `x * w` of the rmsnorm folded into the GEMM's K loop), or None. Triton 3.6 on an H100
        computes such a kernel wrong when the tile comes by tensor descriptor and the loop is
        pipelined (`num_stages` 2 or more: max error 0.65 against 0.01, and garbage by a
        descriptor made on the device; right by block pointer, by pointers, or at one stage;
        measured at stop 40). Such a kernel's default is a block pointer."""
        for op in self.access:
            if not isinstance(op, xt.LoadOp) or not isinstance(op.parent_op(), xt.ForOp):
                continue
            if self.prologue is not None and op is self.prologue.load:
                continue  # its maps run in the loop only with prologue="fused" (the host's)
            readers = [u.operation for u in op.results[0].uses]
            while readers:
                user = readers.pop()
                if isinstance(user, xt.ReshapeOp):
                    readers += [u.operation for u in user.results[0].uses]
                elif isinstance(user, xt.MapOp) and not isinstance(
                        parse_form(user.form.data, len(user.inputs)).body, Read):
                    offsets = ", ".join(str(o) for o in op.attrs()["offsets"])
                    return (f"the tile loaded at [{offsets}] inside a loop is computed on "
                            "before its dot")
        return None

    @classmethod
    def of(cls, kernel: xt.KernelOp) -> _KernelShape:
        """The shape of `kernel`: its ops walked once (no recursion: `walk` is iterative)."""
        shape = cls()
        ops = list(kernel.body.walk())
        reduces = {op.kind.data for op in ops if isinstance(op, xt.ReduceOp)}
        shape.dots = sum(isinstance(op, xt.DotOp) for op in ops)
        shape.has_dot = shape.dots > 0
        online = {"max", "add"} <= reduces
        shape.kind = ("attention" if shape.dots >= 2 and online else "matmul" if shape.has_dot
                      else "softmax" if online else "norm" if reduces else "elementwise")
        params, sizes = set(kernel.param_names()), set(kernel.sizes())
        grid = kernel.grid_exprs()
        for axis, (block, size) in enumerate((("block_m", "m_size"), ("block_n", "n_size"))):
            if axis < len(grid):
                tiled = sorted(grid[axis].symbols() & params)
                over = sorted(grid[axis].symbols() & sizes)
                setattr(shape, block, tiled[0] if len(tiled) == 1 else None)
                setattr(shape, size, over[0] if len(over) == 1 else None)
        for op in ops:
            if isinstance(op, xt.ForOp) and shape.block_k is None:
                extent = op.extent_expr().symbols()
                if not extent & sizes:
                    # a loop split across programs walks `NB` blocks of the dim a grid dim
                    # splits in stretches (`ceildiv(L, BK*NB)`): its blocks are BK of L
                    extent = next((g.symbols() - extent for g in grid
                                   if extent & params and extent < g.symbols()), extent)
                tiled = sorted(extent & params - {shape.block_m, shape.block_n})
                over = sorted(extent & sizes)
                if len(tiled) == 1 and len(over) == 1:
                    shape.block_k, shape.k_size = tiled[0], over[0]
        if shape.kind == "attention":
            # rows of queries over the grid (one axis holds a block), keys along the loop: the
            # KB's block_m and block_n (tutorial 06's BLOCK_M, BLOCK_N)
            rows = [(sorted(g.symbols() & params), sorted(g.symbols() & sizes)) for g in grid]
            held = [(block[0], size[0]) for block, size in rows
                    if len(block) == 1 and len(size) == 1]
            shape.block_m, shape.m_size = held[0] if len(held) == 1 else (None, None)
            shape.block_n, shape.n_size = shape.block_k, shape.k_size
            shape.block_k = shape.k_size = None
            first = next(op for op in ops if isinstance(op, xt.DotOp))
            assert isinstance(first.lhs.type, TensorType)
            shape.head = first.lhs.type.shape[1]
        shape.swizzled = shape.has_dot and len(grid) == 2
        if shape.has_dot:
            shape.find_tiles(kernel, ops)
            shape.prologue = _Prologue.of(kernel, ops)
            shape.descriptor_hazard = shape.transformed_loop_load()
        return shape

    def find_tiles(self, kernel: xt.KernelOp, ops: list[Operation]) -> None:
        """The 2D loads (padded with zeros) and stores whose masks are the tensor's bounds
        alone: those a block pointer's or a descriptor's boundary handling covers."""
        args: dict[SSAValue, int] = {arg: n for n, arg in enumerate(kernel.body.block.args)}
        for op in ops:
            if isinstance(op, xt.LoadOp) and op.source in args:
                attrs = op.attrs()
                if attrs["other"] != 0.0:
                    continue
                tensor = _tensor_type(op.source)
                self.add_tile(op, f"in{args[op.source]}_ptr", tensor, list(attrs["offsets"]),
                              list(attrs["shape"]), list(attrs["extents"]))
            elif isinstance(op, xt.StoreOp):
                k = op.result.value.data
                self.add_tile(op, f"out{k}_ptr", kernel.output_types()[k], op.offset_exprs(),
                              list(_tensor_type(op.value).shape), op.extent_exprs())

    def add_tile(self, op: Operation, ptr: str, tensor: TensorType, offsets: list[IntExpr],
                 blocks: list[IntExpr], extents: list[IntExpr]) -> None:
        # a 2D tile, or one of a batched tensor whose leading dims the block takes one lane
        # of (attention's [1, 1, BK, D] tile of one head): its box is 2D either way
        if not 2 <= tensor.rank <= TILE_RANK_MAX or any(
                b != IntExpr.const(1) for b in blocks[:-2]) or not all(
                e == b or (o == IntExpr.const(0) and e == s)
                for s, o, b, e in zip(tensor.shape, offsets, blocks, extents, strict=True)):
            return
        block = tuple(blocks)
        tile = next((t for t in self.tiles if t.ptr == ptr and t.block == block), None)
        if tile is None:
            tile = _Tile(f"desc{len(self.tiles)}", ptr, tensor, block)
            self.tiles.append(tile)
        self.access[op] = tile

    def facts(self, kernel: xt.KernelOp, defaults: Mapping[str, int],
              sizes: Mapping[str, int]) -> KernelFacts:
        """The kernel as the KB sees it; a size not in `sizes` is `UNKNOWN_SIZE`."""
        def size(name: str | None) -> int:
            return sizes.get(name, UNKNOWN_SIZE) if name else 1

        def block(name: str | None) -> int:
            return defaults.get(name, 0) if name else 1

        dtypes = [t.dtype for t in kernel.input_types()] or ["f32"]
        dtype = _KB_DTYPES.get(dtypes[0], "fp32")
        m, n, k = size(self.m_size), size(self.n_size), size(self.k_size)
        bm, bn, bk = block(self.block_m), block(self.block_n), block(self.block_k)
        element = np.dtype(DTYPES[dtypes[0]].storage).itemsize
        tile_bytes = ((bm * bk + self.dots * bk * bn) * element + self.dots * bm * bn * 4
                      if self.has_dot else 0)
        programs = -(-m // bm) * -(-n // bn) if bm and bn else UNKNOWN_SIZE
        return KernelFacts(self.kind, dtype, has_dot=self.has_dot,  # type: ignore[arg-type]
                           m=m, n=n, k=k, grid_dims=len(kernel.grid_exprs()),
                           tile_bytes=tile_bytes, programs=programs, dots=max(self.dots, 1),
                           head_dim=self.head_dim(kernel, defaults, sizes))

    def head_dim(self, kernel: xt.KernelOp, defaults: Mapping[str, int],
                 sizes: Mapping[str, int]) -> int:
        """The head dim's block at these sizes (a whole dim's block is the power of two
        covering it), or `UNKNOWN_HEAD_DIM` (not attention, or a size not given)."""
        if self.head is None:
            return UNKNOWN_HEAD_DIM
        env = {**sizes, **defaults}
        try:
            for block, covered in kernel.block_defs():
                env[block] = next_power_of_two(covered.evaluate(env))
            return self.head.evaluate(env)
        except KeyError:
            return UNKNOWN_HEAD_DIM

    def launch_config(self, config: Config) -> dict[str, int | str]:
        """A KB configuration as the host function's keywords (the axes this kernel has)."""
        out: dict[str, int | str] = {}
        for axis, param in (("block_m", self.block_m), ("block_n", self.block_n),
                            ("block_k", self.block_k)):
            value = getattr(config, axis)
            if param is not None and value is not None:
                out[param] = value
        if self.swizzled and config.group_size_m is not None:
            out["GROUP_SIZE_M"] = config.group_size_m
        for axis in ("num_warps", "num_stages", "grf_mode"):
            value = getattr(config, axis)
            if value is not None:
                out[axis] = value
        return out

@dataclass
class _Prologue:
    """A dot operand computed elementwise from one 2D load that nothing else reads (silu(x) @ w):
    the host may compute it once over the whole tensor in a small kernel (`PROLOGUE`), instead
    of the GEMM recomputing it for every column block."""

    load: xt.LoadOp
    arg: int
    maps: list[xt.MapOp]
    block: tuple[IntExpr, ...]

    @classmethod
    def of(cls, kernel: xt.KernelOp, ops: list[Operation]) -> _Prologue | None:
        """The first dot operand of `kernel` that is such a prologue, or None."""
        args: list[SSAValue] = list(kernel.body.block.args)
        for dot in (op for op in ops if isinstance(op, xt.DotOp)):
            for operand in (dot.lhs, dot.rhs):
                found = cls.chain(operand, args, ops)
                if found is not None:
                    return found
        return None

    @classmethod
    def chain(cls, value: SSAValue, args: list[SSAValue],
              ops: list[Operation]) -> _Prologue | None:
        """`value` as maps over one load, each map elementwise over the load's block (reads at
        the identity index, no index math), the maps read by nothing outside the chain but
        the dot, the load's tensor loaded nowhere else and of the value's dtype."""
        maps: list[xt.MapOp] = []
        loads: set[xt.LoadOp] = set()
        todo = [value]
        while todo:
            owner = todo.pop().owner
            if isinstance(owner, xt.LoadOp):
                loads.add(owner)
            elif isinstance(owner, xt.MapOp) and owner not in maps:
                maps.append(owner)
                todo.extend(owner.inputs)
            elif not isinstance(owner, xt.MapOp):
                return None
        if not maps or len(loads) != 1:
            return None
        (load,) = loads
        source = _tensor_type(load.source)
        block = tuple(load.attrs()["shape"])
        if (load.source not in args or source.rank != 2
                or _tensor_type(value).dtype != source.dtype
                or any(isinstance(op, xt.LoadOp) and op.source == load.source and op is not load
                       for op in ops)):
            return None
        inside: set[Operation] = {*maps, load}
        for m in maps:
            form = parse_form(m.form.data, len(m.inputs))
            names = [IntExpr.sym(d.name) for d in form.parallel]
            if (form.reduction is not None or tuple(_tensor_type(m.results[0]).shape) != block
                    or not all(isinstance(e, Read) and list(e.index) == names
                               or isinstance(e, Call | Const) for e in _nodes(form.body))):
                return None
            users = {use.operation for use in m.results[0].uses}
            if m.results[0] is not value and not users <= inside:
                return None
        if not {use.operation for use in load.results[0].uses} <= inside:
            return None
        ordered = [op for op in ops if isinstance(op, xt.MapOp) and op in maps]
        return cls(load, args.index(load.source), ordered, block)


def _nodes(e: ScalarExpr) -> list[ScalarExpr]:
    """`e` and every expression inside it."""
    out, todo = [], [e]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, Call):
            todo.extend(node.args)
    return out


def _configs(configs: tuple[dict[str, int | str], ...]) -> list[str]:
    lines = ["def autotune_configs():",
             '    """The knowledge base\'s autotuning grid for the device the module was emitted '
             'for, most',
             '    preferred first: keyword arguments of the host function."""',
             "    return ["]
    lines += [f"        {c!r}," for c in configs]
    lines.append("    ]")
    return lines


# ---- integer expressions as Python --------------------------------------------------------------
def py_int(expr: IntExpr, names: dict[str, str] | None = None, kernel: bool = True) -> str:
    """An integer expression as Python text; a symbol in `names` becomes its text there.
    `min`/`max` are `tl.minimum`/`tl.maximum` in a kernel and the builtins on the host."""
    names = names or {}
    if not expr.terms:
        return "0"
    parts = []
    for mono, coeff in expr.terms:
        factors = [_atom(a, names, kernel) for a in mono]
        if coeff != 1 or not factors:
            factors.insert(0, str(coeff))
        parts.append(" * ".join(factors))
    return "(" + " + ".join(parts) + ")" if len(parts) > 1 else parts[0]


def _atom(atom: Atom, names: dict[str, str], kernel: bool) -> str:
    kind = atom.kind
    if kind == "sym":
        sym = atom.name
        return names.get(sym, sym)
    a, b = (py_int(e, names, kernel) for e in atom.args)
    if not b.isidentifier() and not b.isdigit() and not b.startswith("("):
        b = f"({b})"  # a product divides as a whole: `x // (BK * NB)`
    if kind == "floordiv":
        return f"({a} // {b})"
    if kind == "mod":
        return f"({a} % {b})"
    prefix = "tl.minimum" if kind == "min" else "tl.maximum"
    return f"{prefix if kernel else kind}({a}, {b})"


def _float(value: float) -> str:
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    return repr(float(value))


def _tuple(items: list[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _expand(text: str, axis: int, rank: int) -> str:
    """A 1-D block as axis `axis` of a rank-`rank` block (`x[:, None]`)."""
    if rank <= 1:
        return text
    return f"{text}[{', '.join(':' if k == axis else 'None' for k in range(rank))}]"


def _arange(block: IntExpr, axis: int, rank: int) -> str:
    return _expand(f"tl.arange(0, {py_int(block)})", axis, rank)


def _ints(exprs: tuple[IntExpr, ...] | list[IntExpr]) -> list[str]:
    return [py_int(e) for e in exprs]


def _list(exprs: tuple[IntExpr, ...] | list[IntExpr]) -> str:
    return "[" + ", ".join(_ints(exprs)) + "]"


def _strides(t: TensorType) -> list[IntExpr]:
    """A row-major tensor's strides."""
    strides: list[IntExpr] = []
    step = IntExpr.const(1)
    for dim in reversed(t.shape):
        strides.insert(0, step)
        step = step * dim
    return strides


def _tensor_type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


# ---- the kernel ---------------------------------------------------------------------------------
@dataclass
class _KernelPrinter:
    kernel: xt.KernelOp
    name: str
    shape: _KernelShape
    out: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        k, shape = self.kernel, self.shape
        inputs = [f"in{n}_ptr" for n in range(len(k.inputs))]
        outputs = [f"out{n}_ptr" for n in range(len(k.outputs))]
        constexprs = [*k.param_names(), *(n for n, _ in k.block_defs()), "grf_mode", "INT64",
                      *(["BLOCK_IO"] if shape.block_io else []),
                      *(["GROUP_SIZE_M"] if shape.swizzled else []),
                      *(["PROLOGUE"] if shape.prologue else [])]
        _check_names(k, [*inputs, *outputs, *constexprs, *_SWIZZLE_NAMES, "_wide", _FOLDED,
                         *(t.desc for t in shape.tiles), *_PROLOGUE_NAMES])
        params = [*inputs, *outputs, *(f"h{t.desc}" for t in shape.tiles), *k.sizes(),
                  *(f"{c}: tl.constexpr" for c in constexprs)]
        self.out = ["@triton.jit", f"def {self.name}_kernel({', '.join(params)}):"]
        if shape.swizzled:
            self.swizzle()
        else:
            folded = _folded(k)
            pids = k.program_names()
            if folded > 1:  # the leading dims as one, split again (the last varies fastest)
                self.line(1, f"{_FOLDED} = tl.program_id(0)")
                extents = k.grid_exprs()[:folded]
                for n in range(folded - 1, 0, -1):
                    self.line(1, f"{pids[n]} = {_FOLDED} % ({py_int(extents[n])})")
                    self.line(1, f"{_FOLDED} = {_FOLDED} // ({py_int(extents[n])})")
                self.line(1, f"{pids[0]} = {_FOLDED}")
            rest = pids[folded:] if folded > 1 else pids
            for axis, pid in enumerate(rest, start=1 if folded > 1 else 0):
                self.line(1, f"{pid} = tl.program_id({axis})")
        if shape.block_io:
            # descriptors are made once, before any loop (making one writes it to memory)
            self.line(1, f"if BLOCK_IO == {BLOCK_IO_MODES['tensor_descriptor']}:")
            for t in shape.tiles:
                self.line(2, f"{t.desc} = tl.make_tensor_descriptor({t.ptr}, "
                             f"shape={_list(t.tensor.shape)}, strides={_list(_strides(t.tensor))}, "
                             f"block_shape={_list(t.block)})")
            self.line(1, f"elif BLOCK_IO == {BLOCK_IO_MODES['host_descriptor']}:")
            for t in shape.tiles:
                self.line(2, f"{t.desc} = h{t.desc}")
        body = k.body.block
        for arg, ptr in zip(body.args, inputs, strict=True):
            self.names[arg] = ptr
        self.walk(body, 1)
        return self.out

    def prologue_lines(self, prologue: _Prologue) -> list[str]:
        """The prologue kernel: the operand's maps once over the loaded tensor, in tiles of the
        GEMM's block (`p_row`, `p_col`), stored for the GEMM to load in their place."""
        source = _tensor_type(prologue.load.source)
        sizes = sorted({s for d in source.shape for s in d.symbols()})
        blocks = sorted({s for b in prologue.block for s in b.symbols()})
        params = [f"in{prologue.arg}_ptr", "dst_ptr", *sizes,
                  *(f"{b}: tl.constexpr" for b in blocks), "INT64: tl.constexpr"]
        self.out = ["@triton.jit", f"def {self.name}_prologue_kernel({', '.join(params)}):"]
        self.line(1, "p_row = tl.program_id(0)")
        self.line(1, "p_col = tl.program_id(1)")
        block = list(prologue.block)
        at = [block[0] * IntExpr.sym("p_row"), block[1] * IntExpr.sym("p_col")]
        ptr, mask = self.address(f"in{prologue.arg}_ptr", source.shape, at, block, block)
        self.line(1, f"{self.name_of(prologue.load.results[0])} = tl.load({ptr}, mask={mask}, "
                     "other=0.0)")
        for m in prologue.maps:
            self.line(1, f"{self.name_of(m.results[0])} = {self.map_text(m)}")
        ptr, mask = self.address("dst_ptr", source.shape, at, block, block)
        last = self.name_of(prologue.maps[-1].results[0])
        self.line(1, f"tl.store({ptr}, {last}.to({TL_DTYPES[source.dtype]}), mask={mask})")
        return self.out

    def swizzle(self) -> None:
        """The grouped program order of a 2D grid launched as one dim: GROUP_SIZE_M rows of
        tiles run together, so the B tiles they share stay in the L2 (tutorial 03's order)."""
        (row, col), (rows, cols) = self.kernel.program_names(), self.kernel.grid_exprs()
        self.line(1, "g_pid = tl.program_id(0)")
        self.line(1, f"g_cols = {py_int(cols)}")
        self.line(1, "g_width = GROUP_SIZE_M * g_cols")
        self.line(1, "g_first = (g_pid // g_width) * GROUP_SIZE_M")
        self.line(1, f"g_rows = tl.minimum({py_int(rows)} - g_first, GROUP_SIZE_M)")
        self.line(1, f"{row} = g_first + (g_pid % g_width) % g_rows")
        self.line(1, f"{col} = (g_pid % g_width) // g_rows")

    def line(self, depth: int, text: str) -> None:
        self.out.append("    " * depth + text)

    def lead(self, value: SSAValue) -> int:
        """How many leading unit dims the value's block is printed without: all of them but
        the last dim (a batched kernel's `[1, 1, BM, BK]` blocks are `[BM, BK]` in Triton, so
        no `tl.reshape` to rank 4 and back sits between a dot and the math on its result);
        none for a 2D tile moved by block I/O (its descriptor's block has every dim; a tile of
        a batched tensor is reshaped from the descriptor's block as it is loaded)."""
        t = value.type
        if not isinstance(t, TensorType) or (value.owner in self.shape.access and t.rank <= 2):
            return 0
        n = 0
        while n < t.rank - 1 and t.shape[n] == IntExpr.const(1):
            n += 1
        return n

    def printed(self, value: SSAValue) -> list[IntExpr]:
        """The shape of the value's block as the kernel holds it (`lead`)."""
        return list(_tensor_type(value).shape[self.lead(value):])

    def at_shape(self, text: str, shape: list[IntExpr], want: list[IntExpr]) -> str:
        """`text`, a block of `shape`, as one of `want` (the same lanes in order)."""
        return text if shape == want else f"tl.reshape({text}, {_tuple(_ints(want))})"

    def whole(self, value: SSAValue) -> str:
        """The value as a block of every dim of its type."""
        return self.at_shape(self.name_of(value), self.printed(value),
                             list(_tensor_type(value).shape))

    def name_of(self, value: SSAValue) -> str:
        if value not in self.names:
            self.names[value] = f"v{len(self.names)}"
        return self.names[value]

    def walk(self, block: Block, depth: int) -> None:
        # iterative over the ops of all nested blocks: a stack of op iterators
        stack = [(iter(block.ops), depth)]
        while stack:
            ops, level = stack[-1]
            op = next(ops, None)
            if op is None:
                stack.pop()
                continue
            nested = self.print_op(op, level)
            if nested is not None:
                stack.append((iter(nested.ops), level + 1))

    def print_op(self, op: Operation, depth: int) -> Block | None:
        if isinstance(op, xt.ForOp):
            body = op.body.block
            for init, arg, res in zip(op.inits, body.args, op.results, strict=True):
                carried = self.name_of(res)
                self.names[arg] = carried
                self.line(depth, f"{carried} = {self.name_of(init)}")
            self.line(depth, f"for {op.iv.data} in range(0, {py_int(op.extent_expr())}):")
            if not body.args and len(body.ops) == 1:
                self.line(depth + 1, "pass")
            return body
        if isinstance(op, xt.YieldOp):
            loop = op.parent_op()
            if isinstance(loop, xt.ForOp):
                for res, value in zip(loop.results, op.values, strict=True):
                    self.line(depth, f"{self.name_of(res)} = {self.name_of(value)}")
            return None
        prologue = self.shape.prologue
        if isinstance(op, xt.MapOp) and prologue is not None and op in prologue.maps:
            # PROLOGUE: the operand was computed by the prologue kernel and is loaded as it is
            result = self.name_of(op.results[0])
            if op is prologue.maps[-1]:
                self.line(depth, "if PROLOGUE:")
                self.line(depth + 1, f"{result} = {self.name_of(prologue.load.results[0])}")
                self.line(depth, "else:")
            else:
                self.line(depth, "if not PROLOGUE:")
            self.line(depth + 1, f"{result} = {self.value_text(op)}")
            return None
        tile = self.shape.access.get(op)
        if tile is not None:
            self.block_io(op, tile, depth)
            return None
        if isinstance(op, xt.LoadOp) and op.result.uses and all(
                self.squeezed_load(use.operation) is op for use in op.result.uses):
            return None  # read only through its squeezed reshapes, each a load of its own
        if isinstance(op, xt.StoreOp):
            self.store(op, depth)
            return None
        if (isinstance(op, xt.ReshapeOp) and self.squeezed_load(op) is None
                and self.printed(op.source) == self.printed(op.results[0])):
            # only leading unit dims differ, and neither block holds them: the same block
            self.names[op.results[0]] = self.name_of(op.source)
            return None
        result = self.name_of(op.results[0])
        self.line(depth, f"{result} = {self.value_text(op)}")
        return None

    def squeezed_load(self, op: Operation) -> xt.LoadOp | None:
        """The load a reshape reads when the reshape only drops the load's unit dims, each at
        a program id's offset (attention's `[1, 1, BK, D]` tiles of one head, read as
        `[BK, D]`): printed as a load of that rank, the dropped dims scalar offsets, so the
        tile goes to `tl.dot` with no `tl.reshape` between (one the pipeliner and the matrix
        unit's operand layouts take as it is); None for any other reshape."""
        if not isinstance(op, xt.ReshapeOp):
            return None
        load = op.source.owner
        if not isinstance(load, xt.LoadOp) or load in self.shape.access:
            return None
        one = IntExpr.const(1)
        block = _tensor_type(load.results[0]).shape
        kept = [d for d in block if d != one]
        offsets = list(load.attrs()["offsets"])
        programs = set(self.kernel.program_names())
        if (kept == list(block) or kept != list(_tensor_type(op.results[0]).shape)
                or any(d == one and not offsets[k].symbols() & programs
                       for k, d in enumerate(block))):
            return None
        return load

    def load_text(self, op: xt.LoadOp, squeeze: bool = False) -> str:
        """`tl.load` of the op's block without its leading unit dims (`lead`); `squeeze`:
        without any of its unit dims (`squeezed_load`)."""
        t = _tensor_type(op.source)
        attrs = op.attrs()
        block = list(attrs["shape"])
        dropped = ({k for k, d in enumerate(block) if d == IntExpr.const(1)} if squeeze
                   else set(range(self.lead(op.results[0]))))
        ptr, mask = self.address(self.name_of(op.source), t.shape, list(attrs["offsets"]),
                                 block, list(attrs["extents"]), dropped)
        if mask == "None":  # a rank-0 tensor: Triton refuses `other` without a mask
            return f"tl.load({ptr})"
        return f"tl.load({ptr}, mask={mask}, other={_float(attrs['other'])})"

    def value_text(self, op: Operation) -> str:
        if isinstance(op, xt.LoadOp):
            return self.load_text(op)
        if isinstance(op, xt.FullOp):
            t = _tensor_type(op.results[0])
            value = _float(op.value.value.data)
            if not t.shape:
                return value
            shape = _tuple(_ints(self.printed(op.results[0])))
            return f"tl.full({shape}, {value}, {TL_DTYPES[t.dtype]})"
        if isinstance(op, xt.MapOp):
            return self.map_text(op)
        if isinstance(op, xt.ReduceOp):
            return self.reduce_text(op)
        if isinstance(op, xt.DotOp):
            a, b, acc = (self.whole(v) for v in op.operands)
            ta, tb = _tensor_type(op.lhs), _tensor_type(op.rhs)
            if ta.dtype != tb.dtype:
                a, b = f"{a}.to(tl.float32)", f"{b}.to(tl.float32)"
            precision = (', input_precision="ieee"'
                         if "f32" in (ta.dtype, tb.dtype) else "")
            return self.at_shape(f"tl.dot({a}, {b}, {acc}{precision})",
                                 list(_tensor_type(op.results[0]).shape),
                                 self.printed(op.results[0]))
        if isinstance(op, (xt.ReshapeOp, xt.SplitOp, xt.JoinOp, xt.CumsumOp)):
            return self.layout_text(op)
        raise NotSupported(f"'{op.name}' in an xt kernel")

    def reduce_text(self, op: xt.ReduceOp) -> str:
        """`tl.sum` / `tl.max` / `tl.min` over an axis of the printed block, lanes past the
        extent masked; over a dropped unit dim, its one lane (or the identity, none inside)."""
        t = _tensor_type(op.source)
        axis, extent = op.axis.value.data, IntExpr.lift(op.extent.data)
        fn, identity = _REDUCE[op.kind.data]
        source, lead = self.name_of(op.source), self.lead(op.source)
        shape = self.printed(op.source)
        want = self.printed(op.results[0])
        if axis < lead:
            if extent != t.shape[axis]:
                source = f"tl.where(0 < {py_int(extent)}, {source}, {identity})"
            return self.at_shape(source, shape, want)
        at = axis - lead
        if extent != t.shape[axis]:
            source = (f"tl.where({_arange(t.shape[axis], at, len(shape))} < "
                      f"{py_int(extent)}, {source}, {identity})")
        # a 1-D block reduced into a [1] block keeps its dim (Triton's scalar is no block)
        keep = op.keepdims.value.data != 0 or len(shape) == len(want) == 1
        natural = [IntExpr.const(1) if k == at else d for k, d in enumerate(shape)
                   if keep or k != at]
        return self.at_shape(f"{fn}({source}, axis={at}, keep_dims={keep})", natural, want)

    def layout_text(self, op: xt.ReshapeOp | xt.SplitOp | xt.JoinOp | xt.CumsumOp) -> str:
        """A reshape, a split or join of interleaved lanes, or a prefix sum."""
        want = self.printed(op.results[0])
        if isinstance(op, xt.ReshapeOp):
            load = self.squeezed_load(op)
            if load is not None:
                return self.load_text(load, squeeze=True)
            return f"tl.reshape({self.name_of(op.source)}, {_tuple(_ints(want))})"
        names = [self.name_of(v) for v in op.operands]
        shape = self.printed(op.operands[0])
        if isinstance(op, xt.SplitOp):
            if len(shape) < 2:  # the pairs' dim is all that is printed: split every dim
                names, shape = [self.whole(op.source)], list(_tensor_type(op.source).shape)
            return self.at_shape(f"tl.split({names[0]})[{op.half.value.data}]", shape[:-1],
                                 want)
        if isinstance(op, xt.JoinOp):
            return self.at_shape(f"tl.join({names[0]}, {names[1]})",
                                 [*shape, IntExpr.const(2)], want)
        axis = op.axis.value.data - self.lead(op.source)
        if axis < 0:  # a prefix sum along a unit dim: the block itself
            return self.at_shape(names[0], shape, want)
        return self.at_shape(f"tl.cumsum({names[0]}, axis={axis})", shape, want)

    def address(self, ptr: str, sizes: tuple[IntExpr, ...], offsets: list[IntExpr],
                blocks: list[IntExpr], extents: list[IntExpr],
                dropped: set[int] | None = None) -> tuple[str, str]:
        """The pointers of a block at `offsets` of a row-major tensor of `sizes`, and its mask:
        inside the tensor and inside the extents. `dropped`: unit dims of the block left out
        (their offsets are scalars), each mask term then stated once."""
        rank = len(sizes)
        dropped = dropped or set()
        kept = [axis for axis in range(rank) if axis not in dropped]
        terms, masks = [], []
        for axis in range(rank):
            if axis in kept:
                lanes = _arange(blocks[axis], kept.index(axis), len(kept))
                at = lanes if offsets[axis] == IntExpr.const(0) else (
                    f"({py_int(offsets[axis])} + {lanes})")
            else:
                lanes = at = py_int(offsets[axis])
            stride = IntExpr.const(1)
            for later in sizes[axis + 1:]:
                stride = stride * later
            terms.append(at if stride == IntExpr.const(1)
                         else f"_wide({at}, INT64) * {py_int(stride)}")
            masks.append(f"({at} < {py_int(sizes[axis])})")
            if extents[axis] != blocks[axis]:
                masks.append(f"({lanes} < {py_int(extents[axis])})")
        if dropped:
            masks = list(dict.fromkeys(masks))
        return f"{ptr} + {' + '.join(terms) or '0'}", " & ".join(masks) or "None"

    def store(self, op: xt.StoreOp, depth: int) -> None:
        self.line(depth, self.store_text(op))

    def store_text(self, op: xt.StoreOp) -> str:
        k = op.result.value.data
        result = self.kernel.output_types()[k]
        t = _tensor_type(op.value)
        ptr, mask = self.address(f"out{k}_ptr", result.shape, op.offset_exprs(), list(t.shape),
                                 op.extent_exprs(), set(range(self.lead(op.value))))
        value = f"{self.name_of(op.value)}.to({TL_DTYPES[result.dtype]})"
        return f"tl.store({ptr}, {value}, mask={mask})"

    def stored(self, op: xt.StoreOp) -> str:
        """The stored block with every dim (a descriptor's or block pointer's store)."""
        result = self.kernel.output_types()[op.result.value.data]
        return f"{self.whole(op.value)}.to({TL_DTYPES[result.dtype]})"

    def block_io(self, op: Operation, tile: _Tile, depth: int) -> None:
        """A 2D tile through the launch's `BLOCK_IO`: a tensor descriptor, a block pointer
        (zero padding and boundary checks: the masks of the pointer form), or pointers; the
        branches are on a `tl.constexpr`, so each compiled kernel holds one."""
        if isinstance(op, xt.LoadOp):
            offsets = list(op.attrs()["offsets"])
            target = f"{self.name_of(op.results[0])} = "
            plain = target + self.value_text(op)
        else:
            assert isinstance(op, xt.StoreOp)
            offsets = op.offset_exprs()
            plain = self.store_text(op)
        at = _list(offsets)
        rank = tile.tensor.rank
        every = _tuple([str(d) for d in range(rank)])
        block_ptr = (f"tl.make_block_ptr({tile.ptr}, shape={_tuple(_ints(tile.tensor.shape))}, "
                     f"strides={_tuple(_ints(_strides(tile.tensor)))}, "
                     f"offsets={_tuple(_ints(offsets))}, "
                     f"block_shape={_tuple(_ints(tile.block))}, "
                     f"order={_tuple([str(d) for d in reversed(range(rank))])})")
        if isinstance(op, xt.LoadOp):
            full, printed = list(tile.block), self.printed(op.results[0])
            by_desc = f"{target}{self.at_shape(f'{tile.desc}.load({at})', full, printed)}"
            by_ptr = target + self.at_shape(
                f'tl.load({block_ptr}, boundary_check={every}, padding_option="zero")',
                full, printed)
        else:
            by_desc = f"{tile.desc}.store({at}, {self.stored(op)})"
            by_ptr = f"tl.store({block_ptr}, {self.stored(op)}, boundary_check={every})"
        self.line(depth, f"if BLOCK_IO >= {BLOCK_IO_MODES['tensor_descriptor']}:")
        self.line(depth + 1, by_desc)
        self.line(depth, f"elif BLOCK_IO == {BLOCK_IO_MODES['block_ptr']}:")
        self.line(depth + 1, by_ptr)
        self.line(depth, "else:")
        self.line(depth + 1, plain)

    # ---- elementwise math ------------------------------------------------------------------------
    def map_text(self, op: xt.MapOp) -> str:
        """The map's body over its printed block (`lead`); where a read does not fit the
        dropped dims, over every dim, reshaped to the printed block after."""
        form = parse_form(op.form.data, len(op.inputs))
        want = self.printed(op.results[0])
        for lead in dict.fromkeys((self.lead(op.results[0]), 0)):
            try:
                text, shape = self.map_body(op, form, lead)
            except _EveryDim:
                continue
            return self.at_shape(text, shape, want)
        raise AssertionError("a map over every dim reads every operand")

    def map_body(self, op: xt.MapOp, form: GenericForm, lead: int) -> tuple[str, list[IntExpr]]:
        """The map's body over its dims but the first `lead` (unit dims), and that shape."""
        t = _tensor_type(op.results[0])
        shape = list(t.shape[lead:])
        printer = _ScalarPrinter(self, form.parallel, op, lead)
        body = form.body
        # a transpose or broadcast within one dtype moves the block as it is (a bf16 tile
        # stays bf16: the dot takes it transposed from shared memory)
        printer.upcast = not (isinstance(body, Read)
                              and _tensor_type(op.inputs[body.operand]).dtype == t.dtype)
        text = printer.expr(body)
        if not printer.upcast:
            return f"tl.broadcast_to({text}, {_tuple(_ints(shape))})", shape
        dtype = TL_DTYPES[t.dtype]
        if not printer.is_block:
            if not t.shape:
                return text, shape
            return f"tl.full({_tuple(_ints(shape))}, {text}, {dtype})", shape
        return f"tl.broadcast_to(({text}).to({dtype}), {_tuple(_ints(shape))})", shape


class _EveryDim(Exception):
    """A map's read does not fit the map's dropped unit dims: print it over every dim."""


@dataclass
class _ScalarPrinter:
    """A map's scalar body as a Triton expression over blocks of its domain."""

    kernel: _KernelPrinter
    domain: tuple[LoopDim, ...]
    op: xt.MapOp
    lead: int = 0
    """The domain's leading unit dims left out of the printed block (`_KernelPrinter.lead`)."""
    is_block: bool = False
    upcast: bool = True
    """Reads of bf16 and f16 blocks in fp32 (the map computes in fp32)."""

    def position(self, name: str) -> int | None:
        for k, d in enumerate(self.domain):
            if d.name == name:
                return k
        return None

    def block(self, k: int) -> IntExpr:
        upper = self.domain[k].upper
        assert isinstance(upper, IntExpr)
        return upper

    def expr(self, e: ScalarExpr) -> str:
        if isinstance(e, Const):
            if isinstance(e.value, bool):
                return "True" if e.value else "False"
            return _float(e.value) if isinstance(e.value, float) else str(e.value)
        if isinstance(e, Read):
            return self.read(e)
        if isinstance(e, Index):
            lanes = {}
            rank = len(self.domain) - self.lead
            for s in e.expr.symbols():
                k = self.position(s)
                if k is not None and k < self.lead:
                    lanes[s] = "0"  # the one lane of a dropped unit dim
                elif k is not None:
                    self.is_block = True
                    lanes[s] = _arange(self.block(k), k - self.lead, rank)
            return py_int(e.expr, lanes)
        assert isinstance(e, Call), e
        fn = e.fn
        if (fn == "exp" and isinstance(e.args[0], Call) and e.args[0].fn == "mul"
                and e.args[0].args[0] == Const(LN_2)):
            return f"tl.exp2({self.expr(e.args[0].args[1])})"  # exp(ln(2) * y) = 2**y
        args = [self.expr(a) for a in e.args]
        if (fn == "div" and self.is_scalar(e.args[1]) and not isinstance(e.args[0], Const)
                and not self.is_scalar(e.args[0]) and reciprocal_division_allowed(
                    _tensor_type(self.op.results[0]).dtype)):
            # a block times the reciprocal, made once: float32 `/` is the IEEE division
            # sequence for every lane on NVIDIA (the tolerance decision is in dtypes.py)
            return f"({args[0]} * (1.0 / {args[1]}))"
        if fn in _INFIX:
            return f"({args[0]} {_INFIX[fn]} {args[1]})"
        if fn in _CALLS:
            return f"{_CALLS[fn]}({', '.join(args)})"
        (x,) = args[:1]
        simple = {"neg": f"(-{x})", "not": f"({x} == 0)", "relu": f"tl.maximum({x}, 0.0)",
                  "square": f"({x} * {x})", "reciprocal": f"(1.0 / {x})",
                  "silu": f"({x} * tl.sigmoid({x}))",
                  "tanh": f"(2.0 * tl.sigmoid(2.0 * {x}) - 1.0)",
                  "gelu": f"(0.5 * {x} * (1.0 + tl.erf({x} * {1.0 / math.sqrt(2.0)!r})))"}
        if fn in simple:
            return simple[fn]
        if fn == "cast":
            dtype = str(e.param)
            if self.upcast and DTYPES[dtype].is_float and dtype != "f32":
                # rounded to the narrow type as the reference does, then computed on in fp32
                # (NVIDIA's tl.sqrt and friends take no bf16)
                return f"({x}).to({TL_DTYPES[dtype]}).to(tl.float32)"
            return f"({x}).to({TL_DTYPES[dtype]})"
        if fn == "pow":
            p = float(e.param or 0.0)
            if p == 2.0:
                return f"({x} * {x})"
            if p == 0.5:
                return f"tl.sqrt({x})"
            if p == -1.0:
                return f"(1.0 / {x})"
            if p.is_integer() and 0 < abs(p) <= MAX_POWER_PRODUCT:
                # an integer power by products: exp(p * log(x)) is NaN for x < 0
                product = " * ".join([f"({x})"] * int(abs(p)))
                return f"({product})" if p > 0 else f"(1.0 / ({product}))"
            return f"tl.exp({p!r} * tl.log({x}))"
        raise NotSupported(f"the scalar function '{fn}' in Triton")

    def is_scalar(self, e: ScalarExpr) -> bool:
        """Whether `e` is a float read of a rank-0 block: one value for every lane."""
        if not isinstance(e, Read):
            return False
        t = _tensor_type(self.op.inputs[e.operand])
        return not t.shape and DTYPES[t.dtype].is_float

    def read(self, r: Read) -> str:
        value = self.op.inputs[r.operand]
        t = _tensor_type(value)
        text = self.kernel.name_of(value)
        if self.upcast and DTYPES[t.dtype].is_float and t.dtype != "f32":
            text = f"{text}.to(tl.float32)"
        if not t.shape:
            return text
        self.is_block = True
        lead = self.kernel.lead(value)
        if self.lead == 0 and lead:
            text = self.kernel.at_shape(text, self.kernel.printed(value), list(t.shape))
            lead = 0
        for at in r.index[:lead]:  # a dropped unit dim: read at 0 or at a dropped dim's lane
            k = self.position(at.as_symbol or "")
            if not (at == IntExpr.const(0) or (k is not None and k < self.lead)):
                raise _EveryDim
        rank, shape = t.rank - lead, list(t.shape[lead:])
        targets: list[int | None] = []
        for axis, at in enumerate(r.index[lead:]):
            if all(self.position(s) is None for s in at.symbols()):  # a lane, not a dim
                if not (shape[axis] == IntExpr.const(1) and at == IntExpr.const(0)):
                    lane = _arange(shape[axis], axis, rank)
                    text = (f"tl.sum(tl.where({lane} == {py_int(at)}, {text}, 0), "
                            f"axis={axis}, keep_dims=True)")
                    shape[axis] = IntExpr.const(1)
                targets.append(None)
                continue
            k = self.position(at.as_symbol or "")
            if k is None:
                raise NotSupported(f"a read in{r.operand}[{', '.join(map(str, r.index))}] "
                                   f"at {at} (a dim of the domain or a constant)")
            if k < self.lead:
                raise _EveryDim
            targets.append(k - self.lead)
        fixed = [k for k in targets if k is not None]
        if fixed != sorted(fixed):
            if None in targets:
                raise NotSupported(f"a read in{r.operand}[{', '.join(map(str, r.index))}] "
                                   "that both permutes and broadcasts")
            order = sorted(range(rank), key=lambda a: targets[a] or 0)
            text = f"tl.permute({text}, {_tuple([str(a) for a in order])})"
            targets = [targets[a] for a in order]
        domain_rank = len(self.domain) - self.lead
        placed = _place(targets, domain_rank)
        if placed is None and self.lead:
            raise _EveryDim  # a lane read whose unit axis has no place among the kept dims
        if placed is None:
            raise NotSupported(f"a read in{r.operand}[{', '.join(map(str, r.index))}] in a "
                               f"domain of rank {len(self.domain)}")
        if rank == domain_rank:
            return text
        index = [":" if k in placed else "None" for k in range(domain_rank)]
        return f"({text})[{', '.join(index)}]"


def _place(targets: list[int | None], rank: int) -> list[int] | None:
    """Each operand axis's position in the domain: its dim's, or (a broadcast axis) the first
    free one after the previous axis and before the next fixed one; None when there is none."""
    placed: list[int] = []
    for n, k in enumerate(targets):
        if k is not None:
            placed.append(k)
            continue
        low = placed[-1] + 1 if placed else 0
        high = next((t for t in targets[n + 1:] if t is not None), rank)
        free = [p for p in range(low, high) if p not in targets]
        if not free:
            return None
        placed.append(free[0])
    return placed


# ---- the host function --------------------------------------------------------------------------
def _host(kernel: xt.KernelOp, name: str, defaults: dict[str, int], num_warps: int,
          options: Mapping[str, int | str], shape: _KernelShape, dev: Device) -> list[str]:
    inputs = [f"in{n}" for n in range(len(kernel.inputs))]
    params = [f"{p}={defaults[p]}" if p in defaults else p for p in kernel.param_names()]
    knobs = [*([f"GROUP_SIZE_M={options['GROUP_SIZE_M']}"] if shape.swizzled else []),
             f"num_warps={num_warps}", f"num_stages={options['num_stages']}",
             'grf_mode="default"',
             *([f"block_io={options['block_io']!r}"] if shape.block_io else []),
             *([f"prologue={options['prologue']!r}"] if shape.prologue else []), "int64=None",
             "out=None"]
    signature = [*inputs, "*", *params, *knobs]
    lines = [*(_host_helpers(dev) if shape.block_io else []),
             "def _needs_int64(*tensors):",
             '    """Whether a pointer offset may pass 2**31 - 1: a tensor of 2**31 elements or '
             'more."""',
             "    return max(t.numel() for t in tensors) >= 2**31",
             "", "",
             *_WRITTEN_INTO,
             f"def {name}({', '.join(signature)}):",
             f'    """Run @{name} on torch tensors; block sizes are powers of two. `int64`: '
             'pointer',
             "    offsets in int64 (None: where a tensor holds 2**31 elements or more)."
             + (" `block_io`:\n    how the 2D tiles move (tensor descriptors fall back to block "
                "pointers where\n    the tensors do not meet the device's rules)."
                if shape.block_io else "")
             + (f" Block pointers by default:\n    {shape.descriptor_hazard}, which "
                "Triton 3.6 computes wrong by tensor\n    descriptor in a pipelined loop."
                if shape.descriptor_hazard else "")
             + (" `prologue`:\n    \"split\" computes the dot operand's elementwise maps "
                "once in a kernel before the\n    GEMM, \"fused\" in the GEMM for each block."
                if shape.prologue else "")
             + "\n    `out`: the tensors the results are written to, one a result (its shape and "
             "dtype, on the\n    inputs' device, row-major, sharing no memory with an input); "
             'None: new ones."""']
    bound: set[str] = set()
    composite: list[tuple[str, int, IntExpr]] = []
    for arg, t in zip(inputs, kernel.input_types(), strict=True):
        lines.append(f"    if {arg}.dim() != {t.rank} or {arg}.dtype != {TORCH_DTYPES[t.dtype]}:")
        lines.append(f"        raise ValueError(f\"{arg}: expected a {t.rank}-d "
                     f"{TORCH_DTYPES[t.dtype]} tensor, got {{tuple({arg}.shape)}} "
                     f"{{{arg}.dtype}}\")")
        for axis, dim in enumerate(t.shape):
            sym = dim.as_symbol
            if sym is not None and sym not in bound:
                lines.append(f"    {sym} = {arg}.shape[{axis}]")
                bound.add(sym)
            else:
                composite.append((arg, axis, dim))
        lines.append(f"    {arg} = {arg}.contiguous()")
    for arg, axis, dim in composite:  # after every size a dim gives alone (G in G*HKV)
        lines.extend(_solved(arg, axis, dim, bound))
        lines.append(f"    if {arg}.shape[{axis}] != {py_int(dim, kernel=False)}:")
        lines.append(f"        raise ValueError(f\"{arg}: dim {axis} is "
                     f"{{{arg}.shape[{axis}]}}, expected {dim}\")")
    for p in [*kernel.param_names(), *(["GROUP_SIZE_M"] if shape.swizzled else [])]:
        lines.append(f"    if {p} < 1 or {p} & ({p} - 1):")
        lines.append(f'        raise ValueError(f"{p}={{{p}}} is not a power of two")')
    outputs = [f"out{n}" for n in range(len(kernel.output_types()))]
    device = f"{inputs[0]}.device" if inputs else 'torch.device("cpu")'
    results = [(_tuple([py_int(d, kernel=False) for d in t.shape]), TORCH_DTYPES[t.dtype])
               for t in kernel.output_types()]
    lines.append("    if out is None:")
    for out, (out_shape, dtype) in zip(outputs, results, strict=True):
        lines.append(f"        {out} = torch.empty({out_shape}, dtype={dtype}, device={device})")
    lines.append("    else:")
    wanted = ", ".join(f"({out_shape}, {dtype})" for out_shape, dtype in results)
    lines.append(f"        {_tuple(outputs)} = _written_into(out, [{wanted}], {device}, "
                 f"[{', '.join(inputs)}])")
    for b, e in kernel.block_defs():
        lines.append(f"    {b} = triton.next_power_of_2({py_int(e, kernel=False)})")
    if shape.prologue:
        lines += _host_prologue(name, shape.prologue)
    launch_io = []
    if shape.block_io:
        tiles = ", ".join(f"({t.ptr.removesuffix('_ptr')}, {_tuple(_ints(t.block))})"
                          for t in shape.tiles)
        if shape.prologue:
            # the fused prologue's maps read the operand's tile in the K loop: see
            # `_KernelShape.transformed_loop_load`
            lines += [f'    if prologue == "fused" and block_io in {DESCRIPTOR_MODES!r}:',
                      '        block_io = "block_ptr"  # arithmetic on a descriptor\'s tile in '
                      'a pipelined loop: wrong in Triton 3.6']
        lines.append(f"    block_io = _block_io(block_io, [{tiles}])")
        lines.append('    made = block_io == "host_descriptor"')
        for tile in shape.tiles:
            tensor = tile.ptr.removesuffix("_ptr")
            block = ", ".join(_ints(tile.block))
            lines.append(f"    h{tile.desc} = TensorDescriptor({tensor}, list({tensor}.shape), "
                         f"list({tensor}.stride()), [{block}]) if made else None")
        launch_io = ["BLOCK_IO=_BLOCK_IO[block_io]"]
    grid = [py_int(g, kernel=False) for g in kernel.grid_exprs()]
    folded = _folded(kernel)
    if folded > 1:
        grid = [" * ".join(f"({g})" for g in grid[:folded]), *grid[folded:]]
    lines.append(f"    grid = {_tuple([' * '.join(grid)] if shape.swizzled else grid)}")
    launch = [*inputs, *outputs, *(f"h{t.desc}" for t in shape.tiles), *kernel.sizes(),
              *(f"{p}={p}" for p in kernel.param_names()),
              *(f"{b}={b}" for b, _ in kernel.block_defs()), "grf_mode=grf_mode",
              f"INT64=_needs_int64({', '.join([*inputs, *outputs])}) if int64 is None "
              "else bool(int64)", *launch_io,
              *(["GROUP_SIZE_M=GROUP_SIZE_M"] if shape.swizzled else []),
              *(['PROLOGUE=prologue == "split"'] if shape.prologue else []),
              "num_warps=num_warps", "num_stages=num_stages"]
    lines.append(f"    {name}_kernel[grid]({', '.join(launch)})")
    lines.append(f"    return {', '.join(outputs)}")
    return lines


#: the host's check of the tensors a caller passes as `out` (the kernel stores row-major)
_WRITTEN_INTO = [
    "def _written_into(out, results, device, inputs):",
    '    """`out` as the tensors the results are written to: one a result, each of its (shape, '
    'dtype),',
    "    on `device`, row-major and sharing no memory with an input (the kernel may read an "
    'input\n    after it wrote a block); ValueError otherwise."""',
    "    if not isinstance(out, (tuple, list)) or len(out) != len(results):",
    '        raise ValueError(f"out: expected a tuple of {len(results)} tensor(s), got "',
    '                         f"{type(out).__name__}")',
    "    for n, (t, (shape, dtype)) in enumerate(zip(out, results)):",
    "        if tuple(t.shape) != shape or t.dtype != dtype or t.device != device:",
    '            raise ValueError(f"out[{n}]: expected a {shape} {dtype} tensor on {device}, got "',
    '                             f"{tuple(t.shape)} {t.dtype} on {t.device}")',
    "        if not t.is_contiguous():",
    '            raise ValueError(f"out[{n}]: strides {t.stride()} are not row-major")',
    "        if any(t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() "
    "for x in inputs):",
    '            raise ValueError(f"out[{n}]: shares memory with an input")',
    "    return tuple(out)",
    "", ""]


def _folded(kernel: xt.KernelOp) -> int:
    """How many leading grid dims launch as Triton's first (their product; 0 where the grid
    has at most `GRID_DIMS_MAX` dims): a split loop's partials kernel has batch, heads, row
    blocks and stretches."""
    dims = len(kernel.program_names())
    return dims - GRID_DIMS_MAX + 1 if dims > GRID_DIMS_MAX else 0


def _solved(arg: str, axis: int, dim: IntExpr, bound: set[str]) -> list[str]:
    """The host line binding the one size of `dim` no other dim gives alone, where `dim` is
    that size times bound ones (`G = in0.shape[1] // max(HKV, 1)`); none when all are bound;
    NotSupported otherwise."""
    stray = sorted(dim.symbols() - bound)
    if not stray:
        return []
    sym = stray[0]
    rest = dim.substitute({sym: 1})
    if len(stray) > 1 or IntExpr.sym(sym) * rest != dim:
        raise NotSupported(f"input dim {dim}: its sizes {', '.join(stray)} are given by no "
                           "dim alone, nor as one size times others")
    bound.add(sym)
    return [f"    {sym} = {arg}.shape[{axis}] // max({py_int(rest, kernel=False)}, 1)"]


def _host_prologue(name: str, prologue: _Prologue) -> list[str]:
    """The host's `prologue` choice: "split" runs the prologue kernel into a tensor like the
    input, which the GEMM then reads in the input's place."""
    arg = f"in{prologue.arg}"
    source = _tensor_type(prologue.load.source)
    sizes = sorted({s for d in source.shape for s in d.symbols()})
    blocks = sorted({s for b in prologue.block for s in b.symbols()})
    grid = [f"triton.cdiv({py_int(d, kernel=False)}, {py_int(b, kernel=False)})"
            for d, b in zip(source.shape, prologue.block, strict=True)]
    launch = [arg, f"{arg}_pre", *sizes, *(f"{b}={b}" for b in blocks),
              f"INT64=_needs_int64({arg}) if int64 is None else bool(int64)", "num_warps=4"]
    return [f"    if prologue not in {PROLOGUE_MODES!r}:",
            '        raise ValueError(f"prologue={prologue!r} is not one of '
            f'{", ".join(PROLOGUE_MODES)}")',
            '    if prologue == "split":',
            f"        {arg}_pre = torch.empty_like({arg})",
            f"        {name}_prologue_kernel[{_tuple(grid)}]({', '.join(launch)})",
            f"        {arg} = {arg}_pre"]


def _host_helpers(dev: Device) -> list[str]:
    """The host's choice of block I/O: a tensor descriptor where every tile meets the device's
    rules (from its KB entry), else a block pointer; descriptors made on the device take their
    memory from `triton.set_allocator` (NVIDIA)."""
    if dev.tma is not None:
        # TMA: a box of at most 256 lanes a dim whose last dim spans 16 bytes or more (CUDA
        # driver API, cuTensorMapEncodeTiled: boxDim[i] <= 256, boxDim[0] * elementSize a
        # multiple of 16 bytes)
        base, pitch, width, box, box_bytes = (dev.tma.base_alignment_bytes,
                                              dev.tma.stride_alignment_bytes, 0, 256, 16)
    elif dev.block_io is not None:
        io = dev.block_io
        base, pitch, width, box, box_bytes = (io.base_alignment_bytes, io.pitch_alignment_bytes,
                                              io.width_bytes_min, 0, 0)
    else:
        base = pitch = width = box = box_bytes = 0  # no descriptors: block pointers
    rules = [f"t.data_ptr() % {base}",
             f"any(s * size % {pitch} for s in t.stride()[:-1])"]
    if width:
        rules.append(f"t.shape[-1] * size < {width}")
    if box:
        rules += [f"block[-1] * size < {box_bytes}", f"max(block) > {box}"]
    return [
        f"_BLOCK_IO = {BLOCK_IO_MODES!r}",
        "", "",
        "def _block_io(block_io, tiles):",
        '    """`block_io`, or "block_ptr" for "tensor_descriptor" where a (tensor, block) of '
        "`tiles` breaks",
        f"    {dev.name}'s descriptor rules: {' or '.join(rules)}.\"\"\"",
        "    if block_io not in _BLOCK_IO:",
        '        raise ValueError(f"block_io={block_io!r} is not one of " + ", ".join(_BLOCK_IO))',
        f"    if block_io not in {DESCRIPTOR_MODES!r}:",
        "        return block_io",
        *(["    for t, block in tiles:",
           "        size = t.element_size()",
           f"        if {' or '.join(rules)}:",
           '            return "block_ptr"'] if base else ['    return "block_ptr"']),
        '    if block_io == "tensor_descriptor":',
        "        device = tiles[0][0].device",
        "        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, "
        "dtype=torch.int8, device=device))",
        "    return block_io",
        "", ""]


#: names the emitted module binds itself: a program size of one of these would shadow it
_MODULE_NAMES = frozenset({"tl", "triton", "torch", "math", "np", "grid", "num_warps", "made",
                           "TensorDescriptor",
                           "num_stages", "grf_mode", "block_io", "int64", "device",
                           "_BLOCK_IO", "_block_io", "_needs_int64", "_wide", "prologue",
                           "autotune_configs", "out", "_written_into"})


def _check_names(kernel: xt.KernelOp, ours: list[str]) -> None:
    """The program's sizes and the kernel's program ids become Python names beside the
    emitter's own (pointers, block constants, temporaries `v<n>`, the module's imports): a
    clash is "not supported", naming it, never a module that reads the wrong value."""
    for name in [*kernel.sizes(), *kernel.program_names()]:
        if (name in ours or name in _MODULE_NAMES or keyword.iskeyword(name)
                or re.fullmatch(r"(v|h?desc)\d+", name)):
            raise NotSupported(f"the size or program id '{name}' is a name the emitted module "
                               "uses itself")
