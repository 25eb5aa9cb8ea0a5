"""Printing a lowered kernel (`targets/nki/lower.py`) as a current-API NKI module.

One self-contained Python module per kernel: `import nki`, `import nki.isa as nisa`,
`import nki.language as nl`, and one `@nki.jit` function taking the inputs (HBM tensors) and
returning the outputs it allocates with `nl.ndarray(..., buffer=nl.shared_hbm)`. The sizes
are read from the inputs' shapes, the tile parameters are constants of the module, and the
kernel's assumptions (the profile's limits among them) are asserted when it is traced:

    @nki.jit
    def mul_rows(in0, in1):
        M, N = in0.shape
        ...
        BM = 128
        assert BM <= 128, "mul_rows: assumes BM <= 128"
        out0 = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        for i in nl.affine_range((BM + M - 1) // BM):
            t0 = nl.ndarray((BM, N), dtype=nl.bfloat16, buffer=nl.sbuf)
            ...
            nisa.dma_copy(dst=t0[0:n0_0, 0:N], src=in0[BM*i:BM*i + n0_0, 0:N])

The grid's programs are `nl.affine_range` loops around the body; a sequential `tile.for` is
`nl.sequential_range`, its carried values updated in place (an instruction whose result is
yielded writes the carried tile). `acc + nc_matmul(a, b)` of a PSUM accumulator started at 0
is `nisa.nc_matmul(dst=acc, ...)`, the default accumulation (the first matmul of a fresh PSUM
tile overwrites, the next ones add); `nc_matmul(st, mv, acc)` outside a loop (a synthesized
lowering's second matmul) adds into `acc` with `accumulate=True`. A `tile.load` is
`nisa.dma_copy` of the tile's region, the tile first filled with the pad value when the region
is cut by the tensor's end (a remainder tile); a `tile.store` copies the region inside the
result. A one-dim tile `[F]` is held as one partition `[1, F]`. Two instruction pairs of the
fused IR (`fuse.py`) print as one instruction: an `activation` and the `activation_reduce` of
the same operands right after it are one `nisa.activation_reduce` writing both `dst` and
`reduce_res`; a 2-D load whose only use is a `dma_transpose` is one `nisa.dma_transpose` of
the region from HBM.

Where each instruction runs is the emitter's choice, the dataflow the proved one's:

- the ops of the body that compute the same tile in every program of the grid (loads of an
  input at offsets naming no program id, constant tiles, instructions of those alone, none
  written in place) run once before the grid (`_grid_invariant`);
- the largest load inside a loop whose blocks do not depend on every program id (the matmul's
  moving operand: its blocks name the column block and the K step, not the row block) is read
  once per value of the ids it names: those ids' loops outermost, every block over the loop's
  iterations into one SBUF buffer `[P, iterations, F]`, then the other ids' loops, the loop
  reading its block of the buffer; a second load of the loop naming one other id (the
  stationary operand) is read whole before the grid (`_stream_loads`, `grid_streaming`: each
  where it is read more than once and the buffers take at most half of SBUF, else the plain
  grid, chosen when the kernel is traced); a buffer read over every column block whose blocks
  are an input's column blocks is read a step of whole rows at a time (`stream_rows`: a DMA
  moves a partition's N elements at once, 2 KiB at N = 1024 bf16, where a block moves BN);
- in a one-id grid whose body has no loop, every program's tiles are loaded first into one
  SBUF buffer per load, then the grid computes and stores, each program reading its block
  (`_loads_ahead`, `grid_loading_ahead`: where the buffers take at most half of SBUF);
- the ops of the body that name one program id and not the others (rmsnorm_matmul's row
  statistics and its x tiles transposed and scaled over the K steps name the row block, not
  the column block) are computed once per value of that id into SBUF buffers, that id's loop
  outermost, the other ids' loops inside reading them (`_hoist_plan`, `grid_hoisting`): every
  value first and the other ids' load streamed where it all fits half of SBUF, else one value
  at a time; a loop's ops naming no id (g's column per K step) once before; a second load of
  a region a hoisted loop loaded is read from that loop's buffer, which, where the load's
  blocks over the loop are its row block's columns, is filled before the loop by one DMA of
  whole rows (`shared_rows`);
- in the plain grid, a load whose region names none of the inner ids (rope's cos and sin
  name the token block, not the head block) is printed in the loop of the last id it names,
  before the inner ones, read by each of their programs (`loads_outside`);
- a zero PSUM tile that only starts a loop's matmul accumulation is not filled: the first
  matmul of the fresh tile overwrites (`_matmul_accumulator`);
- the row broadcast `ones.T @ row` of a row loaded from an input is the matmul into PSUM
  where the row fits one bank, else, before the grid over more than half the partitions,
  that matmul a bank's width at a time, each block copied into SBUF (`broadcast_by_banks`),
  else one DMA from HBM of partition stride 0 (`_broadcast_row`);
  the row sum of a ones tile (a mean's count) is the row length, written by a memset
  (`_count_of_ones`);
- a `tensor_scalar` ScalarE runs moves there from VectorE while VectorE has more passes over a
  tile in its block than ScalarE would have after the move (`_balance_engines`); printed the
  selection's `engines over the kernel` way (`engines_over_kernel`), the passes are counted
  over the whole kernel, each loop's times its trips at the selection's sizes.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES, round_to
from axon.dialects.form.intexpr import Atom, IntExpr
from axon.dialects.nki.base import ON_CHIP
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp, parse_assumption
from axon.targets.nki.lower import Refused, kernel_of
from axon.targets.nki.squeeze import unit_lead

#: Axon dtypes -> `nki.language` dtypes
_DTYPES = {"f32": "nl.float32", "bf16": "nl.bfloat16", "f16": "nl.float16"}
#: the Python comparison of each assumption operator
_COMPARE = {"<=": "<=", ">=": ">=", "<": "<", ">": ">", "==": "=="}


@dataclass(frozen=True)
class EmittedKernel:
    """A kernel module's text and the name of its `@nki.jit` function."""

    name: str
    text: str


def emit_nki(func: FuncOp, tile_sizes: Mapping[str, int],
             sizes: Mapping[str, int] | None = None, *,
             engines_over_kernel: bool = False) -> EmittedKernel:
    """The module of a lowered function (`lower.lower_function`) with its tile parameters
    bound to `tile_sizes`; Refused naming what it cannot print. A kernel takes its sizes from
    its inputs' shapes; a size no input gives (a broadcast's `G` in `[B, HKV*G, L, D]`, which
    its input `[B, HKV, 1, L, D]` lacks) is printed as the value `sizes` gives it, the kernel
    then specialized at it (NKI compiles a kernel per shape anyway), and without `sizes`
    refused. `engines_over_kernel`: instructions moved between engines by their passes over the
    whole kernel at `sizes` rather than block by block (`_balance_engines`)."""
    kernel = kernel_of(func)
    missing = sorted(set(kernel.param_names()) - set(tile_sizes))
    if missing:
        raise Refused(f"@{func.sym_name.data}: no value for tile parameter(s) "
                      f"{', '.join(missing)}")
    printer = _Printer(kernel, func.sym_name.data, fixed=dict(sizes or {}),
                       engines_over_kernel=engines_over_kernel)
    return EmittedKernel(func.sym_name.data, printer.module(tile_sizes))


def engines_differ(func: FuncOp, tile_sizes: Mapping[str, int], sizes: Mapping[str, int]
                   ) -> bool:
    """Whether `emit_nki(..., engines_over_kernel=True)` places an instruction on another
    engine than the block-by-block balance does (else printing it that way changes nothing)."""
    kernel = kernel_of(func)
    hoisted = _grid_invariant(kernel)
    return _balance_engines(kernel, hoisted) != \
        _balance_engines(kernel, hoisted, {**sizes, **tile_sizes})


def python(expr: IntExpr) -> str:
    """`expr` as a Python integer expression (floordiv as `//`, mod as `%`)."""
    if not expr.terms:
        return "0"
    parts: list[str] = []
    for k, (mono, coeff) in enumerate(expr.terms):
        body = "*".join(_atom(a) for a in mono)
        magnitude = abs(coeff)
        text = str(magnitude) if not mono else (body if magnitude == 1
                                                else f"{magnitude}*{body}")
        if k == 0:
            parts.append(f"-{text}" if coeff < 0 else text)
        else:
            parts.append(f" - {text}" if coeff < 0 else f" + {text}")
    return "".join(parts)


def _affine_offset(attrs: Mapping[str, object]) -> str:
    """`iota` / `affine_select`'s `offset` as printed: the integer `offset` plus the
    `size_offset` expression of sizes and loop indices, which the traced kernel holds as
    Python integers."""
    offset = IntExpr.const(int(str(attrs.get("offset") or 0)))
    extras = attrs.get("size_offset") or ()
    assert isinstance(extras, tuple)
    for extra in extras:
        offset = offset + IntExpr.lift(extra)
    return python(offset)


def _atom(atom: Atom) -> str:
    if atom.kind == "sym":
        return atom.name
    a, b = (python(arg) for arg in atom.args)
    if atom.kind in ("min", "max"):
        return f"{atom.kind}({a}, {b})"
    op = {"floordiv": "//", "mod": "%"}[atom.kind]
    return f"({_group(a)} {op} {_group(b)})"


def _group(text: str) -> str:
    return f"({text})" if any(c in text for c in " +-*") else text


def _type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def _dtype(name: str) -> str:
    if name not in _DTYPES:
        raise Refused(f"dtype {name} has no NKI name here")
    return _DTYPES[name]


def _held_shape(t: TensorType) -> list[IntExpr]:
    """The on-chip shape of a tile: a one-dim `[F]` is one partition `[1, F]`, a scalar
    `[1, 1]`."""
    if t.rank == 0:
        return [IntExpr.const(1), IntExpr.const(1)]
    return [IntExpr.const(1), *t.shape] if t.rank == 1 else list(t.shape)


