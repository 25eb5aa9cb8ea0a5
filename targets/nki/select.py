"""Empirical selection of a program's NKI kernel: candidates emitted, simulated, checked, priced.

The candidates of a function at concrete sizes on a NeuronCore profile:

- each proved tiling that fits the profile (`tiling/search.py`'s `tile_program`), at each of its
  best concrete tile sizes by the tiled cost model (the search keeps the best 3 of the sizes
  its constraints allow: the rest are pruned there), lowered to `nki` and the lowering proved
  (`lower.py`; a tiling that does not lower is rejected with the reason);
- the **unfused chain** (`chain_module`): one kernel per `ax` op, each the first proved tiling
  of the op alone that lowers, at its best tile sizes (`first_kernel`), chained through HBM;
- the unfused chain of each **nu-graph variant** tiled with the program (`tiled_programs`:
  every variant proved equal to the program by propagation): an algebraic rewrite may pay
  off only unfused. gemm_sum_scale's `sum(x @ w, axis=1)` is the variant `x @ sum(w,
  axis=1)`, whose row sums of w are a kernel of their own that reads w once, where every
  fused tiling reads it once per row block (M=1024, K=N=8192 on trn2: 9502.5 -> 961.1 us).

They are taken in this order, at most `max_candidates` of them: the best tile sizes of every
tiling by the tiled cost model (cheapest tiling first; the program's own, its chain, then the
variants'), the variants' chains, then the tilings' other tile sizes; the rest are pruned by
the bound, which counts only candidates that lower (a variant's chain is emitted when taken:
one whose op does not lower takes no place). Each candidate is emitted as one module (the
chain as one module of several `@nki.jit` kernels and a host function calling them in order),
run on the simulator (`simulator/`, the profile's limits, a simulator warning an error), its
result checked against the reference interpreter on the same inputs (standard normal ones
unless given), and priced by the calibrated NeuronCore cost model (`cost/`: the sum of the
kernels' latencies for the chain, no launch cost). The result is right when it is within the
tolerance of the interpreter's rounded run (every intermediate rounded to its dtype, as the
chain does in HBM) or of its exact run (float64 throughout, which a fused kernel's fp32
intermediates approach). A candidate the simulator stops or that computes a wrong result is
rejected with the reason, never selected; the cheapest of the others wins.

The fastest right fused candidate is then printed the other ways `EMISSIONS` lists, each a
candidate checked and priced the same way: its intermediates in the program's 16-bit dtype
(`narrow.py`: the rounding the program's own ops do; VectorE's perf mode needs 16-bit on every
side) and its blocks in dependence order (`schedule.py`: an in-order engine's queue does not
wait on another engine while its own work is ready). Neither wins everywhere under the cost
model: rope gains from the first alone, gqa from the second. Where the sizes are multiples of
its tiles, its tiled kernel without the remainder masks (`tiling/specialize.py`: proved under
`S mod B == 0` and `B <= S`, which the kernel asserts when traced) is lowered and printed its
own way and the other ways too (gqa at S = L = 512: 368.1 -> 222.2 us with all three).
The best candidate's tiled kernel is also lowered with the lowerings synthesis admits for its
tile ops in place of the lowering's own sequence (`synthesized.py`, at most
`MAX_SYNTHESIZED`, one choice at a time, each where its size conditions hold at the sizes):
a row sum by an activation's reduction on ScalarE or a matmul against a ones column on
TensorE, a prefix sum by a triangular matmul; each kernel is proved equal to its tiled kernel,
then checked and priced like any candidate (cumsum of 128-column rows: the triangular matmul,
3.6 us against the scan's 3.7).
Each base is also printed with its engines balanced over the whole kernel at the sizes
(`KERNEL_ENGINES`, where that moves an instruction the block-by-block balance does not):
rmsnorm_matmul's scale of x's transposed tiles stays on VectorE beside ScalarE's loop of
squares (48.4 -> 47.9 us), while attention's online loop is shorter balanced on its own.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from axon.dialects.ax import (
    BroadcastToOp,
    CumsumOp,
    MatmulOp,
    MeanOp,
    ReshapeOp,
    SumOp,
    TensorType,
    TransposeOp,
)
from axon.dialects.ax.creation import ConstantOp
from axon.dialects.form.dtypes import DTYPES, numpy_dtype
from axon.dialects.form.interface import generic_form, has_form
from axon.interpreter import run_function
from axon.nugraph.cost import RooflineCost
from axon.selection.executor import Executor
from axon.selection.variants import program_variants, unnamed
from axon.targets.nki.chunk import COLUMN_CHUNKS, chunk_count, emit_chunked
from axon.targets.nki.cost import estimate, load_constants
from axon.targets.nki.emit import EmittedKernel, emit_nki, engines_differ
from axon.targets.nki.fold import FOLD, emit_folded, fold_factor
from axon.targets.nki.fuse import lower_and_fuse
from axon.targets.nki.lower import LoweredKernel, NotTaken, Refused, kernel_of
from axon.targets.nki.narrow import narrowed, narrowed_past_statistics
from axon.targets.nki.pair import COUNTS, paired_text
from axon.targets.nki.pair import way as paired_way
from axon.targets.nki.schedule import scheduled
from axon.targets.nki.simulator import SimulationWarning, Trace, load_kernel, simulate
from axon.targets.nki.simulator.errors import KernelError, SimulationError
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.nki.synthesized import Choice, alternatives
from axon.targets.nki.widen import chain_proof, widened_chain, widened_parts
from axon.targets.profiles import load_profile
from axon.tiling.search import Proposal, proved_cheapest_first, tile_program
from axon.tiling.specialize import specialized
from axon.verifier.cache import process_cache

#: candidates of the search simulated at most unless told (`--max-candidates`; the best is
#: then printed the `EMISSIONS` ways too)
DEFAULT_MAX_CANDIDATES = 8

#: programs tiled: the program and the nu-graph's cheapest other program equal to it
#: (`selection/variants.py`; gqa's kv heads read at `h floordiv G` tile only there)
DEFAULT_PROGRAMS = 2
#: the other ways the fastest right fused candidate is printed, each run as a candidate of its
#: own: intermediates in the program's 16-bit dtype (`narrow.py`), each block in dependence
#: order (`schedule.py`), both; and only the intermediates from which no statistic is
#: computed in 16 bits, where that is fewer (`narrow.narrowed_past_statistics`)
PAST_STATISTICS = "16-bit past the statistics"
EMISSIONS: tuple[tuple[str, ...], ...] = (("16-bit intermediates",), ("dependence order",),
                                          ("16-bit intermediates", "dependence order"),
                                          (PAST_STATISTICS,))
#: the tiled kernel specialized to sizes that are multiples of its tiles (`tiling/specialize.py`)
DIVIDED = "sizes divide the tiles"
#: the emitter's engine balance over the whole kernel at the selection's sizes rather than
#: block by block (`emit._balance_engines`): an emitter choice, no rewrite of the lowering
KERNEL_ENGINES = "engines over the kernel"
#: the best candidate lowered with one synthesized lowering of a tile op in place of the
#: lowering's own (`synthesized.py`), at most this many (in synthesis order, kind by kind)
MAX_SYNTHESIZED = 4
#: the other ways the best candidate is printed, at most: each base (the lowering's, and
#: `DIVIDED`'s where the sizes divide its tiles, also printed its own way) with every
#: `EMISSIONS` way and `KERNEL_ENGINES`, the synthesized lowerings, the widened chain, the
#: best of all printed `pair.COUNTS` programs at a time, and the lowering's own kernel and its
#: `EMISSIONS` ways printed each of the two `PRINTINGS` ways
MAX_TWINS = 2 * (len(EMISSIONS) + 1) + 1 + MAX_SYNTHESIZED + len(COUNTS) \
    + 2 * (len(EMISSIONS) + 1)
#: the emitter's printing choices for a row kernel, each a twin of its own where it applies:
#: rows folded over partitions (`fold.py`), a block's columns in chunks (`chunk.py`)
PRINTINGS: dict[str, Callable[[FuncOp, Mapping[str, int], Mapping[str, int]], EmittedKernel]] = {
    FOLD: emit_folded, COLUMN_CHUNKS: emit_chunked}
#: each way's rewrite of a lowered function: the copy and how much changed, or None
TRANSFORMS: dict[str, Callable[[FuncOp], tuple[FuncOp, int] | None]] = {
    "16-bit intermediates": narrowed, "dependence order": scheduled,
    PAST_STATISTICS: narrowed_past_statistics}

#: the split chain (all ops but the last in one kernel) is a candidate only of a function of at
#: most this many ops: its first part's tiling search costs about as much again as the whole's
#: (ntrans's, of 15 ops, minutes). A count, not the search's seconds (the rule before), so the
#: candidates do not depend on how loaded the machine is
SPLIT_MAX_OPS = 10

#: the header every emitted module starts with (`emit.py`), up to its first kernel
_IMPORTS = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"


class NoKernel(Exception):
    """No candidate of the function lowers, runs and is right; the message says why."""


@dataclass(frozen=True)
class Step:
    """One kernel call of a module: the `@nki.jit` function's name and its operands, as
    indices into the values (the module's inputs, then each step's result in order)."""

    kernel: str
    operands: tuple[int, ...]


@dataclass(frozen=True)
class KernelModule:
    """A printed NKI module and how it runs: its steps in order; the result is the last
    step's. A step's operand indexes the module's inputs, then its `constants` (values of
    sizes computed at the sizes the module is specialized at, as its host function does), then
    the steps' results."""

    text: str
    steps: tuple[Step, ...]
    constants: tuple[np.ndarray, ...] = ()


