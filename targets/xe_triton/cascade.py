"""The verification cascade of the Triton target: every candidate, in order, stopping at the first
failure, whose step and reason are recorded.

1. syntax: the module parses, and defines its host function;
2. structure, against the KB device (`kb/devices/*.yaml`): only Triton 3.6 calls the Intel XPU
   backend also takes (`PORTABLE_TL`; ../shared/reference/xe_triton.md section 3.4), `num_warps`,
   `grf_mode` and block sizes the device runs (`kb.config_error`: powers of two, the dot unit's
   multiples, the work-group size, the GRF mode's warp cap), and the estimated register and
   shared-memory (SLM) use of one program within the device's (`Footprint`, below);
3. correctness against the reference interpreter at three or more shapes (`check.compare`),
   sizes that are not multiples of the blocks among them: where CUDA is present and timing is
   asked for, the candidate itself on the GPU in its own dtypes (the program's tolerance for
   them); otherwise its float32 twin (the same kernel and launch with every tensor in f32: the
   interpreter's bf16 `tl.dot` is wrong) on Triton's CPU interpreter;
4. performance, where CUDA is present: the candidate timed at the program's sizes with
   `triton.testing.do_bench` (its own L2 flush; the candidate only supplies the function
   timed), rejected when slower than the faster of torch eager and `torch.compile` of the
   program's torch form (`harness.programs`); without a GPU it passes with "timing skipped: no
   GPU".

A `Job` is plain data, so `check_job` runs in any executor's worker (`selection.executor`).
The footprint is an estimate from block shapes and dtypes: the peak over the kernel's ops of
the tiles live across the op, plus the larger of the tiles it consumes last and those it
defines (a loop's peak is its body's, with what is live around it); pointers and masks are not
counted. Shared memory: on a device whose pipeliner buffers loop loads in shared memory, the
loop's loads times Triton's stage count, a dot operand loaded outside the loops once, and
every reduction's partial results; where a store through a tensor descriptor is staged in
shared memory (the KB's `tma.store_staged_in_shared_memory`) and the launch's `block_io` is a
descriptor, every 2-D tile stored, in its result's dtype.
"""

from __future__ import annotations

import ast
import math
import os
import sys
import tempfile
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, SSAValue

from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.selection.space import Verdict
from axon.targets.xe_triton.emit import BLOCK_IO_MODES
from axon.targets.xe_triton.kb import Config, Device, KernelFacts, config_error, load_device

#: `tl` names of Triton 3.6's core language that the Intel XPU backend also compiles and the CPU
#: interpreter runs (../shared/reference/xe_triton.md 3.3, 3.4): no `tl.extra` (libdevice,
#: vendor intrinsics), no inline assembly; `split` and `join` (rope's pairs) are core ops
#: (`tt.split`, `tt.join`) that the TritonGPU passes the backend shares lower
PORTABLE_TL = frozenset({
    "constexpr", "program_id", "num_programs", "arange", "full", "zeros", "zeros_like",
    "load", "store", "make_block_ptr", "advance", "make_tensor_descriptor", "dot", "sum", "max",
    "min", "argmax", "argmin", "cumsum", "associative_scan", "reduce", "exp", "exp2", "log",
    "log2", "sqrt", "rsqrt", "sigmoid", "erf", "abs", "cos", "sin", "fma", "maximum",
    "minimum", "where", "broadcast_to", "permute", "trans", "reshape", "expand_dims", "view",
    "split", "join",
    "cdiv", "multiple_of", "max_contiguous", "swizzle2d", "static_assert", "static_range",
    "range", "float32", "float16", "bfloat16", "int1", "int8", "int32", "int64"})
#: modules an emitted module may import
PORTABLE_IMPORTS = frozenset({"torch", "triton", "triton.language", "math"})
#: names an emitted module may import from a module: the host-made TMA descriptor (Triton's
#: own host class; the XPU backend takes tensor descriptors too, xe_triton.md section 3.4)
PORTABLE_FROM_IMPORTS = frozenset({("triton.tools.tensor_descriptor", "TensorDescriptor")})
#: Triton's default `num_stages` on NVIDIA (`CUDAOptions.num_stages = 3`, third_party/nvidia/
#: backend/compiler.py at v3.6.0), for a launch that does not set it
TRITON_NUM_STAGES = 3
#: largest input (elements) of a correctness shape: the interpreter is slow
CHECK_ELEMENTS_MAX = 1 << 20
#: a budget for a device whose KB entry gives no register figure
NO_LIMIT = 1 << 62