@dataclass
class _Printer:
    kernel: KernelOp
    name: str
    #: the sizes a size no input gives is printed as (`emit_nki`'s `sizes`)
    fixed: dict[str, int] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)
    #: results not printed on their own (an nc_matmul folded into its accumulation)
    folded: set[Operation] = field(default_factory=set)
    #: matmuls that accumulate into a loop's carried PSUM tile (their dst is that tile)
    in_place: set[Operation] = field(default_factory=set)
    #: the buffer of each allocated tile, by its name
    buffers: dict[str, str] = field(default_factory=dict)
    count: int = 0
    #: ops of the kernel's body printed once before the grid (`_grid_invariant`)
    hoisted: set[Operation] = field(default_factory=set)
    #: engines balanced over the whole kernel at `fixed`'s sizes, not block by block
    engines_over_kernel: bool = False
    #: instructions the emitter moves to another engine (`_balance_engines`)
    engines: dict[Operation, str] = field(default_factory=dict)
    #: the loads read from their streaming buffers while the grid is printed (`_stream_load`)
    streamed: set[Operation] = field(default_factory=set)
    #: instruction results written in place into a window of a concatenation (`_windows`)
    windows: dict[SSAValue, tuple[nki.AccessOp, int]] = field(default_factory=dict)
    #: the body's ops computed once per block before the grid's programs (`grid_hoisting`)
    per_block: set[Operation] = field(default_factory=set)
    #: loads written into a block of a buffer: the buffer, the block's index and its name
    into: dict[LoadOp, tuple[str, str, str]] = field(default_factory=dict)
    #: loads that read a buffer's block an earlier load wrote: the block's name
    alias: dict[LoadOp, str] = field(default_factory=dict)

    def fresh(self, prefix: str = "t") -> str:
        self.count += 1
        return f"{prefix}{self.count - 1}"

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def module(self, tile_sizes: Mapping[str, int]) -> str:
        inputs = self.kernel.input_types()
        params = [f"in{k}" for k in range(len(inputs))]
        self.line(0, "@nki.jit")
        self.line(0, f"def {self.name}({', '.join(params)}):")
        bound: set[str] = set()
        checks = []  # after every binding: a dim may name a size a later input binds
        unsolved: list[tuple[IntExpr, str]] = []
        for param, t in zip(params, inputs, strict=True):
            dims = [d.as_symbol if d.as_symbol is not None and d.as_symbol not in bound
                    else f"_{param}_{k}" for k, d in enumerate(t.shape)]
            if dims:  # a scalar input has no dims to bind
                self.line(1, f"{', '.join(dims)}{',' if len(dims) == 1 else ''} = {param}.shape")
            for k, (d, held) in enumerate(zip(t.shape, dims, strict=True)):
                if held.startswith("_"):
                    unsolved.append((d, held))
                    checks.append(f"assert {held} == {python(d)}, \"{self.name}: {param} "
                                  f"dim {k} must be {d}\"")
                elif d.as_symbol is not None:
                    bound.add(d.as_symbol)
        while True:  # 2*D2, HKV*G: the one size not bound yet from the dim
            solved = next(((d, held, s) for d, held in unsolved
                           if (s := _solve_dim(d, bound)) is not None), None)
            if solved is None:
                # two sizes unbound in one dim: the first the caller fixed is printed as its
                # value, and the dims are solved again
                given = sorted(s for d, _ in unsolved for s in d.symbols()
                               if s not in bound and s in self.fixed)
                if not given:
                    break
                self.line(1, f"{given[0]} = {self.fixed[given[0]]}  # no input gives "
                             f"{given[0]}: specialized at it")
                bound.add(given[0])
                continue
            d, held, (symbol, a, b) = solved
            self.line(1, f"{symbol} = ({held} - ({python(b)})) // ({python(a)})"
                      if b != IntExpr.const(0) else f"{symbol} = {held} // ({python(a)})")
            bound.add(symbol)
        unknown = sorted({s for d, _ in unsolved for s in d.symbols()} - bound)
        if unknown:
            raise Refused(f"the kernel's inputs do not give the sizes {', '.join(unknown)} "
                          f"apart (dims {', '.join(str(d) for d, _ in unsolved)})")
        # a size of the results alone (a broadcast's): the value the caller fixed
        outputs = sorted({s for t in self.kernel.output_types() for d in t.shape
                          for s in d.symbols()} - bound - set(self.kernel.param_names()))
        for symbol in outputs:
            if symbol not in self.fixed:
                raise Refused(f"no input of the kernel gives the size {symbol} of its results")
            self.line(1, f"{symbol} = {self.fixed[symbol]}  # no input gives {symbol}: "
                         "specialized at it")
            bound.add(symbol)
        for check in checks:
            self.line(1, check)
        for p in self.kernel.param_names():
            self.line(1, f"{p} = {int(tile_sizes[p])}")
        for text in self.kernel.assumptions():
            lhs, op, rhs = parse_assumption(text)
            self.line(1, f"assert {python(lhs)} {_COMPARE[op]} {python(rhs)}, "
                         f"\"{self.name}: assumes {text}\"")
        for k, t in enumerate(self.kernel.output_types()):
            self.line(1, f"out{k} = nl.ndarray({_tuple(list(t.shape))}, "
                         f"dtype={_dtype(t.dtype)}, buffer=nl.shared_hbm)")
        body = self.kernel.body.block
        for arg, param in zip(body.args, params, strict=True):
            self.names[arg] = param
        self.hoisted = _grid_invariant(self.kernel)
        self.windows = _windows(self.kernel)
        self.engines = _balance_engines(
            self.kernel, self.hoisted,
            {**self.fixed, **tile_sizes} if self.engines_over_kernel else None)
        for inst in self.kernel.walk():
            count = _count_of_ones(inst)
            if count is not None and count.results[0].has_one_use():
                self.folded.add(count)  # the count is written directly
        self.prelude()
        for inst in body.ops:  # computed once, before the grid: the same in every program
            if inst in self.hoisted:
                self.op(inst, 1, hoisting=True)
        self.grids(body, tile_sizes)
        outs = [f"out{k}" for k in range(len(self.kernel.output_types()))]
        self.line(1, f"return {', '.join(outs)}")
        header = ['"""' + f"{self.name}: an NKI kernel emitted by Axon from a proved lowering of "
                  "its tiled kernel." + '"""', "", "import nki", "import nki.isa as nisa",
                  "import nki.language as nl", "", ""]
        return "\n".join([*header, *self.lines]) + "\n"

    def prelude(self) -> None:
        """What a printing choice binds before the kernel's hoisted ops (`fold.py`'s fold)."""

    def grids(self, body: Block, tile_sizes: Mapping[str, int]) -> None:
        """The grid of programs, printed the first way that fits (below)."""
        plans = _stream_loads(self.kernel, self.hoisted, tile_sizes)
        once: _Hoist | None = _hoist_for(self.kernel, self.hoisted, None)
        if once is not None and _hoist_work(once) == 0:
            once = None
        hoist = _hoist_plan(self.kernel, self.hoisted | (once.ops() if once else set()))
        # the first that fits of: every value's hoisted ops, then the load left in the grid
        # naming the other ids read once per their values (`grid_hoisting`); the streamed loads
        # (`grid_streaming`); one value's hoisted ops at a time; the plain grid. Where the
        # streamed load is among the hoisted ops (read once per value of its id there too),
        # one value's hoisted ops at a time come before the streamed loads: the same loads, the
        # hoisted ops computed once
        keyword = "if"
        first = hoist is not None and plans is not None and plans[0].load in hoist.ops()
        if hoist is not None:
            stream = _stream_loads(self.kernel, self.hoisted | hoist.ops()
                                   | (once.ops() if once else set()), tile_sizes)
            others = set(self.kernel.program_names()) - {hoist.pid}
            if stream is not None and stream[0].uses == others:
                self.grid_hoisting(hoist, once, stream[0], body, keyword)
                keyword = "elif"
            if first:
                self.grid_hoisting(hoist, once, None, body, keyword)
                keyword = "elif"
        if plans is not None:
            self.grid_streaming(*plans, body, keyword)
            keyword = "elif"
        if hoist is not None and not first:
            self.grid_hoisting(hoist, once, None, body, keyword)
            keyword = "elif"
        ahead = _loads_ahead(self.kernel, self.hoisted) \
            if plans is None and hoist is None else []
        if keyword == "elif":
            self.line(1, "else:")
            self.grid(list(self.kernel.program_names()), body, 2)
        elif ahead:
            self.grid_loading_ahead(ahead, body)
        else:
            self.grid(list(self.kernel.program_names()), body, 1)

    # ---- structure --------------------------------------------------------------------------
    def grid(self, order: list[str], body: Block, depth: int) -> None:
        """The grid's programs as `nl.affine_range` loops in `order` (they are independent, so
        any order computes the same), then the body."""
        extents = dict(zip(self.kernel.program_names(), self.kernel.grid_exprs(), strict=True))
        early: set[Operation] = set()
        for level, pid in enumerate(order):
            self.line(depth, f"for {pid} in nl.affine_range({python(extents[pid])}):")
            depth += 1
            for op in self.loads_outside(body, set(order[level + 1:])):
                self.op(op, depth, hoisting=True)
                early.add(op)
                self.per_block.add(op)  # printed: skipped in the body (and by later levels)
        self.block(body, depth)
        self.per_block -= early

    def loads_outside(self, body: Block, inner: set[str]) -> list[Operation]:
        """The body's loads whose region names none of the `inner` program ids (rope's cos and
        sin rows, the same for every head block `j` of a token block `i`), each with the ops
        that print it (`_printed_with`): printed in the loop of the last id they name, before
        the inner ids' loops, each tile read by every inner program (a loaded tile is not
        written: one written in place is left in the grid)."""
        if not inner:
            return []
        out: list[Operation] = []
        for op in body.ops:
            if not isinstance(op, LoadOp) or op in self.streamed or op in self.hoisted \
                    or op in self.per_block or op in self.alias or op in self.into:
                continue
            if _transposed_on_load(op) is not None:
                continue
            chain = _printed_with(op)
            tile = chain[-1].results[0]
            if written_in_place(tile) or tile in self.windows:
                continue
            named = set().union(*(IntExpr.lift(o.data).symbols() for o in op.offsets.data))
            if not named & inner:
                out.extend(chain)
        return out

    def grid_streaming(self, plan: _Stream, whole: _Stream | None, body: Block,
                       keyword: str = "if") -> None:
        """The grid with `plan.load` read once per value of the programs it depends on: those
        programs' loops outermost, then every block of the load over its loop's iterations into
        one SBUF buffer `[P, iterations, F]`, then the other programs' loops, whose loop reads
        its block of the buffer. With `whole` (another load of the loop, naming one of those
        other programs), that load's blocks for every value of its program are read first,
        before the grid, into one buffer `[P, values * iterations, F]`, so that it too is read
        once. Each buffer counted twice (the next one is allocated while the last is held),
        the kernel takes the first of: both buffers where each is read more than once (more
        than one value of the programs its load does not name) and they take at most half of
        SBUF's bytes per partition, `plan`'s alone where it does (a Python `if` on the shapes,
        when traced; `keyword` is the first branch's `if` or `elif`, the branches before and
        after, the plain grid last, the caller's)."""
        extents = dict(zip(self.kernel.program_names(), self.kernel.grid_exprs(), strict=True))
        steps = python(plan.loop.extent_expr())
        choices = [[plan, whole], [plan]] if whole is not None else [[plan]]
        for k, streams in enumerate(choices):
            saved = (dict(self.names), set(self.folded), set(self.in_place), dict(self.buffers))
            need = " + ".join(self.stream_bytes(x, steps, extents, x is whole)
                              for x in (*streams, *plan.siblings))
            # a buffer pays where its blocks are read more than once: w's where there is more
            # than one row block, x's where there is more than one column block
            reused = [" * ".join(_group(python(extents[p])) for p in names) + " > 1"
                      for names in ([p for p in extents if p not in x.uses] for x in streams)]
            self.line(1, f"{keyword if k == 0 else 'elif'} {' and '.join(reused)} and {need} <= "
                         "nl.tile_size.sbuf_fmax_bytes // 2:")
            depth = 2
            iv = plan.loop.iv.data
            if len(streams) == 2:
                assert whole is not None
                (pid,) = whole.uses
                if _whole_rows(whole.load, pid, extents[pid]):
                    self.stream_rows(whole, pid, steps, extents[pid], depth)
                else:
                    buf = self.stream_buffer(whole, f"{_group(python(extents[pid]))} * "
                                                    f"{_group(steps)}", depth)
                    self.line(depth, f"for {pid} in nl.affine_range({python(extents[pid])}):")
                    self.line(depth + 1, f"for {iv} in nl.affine_range({steps}):")
                    self.stream_into(whole, buf, f"{pid} * {_group(steps)} + {iv}", depth + 2)
            for pid in self.kernel.program_names():
                if pid in plan.uses:
                    self.line(depth, f"for {pid} in nl.affine_range({python(extents[pid])}):")
                    depth += 1
            bufs = [(x, self.stream_buffer(x, _group(steps), depth))
                    for x in (plan, *plan.siblings)]
            self.line(depth, f"for {iv} in nl.affine_range({steps}):")
            for x, buf in bufs:
                self.stream_into(x, buf, iv, depth + 1)
            self.streamed = {x.load for x in (*streams, *plan.siblings)}
            self.grid([p for p in self.kernel.program_names() if p not in plan.uses], body,
                      depth)
            self.streamed = set()
            self.names, self.folded, self.in_place, self.buffers = saved

    def grid_hoisting(self, hoist: _Hoist, once: _Hoist | None, stream: _Stream | None,
                      body: Block, keyword: str) -> None:
        """One branch of the grid with `hoist`'s ops computed once per value of `hoist.pid`
        (`_hoist_plan`), the values the rest of the body reads written into SBUF buffers
        `[P, values * iterations, F]` (`[P, values, F]` for those outside the loops; a loop
        partly hoisted runs its hoisted ops over all its iterations, `nl.affine_range`: they
        read no carried value), then the other ids' loops reading them.

        With `stream` (a load left in the grid naming the other ids and not `hoist.pid`: w's
        column block over the K steps): every value of `hoist.pid` is hoisted first, `pid`'s
        loop outermost, then the other ids' loops, each reading `stream`'s blocks once into
        its buffer (`grid_streaming`), then `pid`'s loop again running the rest. Without: one
        value's buffers, `pid`'s loop outermost around its hoisted ops and the other ids'
        loops. A hoisted load of the region an earlier hoisted loop's load read at the same
        iteration reads that load's tiles, kept over its loop in a buffer `[P, iterations, F]`
        of the value. With `once` (ops of the body's loops naming no program id: g's column of
        each K step, transposed), those run first, once, into buffers `[P, iterations, F]`.

        Why it computes what the grid computes: the grid's programs are independent (any order
        of them, and any interleaving of one program's ops that keeps each op after what it
        reads, computes the same); a hoisted op reads only the inputs, values computed before
        the grid and other hoisted ops, at offsets naming no id but `hoist.pid` (`once`: none),
        so it computes the same tile in every program of one value of that id, and computing
        it once for them all, before any of them reads it, changes no value; the inputs are not
        written by the kernel (its results are other tensors), so two loads of one region read
        the same values; no hoisted tile is written in place by an op left in the grid
        (`_hoist_for`), and each buffer's block is written once, so the buffers hold what was
        computed until the last program has read them.

        The branch is taken (a Python `if` when traced, `keyword` its `if` or `elif`) where its
        buffers, each counted twice as `grid_streaming` counts them, take at most half of SBUF
        per partition and, without `stream`, where the other ids have more than one value or a
        load is shared (else nothing is computed twice)."""
        extents = dict(zip(self.kernel.program_names(), self.kernel.grid_exprs(), strict=True))
        pid = hoist.pid
        assert pid is not None
        others = [p for p in self.kernel.program_names() if p != pid]
        values = _group(python(extents[pid]))
        per_value = " + ".join(self.kept_bytes(v, loop) for v, loop in hoist.kept) or "0"
        fixed = [self.kept_bytes(v, loop) for v, loop in (once.kept if once else ())]
        fixed += [self.stream_bytes(_Stream(self.loop_of(first), first, None, frozenset()),
                                    python(self.loop_of(first).extent_expr()), extents, False)
                  for first in dict.fromkeys(hoist.shared.values())]
        if stream is not None:
            fixed += [self.stream_bytes(x, python(stream.loop.extent_expr()), extents, False)
                      for x in (stream, *stream.siblings)]
        reused = [] if hoist.shared or stream is not None else \
            [" * ".join(_group(python(extents[p])) for p in others) + " > 1"]
        count = f"{values} * " if stream is not None else ""
        need = " + ".join([*fixed, f"{count}({per_value})"])
        self.line(1, f"{keyword} {' and '.join([*reused, need])} <= "
                     "nl.tile_size.sbuf_fmax_bytes // 2:")
        saved = (dict(self.names), set(self.folded), set(self.in_place), dict(self.buffers))
        if once is not None:
            before = {v: self.kept_buffer(v, loop, None, 2) for v, loop in once.kept}
            self.hoisted_part(once, before, None, 2)
        depth = 2
        size = values if stream is not None else None
        if stream is None:
            self.line(depth, f"for {pid} in nl.affine_range({python(extents[pid])}):")
            depth += 1
        buffers = {v: self.kept_buffer(v, loop, size, depth) for v, loop in hoist.kept}
        if stream is not None:
            self.line(depth, f"for {pid} in nl.affine_range({python(extents[pid])}):")
            self.hoisted_part(hoist, buffers, pid, depth + 1)
        else:
            self.hoisted_part(hoist, buffers, None, depth)
        for p in others:
            self.line(depth, f"for {p} in nl.affine_range({python(extents[p])}):")
            depth += 1
        if stream is not None:
            steps = python(stream.loop.extent_expr())
            bufs = [(x, self.stream_buffer(x, _group(steps), depth))
                    for x in (stream, *stream.siblings)]
            self.line(depth, f"for {stream.loop.iv.data} in nl.affine_range({steps}):")
            for x, buf in bufs:
                self.stream_into(x, buf, stream.loop.iv.data, depth + 1)
            self.streamed = {x.load for x in (stream, *stream.siblings)}
            self.line(depth, f"for {pid} in nl.affine_range({python(extents[pid])}):")
            depth += 1
        self.per_block = {*hoist.top, *(x for ops in hoist.partial.values() for x in ops)}
        if once is not None:
            self.per_block.update(x for ops in once.partial.values() for x in ops)
        self.block(body, depth)
        self.per_block, self.streamed = set(), set()
        self.into, self.alias = {}, {}
        self.names, self.folded, self.in_place, self.buffers = saved

    def loop_of(self, op: Operation) -> ForOp:
        loop = op.parent_op()
        assert isinstance(loop, ForOp)
        return loop

    @staticmethod
    def kept_bytes(value: SSAValue, loop: ForOp | None) -> str:
        """Twice the bytes per partition of a hoisted value's part of a block, as Python."""
        t = _type(value)
        count = "" if loop is None else f"{_group(python(loop.extent_expr()))} * "
        return (f"2 * {count}{_group(python(_held_shape(t)[1]))} * "
                f"{DTYPES[t.dtype].storage.itemsize}")

    def kept_buffer(self, value: SSAValue, loop: ForOp | None, size: str | None, depth: int
                    ) -> str:
        """The buffer of a hoisted value: `[P, size * iterations, F]` (`[P, size, F]` outside
        the loops; `[P, iterations, F]` without `size`: computed once)."""
        t = _type(value)
        rows, cols = (python(d) for d in _held_shape(t))
        steps = "" if loop is None else _group(python(loop.extent_expr()))
        count = (steps or "1") if size is None else size if loop is None else f"{size} * {steps}"
        buf = self.fresh("h")
        self.line(depth, f"{buf} = nl.ndarray(({rows}, {count}, {cols}), "
                         f"dtype={_dtype(t.dtype)}, buffer=nl.sbuf)")
        return buf

    def hoisted_part(self, hoist: _Hoist, buffers: Mapping[SSAValue, str], block: str | None,
                     depth: int) -> None:
        """The hoisted ops of the value `block` of their id (None: of one value, or the ops
        computed once), each value the rest reads written into its buffer's block (by the
        instruction or load computing it where it can write SBUF, else copied there)."""
        copies: dict[ForOp | None, list[tuple[SSAValue, str]]] = {}
        for value, loop in hoist.kept:
            t = _type(value)
            rows, cols = (python(d) for d in _held_shape(t))
            if loop is None:
                index = block or "0"
            elif block is None:
                index = loop.iv.data
            else:
                index = f"{block} * {_group(python(loop.extent_expr()))} + {loop.iv.data}"
            name = f"{buffers[value]}[0:{rows}, {index}, 0:{cols}]"
            owner = value.owner
            assert isinstance(owner, Operation)
            load = owner.operands[0].owner if isinstance(owner, nki.DmaTransposeOp) else owner
            if isinstance(load, LoadOp) and (load is owner or _transposed_on_load(load) is owner):
                self.into[load] = (buffers[value], index, name)
            elif self.writes_directly(owner):
                self.names[value] = name
                self.buffers[name] = "sbuf"
            else:
                copies.setdefault(loop, []).append((value, name))
        for first in dict.fromkeys(hoist.shared.values()):
            t = _type(first.result)
            rows, cols = (python(d) for d in _held_shape(t))
            loop = self.loop_of(first)
            buf = self.fresh("x")
            steps = loop.extent_expr()
            if _whole_rows(first, loop.iv.data, steps):
                self.shared_rows(first, buf, steps, depth)
                block = f"{buf}[0:{rows}, {_group(cols)} * {{iv}}:{_group(cols)} * {{iv}} + {cols}]"
                self.alias[first] = block.format(iv=loop.iv.data)
            else:
                self.line(depth, f"{buf} = nl.ndarray(({rows}, {_group(python(steps))}, "
                                 f"{cols}), dtype={_dtype(t.dtype)}, buffer=nl.sbuf)")
                block = f"{buf}[0:{rows}, {{iv}}, 0:{cols}]"
                self.into[first] = (buf, loop.iv.data, block.format(iv=loop.iv.data))
            for later, of in hoist.shared.items():
                if of is first:
                    self.alias[later] = block.format(iv=self.loop_of(later).iv.data)
        for op in self.kernel.body.block.ops:
            if op in hoist.top:
                self.op(op, depth, hoisting=True)
            elif isinstance(op, ForOp) and op in hoist.partial:
                self.line(depth, f"for {op.iv.data} in "
                                 f"nl.affine_range({python(op.extent_expr())}):")
                for inner in hoist.partial[op]:
                    self.op(inner, depth + 1, hoisting=True)
                self.copy_kept(copies.get(op, []), depth + 1)
        self.copy_kept(copies.get(None, []), depth)

    def shared_rows(self, load: LoadOp, buf: str, steps: IntExpr, depth: int) -> None:
        """The tiles `load` reads over its loop's `steps` (`_whole_rows`) loaded before the
        loop as whole rows: a buffer `[P, steps * F]`, one DMA of the rows' every column (a
        partition then moves `cols * itemsize` contiguous bytes, not one block's: a DMA reaches
        its bandwidth from 2 KiB a partition, nki.md 6.2), the columns past the tensor's end
        and the rows past its last filled with the load's pad; step `iv`'s tile is then the
        buffer's columns `[F * iv, F * iv + F)`."""
        t, source = _type(load.result), _type(load.source)
        rows, cols = t.shape
        width = f"{_group(python(steps))} * {_group(python(cols))}"
        self.line(depth, f"{buf} = nl.ndarray(({python(rows)}, {width}), "
                         f"dtype={_dtype(t.dtype)}, buffer=nl.sbuf)")
        offsets = [IntExpr.lift(load.offsets.data[0].data), IntExpr.const(0)]
        extents, slices = self.region(depth, offsets, [rows, source.shape[1]], source.shape)
        cut = [f"{extents[0]} < {python(rows)}", f"{python(source.shape[1])} < {width}"]
        self.line(depth, f"if {' or '.join(cut)}:")
        self.line(depth + 1, f"nisa.memset(dst={buf}[0:{python(rows)}, 0:{width}], "
                             f"value={_fill(load.pad.value.data, t.dtype)})")
        self.line(depth, f"nisa.dma_copy(dst={buf}[0:{extents[0]}, 0:{extents[1]}], "
                         f"src={self.names[load.source]}[{', '.join(slices)}])")

    def copy_kept(self, copies: list[tuple[SSAValue, str]], depth: int) -> None:
        """Each hoisted value copied into its buffer's block, which then names it."""
        for value, name in copies:
            self.line(depth, f"nisa.tensor_copy(dst={name}, src={self.names[value]})")
            self.names[value] = name
            self.buffers[name] = "sbuf"

    def writes_directly(self, op: Operation) -> bool:
        """Does the printed instruction computing `op`'s result write a dst the emitter names
        (an SBUF buffer's block then), rather than alias another tile or write PSUM?"""
        if not isinstance(op, nki.NkiOp) or op.buffer_name() != "sbuf":
            return False
        if isinstance(op, nki.DmaCopyOp) and "shape" in op.attrs():
            return False  # a row's reshape names its operand
        if isinstance(op, nki.NcMatmulOp) or _broadcast_row(op) is not None:
            return False
        return op not in self.folded and op not in self.in_place

    def grid_loading_ahead(self, loads: list[LoadOp], body: Block) -> None:
        """A one-id grid whose loop-free body loads its program's tiles (`_loads_ahead`): every
        program's tiles are loaded first, in a loop of their own, into one SBUF buffer
        `[P, programs, F]` per load, then the grid's loop computes and stores, each program
        reading its block. The DMA queues then take the loads before the stores, so that a
        later program's tile is not waiting behind an earlier program's store (the programs
        are independent and each block is written by its own program's load alone: the same
        values; where the tile is cut by the tensor's end, its block is padded as the tile
        was). Where there is more than one program and the buffers, counted twice, take at
        most half of SBUF's bytes per partition (a Python `if` on the shapes, when traced);
        else the plain grid."""
        (pid,) = self.kernel.program_names()
        (extent,) = self.kernel.grid_exprs()
        count = _group(python(extent))
        need = " + ".join(f"2 * {count} * {_group(python(_type(op.result).shape[1]))} * "
                          f"{DTYPES[_type(op.result).dtype].storage.itemsize}" for op in loads)
        self.line(1, f"if {count} > 1 and {need} <= nl.tile_size.sbuf_fmax_bytes // 2:")
        saved = (dict(self.names), set(self.folded), set(self.in_place), dict(self.buffers))
        buffers = []
        for op in loads:
            t = _type(op.result)
            buf = self.fresh("s")
            self.line(2, f"{buf} = nl.ndarray(({python(t.shape[0])}, {count}, "
                         f"{python(t.shape[1])}), dtype={_dtype(t.dtype)}, buffer=nl.sbuf)")
            buffers.append(buf)
        self.line(2, f"for {pid} in nl.affine_range({python(extent)}):")
        for op, buf in zip(loads, buffers, strict=True):
            rows, cols = (python(d) for d in _type(op.result).shape)
            self.load(op, 3, into=(buf, pid, f"{buf}[0:{rows}, {pid}, 0:{cols}]"))
        self.streamed = set(loads)
        self.grid([pid], body, 2)
        self.streamed = set()
        self.names, self.folded, self.in_place, self.buffers = saved
        self.line(1, "else:")
        self.grid([pid], body, 2)

    @staticmethod
    def stream_bytes(stream: _Stream, steps: str, extents: Mapping[str, IntExpr],
                     whole: bool) -> str:
        """Twice the bytes per partition of `stream`'s buffer (`whole`: over every value of
        its program id), as Python."""
        t = _type(stream.load.result)
        held = t if stream.transpose is None else _type(stream.transpose.results[0])
        count = _group(steps)
        if whole:
            (pid,) = stream.uses
            count = f"{_group(python(extents[pid]))} * {count}"
        return (f"2 * {count} * {_group(python(held.shape[1]))} * "
                f"{DTYPES[t.dtype].storage.itemsize}")

    def stream_buffer(self, stream: _Stream, count: str, depth: int) -> str:
        t = _type(stream.load.result)
        held = t if stream.transpose is None else _type(stream.transpose.results[0])
        buf = self.fresh("s")
        self.line(depth, f"{buf} = nl.ndarray(({python(held.shape[0])}, {count}, "
                         f"{python(held.shape[1])}), dtype={_dtype(t.dtype)}, buffer=nl.sbuf)")
        return buf

    def stream_rows(self, stream: _Stream, pid: str, steps: str, blocks: IntExpr,
                    depth: int) -> None:
        """`stream`'s blocks over every value of `pid` read as whole rows (`_whole_rows`): a
        buffer `[P, steps, blocks * F]`, one DMA a step of the rows' every column (the tensor's
        rows are contiguous, so a partition moves `cols * itemsize` bytes at once, not one
        block's: a DMA reaches its bandwidth from 2 KiB a partition, nki.md 6.2), the columns
        past the tensor's end filled with the load's pad; block `pid` of step `iv` is then the
        buffer's columns `[F * pid, F * pid + F)` of that step."""
        load = stream.load
        t = _type(load.result)
        source = _type(load.source)
        rows, cols = t.shape
        width = f"{_group(python(blocks))} * {_group(python(cols))}"
        iv = stream.loop.iv.data
        buf = self.fresh("s")
        self.line(depth, f"{buf} = nl.ndarray(({python(rows)}, {steps}, {width}), "
                         f"dtype={_dtype(t.dtype)}, buffer=nl.sbuf)")
        self.line(depth, f"for {iv} in nl.affine_range({steps}):")
        offsets = [IntExpr.lift(load.offsets.data[0].data), IntExpr.const(0)]
        extents, slices = self.region(depth + 1, offsets, [rows, source.shape[1]],
                                      source.shape)
        cut = [f"{extents[0]} < {python(rows)}", f"{python(source.shape[1])} < {width}"]
        self.line(depth + 1, f"if {' or '.join(cut)}:")
        self.line(depth + 2, f"nisa.memset(dst={buf}[0:{python(rows)}, {iv}, 0:{width}], "
                             f"value={_fill(load.pad.value.data, t.dtype)})")
        self.line(depth + 1, f"nisa.dma_copy(dst={buf}[0:{extents[0]}, {iv}, 0:{extents[1]}], "
                             f"src={self.names[load.source]}[{', '.join(slices)}])")
        start = f"{_group(python(cols))} * {pid}"
        block = f"{buf}[0:{python(rows)}, {iv}, {start}:{start} + {python(cols)}]"
        self.names[load.result] = block
        self.buffers[block] = "sbuf"

    def stream_into(self, stream: _Stream, buf: str, index: str, depth: int) -> None:
        """The load of `stream` into block `index` of `buf`; the loop then reads the block at
        its own iteration (and program id)."""
        t = _type(stream.load.result)
        held = t if stream.transpose is None else _type(stream.transpose.results[0])
        rows, cols = python(held.shape[0]), python(held.shape[1])
        self.load(stream.load, depth, transposed=stream.transpose,
                  into=(buf, index, f"{buf}[0:{rows}, {index}, 0:{cols}]"))

    def block(self, block: Block, depth: int) -> None:
        releases = self.releases(block)
        for op in block.ops:
            self.op(op, depth)
            for value in releases.get(op, ()):
                name = self.names.get(value)
                if name is None or self.buffers.get(name) not in ON_CHIP:
                    continue
                # no other value is printed through the name (an alias, a view `t7[...]`)
                named = re.compile(rf"\b{re.escape(name)}\b")
                if sum(bool(named.search(n)) for n in self.names.values()) == 1:
                    self.line(depth, f"del {name}")

    def releases(self, block: Block) -> dict[Operation, list[SSAValue]]:
        """The PSUM and SBUF tiles made by an instruction of `block`, each by the op of
        `block` (or holding, in a loop, the op) that reads it last: its name is deleted
        there, so the simulator (which frees a tile when no name holds it, as the compiler's
        allocator would after its last read) does not count it live through later loops
        (attention's transposes and products, eight PSUM banks in all) or later instructions
        (a row kernel's chain of `[BM, N]` fp32 tiles, 32 KB a partition each at N = 8192:
        seven held to the end of the program overflow SBUF, a few live at a time fit)."""
        order = {op: k for k, op in enumerate(block.ops)}
        skipped = self.hoisted | self.per_block | self.streamed | self.folded | self.in_place
        releases: dict[Operation, list[SSAValue]] = {}
        for op in block.ops:
            if not (isinstance(op, nki.NkiOp) and op.buffer_name() in ON_CHIP) \
                    or op in skipped or not op.results[0].uses:
                continue
            last = None
            for use in op.results[0].uses:
                user: Operation | None = use.operation
                while user is not None and user not in order:
                    user = user.parent_op()
                if user is None or isinstance(user, YieldOp) or user in skipped:
                    last = None
                    break
                last = user if last is None or order[user] > order[last] else last
            if last is not None:
                releases.setdefault(last, []).append(op.results[0])
        return releases

    def op(self, op: Operation, depth: int, hoisting: bool = False) -> None:
        if op in self.folded or isinstance(op, YieldOp) and op.parent_op() is self.kernel:
            return
        if op in self.hoisted and not hoisting:
            return
        if op in self.streamed or op in self.per_block and not hoisting:
            return
        if isinstance(op, nki.DmaTransposeOp) and op.operands[0].owner in self.streamed:
            return
        if isinstance(op, ForOp):
            self.loop(op, depth)
        elif isinstance(op, YieldOp):
            loop = op.parent_op()
            assert isinstance(loop, ForOp)
            for arg, value in zip(loop.body.block.args, op.values, strict=True):
                if self.names[value] != self.names[arg]:
                    self.line(depth, f"nisa.tensor_copy(dst={self.names[arg]}, "
                                     f"src={self.names[value]})")
        elif isinstance(op, LoadOp):
            if op in self.alias:
                self.names[op.result] = self.alias[op]
                self.buffers[self.alias[op]] = "sbuf"
            elif _transposed_on_load(op) is None and _column_of_load(op) is None \
                    and _stretched_load(op) is None:
                self.load(op, depth, into=self.into.get(op))
        elif isinstance(op, FullOp):
            name = self.allocate(op.result, depth, op.space.data)
            if _matmul_accumulator(op):
                return  # the loop's first matmul writes it (and a matmul may not add onto a memset)
            fill = _fill(op.value.value.data, _type(op.result).dtype)
            self.line(depth, f"nisa.memset(dst={name}, value={fill})")
        elif isinstance(op, StoreOp):
            self.store(op, depth)
        elif isinstance(op, nki.NkiOp):
            self.instruction(op, depth)
        else:
            raise Refused(f"'{op.name}' in a lowered kernel has no NKI form")

    def loop(self, op: ForOp, depth: int) -> None:
        body = op.body.block
        end = body.last_op
        assert isinstance(end, YieldOp)
        for arg, init, value in zip(body.args, op.inits, end.values, strict=True):
            carried = self.names[init]
            if not init.has_one_use():
                carried = self.fresh()
                self.allocate_as(carried, _type(init), depth, _buffer(init))
                self.line(depth, f"nisa.tensor_copy(dst={carried}, src={self.names[init]})")
            self.names[arg] = carried
            owner = value.owner
            if isinstance(owner, nki.NkiOp) and _writes_in_place(owner, arg, init):
                self.names[value] = carried  # the yielded instruction writes the carried tile
                self.fold_accumulation(owner, arg)
        for result, arg in zip(op.results, body.args, strict=True):
            self.names[result] = self.names[arg]
        # a parallel loop's iterations are independent (a multipass tiling's write pass)
        walk = "affine_range" if op.loop_kind == "parallel" else "sequential_range"
        self.line(depth, f"for {op.iv.data} in nl.{walk}({python(op.extent_expr())}):")
        self.block(body, depth + 1)

    def fold_accumulation(self, op: nki.NkiOp, acc: BlockArgument) -> None:
        """`acc + p`, `p` an `nc_matmul` used only here and `acc` a PSUM accumulator: the
        matmul accumulates into `acc` itself."""
        if not (isinstance(op, nki.TensorTensorOp) and op.op.data == "add"):
            return
        a, b = op.operands
        product = b if a is acc else a if b is acc else None
        if (product is None or not isinstance(product.owner, nki.NcMatmulOp)
                or not product.has_one_use() or len(product.owner.operands) != 2):
            return
        loop = acc.block.parent_op()
        assert isinstance(loop, ForOp)
        init = loop.inits[acc.index].owner
        if not (isinstance(init, FullOp) and init.space.data == "psum"
                and init.value.value.data == 0.0):
            return
        self.folded.add(op)
        self.names[product] = self.names[acc]
        self.in_place.add(product.owner)

    # ---- memory -------------------------------------------------------------------------------
    def allocate(self, value: SSAValue, depth: int, buffer: str) -> str:
        if value in self.names:
            return self.names[value]
        name = self.fresh()
        self.names[value] = name
        self.allocate_as(name, _type(value), depth, buffer)
        return name

    def allocate_as(self, name: str, t: TensorType, depth: int, buffer: str) -> None:
        self.buffers[name] = buffer
        self.line(depth, f"{name} = nl.ndarray({_tuple(_held_shape(t))}, dtype={_dtype(t.dtype)}, "
                         f"buffer=nl.{buffer})")

    def region(self, depth: int, offsets: list[IntExpr], tile: list[IntExpr],
               whole: tuple[IntExpr, ...]) -> tuple[list[str], list[str]]:
        """The extents inside the tensor of a tile at `offsets` (names bound here where the
        tile may be cut by the tensor's end) and the tensor's slices."""
        extents, slices = [], []
        # a batch coordinate: one element at a program id that runs over the whole dim
        within = {(IntExpr.sym(p), g) for p, g in zip(self.kernel.program_names(),
                                                      self.kernel.grid_exprs(), strict=True)}
        for off, size, dim in zip(offsets, tile, whole, strict=True):
            if off == IntExpr.const(0) and size == dim or \
                    size == IntExpr.const(1) and (off, dim) in within:
                extent = python(size)
            else:
                extent = self.fresh("n")
                self.line(depth, f"{extent} = min({python(size)}, {python(dim - off)})")
            extents.append(extent)
            start = python(off)
            slices.append(f"{start}:{extent}" if start == "0" else f"{start}:{start} + {extent}")
        return extents, slices

    def load(self, op: LoadOp, depth: int, transposed: nki.DmaTransposeOp | None = None,
             into: tuple[str, str, str] | None = None) -> None:
        """`nisa.dma_copy` of the tile's region; with `transposed` (a `dma_transpose` of the
        loaded tile, its only use), `nisa.dma_transpose` of the region into its dst; with
        `into` (a buffer, an index and the block's name), into that block of the buffer, which
        then names the tile."""
        t = _type(op.result)
        source = _type(op.source)
        value = op.result if transposed is None else transposed.results[0]
        if into is None:
            name = self.allocate(value, depth, op.space.data)
            index = ""
        else:
            name, iv, block_name = into
            self.names[value] = block_name
            self.buffers[block_name] = "sbuf"
            index = f"{iv}, "
        offsets = [IntExpr.lift(o.data) for o in op.offsets.data]
        extents, slices = self.region(depth, offsets, list(t.shape), source.shape)
        cut = [f"{e} < {python(s)}" for e, s in zip(extents, t.shape, strict=True)
               if e != python(s)]
        if cut:
            self.line(depth, f"if {' or '.join(cut)}:")
            pad = _fill(op.pad.value.data, t.dtype)
            self.line(depth + 1, f"nisa.memset(dst={name if into is None else into[2]}, "
                                 f"value={pad})")
        inside = [f"0:{e}" for e in extents]
        if t.rank == 1:
            inside = ["0:1", *inside]
        src = f"{self.names[op.source]}[{', '.join(slices)}]"
        if t.rank == 0:  # a scalar: the one element as [1, 1]
            inside, src = ["0:1", "0:1"], f"{self.names[op.source]}.reshape((1, 1))"
        if transposed is not None:
            first, second = reversed(inside)
            self.line(depth, f"nisa.dma_transpose(dst={name}[{first}, {index}{second}], "
                             f"src={src})")
            return
        if into is not None:
            inside = [inside[0], index + inside[1]]
        self.line(depth, f"nisa.dma_copy(dst={name}[{', '.join(inside)}], src={src})")

    def store(self, op: StoreOp, depth: int) -> None:
        t = _type(op.value)
        k = op.result.value.data
        out = self.kernel.output_types()[k]
        offsets = op.offset_exprs()
        extents, slices = self.region(depth, offsets, list(t.shape), out.shape)
        inside = [f"0:{e}" for e in extents]
        owner = op.value.owner
        lead = unit_lead(t, _type(owner.operands[0])) \
            if _column_store(op.value) and isinstance(owner, nki.DmaCopyOp) else 0
        if lead:  # a batched kernel's [BM, D] tile as its block [1, 1, BM, D]
            inside = inside[lead:]
            slices = [python(o) for o in offsets[:lead]] + slices[lead:]
        elif _column_store(op.value):  # a [P] block held as the column [P, 1]
            inside = [*inside, "0:1"]
        elif t.rank == 1:
            inside = ["0:1", *inside]
        self.guarded(extents[:lead], depth, f"nisa.dma_copy(dst=out{k}[{', '.join(slices)}], "
                                            f"src={self.names[op.value]}[{', '.join(inside)}])")

    def access(self, op: nki.AccessOp, depth: int) -> None:
        """An access pattern: a view named by its expression (a strided slice, a reshape), a
        stride-0 DMA from HBM (a loaded tile stretched over a size-1 free dim), or a tile of
        windows (a concatenation) whose operands were written in place or are copied in."""
        result = op.results[0]
        layout = op.layout.data
        attrs = op.attrs()
        src = self.names.get(op.operands[0], "")
        if layout == "reshape":
            placed = [r for r in op.results[0].uses if isinstance(r.operation, nki.AccessOp)
                      and op.operands[0] in self.windows]
            self.names[result] = "" if placed else \
                f"{src}.reshape({_tuple(list(_type(result).shape))})"
            self.buffers[self.names[result]] = "sbuf"
        elif layout == "slice":
            parts = []
            for start, stop, step in zip(attrs["start"], attrs["stop"], attrs["step"],
                                         strict=True):
                text = f"{python(IntExpr.lift(start))}:{python(IntExpr.lift(stop))}"
                step_text = python(IntExpr.lift(step))
                parts.append(text if step_text == "1" else f"{text}:{step_text}")
            self.names[result] = f"{src}[{', '.join(parts)}]"
            self.buffers[self.names[result]] = self.buffers.get(src, "sbuf")
        elif layout == "broadcast_to":
            load = _stretched_source(op)
            if load is not None:
                self.stretched_load(load, op, depth)
            else:
                self.stretched_copies(op, src, depth)
        elif layout == "concat":
            name = self.allocate(result, depth, "sbuf")
            axis = int(attrs["axis"]) % _type(result).rank
            at = 0
            for k, value in enumerate(op.operands):
                width = _type(value).shape[axis]
                source = value.owner.operands[0] \
                    if isinstance(value.owner, nki.AccessOp) else value
                if self.windows.get(source) == (op, k):
                    at += 1
                    continue  # its instruction wrote the window
                window = [":"] * _type(result).rank
                window[axis] = f"{at}:{at} + {python(width)}" if at else f"0:{python(width)}"
                self.line(depth, f"nisa.tensor_copy(dst={name}[{', '.join(window)}], "
                                 f"src={self.names[value]})")
                if not width.is_const:
                    raise Refused("'nki.access' concatenation of a tile of symbolic width")
                at += width.value
        else:
            raise Refused(f"'nki.access' layout '{layout}' is not printed by the NKI emitter")

    def stretched_copies(self, op: nki.AccessOp, src: str, depth: int) -> None:
        """A tile on chip stretched over its one size-1 free dim: one engine copy per index
        of that dim (a loop), each of the tile's one slice."""
        t, out = _type(op.operands[0]), _type(op.results[0])
        stretched = [k for k in range(1, t.rank) if t.shape[k] != out.shape[k]]
        if len(stretched) != 1:
            raise Refused(f"'nki.access' broadcast of {t} to {out} on chip (one stretched "
                          "free dim is printed)")
        (k,) = stretched
        name = self.allocate(op.results[0], depth, "sbuf")
        index = self.fresh("h")
        dst = [":"] * t.rank
        dst[k] = index
        read = [":"] * t.rank
        read[k] = "0"
        self.line(depth, f"for {index} in nl.affine_range({python(out.shape[k])}):")
        self.line(depth + 1, f"nisa.tensor_copy(dst={name}[{', '.join(dst)}], "
                             f"src={src}[{', '.join(read)}])")

    def window(self, value: SSAValue, depth: int) -> str:
        """The window of a concatenation's tile that the instruction making `value` writes:
        the tile allocated here, then indexed at the operand's place along the axis."""
        concat, k = self.windows[value]
        name = self.allocate(concat.results[0], depth, "sbuf")
        index = [":"] * _type(concat.results[0]).rank
        index[int(concat.attrs()["axis"]) % len(index)] = str(k)
        return f"{name}[{', '.join(index)}]"

    def stretched_load(self, load: LoadOp, op: nki.AccessOp, depth: int) -> None:
        """A loaded block `[P, F]` of an HBM `[R, C]`, reshaped to `[P, 1, F]` and stretched
        to `[P, H, F]`: the block loaded once (rows past R padded as the load pads them) and
        read through an on-chip access pattern with the stride 0 over H, as the hand-written
        rope reads cos and sin over the heads (a stride-0 DMA from HBM would move the block H
        times)."""
        t = _type(load.result)
        source = _type(load.source)
        name = self.fresh("t")
        rows_held, heads = t.shape[0], _type(op.results[0]).shape[1]
        free = t.shape[-1]
        self.allocate_as(name, TensorType([rows_held, free], t.dtype), depth, "sbuf")
        offsets = [IntExpr.lift(o.data) for o in load.offsets.data]
        (rows, *_), _ = self.region(depth, offsets, list(t.shape), source.shape)
        if rows != python(rows_held):
            self.line(depth, f"if {rows} < {python(rows_held)}:")
            self.line(depth + 1, f"nisa.memset(dst={name}, "
                                 f"value={_fill(load.pad.value.data, t.dtype)})")
        row = IntExpr.const(1)
        for d in source.shape[1:]:
            row = row * d
        pitch, start = python(row), python(offsets[0] * row)
        self.line(depth, f"nisa.dma_copy(dst={name}[0:{rows}, 0:{python(free)}], "
                         f"src={self.names[load.source]}.ap(pattern=[[{pitch}, {rows}], "
                         f"[1, {python(free)}]], offset={start}))")
        view = (f"{name}.ap(pattern=[[{python(free)}, {python(rows_held)}], "
                f"[0, {python(heads)}], [1, {python(free)}]], offset=0)")
        self.names[op.results[0]] = view
        self.buffers[view] = "sbuf"

    def load_column(self, load: LoadOp, copy: nki.NkiOp, depth: int,
                    transposed: nki.DmaTransposeOp | None = None) -> None:
        """A block loaded straight into the tile `copy` (the lowering's DMA reshape) makes of
        it, one DMA (a DMA needs only equal element counts): a rank-1 block `[P]` of per-row
        values into the column `[P, 1]`, one per partition; a batched kernel's block
        `[1, 1, BM, D]` into the tile `[BM, D]` (`squeeze.py`), its batch coordinates
        indexing the tensor (a dim past the tensor's end leaves the tile to its padding);
        with `transposed` (a `dma_transpose` of that tile, its only use), one
        `nisa.dma_transpose` of the block into the transposed tile."""
        t = _type(load.result)
        name = self.allocate((copy if transposed is None else transposed).results[0], depth,
                             "sbuf")
        offsets = [IntExpr.lift(o.data) for o in load.offsets.data]
        extents, slices = self.region(depth, offsets, list(t.shape), _type(load.source).shape)
        cut = [f"{e} < {python(s)}" for e, s in zip(extents, t.shape, strict=True)
               if e != python(s)]
        if cut:
            self.line(depth, f"if {' or '.join(cut)}:")
            self.line(depth + 1, f"nisa.memset(dst={name}, "
                                 f"value={_fill(load.pad.value.data, t.dtype)})")
        lead = unit_lead(t, _type(copy.results[0]))
        inside = [f"0:{e}" for e in extents[lead:]] if lead else [f"0:{extents[0]}", "0:1"]
        src = [python(o) for o in offsets[:lead]] + slices[lead:]
        dma = "dma_copy" if transposed is None else "dma_transpose"
        if transposed is not None:
            inside.reverse()
        self.guarded(extents[:lead], depth, f"nisa.{dma}(dst={name}[{', '.join(inside)}], "
                                            f"src={self.names[load.source]}[{', '.join(src)}])")

    def guarded(self, extents: Sequence[str], depth: int, line: str) -> None:
        """`line`, under a test that each of `extents` (a batch coordinate's one element, or
        none past the tensor's end) is not empty where one may be."""
        empty = [f"{e} > 0" for e in extents if e != "1"]
        if empty:
            self.line(depth, f"if {' and '.join(empty)}:")
        self.line(depth + bool(empty), line)

    # ---- instructions ---------------------------------------------------------------------------
    def instruction(self, op: nki.NkiOp, depth: int) -> None:
        if isinstance(op, nki.AccessOp):
            self.access(op, depth)
            return
        if isinstance(op, nki.DmaTransposeOp) and isinstance(op.operands[0].owner, LoadOp) \
                and _transposed_on_load(op.operands[0].owner) is op:
            load = op.operands[0].owner
            self.load(load, depth, transposed=op, into=self.into.get(load))
            return
        result = op.results[0]
        row = _broadcast_row(op)
        if row is not None:
            self.broadcast(row[0], row[1], depth)
            return
        ones = _count_of_ones(op)
        if ones is not None:  # each row's sum of F ones is F (exact in fp32 below 2**24)
            dst = self.allocate(result, depth, op.buffer_name())
            free = python(_type(ones.results[0]).shape[1])
            self.line(depth, f"nisa.memset(dst={dst}, value=float({free}))")
            return
        if isinstance(op, nki.DmaTransposeOp) and _squeezed_transposed(op.operands[0]):
            copy = op.operands[0].owner
            assert isinstance(copy, nki.DmaCopyOp)
            block = _column_load(copy)
            assert block is not None
            self.load_column(block, copy, depth, transposed=op)
            return
        column = _column_load(op)
        if column is not None:
            if not _squeezed_transposed(op.results[0]):  # else printed by its transpose
                self.load_column(column, op, depth)
            return
        operands = [self.names[v] for v in op.operands]
        attrs = op.attrs()
        if _column_store(result):
            self.names[result] = operands[0]  # the store reads the column itself
            return
        if isinstance(op, nki.DmaCopyOp) and "shape" in attrs:
            source = _type(op.operands[0])
            if _held_shape(source) != _held_shape(_type(result)):
                raise Refused("'nki.dma_copy' reshaping other than a row [F] to [1, F]")
            self.names[result] = operands[0]  # a one-dim tile is held as [1, F] already
            return
        if isinstance(op, nki.NcMatmulOp) and len(operands) == 3:
            self.accumulate(op, operands, depth)
            return
        if result in self.windows and result not in self.names:
            self.names[result] = self.window(result, depth)
        dst = self.names[result] if op in self.in_place \
            else self.allocate(result, depth, op.buffer_name())
        engine = attrs.get("engine") or self.engines.get(op)
        tail = f", engine=nisa.engine.{engine}" if engine else ""
        if isinstance(op, nki.DmaCopyOp):
            call = f"nisa.dma_copy(dst={dst}, src={operands[0]})"
        elif isinstance(op, nki.TensorCopyOp):
            call = f"nisa.tensor_copy(dst={dst}, src={operands[0]}{tail})"
        elif isinstance(op, nki.MemsetOp):
            call = f"nisa.memset(dst={dst}, value={attrs['value']!r}{tail})"
        elif isinstance(op, nki.NcTransposeOp):
            call = f"nisa.nc_transpose(dst={dst}, data={operands[0]}{tail})"
        elif isinstance(op, nki.NcMatmulOp):
            call = f"nisa.nc_matmul(dst={dst}, stationary={operands[0]}, moving={operands[1]})"
        elif isinstance(op, nki.TensorTensorOp):
            if all(self.buffers.get(name) == "psum" for name in operands):
                raise Refused(f"'{op.name}' reads two PSUM tiles ({', '.join(operands)}); at "
                              "most one may be in PSUM")
            call = (f"nisa.tensor_tensor(dst={dst}, data1={operands[0]}, data2={operands[1]}, "
                    f"op=nl.{attrs['op']}{tail})")
        elif isinstance(op, nki.TensorScalarOp):
            call = self.tensor_scalar(dst, operands, attrs, tail)
        elif isinstance(op, nki.ActivationOp):
            extra = "".join(f", {role}={v}" for role, v in zip(("bias", "scale"), operands[1:],
                                                                strict=False))
            if "scale" in attrs:
                extra += f", scale={attrs['scale']!r}"
            reduction = _reduction_beside(op)
            if reduction is None:
                call = (f"nisa.activation(dst={dst}, op=nl.{attrs['func']}, "
                        f"data={operands[0]}{extra})")
            else:  # one instruction gives both: the activation and its row sum
                self.folded.add(reduction)
                total = self.allocate(reduction.results[0], depth, reduction.buffer_name())
                call = (f"nisa.activation_reduce(dst={dst}, op=nl.{attrs['func']}, "
                        f"data={operands[0]}, reduce_op=nl.add, reduce_res={total}{extra})")
        elif isinstance(op, nki.TensorTensorScanOp):
            initial = operands[2] if len(operands) > 2 else repr(attrs.get("initial") or 0.0)
            call = (f"nisa.tensor_tensor_scan(dst={dst}, data0={operands[0]}, "
                    f"data1={operands[1]}, initial={initial}, op0=nl.{attrs['op0']}, "
                    f"op1=nl.{attrs['op1']})")
        elif isinstance(op, nki.DmaTransposeOp):
            call = f"nisa.dma_transpose(dst={dst}, src={operands[0]})"
        elif isinstance(op, nki.ActivationReduceOp):
            call = self.activation_reduce(op, dst, operands, depth)
        elif isinstance(op, nki.AffineSelectOp):
            steps = [int(k) for k in attrs["pattern"]]
            counts = [python(d) for d in _type(result).shape[1:]]
            pattern = ", ".join(f"[{k}, {n}]" for k, n in zip(steps, counts, strict=True))
            call = (f"nisa.affine_select(dst={dst}, pattern=[{pattern}], "
                    f"channel_multiplier={int(attrs['channel_multiplier'])}, "
                    f"on_true_tile={operands[0]}, on_false_value={attrs['on_false_value']!r}, "
                    f"cmp_op=nl.{attrs['cmp_op']}, offset={_affine_offset(attrs)})")
        elif isinstance(op, nki.TensorReduceOp):
            axes = tuple(int(a) for a in attrs["axes"])
            call = (f"nisa.tensor_reduce(dst={dst}, op=nl.{attrs['op']}, data={operands[0]}, "
                    f"axis={axes!r}, negate={bool(attrs.get('negate'))}, "
                    f"keepdims={bool(attrs.get('keepdims'))})")
        else:
            raise Refused(f"'{op.name}' is not printed by the NKI emitter yet")
        self.line(depth, call)

    def broadcast(self, op: nki.NcMatmulOp, load: LoadOp, depth: int) -> None:
        """The row of `load` on every partition: where it fits one PSUM bank, the proved
        `ones.T @ row` into PSUM (VectorE reads a PSUM operand at one element a cycle, an fp32
        SBUF one at half that); a longer row, which no matmul holds, by one DMA from HBM whose
        partition stride is 0, into SBUF in the row's dtype (the same values: each element of
        `ones.T @ row` is one exact product). A Python `if` on the row's length, when traced."""
        t = _type(load.result)
        partitions = python(_type(op.operands[0]).shape[1])
        free = python(t.shape[0])
        name = self.fresh()
        self.names[op.results[0]] = name
        self.buffers[name] = "psum"  # as the lowering has it (at most one PSUM operand)
        ones, row = (self.names[v] for v in op.operands)
        # GpSimd reads no PSUM: a row a GpSimd instruction reads is broadcast into SBUF always
        on_gpsimd = any(self.engines.get(use.operation) == "gpsimd"
                        for use in op.results[0].uses)
        if not on_gpsimd:
            self.line(depth, f"if {free} <= nl.tile_size.gemm_moving_fmax:")
            self.line(depth + 1, f"{name} = nl.ndarray(({partitions}, {free}), "
                                 "dtype=nl.float32, buffer=nl.psum)")
            self.line(depth + 1, f"nisa.nc_matmul(dst={name}, stationary={ones}, moving={row})")
            self.line(depth, "else:")
            depth += 1
        self.line(depth, f"{name} = nl.ndarray(({partitions}, {free}), dtype={_dtype(t.dtype)}, "
                         f"buffer=nl.sbuf)")
        if op.parent_op() is self.kernel and op in self.hoisted:
            # by banks where the DMA would move the row to more than half the partitions: a
            # copy's pass over the row costs VectorE about what the DMA engines take for 85
            # partitions of a 2-byte row (reference/nki.md 6.1; the profile's DMA rate)
            self.line(depth, f"if 2 * {_group(partitions)} > nl.tile_size.pmax:")
            self.broadcast_by_banks(name, partitions, free, ones, row, depth + 1)
            self.line(depth, "else:")
            depth += 1
        (offset,) = (IntExpr.lift(o.data) for o in load.offsets.data)
        (extent,), _ = self.region(depth, [offset], list(t.shape), _type(load.source).shape)
        if extent != free:
            self.line(depth, f"if {extent} < {free}:")
            pad = _fill(load.pad.value.data, t.dtype)
            self.line(depth + 1, f"nisa.memset(dst={name}, value={pad})")
        self.line(depth, f"nisa.dma_copy(dst={name}[0:{partitions}, 0:{extent}], "
                         f"src={self.names[load.source]}.ap(pattern=[[0, {partitions}], "
                         f"[1, {extent}]], offset={python(offset)}))")

    def broadcast_by_banks(self, name: str, partitions: str, free: str, ones: str, row: str,
                           depth: int) -> None:
        """A row longer than one PSUM bank broadcast before the grid (`broadcast`): the proved
        `ones.T @ row`, a bank's width of columns at a time, each block copied out of PSUM
        into its columns of the SBUF tile `name` in the row's dtype (each element one exact
        product of 1 and a value of that dtype: the same values as the DMA of partition stride
        0 it replaces, which would move the row once per partition through the DMA engines
        that the grid's loads and stores need; TensorE and one copy of the row, once, are
        otherwise idle before the first tile arrives). The first half of the banks is copied
        by VectorE, the rest by ScalarE (both read PSUM at one element a cycle, nki.md 6.1):
        the copies take half the time on the engine the grid's first instructions wait for
        (a layernorm of one row tile, whose tile arrives before a row of 8192 is copied)."""
        fmax = "nl.tile_size.gemm_moving_fmax"
        banks = self.fresh("b")
        self.line(depth, f"{banks} = ({free} + {fmax} - 1) // {fmax}")
        half = f"{banks} // 2"
        for first, count, engine in ((None, half, ""), (half, f"{banks} - {half}", "scalar")):
            block, width, bank = self.fresh("c"), self.fresh("n"), self.fresh()
            self.line(depth, f"for {block} in nl.affine_range({count}):")
            start = f"{block} * {fmax}" if first is None else f"({first} + {block}) * {fmax}"
            self.line(depth + 1, f"{width} = min({fmax}, {free} - {start})")
            self.line(depth + 1, f"{bank} = nl.ndarray(({partitions}, {fmax}), "
                                 "dtype=nl.float32, buffer=nl.psum)")
            self.line(depth + 1, f"nisa.nc_matmul(dst={bank}[0:{partitions}, 0:{width}], "
                                 f"stationary={ones}, moving={row}[0:1, {start}:{start} + "
                                 f"{width}])")
            tail = f", engine=nisa.engine.{engine}" if engine else ""
            self.line(depth + 1, f"nisa.tensor_copy(dst={name}[0:{partitions}, {start}:{start} + "
                                 f"{width}], src={bank}[0:{partitions}, 0:{width}]{tail})")

    def accumulate(self, op: nki.NcMatmulOp, operands: list[str], depth: int) -> None:
        """`nc_matmul(st, mv, acc)` outside a loop's accumulation: the matmul adds into the
        PSUM tile `acc` in place (`accumulate=True`), which it may only when nothing else
        reads `acc`."""
        acc = op.operands[2]
        if not acc.has_one_use() or not isinstance(acc.owner, nki.NcMatmulOp):
            raise Refused("'nki.nc_matmul' accumulating onto a tile that is read elsewhere or "
                          "that no matmul wrote")
        self.names[op.results[0]] = operands[2]
        self.line(depth, f"nisa.nc_matmul(dst={operands[2]}, stationary={operands[0]}, "
                         f"moving={operands[1]}, accumulate=True)")

    def activation_reduce(self, op: nki.ActivationReduceOp, dst: str, operands: list[str],
                          depth: int) -> str:
        """The reduction of `nisa.activation_reduce` into `dst`; its elementwise result goes
        to a scratch tile of its own (the op keeps only the reduction), in bf16: nothing reads
        it, and ScalarE sums the fp32 values before it rounds them to the dst (nki.md 3), so
        the scratch takes half an fp32 tile's SBUF (layernorm's `[128, 8192]` rows fit beside
        the rest)."""
        attrs = op.attrs()
        scratch = self.fresh()
        data = _type(op.operands[0])
        self.allocate_as(scratch, TensorType(list(data.shape), "bf16"), depth, "sbuf")
        extra = "".join(f", {role}={v}" for role, v in zip(("bias", "scale"), operands[1:],
                                                            strict=False))
        if attrs.get("scale") is not None:
            extra += f", scale={attrs['scale']!r}"
        return (f"nisa.activation_reduce(dst={scratch}, op=nl.{attrs['func']}, "
                f"data={operands[0]}, reduce_op=nl.add, reduce_res={dst}{extra})")

    def tensor_scalar(self, dst: str, operands: list[str], attrs: Mapping[str, object],
                      tail: str) -> str:
        vectors = iter(operands[1:])
        parts = [f"dst={dst}", f"data={operands[0]}"]
        for k in (0, 1):
            op = attrs.get(f"op{k}")
            if op is None:
                continue
            scalar = attrs.get(f"scalar{k}")
            operand = repr(scalar) if scalar is not None else next(vectors)
            parts += [f"op{k}=nl.{op}", f"operand{k}={operand}"]
            if attrs.get(f"reverse{k}"):
                parts.append(f"reverse{k}=True")
        return f"nisa.tensor_scalar({', '.join(parts)}{tail})"