def single_module(text: str, name: str, inputs: int) -> KernelModule:
    """The module of one kernel `name` taking `inputs` operands."""
    return KernelModule(text, (Step(name, tuple(range(inputs))),))


def check_close(got: np.ndarray, want: np.ndarray, tolerance: tuple[float, float]) -> str:
    """'' when `got` is `want` within (rtol, atol); otherwise what differs."""
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    rtol, atol = tolerance
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    excess = np.abs(g - w) - (atol + rtol * np.abs(w))
    bad = ~(excess <= 0)
    if not bad.any():
        return ""
    index = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(excess, nan=np.inf),
                                                    -np.inf))), g.shape)
    return (f"{int(bad.sum())} of {g.size} elements off, e.g. at {tuple(int(i) for i in index)}: "
            f"{g[index]:.6g} vs {w[index]:.6g}")


class KernelRunner:
    """Runs NKI modules on the simulator with a profile's limits and prices their traces."""

    def __init__(self, profile: str, tmp: Path):
        self.limits = load_limits(profile)
        self.constants = load_constants(profile)
        self.tmp = tmp

    def run(self, source: Path | str, inputs: Sequence[np.ndarray],
            label: str = "kernel") -> tuple[np.ndarray, float]:
        """The module's output and the cost model's latency; a simulator warning is an error
        (`SimulationWarning` raised), as is a kernel the simulator refuses (`KernelError`).
        `source` is a kernel file or a module's text, written to `<label>.py`."""
        path = self._path(source, label)
        with warnings.catch_warnings():
            warnings.simplefilter("error", SimulationWarning)
            out, trace = simulate(load_kernel(path), *inputs, limits=self.limits, trace=True)
        assert isinstance(trace, Trace)
        return np.asarray(out), estimate(trace, self.constants).total_s

    def run_module(self, module: KernelModule, inputs: Sequence[np.ndarray],
                   label: str = "kernel") -> tuple[np.ndarray, float]:
        """The module's result and the sum of its kernels' latencies, its steps run in order,
        each on the simulator (errors as `run`)."""
        path = self._path(module.text, label)
        values = [*inputs, *module.constants]
        total = 0.0
        for step in module.steps:
            with warnings.catch_warnings():
                warnings.simplefilter("error", SimulationWarning)
                out, trace = simulate(load_kernel(path, step.kernel),
                                      *(values[k] for k in step.operands), limits=self.limits,
                                      trace=True)
            assert isinstance(trace, Trace)
            values.append(np.asarray(out))
            total += estimate(trace, self.constants).total_s
        return values[-1], total

    def _path(self, source: Path | str, label: str) -> Path:
        if isinstance(source, Path):
            return source
        path = self.tmp / f"{label}.py"
        path.write_text(source)
        return path