@dataclass(frozen=True)
class Footprint:
    """One program's estimated on-chip use at a launch configuration, in bytes."""

    register_bytes: int
    shared_bytes: int


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a candidate, as step 2 checks it."""

    facts: KernelFacts
    footprint: Footprint
    kwargs: dict[str, Any]
    """The launch's block sizes and settings (the kernel's host function's keywords)."""


@dataclass(frozen=True)
class Job:
    """One candidate to check: everything the cascade reads, as plain (picklable) data."""

    id: str
    function: str
    module_text: str
    kwargs: dict[str, Any]
    """The keywords the host function is called with (empty for a staged candidate, whose
    launches run at their own host functions' defaults)."""
    device: str
    launches: tuple[Launch, ...]
    """Its kernel launches: one, or a staged candidate's producer then consumer."""
    check_text: str
    """The float32 twin's module (the same kernel and launch, every tensor in f32)."""
    reference_text: str
    """The float32 program, MLIR text, that the reference interpreter runs."""
    check_shapes: tuple[dict[str, int], ...]
    program: str = ""
    """The suite program's name, for step 4's torch baselines."""
    sizes: dict[str, int] = field(default_factory=dict)
    inputs: tuple[tuple[tuple[int, ...], str], ...] = ()
    """Each input's shape at `sizes` and dtype, for step 4."""
    time_on_gpu: bool = True
    """Whether step 4 runs (it times on a GPU where there is one)."""
    check_on_gpu: bool = True
    """Whether step 3 runs the candidate itself on a GPU where there is one."""
    program_text: str = ""
    """The program in its own dtypes, MLIR text: the reference of a check on the GPU."""


def check_job(job: Job) -> Verdict:
    """Run the cascade on `job` (see the module docstring); never raises for a bad candidate."""
    for step, run in (("syntax", syntax_error), ("structure", structure_error),
                      ("correctness", correctness_error)):
        try:
            why = run(job)
        except Exception as err:  # a candidate's own failure is its rejection, not ours
            why = f"raised {_last_line(err)}"
        if why is not None:
            return Verdict(job.id, False, step, why)
    if not job.time_on_gpu:
        return Verdict(job.id, True, timing="timing not asked for")
    return time_job(job)


def time_job(job: Job) -> Verdict:
    """Step 4 alone, for a job that passed steps 1-3 (timings on one GPU are taken one at a
    time: a selection runs these in a single worker); never raises for a bad candidate."""
    try:
        return performance(job)
    except Exception as err:
        return Verdict(job.id, False, "performance", f"raised {_last_line(err)}")


def _last_line(err: BaseException) -> str:
    lines = traceback.format_exception_only(type(err), err)
    return lines[-1].strip() if lines else type(err).__name__


# ---- 1: syntax ---------------------------------------------------------------------------------
def syntax_error(job: Job) -> str | None:
    """Why the module does not parse or lacks its host function, or None."""
    try:
        tree = ast.parse(job.module_text)
    except SyntaxError as err:
        return f"line {err.lineno}: {err.msg}"
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if job.function not in defined:
        return f"no host function '{job.function}'"
    return None


# ---- 2: structure ------------------------------------------------------------------------------
def structure_error(job: Job) -> str | None:
    """Why the module or one of its launches does not fit the KB device, or None."""
    why = api_error(job.module_text)
    device = load_device(job.device)
    for n, launch in enumerate(job.launches):
        if why is not None:
            break
        why = (launch_error(device, launch.facts, launch.kwargs)
               or footprint_error(device, launch.kwargs, launch.footprint))
        if why is not None and len(job.launches) > 1:
            why = f"launch {n + 1} of {len(job.launches)}: {why}"
    return why