def _solve_dim(dim: IntExpr, bound: set[str]) -> tuple[str, IntExpr, IntExpr] | None:
    """`(S, a, b)` where `dim` is `a*S + b` of one size `S` not yet bound, `a` and `b` of
    bound sizes (`2*D2`, `HKV*G`): an input's dim that gives S (the checks that follow assert
    the rest)."""
    free = dim.symbols() - bound
    if len(free) != 1:
        return None
    (symbol,) = free
    b = dim.substitute({symbol: 0})
    a = dim.substitute({symbol: 1}) - b
    if a.symbols() & free or b.symbols() & free or IntExpr.sym(symbol) * a + b != dim \
            or (a.is_const and a.value < 1):
        return None
    return symbol, a, b


def _stretched_source(op: nki.AccessOp) -> LoadOp | None:
    """The load of a `broadcast_to` access `[P, 1, F]` -> `[P, H, F]` whose tile is a loaded
    block of whole rows of an input (`[P, F]` of a 2-D input reshaped to `[P, 1, F]`, or
    `[P, 1, F]` of a 3-D one), each used only on this way: printed as one stride-0 DMA from
    HBM (`stretched_load`)."""
    value = op.operands[0]
    out = _type(op.results[0])
    if not (value.has_one_use() and out.rank == 3 and _type(value).shape[1] == IntExpr.const(1)):
        return None
    owner = value.owner
    if isinstance(owner, nki.AccessOp) and owner.layout.data == "reshape" \
            and _type(owner.operands[0]).rank == 2 and owner.operands[0].has_one_use():
        value = owner.operands[0]
        owner = value.owner
    if not isinstance(owner, LoadOp) or not value.has_one_use():
        return None
    t, source = _type(value), _type(owner.source)
    offsets = [IntExpr.lift(o.data) for o in owner.offsets.data]
    if t.rank != source.rank or any(o != IntExpr.const(0) for o in offsets[1:]) \
            or list(t.shape[1:]) != list(source.shape[1:]):
        return None
    return owner