def failure(err: Exception, *roots: Path) -> str:
    """The error's first line, its kernel file named without the given folders."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    for root in roots:
        text = text.replace(f"{root}/", "")
    return f"{type(err).__name__}: {text}"


@dataclass(frozen=True)
class OpKernel:
    """One `ax` op of a program as a function of its own: the op's non-constant operands as
    parameters (each constant it reads cloned in), its results returned."""

    op: Operation
    func: FuncOp
    operands: tuple[SSAValue, ...]


def _view(value: SSAValue) -> bool:
    """`value` is a broadcast read by its users in place (a view, as eager NumPy's and
    PyTorch's `broadcast_to` / `expand` are), not a kernel of its own: a one-op function of
    it alone would return a tensor whose broadcast sizes none of its inputs binds."""
    return isinstance(value.owner, BroadcastToOp) and bool(value.uses) \
        and not any(isinstance(u.operation, ReturnOp) for u in value.uses)


def _of_sizes(value: SSAValue) -> bool:
    """`value` is a rank-0 value made of sizes and constants alone (attention's `sqrt(D)`,
    `sqrt(cast(idx(D)))`), not returned: read by its users in place, as a constant is, not a
    kernel of its own (a one-op function of it would return a rank-0 tensor that no input's
    tile gives). Followed through its operands on a worklist."""
    work, seen = [value], set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if not (isinstance(owner, Operation) and isinstance(v.type, TensorType)
                and v.type.rank == 0) or any(isinstance(u.operation, ReturnOp) for u in v.uses):
            return False
        work.extend(owner.operands)
    return True


def op_functions(func: FuncOp) -> list[OpKernel]:
    """One function per op of `func`'s body that is neither a constant, a broadcast read in
    place (`_view`: cloned into each reader with the constants), a rank-0 value of sizes and
    constants (`_of_sizes`: cloned likewise) nor the return. A value of sizes that the op's
    own operands and results do not give (gqa's `scores / sqrt(D)`, scores `[B, HKV*G, S,
    L]`) is a rank-0 parameter instead, which the caller computes (`sizes_value`): a kernel
    takes its sizes from its tensors."""
    kernels = []
    body = list(func.body.block.ops)
    for index, op in enumerate(body):
        if isinstance(op, (ConstantOp, ReturnOp)) or any(_view(r) or _of_sizes(r)
                                                         for r in op.results):
            continue
        operands, cloned = _reads(op, passed=set())
        given = {s for v in [*operands, *op.results] if isinstance(v.type, TensorType)
                 for d in v.type.shape for s in d.symbols()}
        passed = {v for v in cloned if _of_sizes(v) and not _size_symbols(v) <= given}
        if passed:
            operands, cloned = _reads(op, passed)
        # each after the values it reads
        cloned.sort(key=lambda v: body.index(v.owner) if isinstance(v.owner, Operation)
                    else -1)
        name = f"{func.sym_name.data}_{index}_{op.name.split('.')[-1]}"
        one = FuncOp(name, ([v.type for v in operands], [r.type for r in op.results]))
        mapping: dict[SSAValue, SSAValue] = dict(zip(operands, one.body.block.args,
                                                     strict=True))
        for value in cloned:
            if value not in mapping:
                owner = value.owner
                assert isinstance(owner, Operation)
                copy = owner.clone(value_mapper=mapping)
                one.body.block.add_op(copy)
                mapping[value] = copy.results[0]
        clone = op.clone(value_mapper=mapping)
        one.body.block.add_ops([clone, ReturnOp(*clone.results)])
        kernels.append(OpKernel(op, one, tuple(operands)))
    return kernels


def _reads(op: Operation, passed: set[SSAValue]) -> tuple[list[SSAValue], list[SSAValue]]:
    """The values `op`'s one-op function takes as parameters and those it clones (constants,
    views and values of sizes, inputs first), found on a worklist; a value of `passed` is a
    parameter though it could be cloned."""
    operands: list[SSAValue] = []
    cloned: list[SSAValue] = []
    work = list(op.operands)
    while work:
        value = work.pop(0)
        if value not in passed and (isinstance(value.owner, ConstantOp) or _view(value)
                                    or _of_sizes(value)):
            if value not in cloned:
                cloned.insert(0, value)
                owner = value.owner
                if (_view(value) or _of_sizes(value)) and isinstance(owner, Operation):
                    work.extend(owner.operands)
        elif value not in operands:
            operands.append(value)
    return operands, cloned


def _size_ops(value: SSAValue) -> list[Operation]:
    """The ops of a value of sizes (`_of_sizes`), each after those it reads."""
    ops: list[Operation] = []
    work = [value]
    while work:
        owner = work.pop().owner
        if isinstance(owner, Operation) and owner not in ops:
            ops.append(owner)
            work.extend(owner.operands)
    block = ops[0].parent_block() if ops else None
    order = list(block.ops) if block is not None else []
    return sorted(ops, key=order.index)


def _size_symbols(value: SSAValue) -> set[str]:
    """The sizes a value of sizes reads (`idx(D)` in a form)."""
    return {s for op in _size_ops(value) if has_form(op)
            for s in generic_form(op).size_symbols()}


def sizes_value(value: SSAValue, sizes: Mapping[str, int]) -> np.ndarray:
    """A value of sizes (`_of_sizes`) that `op_functions` passes as a parameter, computed by
    the reference interpreter at `sizes`."""
    t = value.type
    assert isinstance(t, TensorType)
    alone = FuncOp("sizes_value", ([], [t]))
    mapping: dict[SSAValue, SSAValue] = {}
    for op in _size_ops(value):
        copy = op.clone(value_mapper=mapping)
        alone.body.block.add_op(copy)
        mapping.update(zip(op.results, copy.results, strict=True))
    alone.body.block.add_op(ReturnOp(mapping[value]))
    (result,) = run_function(alone, [], {s: sizes[s] for s in _size_symbols(value)})
    return np.asarray(result)


def split_functions(func: FuncOp) -> list[OpKernel] | None:
    """`func` as two functions: every op but the last (a function of the inputs it reads,
    returning the value the last op reads), then the last op alone (`op_functions`'), where
    the last op is a matmul (whose fused tilings take the other ops into their K loop, which
    a row reduction among them keeps from lowering: rmsnorm_matmul); None where it is not,
    where it reads no value of the others, more than one, or one that is not the one before
    it, or where the others are a single op (the unfused chain then)."""
    kernels = op_functions(func)
    if len(kernels) < 3 or not isinstance(kernels[-1].op, MatmulOp):
        return None
    last, before = kernels[-1], kernels[-2]
    made = {r for k in kernels[:-1] for r in k.op.results}
    read = [v for v in last.operands if v in made]
    if read != [before.op.results[0]] or len(before.op.results) != 1:
        return None
    # every other value of the first part is read inside it only
    if any(use.operation is last.op for k in kernels[:-2] for r in k.op.results
           for use in r.uses):
        return None
    body = list(func.body.block.ops)
    ops = [op for op in body[:body.index(last.op)] if not isinstance(op, ReturnOp)]
    (value,) = read
    return [_part(func, "head", ops, value), last]


def _part(func: FuncOp, suffix: str, ops: Sequence[Operation], result: SSAValue,
          extra: Sequence[SSAValue] = ()) -> OpKernel:
    """`ops` of `func` (in its order) as a function `<name>_<suffix>` returning `result`: its
    parameters the inputs of `func` they read, then `extra` (values of `func` made outside
    `ops`)."""
    args = [a for a in func.body.block.args if any(use.operation in ops for use in a.uses)]
    params = [*args, *extra]
    part = FuncOp(f"{func.sym_name.data}_{suffix}", ([a.type for a in params], [result.type]))
    mapping: dict[SSAValue, SSAValue] = dict(zip(params, part.body.block.args, strict=True))
    for op in ops:
        copy = op.clone(value_mapper=mapping)
        part.body.block.add_op(copy)
        mapping.update(zip(op.results, copy.results, strict=True))
    part.body.block.add_op(ReturnOp(mapping[result]))
    owner = result.owner
    assert isinstance(owner, Operation)
    return OpKernel(owner, part, tuple(params))


#: ops a matmul's operand may pass through and still be the value they read (views)
_VIEWS = (ReshapeOp, BroadcastToOp, TransposeOp)


def _through_views(value: SSAValue) -> SSAValue:
    """The value `value` is a view of (itself where it is no view)."""
    while isinstance(value.owner, _VIEWS):
        value = value.owner.operands[0]
    return value


def _computed_apart(value: SSAValue, last: Operation) -> set[Operation] | None:
    """What `value` (through views) is made of, constants aside, where that is computed from
    the inputs without a contraction and read outside only through `value`; None otherwise
    (an input, the program's last op, a matmul in it, another of its values read outside)."""
    value = _through_views(value)
    if not isinstance(value.owner, Operation) or value.owner is last:
        return None
    group: set[Operation] = set()
    work = [value.owner]
    while work:
        op = work.pop()
        if op not in group and not isinstance(op, ConstantOp):
            group.add(op)
            work.extend(v.owner for v in op.operands if isinstance(v.owner, Operation))
    if any(isinstance(op, MatmulOp) for op in group) or any(
            use.operation not in group for op in group for r in op.results
            if r is not value for use in r.uses):
        return None
    return group


def prologue_functions(func: FuncOp, both: bool = False) -> list[OpKernel] | None:
    """`func` as two functions where a matmul's right operand is, through views, a value
    computed from the inputs without a contraction (qknorm_gqa's `rmsnorm(k, g_k)` before
    `q @ k.T`): that value alone first (the prologue), then the rest, the value a new last
    parameter. A fused kernel's grid runs over the left operand's rows, so each of its
    programs computes the right operand again (every key row normalized once per query
    block and query head); apart, it is computed once. None where no matmul's right operand
    is such a value, or where a value of the prologue other than its result (constants
    aside) is read outside it.

    `both`: the same matmul's left operand apart too, where it is such a value (qknorm_gqa's
    `rmsnorm(q, g_q)`): three functions, the right operand's, the left one's, the rest with
    both as its last parameters; None where the left operand is not such a value. Fused, the
    left operand costs no recomputation (its rows are the grid's), but its instructions sit
    in every program of the rest (qknorm_gqa: the normalized queries' TensorE transpose is
    one more PSUM tile a program, so fewer programs print at a time)."""
    body = [op for op in func.body.block.ops if not isinstance(op, ReturnOp)]
    (ret,) = (op for op in func.body.block.ops if isinstance(op, ReturnOp))
    if len(ret.arguments) != 1 or not isinstance(ret.arguments[0].owner, Operation):
        return None
    last = ret.arguments[0].owner
    for matmul in (op for op in body if isinstance(op, MatmulOp)):
        right = _computed_apart(matmul.operands[1], last)
        if right is None:
            continue
        groups = [right]
        if both:
            left = _computed_apart(matmul.operands[0], last)
            if left is None or left & right:
                return None
            groups.append(left)
        values = [_through_views(matmul.operands[1]), _through_views(matmul.operands[0])]
        apart: set[Operation] = set().union(*groups)

        def reads(op: Operation, ops: set[Operation]) -> bool:
            return any(u.operation in ops for u in op.results[0].uses)

        # each part takes the constants it reads
        firsts = [_part(func, "prologue" if n == 0 else f"prologue{n}",
                        [op for op in body if op in group
                         or (isinstance(op, ConstantOp) and reads(op, group))], value)
                  for n, (group, value) in enumerate(zip(groups, values, strict=False))]
        rest = [op for op in body if op not in apart and not (
            isinstance(op, ConstantOp) and not reads(op, set(body) - apart))]
        return [*firsts, _part(func, "rest", rest, ret.arguments[0], values[:len(groups)])]
    return None


def symbols(func: FuncOp) -> set[str]:
    """The size symbols of `func`'s parameter and result types."""
    types = [*func.function_type.inputs.data, *func.function_type.outputs.data]
    return {s for t in types if isinstance(t, TensorType) for d in t.shape for s in d.symbols()}


@dataclass(frozen=True)
class FirstKernel:
    """The first proved tiling of a function that lowers, at its best tile sizes."""

    kind: str
    name: str
    params: dict[str, int]
    text: str
    tiling_proof: str
    lowering_proof: str


#: the nu-graph programs `first_kernel` tries where the function's own tilings do not lower
FIRST_VARIANTS = 4


def first_kernel(func: FuncOp, profile: str, sizes: Mapping[str, int],
                 say: Callable[[str], None], fuse: bool = True) -> FirstKernel:
    """The proved tilings of `func` cheapest first by the tiled cost model; the first whose
    lowering is proved, printed with its best tile sizes (no simulation) and specialized at
    `sizes` where no input gives a size (`emit_nki`). Where none of `func`'s own lowers, the
    same of the nu-graph's programs equal to it (`tiled_programs`, up to `FIRST_VARIANTS`):
    gqa's one-op `reshape(broadcast_to(k))` tiles only as the read `k[b, h floordiv G, ...]`
    propagation gives. `fuse=False`: no instruction fusion (`fuse.RULES`), as the naive
    lowering has none. `NoKernel` when none lowers."""
    refusals: list[str] = []
    for own in (True, False):
        funcs = [func] if own else tiled_programs(func, profile, sizes, FIRST_VARIANTS)[1:]
        if not funcs:
            break
        # proved cheapest first, each only when the ones before it do not lower
        for proposal in proved_cheapest_first(funcs, load_profile(profile), sizes,
                                              cache=process_cache()):
            assert proposal.kernel is not None
            params = dict(proposal.candidates[0].params)
            try:
                lowered, _ = lower_and_fuse(proposal.kernel, rules=None if fuse else ())
                emitted = emit_nki(lowered.func, params, sizes)
            except Refused as err:  # the lowering, or the emitter
                say(f"{proposal.tiling.kind}: {err}")
                refusals.append(f"{proposal.tiling.kind}: {err}")
                continue
            return FirstKernel(proposal.tiling.kind, emitted.name, params, emitted.text,
                               proposal.proof_id, lowered.proof_id)
    why = "; ".join(refusals) or "no tiling is proved and fits the profile"
    raise NoKernel(f"no kernel lowers to nki ({why})")


#: `first_kernel`'s answers kept in this process (`_first_kernel_of`), at most this many: a
#: selection builds several chains of the same one-op functions (the program's, its variants',
#: the prologue's and the split's: qknorm_gqa's rest, selected and its chain built twice,
#: asked 28 times for 20 distinct ones)
FIRST_KERNELS_KEPT = 256
_first_kernels: OrderedDict[tuple[str, str, tuple[tuple[str, int], ...]],
                            FirstKernel | NoKernel] = OrderedDict()


def _first_kernel_of(func: FuncOp, text: str, profile: str, sizes: Mapping[str, int]
                     ) -> FirstKernel:
    """`first_kernel` of a chain's one-op function answered once per process for each text
    (`func`'s, its name included: the kernel is named after it, and a chain's names are its
    own functions'), profile and sizes, a refusal too; the least recently asked forgotten past
    `FIRST_KERNELS_KEPT`. The answer is a function of these alone (the tiling search and the
    lowering are deterministic; a proof the safety-net clock stops only leaves a tiling out),
    so a chain built again is the same chain."""
    key = (text, profile, tuple(sorted(sizes.items())))
    answer = _first_kernels.get(key)
    if answer is None:
        try:
            answer = first_kernel(func, profile, sizes, lambda line: None)
        except NoKernel as err:
            answer = err
        _first_kernels[key] = answer
        while len(_first_kernels) > FIRST_KERNELS_KEPT:
            _first_kernels.popitem(last=False)
    _first_kernels.move_to_end(key)
    if isinstance(answer, NoKernel):
        raise NoKernel(str(answer))
    return answer


def chain_module(func: FuncOp, profile: str, sizes: Mapping[str, int],
                 parts: Sequence[OpKernel] | None = None,
                 chosen: Mapping[int, KernelModule] | None = None) -> KernelModule:
    """The unfused chain of `func` as one module: each op's `first_kernel` (one kernel per
    distinct one-op function), and a host function `<name>` calling them in order through
    HBM. A value of sizes an op takes as a parameter (`op_functions`: attention's `sqrt(D)`)
    is computed at `sizes` (`sizes_value`) and printed in the host as that constant, the
    module specialized at it. `NoKernel` naming the op that does not lower; `ValueError` when
    `func` is not a chain of one-result ops ending in the last one's result. `parts`: other
    functions to chain instead of one per op (`split_functions`); `chosen`: a part's kernel
    selected elsewhere (a module of one step) in place of its `first_kernel`, by its index."""
    kernels = op_functions(func) if parts is None else list(parts)
    (ret,) = (op for op in func.body.block.ops if isinstance(op, ReturnOp))
    if not kernels or any(len(k.op.results) != 1 for k in kernels) or \
            len(ret.arguments) != 1 or ret.arguments[0] is not kernels[-1].op.results[0]:
        raise ValueError("the chain needs one-result ops, the last one's result returned")
    index: dict[SSAValue, int] = {a: k for k, a in enumerate(func.body.block.args)}
    made = set(index) | {r for k in kernels for r in k.op.results}
    of_sizes: list[SSAValue] = []
    for k in kernels:
        for v in k.operands:
            if v not in made and v not in index:  # a value of sizes (`op_functions`)
                if not _of_sizes(v):
                    raise ValueError("the chain reads a value no kernel makes")
                index[v] = len(index)
                of_sizes.append(v)
    constants = [sizes_value(v, sizes) for v in of_sizes]
    bodies: list[str] = []
    emitted: dict[str, str] = {}  # a one-op function's text (without its name): kernel name
    steps = []
    for number, k in enumerate(kernels):
        text = str(k.func)
        key = text.replace(f"@{k.func.sym_name.data}(", "@op(", 1)
        if chosen is not None and number in chosen:
            (step,) = chosen[number].steps
            key = step.kernel
            if key not in emitted:
                emitted[key] = step.kernel
                bodies.append(chosen[number].text.split(_IMPORTS, 1)[1].strip("\n"))
        if key not in emitted:
            own = {s: v for s, v in sizes.items() if s in symbols(k.func)}
            try:
                first = _first_kernel_of(k.func, text, profile, own)
            except NoKernel as err:
                raise NoKernel(f"%{number} '{k.op.name}' does not lower: {err}") from None
            emitted[key] = first.name
            bodies.append(first.text.split(_IMPORTS, 1)[1].strip("\n"))
        steps.append(Step(emitted[key], tuple(index[v] for v in k.operands)))
        index[k.op.results[0]] = len(index)
    name = func.sym_name.data
    params = [f"in{k}" for k in range(len(func.body.block.args))]
    host = [f"def {name}({', '.join(params)}):",
            f'    """@{name}: its kernels in order, each reading its operands from HBM and '
            'writing its result there."""']
    values = list(params)
    for v, value in zip(of_sizes, constants, strict=True):
        values.append(f"v{len(values)}")
        at = ", ".join(f"{s}={sizes[s]}" for s in sorted(_size_symbols(v)))
        host.append(f"    {values[-1]} = np.asarray({float(value)!r}, "
                    f"dtype=nl.{value.dtype.name})  # a value of sizes, at {at}")
    for step in steps:
        values.append(f"v{len(values)}")
        host.append(f"    {values[-1]} = {step.kernel}"
                    f"({', '.join(values[k] for k in step.operands)})")
    host.append(f"    return {values[-1]}")
    header = [f'"""{name}: the unfused chain of {len(steps)} NKI kernels emitted by Axon, one '
              'per op, each from a proved lowering of its tiled kernel."""', "",
              ("import numpy as np\n" if constants else "") + _IMPORTS]
    text = "\n".join([*header, *(b + "\n\n" for b in bodies), *host]) + "\n"
    return KernelModule(text, tuple(steps), tuple(constants))


#: the widening of the dtype's tolerance for a function of several ops: the reference
#: interpreter rounds every intermediate to its dtype, a fused kernel keeps it in fp32, and a
#: contraction of a rounded operand sums the roundings (the suite's `_ROUNDED_OPERAND`,
#: `benchmarks/suite.py`, measured up to 1.2x the bf16 tolerance)
ROUNDED_INTERMEDIATE = 2.0


def default_tolerance(func: FuncOp) -> tuple[float, float]:
    """(rtol, atol) the selection checks a candidate's result with unless told: its dtype's,
    widened by `ROUNDED_INTERMEDIATE` when the function has more than one op."""
    (out_type,) = func.function_type.outputs.data
    assert isinstance(out_type, TensorType)
    rtol, atol = DTYPES[out_type.dtype].tolerance
    factor = ROUNDED_INTERMEDIATE if len(op_functions(func)) > 1 else 1.0
    return rtol * factor, atol * factor


def random_inputs(func: FuncOp, sizes: Mapping[str, int], seed: int = 0) -> list[np.ndarray]:
    """Standard normal inputs of `func`'s parameters at `sizes`, in their storage dtypes; one
    parameter of each `ax.matmul` (its right operand when that is a parameter, possibly
    transposed, else its left one) scaled by 1/sqrt(the contracted size), as the suite's
    weights are (`benchmarks/suite.py`): the products stay of order one, so the dtype's
    tolerance applies to them."""
    args: list[SSAValue] = list(func.body.block.args)
    scale = [1.0] * len(args)

    def parameter(value: SSAValue) -> int | None:
        while isinstance(value.owner, Operation) and value.owner.name == "ax.transpose":
            value = value.owner.operands[0]
        return args.index(value) if value in args else None

    for op in func.body.block.ops:
        if op.name != "ax.matmul":
            continue
        lhs = op.operands[0].type
        assert isinstance(lhs, TensorType)
        contracted = lhs.shape[-1].evaluate(dict(sizes))
        picked = [k for k in (parameter(op.operands[1]), parameter(op.operands[0]))
                  if k is not None]
        if picked and all(scale[k] == 1.0 for k in picked):
            scale[picked[0]] = 1.0 / float(np.sqrt(contracted))
    rng = np.random.default_rng(seed)
    inputs = []
    for arg, factor in zip(args, scale, strict=True):
        t = arg.type
        assert isinstance(t, TensorType)
        shape = tuple(d.evaluate(dict(sizes)) for d in t.shape)
        value = rng.standard_normal(shape) * factor
        inputs.append(np.asarray(value, dtype=np.float32).astype(numpy_dtype(t.dtype)))
    return inputs


@dataclass
class Candidate:
    """One candidate of the selection: what it is, its module (None until emitted), and what
    became of it (`latency_s` when it ran and was right; otherwise `rejected` says why)."""

    label: str
    kind: str
    params: dict[str, int] = field(default_factory=dict)
    tiling: int = -1  # its proposal among the proved tilings; -1: the chain, -2: split
    module: KernelModule | None = None
    tiling_proof: str = ""
    lowering_proof: str = ""
    latency_s: float | None = None
    output: np.ndarray | None = None
    rejected: str = ""
    ways: str = ""  # how it is printed other than the lowering's way (`EMISSIONS`)
    #: a chain's program where it is a nu-graph variant's (None: the program's own chain)
    program: FuncOp | None = None
    #: a variant's chain with its intermediates in fp32 (`widen.py`)
    widened: bool = False
    #: a chain of other parts than one per op (split, prologue, widened): the proof that
    #: its parts, composed, equal its program (`widen.chain_proof`)
    chain_proof: str = ""
    #: the prologue chain's rest where it was selected as a program of its own: its winner
    rest: str = ""
    #: that selection's seconds of emission, simulation and checks (selection time, though
    #: the candidate is emitted while the outer selection tiles and proves)
    rest_emit_s: float = 0.0


#: how the chains of other parts than one per op are made, by their kind
_CHAIN_HOW = {"chain-split": "last op apart",
              "chain-prologue": "a matmul's right operand computed apart, first",
              "chain-operands": "a matmul's two operands computed apart, first"}

#: the prologue chains' `tiling` (negative: a chain), with `prologue_functions`'s `both`
_PROLOGUES = {-3: False, -4: True}


@dataclass(frozen=True)
class ChosenKernel:
    """The kernel `--target nki` prints: the winning candidate's kind (`chain` for the unfused
    chain, `chain-split` for the split one, `chain-prologue` for a matmul's right operand
    apart, `chain-operands` for both of its operands apart),
    its tile sizes, the printed module, both proofs' ids (a chain's: none), its predicted
    latency and output on the selection's inputs, every candidate considered, the
    space's size, and the seconds spent tiling and proving (`symbolic_s`: the `tile` search,
    the lowerings and their proofs) and selecting (`emit_s`: emission, simulation, checks and
    pricing)."""

    kind: str
    params: dict[str, int]
    module_text: str
    tiling_proof: str
    lowering_proof: str
    symbolic_s: float
    emit_s: float
    latency_s: float
    output: np.ndarray
    candidates: tuple[Candidate, ...]
    space: int
    ways: str = ""
    module: KernelModule | None = None

    @property
    def chosen(self) -> str:
        """The tile sizes as `BM=128 BN=128` (the chain: `unfused`, and the nu-graph variant it
        runs where not the program; the split chain: `last op apart`; the prologue chain: so;
        a chain of other parts with the proof of their composition), then how it is printed
        where that is not the lowering's way."""
        if self.kind in _CHAIN_HOW:
            how = _CHAIN_HOW[self.kind]
            return f"{how}, {self.ways}" if self.ways else how
        if self.kind == "chain":  # `unfused`, and which variant's where not the program's
            return f"unfused, {self.ways}" if self.ways else "unfused"
        sizes = " ".join(f"{k}={v}" for k, v in self.params.items()) or "unfused"
        return f"{sizes} ({self.ways})" if self.ways else sizes


def dma_floor_s(func: FuncOp, sizes: Mapping[str, int], profile: str) -> float:
    """Seconds the DMA engines need at least to read every input of `func` and write every
    result once at `sizes`, each in its own dtype, at the profile's bandwidth times its best
    transfer efficiency (rows of `dma_efficient_row_bytes` or more). Every kernel moves each
    byte of its inputs and results by DMA, and the cost model holds the engines for a transfer's
    bytes over that rate at best, so it bounds any such kernel's latency from below."""
    c = load_constants(profile)
    nbytes = RooflineCost(sizes=sizes).signature_bytes(func.function_type)
    return nbytes / (c.dma_bytes_per_s * max(c.dma_efficiency, c.dma_small_row_efficiency))


def choose_kernel(func: FuncOp, profile: str, sizes: Mapping[str, int],
                  say: Callable[[str], None], *,
                  max_candidates: int = DEFAULT_MAX_CANDIDATES,
                  inputs: Sequence[np.ndarray] | None = None,
                  tolerance: tuple[float, float] | None = None,
                  extra: Sequence[Candidate] = (),
                  programs: int = DEFAULT_PROGRAMS,
                  executor: Executor | None = None,
                  prologue: bool = True) -> ChosenKernel:
    """The cheapest right candidate of `func` at `sizes` (every size bound; see the module
    docstring). `inputs` default to `random_inputs`, `tolerance` to the result dtype's;
    `extra` candidates (with their modules) join the list after the bound is applied (a
    test's planted ones); `programs`: how many of `func` and its nu-graph variants are tiled
    (`tiled_programs`); `executor`: where the candidates are simulated and checked (a local
    process pool, Ray), here one after the other without one; `prologue`: whether the
    prologue chain is a candidate (its rest's own selection has none, so selections nest one
    deep at most). `NoKernel` when no candidate is left."""
    if max_candidates < 1:
        raise ValueError(f"max_candidates must be at least 1, not {max_candidates}")
    name = func.sym_name.data
    start = time.perf_counter()
    funcs = tiled_programs(func, profile, sizes, programs)
    result = tile_program(funcs, load_profile(profile), sizes, cache=process_cache())
    proved = [p for p in result.proved if p.candidates and p.kernel is not None]
    ops = len(op_functions(func))
    # the split chain's first part is searched again: only where the whole is small
    split = split_functions(func) if 1 < ops <= SPLIT_MAX_OPS else None
    prologue = prologue and ops > 1 and prologue_functions(func) is not None
    # both of the matmul's operands apart, where its left one is such a value too
    operands = prologue and prologue_functions(func, both=True) is not None
    # a variant's unfused chain: its ops one kernel each, where it has more than one (an
    # algebraic rewrite pays off unfused: gemm_sum_scale's `x @ sum(w, axis=1)` reads w once
    # in its own kernel, where every fused tiling reads it once per row block)
    variant_chains = [Candidate(f"{v.sym_name.data} unfused chain", "chain", program=v)
                      for v in funcs[1:] if len(op_functions(v)) > 1]
    space = sum(len(p.candidates) for p in proved) + (1 if ops > 1 else 0) + \
        (1 if split is not None else 0) + (1 if prologue else 0) + (1 if operands else 0) + \
        len(variant_chains)
    chains = " and the unfused chain" if ops > 1 else ""
    if split is not None:
        chains = ", the unfused chain and the split one (the last op apart)"
    if prologue:
        chains += " and the prologue chain (a matmul's right operand apart" + \
            (", and both operands apart)" if operands else ")")
    if variant_chains:
        chains += f" ({len(variant_chains)} variant chain(s))"
    say(f"nki: @{name}: {len(funcs)} program(s) ({len(funcs) - 1} nu-graph variant(s)), "
        f"{len(result.proposals)} tilings proposed, {len(proved)} proved and "
        f"fitting; {space} candidate(s): the best tile sizes of each proved tiling by the "
        f"tiled cost model{chains}")

    def label(p: Proposal, params: Mapping[str, int]) -> str:
        program = "" if p.variant == name else f"{p.variant} "
        return f"{program}{p.tiling.kind} {_sizes(params)}"

    firsts = [Candidate(label(p, p.candidates[0].params), p.tiling.kind,
                        dict(p.candidates[0].params), t) for t, p in enumerate(proved)]
    others = [Candidate(label(p, c.params), p.tiling.kind, dict(c.params), t)
              for t, p in enumerate(proved) for c in p.candidates[1:]]
    chain = [Candidate("unfused chain", "chain")] if ops > 1 else []
    if split is not None:  # the last op apart, the others fused
        chain.append(Candidate("split chain", "chain-split", tiling=-2))
    if prologue:  # a matmul's right operand computed once, before the rest
        chain.append(Candidate("prologue chain", "chain-prologue", tiling=-3))
    if operands:  # the same matmul's left operand apart too
        chain.append(Candidate("prologue chain, both operands", "chain-operands", tiling=-4))
    # the program's own tilings first, then the chains, then the variants' (the bound keeps
    # what the program alone would have; a program that does not tile gets its variants')
    own = [c for c in firsts if proved[c.tiling].variant == name]
    ordered = [*own, *chain, *(c for c in firsts if c not in own), *variant_chains, *others]
    # lower each tiling once, in that order; the bound counts the candidates that lower (the
    # ones simulated): a tiling the lowering refuses costs no simulation, and its candidates
    # stay in the report as rejected without taking the place of one that runs
    lowered: dict[int, LoweredKernel | str] = {}
    taken: list[Candidate] = []
    counted: list[Candidate] = []
    for c in ordered:
        if len(counted) >= max_candidates:
            break
        if c.tiling >= 0 and c.tiling not in lowered:
            kernel = proved[c.tiling].kernel
            assert kernel is not None
            try:
                lowered[c.tiling], fused = lower_and_fuse(kernel)
            except Refused as err:
                lowered[c.tiling] = f"does not lower: {err}"
            else:
                say(f"nki: @{name}: {proved[c.tiling].tiling.kind}: fusion: {fused.summary()}")
        if c.program is not None or c.tiling in _PROLOGUES:
            # a variant's chain or the prologue chain that does not lower takes no place
            _emit(c, func, profile, sizes, proved, lowered)
        taken.append(c)
        if (c.tiling < 0 and not c.rejected) or (
                c.tiling >= 0 and not isinstance(lowered[c.tiling], str)):
            counted.append(c)
    if chain and not any(c is chain[0] for c in taken) and max_candidates > 1:
        # the unfused chain (the baseline) always runs
        taken = [c for c in taken if c is not counted[-1]] + [chain[0]]
    pruned = len(ordered) - len(taken)
    # a prologue chain's rest, selected above, ran its own emission and checks: selection's
    symbolic = time.perf_counter() - start - sum(c.rest_emit_s for c in taken)
    candidates = [*taken, *extra]
    for c in candidates:
        _emit(c, func, profile, sizes, proved, lowered)
    if any(c.module is not None for c in candidates):
        if inputs is None:
            inputs = random_inputs(func, sizes)
        (rounded,) = run_function(func, list(inputs), dict(sizes))
        (exact,) = run_function(func, list(inputs), dict(sizes), exact=True)
        expected = (rounded, exact)
        if tolerance is None:
            tolerance = default_tolerance(func)
        checks = (expected, tolerance, inputs)
        _check(candidates, name, profile, checks, executor, say, len(candidates))
        twins = _twins(candidates, func, sizes, proved, lowered, funcs, say, profile)
        twins += _widened_twins(candidates, func, sizes, profile)
        _check(twins, name, profile, checks, executor, say, None, first=len(candidates) + 1)
        candidates += twins
        pairs = _paired_twins(candidates, proved)
        _check(pairs, name, profile, checks, executor, say, None, first=len(candidates) + 1)
        candidates += pairs
    right = [c for c in candidates if c.latency_s is not None]
    rejected = [c for c in candidates if c.latency_s is None]
    seconds = time.perf_counter() - start
    reasons: dict[str, int] = {}
    for c in rejected:
        reason = c.rejected.split(":", 1)[0]
        reasons[reason] = reasons.get(reason, 0) + 1
    why = ", ".join(f"{reason}: {n}" for reason, n in reasons.items())
    if not right:
        lowers = any(not c.rejected.startswith("does not lower: ") for c in rejected)
        raise NoKernel(("no candidate runs and is right (" if lowers else
                        "no kernel lowers to nki (") + (
            "; ".join(dict.fromkeys(f"{c.kind}: {c.rejected.removeprefix('does not lower: ')}"
                                    for c in rejected))
            or "no tiling is proved and fits the profile") + ")")
    best = min(right, key=lambda c: c.latency_s if c.latency_s is not None else float("inf"))
    assert best.module is not None and best.latency_s is not None and best.output is not None
    printed = sum(1 for c in candidates if c.ways)
    printings = (f" (and the best printed {printed} other way{'' if printed == 1 else 's'})"
                 if printed else "")
    floor = dma_floor_s(func, sizes, profile)
    say(f"nki: @{name}: selection: space {space}, pruned {pruned} by the bound "
        f"(--max-candidates {max_candidates}), checked {len(candidates) - printed}{printings}, "
        f"rejected {len(rejected)}{f' ({why})' if rejected else ''}; chosen {best.label}, "
        f"predicted {best.latency_s * 1e6:.1f} us ({best.latency_s / floor:.2f}x the DMA floor, "
        f"{floor * 1e6:.1f} us); {seconds:.1f} s")
    return ChosenKernel(best.kind, best.params, best.module.text, best.tiling_proof,
                        best.lowering_proof, symbolic, seconds - symbolic, best.latency_s,
                        best.output, tuple(candidates), space,
                        best.ways or _chain_of(best), best.module)


def _paired_twins(candidates: Sequence[Candidate], proved: Sequence[Proposal]
                  ) -> list[Candidate]:
    """The fastest right fused candidate printed two (and four) programs of its grid's
    innermost id at a time (`pair.py`: their instructions interleaved, so one program's run
    while another's wait on another engine, and blocks that name none of them loaded once);
    not yet run; none where its grid does not pair."""
    right = sorted((c for c in candidates if c.latency_s is not None and c.tiling >= 0
                    and c.module is not None and len(c.module.steps) == 1),
                   key=lambda c: c.latency_s or 0.0)
    if not right:
        return []
    best = right[0]
    assert best.module is not None
    kernel = proved[best.tiling].kernel
    try:
        pid = kernel_of(kernel).program_names()[-1] if kernel is not None else None
    except Refused:
        pid = None
    if pid is None:
        return []
    twins = []
    for count in COUNTS:
        text = paired_text(best.module.text, pid, count)
        if text is None:
            break
        ways = ", ".join(w for w in (best.ways, paired_way(count)) if w)
        twins.append(dataclasses.replace(
            best, label=f"{best.label}, {paired_way(count)}", ways=ways,
            module=dataclasses.replace(best.module, text=text), latency_s=None, output=None,
            rejected=""))
    return twins


def _rest_selected(c: Candidate, parts: Sequence[OpKernel] | None, profile: str,
                   sizes: Mapping[str, int]) -> dict[int, KernelModule] | None:
    """The prologue chain's rest (the heavy part: qknorm_gqa's attention) selected as a
    program of its own (`choose_kernel`: every tiling and way it is printed, checked on its
    own inputs), where the winner is one kernel; None leaves it to `first_kernel`. Said in
    the candidate's label."""
    if not parts:
        return None
    rest = parts[-1].func
    try:  # as many nu-graph programs as `first_kernel` tries (gqa's kv heads tile in one)
        picked = choose_kernel(rest, profile, {s: v for s, v in sizes.items()
                                               if s in symbols(rest)}, lambda line: None,
                               programs=FIRST_VARIANTS + 1, prologue=False)
    except NoKernel:
        return None
    if picked.module is None or len(picked.module.steps) != 1 or picked.module.constants:
        return None
    c.rest = f"{picked.kind} {picked.chosen}"
    c.rest_emit_s = picked.emit_s
    c.label += f" (the rest: {c.rest})"
    return {len(parts) - 1: picked.module}


def _widened_twins(candidates: Sequence[Candidate], func: FuncOp, sizes: Mapping[str, int],
                   profile: str) -> list[Candidate]:
    """Each nu-graph variant's chain the check found wrong, again with its 16-bit
    intermediates in fp32 (`widen.py`), emitted: the variant's own roundings, which the
    program does not have, cannot make it wrong then (gemm_sum_scale's bf16 row sums of w
    on standard normal inputs). A widened chain moves twice the bytes between its kernels,
    so it is tried only where the chain as written is wrong, past the bound."""
    twins = []
    for c in candidates:
        if c.program is None or c.kind != "chain" or c.widened \
                or not c.rejected.startswith("wrong result") \
                or widened_parts(c.program, op_functions(c.program)) is None:
            continue
        twin = Candidate(f"{c.label}, fp32 intermediates", "chain", program=c.program,
                         widened=True)
        _emit(twin, func, profile, sizes, (), {})
        twins.append(twin)
    return twins


def _chain_of(c: Candidate) -> str:
    """For a chain: which nu-graph variant it runs (where not the program), its
    intermediates in fp32 where widened, and the proof that its parts compose to it."""
    variant = "" if c.program is None else f"of the nu-graph variant {c.program.sym_name.data}"
    if c.widened:
        return f"{variant}, intermediates in fp32 (proof {c.chain_proof})"
    rest = f"the rest {c.rest}" if c.rest else ""
    proof = f"proof {c.chain_proof}" if c.chain_proof else ""
    return ", ".join(text for text in (variant, rest, proof) if text)


def _twins(candidates: Sequence[Candidate], func: FuncOp, sizes: Mapping[str, int],
           proved: Sequence[Proposal], lowered: Mapping[int, LoweredKernel | str],
           programs: Sequence[FuncOp], say: Callable[[str], None], profile: str
           ) -> list[Candidate]:
    """The fastest right fused candidate printed the other ways (`EMISSIONS`: intermediates
    in the program's 16-bit dtype, `narrow.py`, all of them or those past the statistics;
    each block in dependence order, `schedule.py`), and, where the sizes are multiples of its
    tiles, its tiled kernel without the remainder masks (`tiling/specialize.py`, proved),
    lowered, printed its own way and the others; the lowering's own kernel and its ways also
    with rows folded over partitions where they fold at `sizes` (`fold.py`) and with the
    columns of its one block in chunks (`chunk.py`); emitted, not yet run. A way that changes
    nothing is left out."""
    right = sorted((c for c in candidates if c.latency_s is not None and c.tiling >= 0),
                   key=lambda c: c.latency_s or 0.0)
    low = lowered.get(right[0].tiling) if right else None
    if low is None or isinstance(low, str):
        return []
    best = right[0]
    bases: list[tuple[str, FuncOp]] = [("", low.func)]
    proposal = proved[best.tiling]
    program = next((f for f in programs if f.sym_name.data == proposal.variant), None)
    if proposal.kernel is not None and program is not None:
        special = specialized(proposal.kernel, program, sizes, best.params)
        if special is not None:
            try:
                bases.append((DIVIDED, lower_and_fuse(special.func)[0].func))
            except Refused as err:
                say(f"nki: @{func.sym_name.data}: {DIVIDED}: does not lower: {err}")
    twins = []
    partitions = load_limits(profile).partitions
    for base, kernel_func in bases:
        for ways in ((), *EMISSIONS):
            kernel, notes = kernel_func, [base] if base else []
            for way in ways:
                changed = TRANSFORMS[way](kernel)
                if changed is None:
                    break
                kernel, count = changed
                notes.append(f"{way} ({count})")
            else:
                if base or ways:
                    twins.append(_twin(best, notes, (base, *ways), kernel, func, sizes))
                # the lowering's own kernel and its ways with each row over several
                # partitions, where its rows fold at these sizes (`fold.py`), and with a
                # block's columns in chunks, where it has one block (`chunk.py`)
                if not base and fold_factor(kernel, best.params, sizes, partitions):
                    twins.append(_twin(best, [*notes, FOLD], (*ways, FOLD), kernel, func,
                                       sizes, printing=FOLD))
                if not base and chunk_count(kernel, best.params, sizes):
                    twins.append(_twin(best, [*notes, COLUMN_CHUNKS], (*ways, COLUMN_CHUNKS),
                                       kernel, func, sizes, printing=COLUMN_CHUNKS))
        if engines_differ(kernel_func, best.params, sizes):
            twins.append(_twin(best, [*([base] if base else []), KERNEL_ENGINES],
                               (base, KERNEL_ENGINES), kernel_func, func, sizes,
                               engines_over_kernel=True))
    synthesized = 0
    for choice in (synthesized_choices(proposal.kernel, {**sizes, **best.params}, profile)
                   if proposal.kernel is not None else []):
        if synthesized == MAX_SYNTHESIZED:
            break
        assert proposal.kernel is not None
        try:
            chosen = lower_and_fuse(proposal.kernel, choices={choice.kind: choice})[0]
        except NotTaken:  # no op of that dtype once lowered: the same kernel
            continue
        except Refused as err:
            say(f"nki: @{func.sym_name.data}: {choice.label}: does not lower: {err}")
            continue
        synthesized += 1
        twin = _twin(best, [choice.label], (choice.label,), chosen.func, func, sizes)
        twin.lowering_proof = chosen.proof_id
        twins.append(twin)
    return twins


#: the tile ops `lower.py` takes a synthesized lowering for, by their kind
_SYNTHESIZED_KINDS: dict[type[Operation], str] = {SumOp: "row_sum", MeanOp: "row_sum",
                                                  CumsumOp: "cumsum", TransposeOp: "transpose"}


def synthesized_choices(kernel: FuncOp, params: Mapping[str, int], profile: str
                        ) -> list[Choice]:
    """The synthesized lowerings (`synthesized.alternatives`) of the tile ops of `kernel`'s
    tiled kernel whose conditions its tiles meet at `params` (sizes and tile sizes): a row
    sum (`ax.sum` or `ax.mean` over the free dim), a prefix sum, a transpose; each kind once,
    for the lowering's fp32 and the op's dtype."""
    found: list[Choice] = []
    seen: set[tuple[str, str]] = set()
    for op in kernel.walk():
        kind = _SYNTHESIZED_KINDS.get(type(op))
        if kind is None or not op.operands or not isinstance(op.operands[0].type, TensorType):
            continue
        tile = op.operands[0].type
        for dtype in dict.fromkeys(("f32", tile.dtype)):
            if (kind, dtype) in seen:
                continue
            seen.add((kind, dtype))
            found += [c for c in alternatives(kind, dtype, profile) if c.holds([tile], params)]
    return found


def _twin(best: Candidate, notes: Sequence[str], ways: Sequence[str], kernel: FuncOp,
          func: FuncOp, sizes: Mapping[str, int], engines_over_kernel: bool = False,
          printing: str = "") -> Candidate:
    """`best` printed from `kernel` (its lowering rewritten `ways`; `engines_over_kernel`:
    with the engines balanced over the whole kernel; `printing`: by one of `PRINTINGS`),
    emitted."""
    twin = Candidate(f"{best.label} {', '.join(notes)}", best.kind, dict(best.params),
                     best.tiling, tiling_proof=best.tiling_proof,
                     lowering_proof=best.lowering_proof, ways=", ".join(w for w in ways if w))
    try:
        emitted = PRINTINGS[printing](kernel, best.params, sizes) if printing else \
            emit_nki(kernel, best.params, sizes, engines_over_kernel=engines_over_kernel)
    except Refused as err:
        twin.rejected = f"does not emit: {err}"
    else:
        twin.module = single_module(emitted.text, emitted.name, len(func.body.block.args))
    return twin


def tiled_programs(func: FuncOp, profile: str, sizes: Mapping[str, int], count: int
                   ) -> list[FuncOp]:
    """`func` and, up to `count` programs in all, the nu-graph's cheapest programs equal to
    it that differ from it (`program_variants`); `func` alone where propagation finds none
    or fails (a diagnostic: the program is tiled as it is)."""
    if count <= 1:
        return [func]
    try:
        variants = program_variants(func, profile, sizes, count)
    except DiagnosticException:
        return [func]
    seen = {unnamed(func)}
    funcs = [func]
    for v in variants:
        if len(funcs) < count and (text := unnamed(v)) not in seen:
            seen.add(text)
            if v.sym_name.data == func.sym_name.data:  # the cheapest keeps the program's name
                v.sym_name = StringAttr(f"{func.sym_name.data}_v{len(funcs)}")
            funcs.append(v)
    return funcs


def _named(variant: FuncOp, name: str) -> FuncOp:
    """A copy of `variant` named `name`."""
    named = variant.clone()
    named.sym_name = StringAttr(name)
    return named


def _sizes(params: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def _emit(c: Candidate, func: FuncOp, profile: str, sizes: Mapping[str, int],
          proved: Sequence[Proposal], lowered: Mapping[int, LoweredKernel | str]) -> None:
    """Print the candidate's module (a planted one has its own), or say why it has none (once:
    a candidate already rejected, a prologue chain whose nested selection ran, is not made
    again)."""
    if c.module is not None or c.rejected:
        return
    if c.tiling < 0:
        # a variant's chain is named as the program (its host function is called as the
        # program is)
        chained = func if c.program is None else _named(c.program, func.sym_name.data)
        parts = split_functions(chained) if c.tiling == -2 else \
            prologue_functions(chained, _PROLOGUES[c.tiling]) if c.tiling in _PROLOGUES \
            else None
        if c.widened:
            widened = widened_chain(chained, op_functions(chained))
            if widened is None:
                c.rejected = "does not lower: its chain in fp32 is not proved equal to it"
                return
            parts, c.chain_proof = widened
        elif parts is not None:
            proof = chain_proof(chained, parts)
            if proof is None:
                c.rejected = "does not lower: its parts are not proved equal to the program"
                return
            c.chain_proof = proof
        chosen = _rest_selected(c, parts, profile, sizes) if c.tiling in _PROLOGUES else None
        try:
            c.module = chain_module(chained, profile, sizes, parts, chosen)
        except (NoKernel, ValueError) as err:
            c.rejected = f"does not lower: {err}"
        return
    low = lowered[c.tiling]
    if isinstance(low, str):
        c.rejected = low
        return
    try:
        emitted = emit_nki(low.func, c.params, sizes)
    except Refused as err:
        c.rejected = f"does not emit: {err}"
        return
    c.module = single_module(emitted.text, emitted.name, len(func.body.block.args))
    c.tiling_proof = proved[c.tiling].proof_id
    c.lowering_proof = low.proof_id


@dataclass(frozen=True)
class CheckJob:
    """One candidate's check, whole in itself so that an executor's process can run it: its
    module, the inputs, the interpreter's results (rounded and exact) and the tolerance."""

    label: str
    profile: str
    module: KernelModule
    inputs: tuple[np.ndarray, ...]
    expected: tuple[np.ndarray, np.ndarray]
    tolerance: tuple[float, float]


@dataclass(frozen=True)
class CheckOutcome:
    """A check's result: the cost model's latency and the output where the module runs and is
    right, else why it is rejected."""

    latency_s: float | None = None
    output: np.ndarray | None = None
    rejected: str = ""


def check_candidate(job: CheckJob) -> CheckOutcome:
    """Run, check and price the job's module. The candidate is right when it is within the
    tolerance of either expected result: the interpreter's with every intermediate rounded to
    its dtype, or its exact one (float64 throughout); the chain rounds its intermediates in
    HBM as the first does, a fused kernel keeps them in fp32, nearer the second (layernorm's
    centred rows cancel near zero, where the rounded run is 0.047 and the fused kernel and the
    exact run 0.023)."""
    with tempfile.TemporaryDirectory() as tmp:
        runner = KernelRunner(job.profile, Path(tmp))
        try:
            out, latency = runner.run_module(job.module, job.inputs, job.label)
        except (KernelError, SimulationError, SimulationWarning) as err:
            return CheckOutcome(rejected=f"the simulator stops: {failure(err, runner.tmp)}")
    rounded, exact = job.expected
    problem = check_close(out, rounded, job.tolerance)
    if problem and check_close(out, exact, job.tolerance):
        return CheckOutcome(rejected=f"wrong result: {problem}")
    return CheckOutcome(latency, out)


def _check(candidates: Sequence[Candidate], name: str, profile: str,
           checks: tuple[tuple[np.ndarray, np.ndarray], tuple[float, float],
                         Sequence[np.ndarray]],
           executor: Executor | None, say: Callable[[str], None], total: int | None,
           first: int = 1) -> None:
    """Check every candidate that has a module (`check_candidate`; on `executor`, else here,
    one after the other), fill its fields and say each result (numbered from `first`, `of
    total` where given)."""
    expected, tolerance, inputs = checks
    jobs = [CheckJob(f"{name}_{number}", profile, c.module, tuple(inputs), expected, tolerance)
            for number, c in enumerate(candidates, first) if c.module is not None]
    outcomes = iter(executor.map(check_candidate, jobs) if executor is not None and jobs
                    else [check_candidate(job) for job in jobs])
    for number, c in enumerate(candidates, first):
        if c.module is not None:
            outcome = next(outcomes)
            c.latency_s, c.output = outcome.latency_s, outcome.output
            c.rejected = outcome.rejected or c.rejected
        what = (f"{c.latency_s * 1e6:.1f} us" if c.latency_s is not None
                else f"rejected: {c.rejected}")
        say(f"nki: @{name}: candidate {number}{'' if total is None else f'/{total}'} "
            f"{c.label}: {what}")