def api_error(text: str) -> str | None:
    """The first import or `tl` name outside the portable set, or None."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in PORTABLE_IMPORTS:
                    return f"line {node.lineno}: imports {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (node.module, alias.name) not in PORTABLE_FROM_IMPORTS:
                    return f"line {node.lineno}: imports {alias.name} from {node.module}"
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id == "tl" and node.attr not in PORTABLE_TL):
            return (f"line {node.lineno}: tl.{node.attr} is not a Triton 3.6 API the Intel XPU "
                    "backend takes")
    return None


#: the launch keywords that are KB configuration axes
_AXES = {"BM": "block_m", "BN": "block_n", "BK": "block_k", "num_warps": "num_warps",
         "num_stages": "num_stages", "GROUP_SIZE_M": "group_size_m", "grf_mode": "grf_mode"}
#: the host function's launch keywords that are not block sizes
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "GROUP_SIZE_M", "grf_mode", "block_io",
                            "int64", "prologue"})


def launch_error(device: Device, facts: KernelFacts, kwargs: Mapping[str, Any]) -> str | None:
    """Why `device` cannot launch the kernel with `kwargs`, or None."""
    for name, value in kwargs.items():
        if name not in LAUNCH_OPTIONS and (
                not isinstance(value, int) or value < 1 or value & (value - 1)):
            return f"block size {name}={value} is not a power of two"
    config = Config(**{_AXES[k]: v for k, v in kwargs.items() if k in _AXES})
    why = config_error(device, facts, config)
    return f"{device.name}: {why}" if why else None


def register_budget(device: Device, kwargs: Mapping[str, Any]) -> tuple[int, str]:
    """Register bytes one program of `kwargs["num_warps"]` warps may hold, and what sets it."""
    warps = int(kwargs.get("num_warps") or (device.launch.num_warps_default.value
                                            if device.launch.num_warps_default else 4))
    registers = device.registers
    modes = device.grf_modes()
    if modes and registers is not None and registers.register_bytes is not None:
        asked = str(kwargs.get("grf_mode", "default"))
        named = [m for m in modes if m.mode == asked]
        # default and auto: the compiler may take the large mode (xe_triton.md 1.2)
        usable = named or [m for m in modes if m.num_warps_max is None or warps <= m.num_warps_max]
        mode = max(usable or modes, key=lambda m: m.registers_per_thread)
        per_warp = mode.registers_per_thread * int(registers.register_bytes.value)
        return warps * per_warp, f"{warps} warps at grf_mode {mode.mode}"
    if registers is not None and registers.per_thread_bytes is not None:
        lanes = int(device.launch.sub_group_size_default.value
                    if device.launch.sub_group_size_default else 32)
        return (warps * lanes * int(registers.per_thread_bytes.value),
                f"{warps} warps of {lanes} threads")
    return NO_LIMIT, "no register limit known"


#: the launch's `block_io` values that move 2-D tiles through tensor descriptors (`emit.py`'s
#: `BLOCK_IO_MODES` from `tensor_descriptor` up)
DESCRIPTOR_IO = tuple(mode for mode, n in BLOCK_IO_MODES.items()
                      if n >= BLOCK_IO_MODES["tensor_descriptor"])


def footprint_error(device: Device, kwargs: Mapping[str, Any],
                    footprint: Footprint) -> str | None:
    """Why the estimated footprint overflows the device's registers or shared memory, or None."""
    budget, what = register_budget(device, kwargs)
    if footprint.register_bytes > budget:
        return (f"{device.name}: an estimated {footprint.register_bytes // 1024} KiB of live "
                f"tiles exceed the {budget // 1024} KiB of registers of {what}")
    memory = device.memory
    if memory is not None and memory.slm_per_work_group_bytes is not None:
        share = int(memory.slm_per_work_group_bytes.value)
        if footprint.shared_bytes > share:
            return (f"{device.name}: an estimated {footprint.shared_bytes // 1024} KiB of shared "
                    f"memory exceed the {share // 1024} KiB of one work-group")
    return None