def _stretched_load(load: LoadOp) -> nki.AccessOp | None:
    """The broadcast access that prints `load` (`_stretched_source`), if any."""
    value: SSAValue = load.result
    for _ in range(2):  # the load's only use, or that of its reshape
        if not value.has_one_use():
            return None
        user = next(iter(value.uses)).operation
        if isinstance(user, nki.AccessOp) and user.layout.data == "broadcast_to":
            return user if _stretched_source(user) is load else None
        if not isinstance(user, nki.AccessOp):
            return None
        value = user.results[0]
    return None


def _printed_with(load: LoadOp) -> list[Operation]:
    """`load` and the ops up to the one that prints it: the DMA reshape into a column
    (`_column_load`), or the views up to the broadcast printed as a stride-0 DMA
    (`_stretched_load`); `load` alone where it prints itself."""
    column = _column_of_load(load)
    if column is not None:
        return [load, column]
    broadcast = _stretched_load(load)
    if broadcast is None:
        return [load]
    chain: list[Operation] = [load]
    value: SSAValue = load.result
    while chain[-1] is not broadcast:  # at most a reshape between (`_stretched_source`)
        chain.append(next(iter(value.uses)).operation)
        value = chain[-1].results[0]
    return chain


def _windows(kernel: KernelOp) -> dict[SSAValue, tuple[nki.AccessOp, int]]:
    """Instruction results that write their window of a concatenation in place: an operand
    of a `concat` access that is a reshape adding the size-1 concatenated dim to an
    instruction's result, both used only on this way (rope's pairs written interleaved)."""
    found: dict[SSAValue, tuple[nki.AccessOp, int]] = {}
    for op in kernel.walk():
        if not (isinstance(op, nki.AccessOp) and op.layout.data == "concat"):
            continue
        axis = int(op.attrs()["axis"]) % _type(op.results[0]).rank
        for k, value in enumerate(op.operands):
            reshape = value.owner
            if not (isinstance(reshape, nki.AccessOp) and reshape.layout.data == "reshape"
                    and value.has_one_use()):
                continue
            made = reshape.operands[0]
            t = _type(made)
            expected = [*t.shape[:axis], IntExpr.const(1), *t.shape[axis:]]
            if isinstance(made.owner, nki.NkiOp) and not isinstance(made.owner, nki.AccessOp) \
                    and made.has_one_use() and list(_type(value).shape) == expected \
                    and made.owner.buffer_name() == "sbuf":
                found[made] = (op, k)
    return found


def _column_load(op: Operation) -> LoadOp | None:
    """The load `op` (a DMA reshape on chip: `[P]` -> `[P, 1]`, or a batched block
    `[1, 1, BM, D]` -> `[BM, D]`) reads, where the reshape is that load's only use: the load is
    printed into the reshaped tile directly."""
    if not (isinstance(op, nki.DmaCopyOp) and op.buffer_name() == "sbuf"):
        return None
    load = op.operands[0].owner
    t = _type(op.results[0])
    if not (isinstance(load, LoadOp) and load.result.has_one_use()):
        return None
    block = _type(load.result)
    if block.rank == 1 and t.rank == 2 and t.shape == (block.shape[0], IntExpr.const(1)):
        return load
    if t.rank == 2 and unit_lead(block, t):
        return load
    return None


def _squeezed_transposed(tile: SSAValue) -> bool:
    """`tile` is a batched block's squeezed tile (`_column_load`'s DMA reshape of a
    `[1, 1, BK, D]` load) whose only use is a `dma_transpose` (`fuse.py`'s `dma-transpose`):
    the two are printed as one DMA transposing on its way in."""
    owner = tile.owner
    if not (isinstance(owner, nki.DmaCopyOp) and tile.has_one_use()
            and _column_load(owner) is not None and _type(tile).rank == 2
            and _type(owner.operands[0]).rank > 2):
        return False
    use = next(iter(tile.uses)).operation
    return isinstance(use, nki.DmaTransposeOp) and use.parent_block() is owner.parent_block()