def footprint(kernel: xt.KernelOp, device: Device, env: Mapping[str, int],
              stages: int = TRITON_NUM_STAGES, block_io: str | None = None) -> Footprint:
    """The estimated footprint of one program of `kernel` with every size and block bound by
    `env`, its loops pipelined in `stages` stages, its 2-D tiles moved by `block_io` (the
    launch's `block_io`; see the module docstring)."""
    bound = bound_blocks(kernel, env)
    registers = _peak(kernel.body.block, bound, with_args=False)
    pipelined = device.pipeline is not None and device.pipeline.stages_in_shared_memory
    staged = device.tma is not None and device.tma.store_staged_in_shared_memory \
        and block_io in DESCRIPTOR_IO
    outputs = kernel.output_types()
    shared = 0
    for op in kernel.walk():
        if staged and isinstance(op, xt.StoreOp) and _rank(op.value) >= 2:
            # stored through a descriptor: the tile, in the result's dtype, staged in shared
            # memory for the TMA copy (05's GEMM: its f32 128x256 tile, 128 KiB)
            t = op.value.type
            assert isinstance(t, TensorType)
            result = outputs[op.result.value.data]
            shared += math.prod(d.evaluate(bound) for d in t.shape) * \
                DTYPES[result.dtype].storage.itemsize
        elif isinstance(op, xt.ReduceOp):
            shared += _bytes(op.results[0], bound)
        elif pipelined and isinstance(op, xt.LoadOp) and isinstance(op.parent_op(), xt.ForOp):
            shared += stages * _bytes(op.results[0], bound)
        elif pipelined and isinstance(op, xt.LoadOp) and _feeds_dot(op):
            # loaded once, held in shared memory for the matrix unit across the loop
            # (mlp's second stage: a [64, 1024] x block, 128 KiB, took it past the H200's)
            shared += _bytes(op.results[0], bound)
    return Footprint(registers, shared)


def _rank(value: SSAValue) -> int:
    t = value.type
    return t.rank if isinstance(t, TensorType) else 0


def _feeds_dot(load: xt.LoadOp) -> bool:
    """Whether the load's tile is an operand of a `tl.dot`, directly or through reshapes
    (a worklist over the uses: no recursion)."""
    work = [load.results[0]]
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.operation
            if isinstance(user, xt.DotOp) and value in (user.lhs, user.rhs):
                return True
            if isinstance(user, xt.ReshapeOp):
                work.append(user.results[0])
    return False


def bound_blocks(kernel: xt.KernelOp, env: Mapping[str, int]) -> dict[str, int]:
    """`env` and the kernel's padded blocks (`B_N = next_power_of_2(N)`) bound in it."""
    bound = dict(env)
    for name, expr in kernel.block_defs():
        bound[name] = 1 << max(expr.evaluate(bound) - 1, 0).bit_length()
    return bound


def _bytes(value: SSAValue, env: Mapping[str, int]) -> int:
    t = value.type
    if not isinstance(t, TensorType):
        return 0
    return math.prod(d.evaluate(env) for d in t.shape) * DTYPES[t.dtype].storage.itemsize


def _peak(block: Block, env: Mapping[str, int], with_args: bool = True) -> int:
    """The peak live tile bytes of `block`, its arguments among them when `with_args` (a
    loop's carried tiles, not the kernel's tensors in memory); recursing into loop bodies: the
    depth is the kernel's loop nesting, at most `tiling.kernels.MAX_LOOPS`."""
    ops = list(block.ops)
    last_use: dict[SSAValue, int] = {}
    defined: dict[SSAValue, int] = {a: -1 for a in block.args} if with_args else {}
    for n, op in enumerate(ops):
        for r in op.results:
            defined[r] = n
    for n, op in enumerate(ops):
        for nested in op.walk():
            for operand in nested.operands:
                if operand in defined:
                    last_use[operand] = max(last_use.get(operand, n), n)
    peak = 0
    for n, op in enumerate(ops):
        through = sum(_bytes(v, env) for v, d in defined.items()
                      if d < n and last_use.get(v, d) > n)
        dying = sum(_bytes(v, env) for v, d in defined.items()
                    if d < n and last_use.get(v, d) == n)
        made = sum(_bytes(r, env) for r in op.results)
        inner = max((_peak(region.block, env) for region in op.regions if region.blocks),
                    default=0)
        peak = max(peak, through + max(dying, made, inner))
    return peak


# ---- 3: correctness ----------------------------------------------------------------------------
def correctness_error(job: Job) -> str | None:
    """Why the candidate disagrees with the reference interpreter at a check shape, or None:
    on the GPU where there is one and timing is asked for, else its float32 twin on the CPU
    interpreter (see the module docstring)."""
    from axon.targets.xe_triton.check import compare, load_module
    from axon.targets.xe_triton.emit import EmittedModule
    from axon.tools.embed import parse_mlir

    gpu = job.check_on_gpu and bool(job.program_text) and cuda_present()
    text = job.program_text if gpu else job.reference_text
    (reference,) = [op for op in parse_mlir(text, "reference.mlir").ops
                    if isinstance(op, FuncOp)]
    module_text = job.module_text if gpu else job.check_text
    with tempfile.TemporaryDirectory() as scratch:
        module = load_module(EmittedModule(module_text, job.function, {}, 0), Path(scratch),
                             interpret=not gpu)
        try:
            checks = compare(reference, module, job.function, job.check_shapes,
                             options=job.kwargs, device="cuda" if gpu else "cpu")
        finally:
            sys.modules.pop(f"axon_emitted_{job.function}", None)
    for check in checks:
        if not check.passed:
            shown = ",".join(f"{k}={v}" for k, v in check.sizes.items())
            return (f"differs from the reference interpreter at {shown} (max abs error "
                    f"{check.max_abs_error:.3g})")
    return None