def _column_of_load(load: LoadOp) -> Operation | None:
    """The DMA reshape into a column that prints `load` (`_column_load`), if any."""
    if not load.result.has_one_use():
        return None
    user = next(iter(load.result.uses)).operation
    return user if _column_load(user) is load else None


def _column_store(value: SSAValue) -> bool:
    """`value` is a DMA reshape into HBM read only by stores, each of which reads the tile
    itself: of a column `[P, 1]` into the rank-1 `[P]`, or of a batched kernel's `[BM, D]`
    into its block `[1, 1, BM, D]` (`squeeze.py`)."""
    owner = value.owner
    if not (isinstance(owner, nki.DmaCopyOp) and owner.buffer_name() == "hbm"
            and all(isinstance(u.operation, StoreOp) for u in value.uses)):
        return False
    t, source = _type(value), _type(owner.operands[0])
    if t.rank == 1:
        return source.rank == 2 and source.shape[1] == IntExpr.const(1)
    return source.rank == 2 and bool(unit_lead(t, source))


def _broadcast_row(op: Operation | Block
                   ) -> tuple[nki.NcMatmulOp, LoadOp, Operation, Operation] | None:
    """`nc_matmul(ones [1, P], row [1, F])` (`lower.py`'s row broadcast) of a row loaded from
    an input `[F]`, its result written by nothing else: the matmul, the load, the row's
    reshape and the ones tile; else None."""
    if not (isinstance(op, nki.NcMatmulOp) and len(op.operands) == 2):
        return None
    ones, row = (v.owner for v in op.operands)
    if not (isinstance(ones, nki.MemsetOp) and ones.attrs().get("value") == 1.0
            and _type(ones.results[0]).shape[0] == IntExpr.const(1)):
        return None
    if not (isinstance(row, nki.DmaCopyOp) and "shape" in row.attrs()):
        return None
    load = row.operands[0].owner
    if not (isinstance(load, LoadOp) and isinstance(load.source, BlockArgument)
            and _type(load.result).rank == 1 and _type(load.source).rank == 1):
        return None
    if written_in_place(op.results[0]):
        return None
    return op, load, row, ones


def _matmul_accumulator(full: FullOp) -> bool:
    """Is `full` a zero PSUM tile that only starts a loop's accumulation `acc + nc_matmul(..)`
    (what `_Printer.fold_accumulation` folds into the matmul) in a loop of at least one
    iteration? Then nothing need fill it: the loop's first matmul of the fresh tile overwrites
    it (NKI's default accumulation), and on NeuronCore v2/v3 a matmul accumulating onto PSUM
    a memset wrote is undefined (docs/nki.md)."""
    if not (full.space.data == "psum" and full.value.value.data == 0.0
            and full.result.has_one_use()):
        return False
    use = next(iter(full.result.uses))
    loop = use.operation
    if not isinstance(loop, ForOp):
        return False
    extent = loop.extent_expr()
    if not (extent.is_const and extent.value >= 1) and not _at_least_one(loop):
        return False
    arg = loop.body.block.args[use.index]
    end = loop.body.block.last_op
    assert isinstance(end, YieldOp)
    op = end.values[use.index].owner
    if not (isinstance(op, nki.TensorTensorOp) and op.op.data == "add"):
        return False
    a, b = op.operands
    product = b if a is arg else a if b is arg else None
    return (product is not None and isinstance(product.owner, nki.NcMatmulOp)
            and product.has_one_use() and len(product.owner.operands) == 2
            and arg.has_one_use())


def _at_least_one(loop: ForOp) -> bool:
    """Is the loop's extent a `ceildiv(S, B)` (`(S + B - 1) floordiv B`) of sizes, at least 1
    since every size is (the verifier's convention)?"""
    terms = loop.extent_expr().terms
    if len(terms) != 1 or terms[0][1] != 1 or len(terms[0][0]) != 1:
        return False
    (atom,) = terms[0][0]
    if atom.kind != "floordiv":
        return False
    num, den = atom.args
    if den.as_symbol is None:
        return False
    rest = num - den + 1  # S: a sum of sizes with positive coefficients is >= 1
    return bool(rest.terms) and all(
        coeff > 0 and len(mono) == 1 and mono[0].kind == "sym" for mono, coeff in rest.terms)


def _count_of_ones(op: Operation) -> nki.MemsetOp | None:
    """The ones tile `[P, F]` whose row sums `op` takes (`lower.py`'s element count of a mean,
    so that no size is a constant of the lowered function), else None: the emitter writes the
    count F itself, a Python int when the kernel is traced."""
    if not (isinstance(op, nki.TensorReduceOp) and len(op.operands) == 1):
        return None
    attrs = op.attrs()
    if not (attrs.get("op") == "add" and tuple(int(a) for a in attrs.get("axes", ())) == (1,)
            and attrs.get("keepdims") and not attrs.get("negate")
            and _type(op.results[0]).dtype == "f32"):
        return None
    ones = op.operands[0].owner
    if not (isinstance(ones, nki.MemsetOp) and ones.attrs().get("value") == 1.0
            and _type(ones.results[0]).rank == 2):
        return None
    return ones


def _vector_weight(op: Operation) -> int:
    """VectorE's work for `op` in units of one pass over a `[P, F]` tile (0 for `[P, 1]`
    columns and for other engines' instructions): `tensor_tensor` reads two inputs (two passes)
    unless one is in PSUM (reference/nki.md 6.1); a row reduction is a pass over its operand,
    though it writes a column (softmax's max)."""
    if not isinstance(op, nki.NkiOp) or not op.results or op.attrs().get("engine") not in (
            None, "vector"):
        return 0
    read = op.operands[0] if isinstance(op, nki.TensorReduceOp) else op.results[0]
    if _type(read).shape[-1] == IntExpr.const(1):
        return 0
    if isinstance(op, nki.TensorTensorOp):
        if any(_buffer(v) == "psum" for v in op.operands):
            return 1
        # NC-v3's perf mode: 16-bit inputs and dst, all in SBUF, twice the throughput
        return 1 if all(sixteen_bit(_type(v).dtype) for v in (*op.operands, op.results[0])) \
            else 2
    if isinstance(op, (nki.TensorScalarOp, nki.TensorReduceOp, nki.TensorCopyOp,
                       nki.MemsetOp)):
        return 1
    return 0


def _scalar_weight(op: Operation) -> int:
    if not isinstance(op, (nki.ActivationOp, nki.ActivationReduceOp)):
        return 0
    if isinstance(op, nki.ActivationReduceOp) and isinstance(op.prev_op, nki.ActivationOp) \
            and _reduction_beside(op.prev_op) is op:
        return 0  # printed with the activation before it as one instruction
    return 0 if _type(op.operands[0]).shape[-1] == IntExpr.const(1) else 1


def _balance_engines(kernel: KernelOp, hoisted: set[Operation],
                     sizes: Mapping[str, int] | None = None) -> dict[Operation, str]:
    """Instructions over `[P, F]` tiles moved off VectorE while VectorE has more passes over a
    tile than the engine they move to would have after the move (reference/nki.md 6.1: about
    one element a cycle per pass on each): `tensor_scalar`s to ScalarE (which runs the
    multiply, add and multiply-add ones: `SCALAR_ENGINE_OPS`; rmsnorm's `x * rstd` beside its
    `x * g`, ScalarE having only the squares), then `tensor_tensor`s reading no PSUM to GpSimd
    (which takes both inputs from SBUF: rope's products, as the hand kernel splits them).
    The passes are counted in each block (the grid's body outside what runs before it, or a
    loop's body): a loop that carries a chain (attention's online softmax) is shortest with
    its own engines balanced. With `sizes`, over the whole kernel instead, each block's
    passes times its loops' trips at `sizes` (the tile sizes and the program's), so a loop of
    transposes scaled on VectorE is not moved beside a loop of squares on ScalarE
    (rmsnorm_matmul's: a throughput balance; block by block where a trip count is not known).
    The engine changes where an instruction runs, not what it computes (both compute float
    arithmetic in fp32)."""
    blocks = [(kernel.body.block, 1), *((op.body.block, _trips(op, sizes or {}))
                                         for op in kernel.walk() if isinstance(op, ForOp))]
    weighed = [(b, w) for b, w in blocks if w is not None]
    groups = [weighed] if sizes is not None and len(weighed) == len(blocks) else \
        [[(b, 1)] for b, _ in blocks]
    moved: dict[Operation, str] = {}
    for group in groups:
        ops = [(op, w) for block, w in group for op in block.ops if op not in hoisted]
        vector: float = sum(_vector_weight(op) * w for op, w in ops)
        scalar = sum(_scalar_weight(op) * w for op, w in ops)
        for op, w in ops:
            if not (isinstance(op, nki.TensorScalarOp) and _vector_weight(op) == 1):
                continue
            attrs = op.attrs()
            if (attrs.get("op0"), attrs.get("op1")) not in nki.TensorScalarOp.SCALAR_ENGINE_OPS:
                continue
            if scalar + w > vector:  # the move would make ScalarE the busier engine
                continue
            moved[op] = "scalar"
            vector, scalar = vector - w, scalar + w
        gpsimd: float = 0
        for op, w in ops:
            weight = _vector_weight(op)
            # a broadcast row is read in SBUF where a GpSimd instruction reads it
            # (`_Printer.broadcast`)
            if not (isinstance(op, nki.TensorTensorOp) and weight
                    and all(_made_in_sbuf(v) or _broadcast_row(v.owner) is not None
                            for v in op.operands)):
                continue
            if gpsimd + 2 * w >= vector:  # the move would not shorten the busier engine
                continue
            moved[op] = "gpsimd"  # GpSimd reads both inputs: two passes, no perf mode
            vector, gpsimd = vector - weight * w, gpsimd + 2 * w
        # `[P, 1]` columns combined (attention's running max and sum): MIN_II cycles on either
        # engine, about half a pass over a 128-wide tile; moved while GpSimd stays the less busy
        for op, w in ops:
            if not (_column_combine(op) and all(_made_in_sbuf(v) for v in
                                                (*op.operands, op.results[0]))):
                continue
            if gpsimd + w / 2 >= vector:  # the move would not shorten the busier engine
                continue
            moved[op] = "gpsimd"
            vector, gpsimd = vector - w / 2, gpsimd + w / 2
    return moved


def _column_combine(op: Operation) -> bool:
    """A VectorE `tensor_tensor` of `[P, 1]` columns (no pass over a tile: `_vector_weight`
    counts it 0)."""
    return (isinstance(op, nki.TensorTensorOp) and op.attrs().get("engine") in (None, "vector")
            and _type(op.results[0]).shape[-1] == IntExpr.const(1))


def _trips(loop: ForOp, sizes: Mapping[str, int]) -> int | None:
    """How many times `loop`'s body runs for one program at `sizes` (its loops' extents
    multiplied), or None where an extent names a size `sizes` lacks."""
    trips = 1
    op: Operation | None = loop
    while isinstance(op, ForOp):
        try:
            trips *= op.extent_expr().evaluate(sizes)
        except KeyError:
            return None
        op = op.parent_op()
    return trips


def _made_in_sbuf(value: SSAValue) -> bool:
    """Is `value` a tile an instruction, load or constant makes in SBUF (GpSimd reads no PSUM)?
    A loop's result is not: a matmul accumulating across the loop keeps it in PSUM. A value a
    loop carries is its init's tile, which the loop's instructions write in place (a running
    max started from the first block's)."""
    while isinstance(value, BlockArgument):
        loop = value.block.parent_op()
        if not isinstance(loop, ForOp) or value.index >= len(loop.inits):
            return False
        value = loop.inits[value.index]
    owner = value.owner
    if isinstance(owner, (LoadOp, FullOp)):
        return owner.space.data == "sbuf"
    return isinstance(owner, nki.NkiOp) and owner.buffer_name() == "sbuf"


def in_place_writers(value: SSAValue) -> list[Operation]:
    """The ops the emitter lets write the tile of `value`: a loop whose carried value it
    starts, a matmul accumulating onto it."""
    return [use.operation for use in value.uses if isinstance(use.operation, ForOp)
            or isinstance(use.operation, nki.NcMatmulOp) and use.index == 2]


def written_in_place(value: SSAValue) -> bool:
    """Does the emitter let some instruction write the tile of `value` (`in_place_writers`)?"""
    return bool(in_place_writers(value))


def sixteen_bit(dtype: object) -> bool:
    """Is `dtype` a 16-bit float (bf16, f16: VectorE's perf mode, nki.md 6.2)?"""
    d = DTYPES.get(str(dtype))
    return d is not None and d.is_float and d.storage.itemsize == 2


def _grid_invariant(kernel: KernelOp) -> set[Operation]:
    """The ops of the kernel's body (outside its loops) that compute the same tile in every
    program of the grid: loads of an input at offsets that name no program id, constant
    tiles, and instructions of those alone; none whose tile an instruction writes in place
    (a loop's accumulator, a matmul's accumulation). The emitter prints them once before the
    grid (rmsnorm's weight row broadcast over the partitions, a ones tile and its sum)."""
    body = kernel.body.block
    pids = set(kernel.program_names())
    out: set[Operation] = set()

    def known(value: SSAValue) -> bool:
        return (isinstance(value, BlockArgument) and value.block is body) or \
            value.owner in out

    for op in body.ops:
        if isinstance(op, LoadOp):
            offsets = [IntExpr.lift(o.data) for o in op.offsets.data]
            ok = known(op.source) and not any(o.symbols() & pids for o in offsets)
        elif isinstance(op, FullOp):
            ok = True
        elif isinstance(op, nki.NkiOp):
            ok = all(known(v) for v in op.operands)
        else:
            ok = False
        if ok and not any(written_in_place(r) for r in op.results):
            out.add(op)
    return out


def _whole_rows(load: LoadOp, index: str, blocks: IntExpr) -> bool:
    """Are the tiles `load` reads over the `blocks` values of `index` the whole rows of its
    rows' block: a plain 2-D load of an input whose columns are `index`'s blocks,
    `[F * index, F * index + F)` over `blocks = ceildiv(N, F)` of the tensor's N columns, its
    rows at an offset not naming `index`?"""
    t, source = _type(load.result), _type(load.source)
    if t.rank != 2 or source.rank != 2 or _transposed_on_load(load) is not None:
        return False
    rows, cols = t.shape
    row_offset, col_offset = (IntExpr.lift(o.data) for o in load.offsets.data)
    if row_offset.symbols() & {index} or col_offset != cols * IntExpr.sym(index):
        return False
    return blocks == (cols + source.shape[1] - IntExpr.const(1)).floordiv(cols)


@dataclass(frozen=True)
class _Stream:
    """A load inside a sequential loop of the grid's body that reads the same blocks for every
    value of the program ids it does not name (`uses`: the ones it names)."""

    loop: ForOp
    load: LoadOp
    transpose: nki.DmaTransposeOp | None
    uses: frozenset[str]
    #: other loads of the loop naming the same program ids, streamed beside it (a gated
    #: product's two weights, each read once per column block, not once per row block)
    siblings: tuple[_Stream, ...] = ()


def _stream_candidates(kernel: KernelOp, hoisted: set[Operation],
                       tile_sizes: Mapping[str, int]) -> list[tuple[int, _Stream]]:
    """The loads that may be streamed (a 2-D load of an input directly in a loop of the body,
    the loop's extent naming no program id, at offsets naming the loop's iteration and not
    every program id, its tile, or its transpose on load, read and never written), each with
    its tile's elements, largest first."""
    body = kernel.body.block
    pids = set(kernel.program_names())
    out: list[tuple[int, _Stream]] = []
    for loop in body.ops:
        if not isinstance(loop, ForOp) or loop.extent_expr().symbols() & pids:
            continue
        iv = loop.iv.data
        for op in loop.body.block.ops:
            if not isinstance(op, LoadOp) or (named := _input_load_names(op, body)) is None:
                continue
            uses = frozenset(named & pids)
            if iv not in named or uses == pids:
                continue
            transpose = _transposed_on_load(op)
            value = op.result if transpose is None else transpose.results[0]
            if written_in_place(value) or op in hoisted:
                continue
            try:  # the tile's elements; a tile sized by the tensor (not by the tiling) is
                # left alone: its buffer's size would depend on the inputs twice over
                elements = math.prod(d.evaluate(tile_sizes) for d in _type(op.result).shape)
            except KeyError:
                continue
            out.append((elements, _Stream(loop, op, transpose, uses)))
    out.sort(key=lambda e: -e[0])
    return out


def _stream_loads(kernel: KernelOp, hoisted: set[Operation], tile_sizes: Mapping[str, int]
                  ) -> tuple[_Stream, _Stream | None] | None:
    """The load worth reading once per value of the program ids it names (the largest tile
    of `_stream_candidates`) and, where there is one, a second load of the same loop naming
    one program id the first does not, to be read whole before the grid; else None. In
    `blocks_k` the first is the matmul's moving operand (its blocks name the column block and
    the K step, not the row block: with the column blocks outermost each is loaded once, not
    once per row block) and the second the stationary one (its blocks name the row block)."""
    candidates = _stream_candidates(kernel, hoisted, tile_sizes)
    if not candidates:
        return None
    first = candidates[0][1]
    plan = dataclasses.replace(first, siblings=tuple(
        other for _, other in candidates[1:]
        if other.loop is first.loop and other.uses == first.uses))
    pids = set(kernel.program_names())
    for _, other in candidates[1:]:
        if (other.loop is plan.loop and len(other.uses) == 1
                and other.uses <= pids - plan.uses):
            return plan, other
    return plan, None