def cuda_present() -> bool:
    """Whether a CUDA device is present (torch's view)."""
    import torch

    return bool(torch.cuda.is_available())


def check_shapes(symbols: list[str], tiled: Mapping[str, int],
                 input_elements: Any) -> tuple[dict[str, int], ...]:
    """Three bindings of `symbols` for step 3: small distinct sizes, all ones, and each size
    that a block tiles (`tiled`: the size's block) just past that block, so the kernel runs
    more than one block and a partial last one (the others small); halved while an input would
    hold more than CHECK_ELEMENTS_MAX elements (`input_elements(sizes)` says the largest)."""
    small = {s: 3 + 2 * k for k, s in enumerate(symbols)}
    ones = dict.fromkeys(symbols, 1)
    past = {s: tiled[s] + 3 + k if s in tiled else 5 + k for k, s in enumerate(symbols)}
    while input_elements(past) > CHECK_ELEMENTS_MAX and max(past.values()) > 8:
        past = {s: max(v // 2 + 1, 2) for s, v in past.items()}
    return small, ones, past


def tiled_sizes(kernel: xt.KernelOp, blocks: Mapping[str, int]) -> dict[str, int]:
    """Each size that one block parameter tiles (over the grid or a loop), and that block."""
    sizes = set(kernel.sizes())
    extents = [*kernel.grid_exprs(),
               *(op.extent_expr() for op in kernel.walk() if isinstance(op, xt.ForOp))]
    found: dict[str, int] = {}
    for expr in extents:
        names = expr.symbols()
        params = [p for p in kernel.param_names() if p in names and p in blocks]
        if len(params) == 1:
            for s in names & sizes:
                found[s] = max(found.get(s, 0), blocks[params[0]])
    return found


# ---- 4: performance ----------------------------------------------------------------------------
def performance(job: Job) -> Verdict:
    """Step 4 (see the module docstring). The baselines are timed and the timer bound before
    the candidate's module is imported, so nothing it does at import can change them, and each
    candidate runs in its own worker call."""
    import torch

    if not torch.cuda.is_available():
        return Verdict(job.id, True, timing="timing skipped: no GPU")
    import importlib.util

    os.environ.pop("TRITON_INTERPRET", None)
    import triton.testing

    bench = triton.testing.do_bench
    torch.manual_seed(0)
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    args = [torch.randn(shape, device="cuda", dtype=dtypes[dtype]) for shape, dtype in job.inputs]
    baselines = _baselines(job.program)
    times = {name: float(bench(lambda f=f: f(*args)))  # type: ignore[misc]
             for name, f in (baselines or {}).items()}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"{job.function}_gpu.py"
        path.write_text(job.module_text)
        spec = importlib.util.spec_from_file_location(f"axon_timed_{job.function}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        run = getattr(module, job.function)
        measured = float(bench(lambda: run(*args, **job.kwargs)))
    if not times:
        return Verdict(job.id, True, measured_ms=measured,
                       timing=f"no torch form of {job.program}: not compared")
    best = min(times, key=lambda k: times[k])
    if measured > times[best]:
        return Verdict(job.id, False, "performance",
                       f"{measured:.4f} ms, slower than {best} ({times[best]:.4f} ms)",
                       measured, times[best], best)
    return Verdict(job.id, True, measured_ms=measured, baseline_ms=times[best], baseline=best)


def _baselines(program: str) -> dict[str, Any] | None:
    """torch eager and torch.compile of the program's torch form, or None without one."""
    import torch

    from axon.targets.xe_triton.harness.programs import PROGRAMS

    form = PROGRAMS.get(program)
    if form is None:
        return None
    return {"torch eager": form, "torch.compile": torch.compile(form)}