def _input_load_names(op: LoadOp, body: Block) -> set[str] | None:
    """The symbols the offsets of `op` name, where `op` is a 2-D load of an input of the grid's
    `body`; None for any other load."""
    if not (isinstance(op.source, BlockArgument) and op.source.block is body
            and _type(op.result).rank == 2):
        return None
    named: set[str] = set()
    for o in op.offsets.data:
        named |= IntExpr.lift(o.data).symbols()
    return named


def _loads_ahead(kernel: KernelOp, hoisted: set[Operation]) -> list[LoadOp]:
    """The loads `grid_loading_ahead` reads before the grid: in a grid of one program id whose
    body has no loop (a rows kernel: softmax, rmsnorm, cumsum), the body's 2-D loads of an
    input at offsets naming the id, not before the grid already, not transposed on their way
    in, not printed by the access-pattern rules (`_printed_specially`), their tile never
    written in place; else none."""
    body = kernel.body.block
    pids = set(kernel.program_names())
    if len(pids) != 1 or any(isinstance(op, ForOp) for op in body.ops):
        return []
    out: list[LoadOp] = []
    for op in body.ops:
        if not isinstance(op, LoadOp) or (named := _input_load_names(op, body)) is None:
            continue
        if not named & pids or op in hoisted \
                or _transposed_on_load(op) is not None or written_in_place(op.result) \
                or _printed_specially(op):
            continue
        out.append(op)
    return out


@dataclass(frozen=True)
class _Hoist:
    """The ops of a grid's body that name program id `pid` and no other (`_hoist_plan`),
    computed once per value of `pid` rather than once per program; with `pid` None, ops of
    the body's loops that name no program id, computed once before the grid."""

    pid: str | None
    #: ops of the body (loops whole among them), in the body's order
    top: tuple[Operation, ...]
    #: loops of the body whose other ops name another id: their ops that do not, in order
    partial: dict[ForOp, tuple[Operation, ...]]
    #: hoisted values the rest of the body reads, each with the loop of the body it is in
    #: (None: outside the loops): one SBUF buffer of a block per value of `pid` each
    kept: tuple[tuple[SSAValue, ForOp | None], ...]
    #: a hoisted load reading the region an earlier hoisted load of another loop read at the
    #: same iteration -> that load (its tiles kept over the loop in a buffer, read again)
    shared: dict[LoadOp, LoadOp]

    def ops(self) -> set[Operation]:
        """Every hoisted op, those inside hoisted loops too."""
        out: set[Operation] = set()
        for op in (*self.top, *(x for ops in self.partial.values() for x in ops)):
            out.update(op.walk())
        return out


def _hoist_plan(kernel: KernelOp, invariant: set[Operation]) -> _Hoist | None:
    """The program id whose values are worth computing once per value (`_hoist_for`: the
    most hoisted compute instructions and shared loads; none where no id has any), else
    None. In rmsnorm_matmul's `blocks_k` the row block `i`: its rows' statistics and its x
    tiles transposed and scaled by g over the K steps name `i` and not the column block."""
    pids = kernel.program_names()
    best: tuple[int, _Hoist] | None = None
    if len(pids) < 2:
        return None
    for pid in pids:
        plan = _hoist_for(kernel, invariant, pid)
        work = _hoist_work(plan)
        if work > 0 and (best is None or work > best[0]):
            best = (work, plan)
    return None if best is None else best[1]


def _printed_specially(op: Operation) -> bool:
    """`op` is printed by the access-pattern rules (a view, a tile of more than one free dim,
    a load folded into a column or a stride-0 DMA, a column's reshape for a store), which
    the hoisting's `[P, n, F]` buffers do not take: it stays in the grid."""
    if isinstance(op, nki.AccessOp):
        return True
    if any(isinstance(r.type, TensorType) and len(_held_shape(_type(r))) != 2
           for r in op.results):
        return True
    if isinstance(op, LoadOp):
        return _column_of_load(op) is not None or _stretched_load(op) is not None
    return _column_load(op) is not None or any(_column_store(r) for r in op.results)


def _hoist_work(plan: _Hoist) -> int:
    """The compute instructions a plan hoists (a transpose on load is the load's) and its
    shared loads."""
    work = len(plan.shared)
    for op in plan.ops():
        if isinstance(op, nki.DmaTransposeOp) and isinstance(op.operands[0].owner, LoadOp) \
                and _transposed_on_load(op.operands[0].owner) is op:
            continue
        if isinstance(op, nki.NkiOp):
            work += 1
    return work


def _hoist_for(kernel: KernelOp, invariant: set[Operation], pid: str | None) -> _Hoist:
    """The ops of the body computed from the inputs, the grid-invariant ops (`invariant`) and
    each other, at offsets naming no program id but `pid`: ops of the body, loops whole, and
    in a loop of the body whose extent names no program id, its ops that read neither the
    loop's carried values nor a value of the loop that does (each iteration's are then
    independent of the other iterations). None is a store; none writes or is written in
    place by an op left in the grid (a loop's carried value, a matmul's accumulation), none
    is yielded by a loop left in the grid, and a constant tile or a matmul (whose PSUM result
    a loop's accumulation takes in place) is hoisted only with all its uses: those ops are
    left in the grid, with every op reading them, until none is left.
    With `pid` None, only ops inside the body's loops and no shared load (ops of the body
    naming no id are `_grid_invariant`'s)."""
    body = kernel.body.block
    pids = set(kernel.program_names())
    others = pids - {pid}
    banned: set[Operation] = set()
    while True:
        top, partial = _per_block(body, invariant, others, pids, banned, pid is not None)
        chosen = {*top, *(x for ops in partial.values() for x in ops)}
        inside = {x for op in chosen for x in op.walk()}
        bad: set[Operation] = set()
        for op in chosen:
            if _printed_specially(op):
                bad.add(op)
            for result in op.results:
                for use in result.uses:
                    user = use.operation
                    if user in inside:
                        continue
                    in_place = isinstance(user, (ForOp, YieldOp, StoreOp)) or (
                        isinstance(user, nki.NcMatmulOp) and use.index == 2)
                    if in_place or isinstance(op, (FullOp, nki.NcMatmulOp)):
                        bad.add(op)
        if not bad:
            break
        banned |= bad
    ordered = [op for op in body.ops if op in top]  # the body's order, as printed
    kept: list[tuple[SSAValue, ForOp | None]] = []
    for op in (*ordered, *(x for ops in partial.values() for x in ops)):
        loop = None if op.parent_block() is body else op.parent_op()
        assert loop is None or isinstance(loop, ForOp)
        for result in op.results:
            if any(use.operation not in inside for use in result.uses):
                kept.append((result, loop))
    keptset = {v for v, _ in kept}
    shared: dict[LoadOp, LoadOp] = {}
    for later in body.ops if pid is not None else []:
        if not (isinstance(later, ForOp) and (later in top or later in partial)):
            continue
        for load in (later.body.block.ops if later in top else partial[later]):
            if not isinstance(load, LoadOp) or load.result in keptset \
                    or _transposed_on_load(load) is not None:
                continue
            first = _earlier_load(body, later, load, top)
            if first is not None:
                shared[load] = first
    return _Hoist(pid, tuple(ordered), partial, tuple(kept), shared)


def _earlier_load(body: Block, later: ForOp, load: LoadOp, top: set[Operation]
                  ) -> LoadOp | None:
    """A load of an earlier hoisted loop of the body, of the same extent, reading the region
    `load` reads at the same iteration (same input, offsets, shape, pad and space), its tile
    neither transposed on load nor written in place; else None."""
    iv = later.iv.data
    offsets = [IntExpr.lift(o.data) for o in load.offsets.data]
    for loop in body.ops:
        if loop is later:
            return None
        if not (isinstance(loop, ForOp) and loop in top
                and loop.extent_expr() == later.extent_expr()):
            continue
        for first in loop.body.block.ops:
            if not (isinstance(first, LoadOp) and first.source is load.source
                    and first.result.type == load.result.type
                    and first.pad.value.data == load.pad.value.data
                    and first.space.data == load.space.data
                    and _transposed_on_load(first) is None
                    and not written_in_place(first.result)):
                continue
            there = [IntExpr.lift(o.data).substitute({loop.iv.data: iv})
                     for o in first.offsets.data]
            if there == offsets:
                return first
    return None


def _per_block(body: Block, invariant: set[Operation], others: set[str], pids: set[str],
               banned: set[Operation], outside: bool
               ) -> tuple[set[Operation], dict[ForOp, tuple[Operation, ...]]]:
    """`_hoist_for`'s ops before its checks: the body's ops and whole loops (where `outside`),
    and the ops of the other loops, computed from values hoisted or available before the
    grid, naming no id in `others`; none in `banned`."""
    chosen: set[Operation] = set()

    def ready(value: SSAValue) -> bool:
        if isinstance(value, BlockArgument):
            return value.block is body
        return value.owner in invariant or value.owner in chosen

    def clean(op: LoadOp) -> bool:
        return ready(op.source) and not any(
            IntExpr.lift(o.data).symbols() & others for o in op.offsets.data)

    def whole(loop: ForOp) -> bool:
        if loop.extent_expr().symbols() & others or not all(ready(v) for v in loop.inits):
            return False
        local: set[SSAValue] = set()
        for op in loop.walk():
            if op in banned or op in invariant or isinstance(op, StoreOp):
                return False
            if isinstance(op, ForOp) and op.extent_expr().symbols() & others:
                return False
            if isinstance(op, LoadOp) and not clean(op):
                return False
            if op is not loop and not all(v in local or ready(v) for v in op.operands):
                return False
            for region in op.regions:
                for block in region.blocks:
                    local.update(block.args)
            local.update(op.results)
        return True

    top: set[Operation] = set()
    partial: dict[ForOp, tuple[Operation, ...]] = {}
    for op in body.ops:
        if op in invariant or op in banned:
            continue
        if isinstance(op, LoadOp):
            ok = clean(op)
        elif isinstance(op, FullOp):
            ok = True
        elif isinstance(op, nki.NkiOp):
            ok = all(ready(v) for v in op.operands)
        elif isinstance(op, ForOp):
            ok = whole(op)
        else:
            ok = False
        if ok and outside:
            top.add(op)
            chosen.add(op)
            continue
        if not isinstance(op, ForOp) or op.extent_expr().symbols() & pids:
            continue
        inner: list[Operation] = []
        for x in op.body.block.ops:
            if x in banned or x in invariant:
                continue
            if isinstance(x, LoadOp):
                ok = clean(x)
            elif isinstance(x, nki.NkiOp):
                ok = all(ready(v) for v in x.operands)
            elif isinstance(x, ForOp):
                ok = whole(x)
            else:
                ok = False
            if ok:
                inner.append(x)
                chosen.add(x)
        if inner:
            partial[op] = tuple(inner)
    return top, partial


#: instructions that may write the tile they read (each element is read before it is written)
_ELEMENTWISE = (nki.TensorTensorOp, nki.TensorScalarOp, nki.ActivationOp, nki.TensorCopyOp)


def _writes_in_place(op: nki.NkiOp, carried: BlockArgument, init: SSAValue) -> bool:
    """May `op`, yielded by a loop for the carried value `carried` (started by `init`), write
    the carried tile itself? It must be in the loop's body, write the buffer the tile is in,
    read the carried value only elementwise, and no later op of the iteration may read the
    carried value (it would see the new one); else the yield copies."""
    body = carried.block
    if op.parent_block() is not body or op.buffer_name() != _buffer(init):
        return False
    if carried in op.operands and not isinstance(op, _ELEMENTWISE):
        return False
    later = False
    for other in body.ops:
        if later and any(carried in o.operands for o in other.walk()):
            return False
        later = later or other is op
    return True


def _transposed_on_load(load: LoadOp) -> nki.DmaTransposeOp | None:
    """The `dma_transpose` that is the only use of a 2-D load from HBM (the two are printed as
    one DMA transposing on its way in), else None."""
    if not load.result.has_one_use() or _type(load.result).rank != 2:
        return None
    use = next(iter(load.result.uses)).operation
    if not isinstance(use, nki.DmaTransposeOp) or use.parent_block() is not load.parent_block():
        return None
    return use


def _reduction_beside(op: nki.ActivationOp) -> nki.ActivationReduceOp | None:
    """The `activation_reduce` right after `op` of the same operands, function and scale
    (`fuse.py`'s `activation-reduce` where both results are used), else None."""
    after = op.next_op
    if not isinstance(after, nki.ActivationReduceOp) or list(after.operands) != list(op.operands):
        return None
    mine, theirs = op.attrs(), after.attrs()
    if mine.get("func") != theirs.get("func") or mine.get("scale") != theirs.get("scale"):
        return None
    return after


def _fill(value: float, dtype: str) -> str:
    """A `tile.full` or pad value as `nisa.memset`'s: a value of the tile's dtype (NKI >= 0.3.0),
    printed as it is; Refused where the dtype does not hold it (the proof read the exact value,
    and the emitter rounds nothing: docs/nki.md, "Immediates")."""
    if DTYPES[dtype].is_float and not math.isnan(value):
        with np.errstate(over="ignore"):
            held = float(round_to(np.asarray(value), dtype))
        if held != value:
            raise Refused(f"the fill value {value!r} is not a {dtype} value (nisa.memset takes "
                          f"the dst dtype's; the nearest is {held!r})")
    return repr(value)


def _tuple(shape: list[IntExpr]) -> str:
    items = [python(d) for d in shape]
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _buffer(value: SSAValue) -> str:
    owner = value.owner
    if isinstance(owner, (LoadOp, FullOp)):
        return owner.space.data
    return nki.buffer_of(value) or "sbuf"
