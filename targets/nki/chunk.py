"""Columns in chunks: a printing choice of the NKI emitter for a row kernel of one block.

A row kernel (the `rows` tiling: each row whole in one tile `[BM, N]`) with one block of rows
runs its instructions one after the other on whole tiles: the block's DMA arrives whole before
the first instruction starts, each instruction waits for the last to finish the whole tile, and
the store starts when the last one has. Layernorm at M = 128, N = 8192 spends 14 us loading,
60 us on one engine at a time, 14 us storing (74.5 us on trn2, its DMA floor 26 us).

`emit_chunked` prints the kernel's body by stages of column chunks. A value's stage is the
number of row statistics on the way to it: the loaded rows are stage 0, a row sum of a stage-k
tile is a stage-(k+1) column, any other value takes the latest stage of its operands. Stage k
is one loop `for c in nl.affine_range(C)` over chunks of W = N / C columns holding the stage's
loads, elementwise instructions, row sums and stores, each on its chunk `[BM, W]`; the
stage's columns (`[BM, 1]` values computed from columns alone) are printed before the loop.
A row tile read by a later stage is held whole (`[BM, N]`, each chunk written into its
columns), one read only by its own stage is a chunk tile of its own in each iteration. A row
sum is each chunk's sum into column c of a `[BM, C]` fp32 tile, then that tile's sum after
the loop (the same terms, grouped by chunk). Engines then work on different chunks at once:
the first chunk's sum starts when its DMA has arrived, the first chunk's store when its last
instruction is done.

Each instruction reads and writes the same elements of the same values as before, chunk by
chunk, and the stages follow the values' dependences, so the kernel computes what the plain
one does (the row sums in another order). It is an emission, not a rewrite of the lowering (as
`fold.py`'s rows over partitions): the kernel printed this way is checked on the simulator
against the reference like every candidate and priced by the cost model. It asserts
`N % C == 0` when traced; what `fold.row_plan` refuses is refused here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue

from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import FullOp, LoadOp, StoreOp, YieldOp
from axon.targets.nki.emit import (
    EmittedKernel,
    _dtype,
    _fill,
    _held_shape,
    _type,
    python,
)
from axon.targets.nki.fold import RowPrinter, row_plan, row_sum
from axon.targets.nki.lower import Refused, kernel_of

__all__ = ["CHUNKS", "COLUMN_CHUNKS", "chunk_count", "emit_chunked"]

#: the way's name in a candidate's label
COLUMN_CHUNKS = "columns in chunks"
#: the chunks a row is printed in: 8 of 1024 columns at layernorm's 8192 (4: 62.8 us, 8: 61.8,
#: 16: 64.0 on trn2, where fixed costs start to tell)
CHUNKS = 8
#: the fewest columns a chunk has: below that an instruction's fixed cost outweighs the overlap
MIN_CHUNK = 256


def chunk_count(func: FuncOp, tile_sizes: Mapping[str, int], sizes: Mapping[str, int]) -> int:
    """C, where `func` is printed in column chunks at these sizes: a row kernel (`row_plan`) of
    one block whose rows split into `CHUNKS` chunks of at least `MIN_CHUNK` columns; else 0."""
    kernel = kernel_of(func)
    plan = row_plan(kernel)
    if isinstance(plan, str):
        return 0
    env = {**sizes, **tile_sizes}
    (extent,) = kernel.grid_exprs()
    cols = plan.cols.evaluate(env)
    if extent.evaluate(env) != 1 or cols % CHUNKS or cols // CHUNKS < MIN_CHUNK:
        return 0
    return CHUNKS


def _stages(body: Block) -> dict[Operation, int]:
    """Each op of the body by its stage (module docstring); a walk in the body's order, which
    is its values' dependence order."""
    stage: dict[SSAValue, int] = {}
    of: dict[Operation, int] = {}
    for op in body.ops:
        ready = max((stage.get(v, 0) for v in op.operands), default=0)
        of[op] = ready
        for result in op.results:
            stage[result] = ready
        total = row_sum(op)
        if total is not None:
            stage[total] = ready + 1
    return of


@dataclass
class _ChunkedPrinter(RowPrinter):
    """The emitter's printer with a one-block row kernel's body printed by stages of column
    chunks (module docstring)."""

    chunks: int = CHUNKS
    #: inside a stage's loop over chunks: a row tile allocated there is a chunk tile
    chunking: bool = False
    #: row tiles held whole (read by a later stage): their names
    whole: dict[SSAValue, str] = field(default_factory=dict)
    #: the current stage's chunk index
    index: str = "c"
    #: row sums of the current stage: the `[BM, C]` tile of each one's chunk sums
    partial: dict[SSAValue, str] = field(default_factory=dict)

    def prelude(self) -> None:
        cols = python(self.plan.cols)
        self.line(1, f"chunk_c = {self.chunks}")
        self.line(1, f"assert {cols} % chunk_c == 0, \"{self.name}: columns in chunks: assumes "
                     f"{cols} % {self.chunks} == 0\"")
        self.line(1, f"chunk_w = {cols} // chunk_c")

    def _row(self, value: SSAValue) -> bool:
        t = _type(value)
        return t.rank == 2 and list(t.shape) == [self.plan.rows, self.plan.cols]

    def _chunk(self, base: str) -> str:
        return f"{base}[0:{python(self.plan.rows)}, {self.index} * chunk_w:({self.index} + 1) " \
               "* chunk_w]"

    def grids(self, body: Block, tile_sizes: Mapping[str, int]) -> None:
        (extent,) = self.kernel.grid_exprs()
        self.line(1, f"for {self.plan.pid} in nl.affine_range({python(extent)}):")
        stages = _stages(body)
        ops = [op for op in body.ops if op not in self.hoisted and op not in self.folded
               and not (isinstance(op, YieldOp) and op.parent_op() is self.kernel)]
        later = {v for op in ops for v in op.operands
                 if self._row(v) and v.owner in stages and stages[op] > stages[v.owner]}
        for k in range(max((stages[op] for op in ops), default=0) + 1):
            here = [op for op in ops if stages[op] == k]
            inside = [op for op in here if self._in_loop(op)]
            for op in here:
                if op not in inside:
                    self.op(op, 2)
            for op in inside:  # tiles held whole for a later stage, allocated before the loop
                for value in op.results:
                    if value in later and value not in self.whole:
                        name = self.fresh()
                        self.whole[value] = name
                        self.allocate_as(name, _type(value), 2, "sbuf")
            self.partial = {}
            for op in inside:
                total = row_sum(op)
                if total is not None and total not in self.partial:
                    name = self.fresh()
                    self.partial[total] = name
                    self.line(2, f"{name} = nl.ndarray(({python(self.plan.rows)}, chunk_c), "
                                 "dtype=nl.float32, buffer=nl.sbuf)")
            if not inside:
                continue
            self.index = self.fresh("c")
            self.line(2, f"for {self.index} in nl.affine_range(chunk_c):")
            for value, base in self.whole.items():  # this loop's chunk of each whole tile
                self.names[value] = self._chunk(base)
            for value in self._hoisted_rows():
                base = self.names[value].split("[")[0]
                self.names[value] = self._chunk(base)
            for total, name in self.partial.items():
                self.names[total] = f"{name}[0:{python(self.plan.rows)}, {self.index}:" \
                                    f"{self.index} + 1]"
            self.chunking = True
            for op in inside:
                self.op(op, 3)
            self.chunking = False
            for total, name in self.partial.items():  # each row's sum of its chunk sums
                column = self.fresh()
                self.allocate_as(column, _type(total), 2, "sbuf")
                self.line(2, f"nisa.tensor_reduce(dst={column}, op=nl.add, data={name}, "
                             "axis=(1,), negate=False, keepdims=True)")
                self.names[total] = column

    def _in_loop(self, op: Operation) -> bool:
        """Is `op` printed chunk by chunk (a load, a store, an instruction on row tiles or a
        row sum), not once before its stage's loop (a column's)?"""
        if isinstance(op, LoadOp | StoreOp):
            return True
        if isinstance(op, FullOp):
            return self._row(op.result)
        return any(self._row(v) for v in (*op.operands, *op.results))

    def _hoisted_rows(self) -> list[SSAValue]:
        """The row tiles made before the grid (a broadcast weight): read a chunk at a time."""
        found = []
        for op in self.kernel.body.block.ops:
            if op in self.hoisted:
                found += [v for v in op.results if self._row(v) and v in self.names]
        return found

    def allocate_as(self, name: str, t: TensorType, depth: int, buffer: str) -> None:
        shape = _held_shape(t)
        if not self.chunking or len(shape) != 2 or shape[1] != self.plan.cols:
            super().allocate_as(name, t, depth, buffer)
            return
        self.buffers[name] = buffer  # a chunk tile of the loop's own
        self.line(depth, f"{name} = nl.ndarray(({python(shape[0])}, chunk_w), "
                         f"dtype={_dtype(t.dtype)}, buffer=nl.{buffer})")

    def _columns(self) -> str:
        return f"{self.index} * chunk_w:({self.index} + 1) * chunk_w"

    def load(self, op: LoadOp, depth: int, transposed: nki.DmaTransposeOp | None = None,
             into: tuple[str, str, str] | None = None) -> None:
        if not self._row(op.result):  # a row of a weight, before the grid
            super().load(op, depth, transposed, into)
            return
        t = _type(op.result)
        offset = IntExpr.lift(op.offsets.data[0].data)
        base = self.whole.get(op.result)
        if base is None:
            base = self.fresh()
            self.allocate_as(base, t, depth, op.space.data)
            where, dst_cols = base, "0:chunk_w"
        else:
            where, dst_cols = self._chunk(base), self._columns()
        self.names[op.result] = where
        rows = self.block_rows(offset, _type(op.source).shape[0], depth)
        self.line(depth, f"if {rows} < {python(self.plan.rows)}:")
        self.line(depth + 1, f"nisa.memset(dst={where}, value={_fill(op.pad.value.data, t.dtype)})")
        start = python(offset)
        self.line(depth, f"nisa.dma_copy(dst={base}[0:{rows}, {dst_cols}], "
                         f"src={self.names[op.source]}[{start}:{start} + {rows}, "
                         f"{self._columns()}])")

    def store(self, op: StoreOp, depth: int) -> None:
        k = op.result.value.data
        offset = op.offset_exprs()[0]
        rows = self.block_rows(offset, self.kernel.output_types()[k].shape[0], depth)
        base = self.whole.get(op.value)
        src = f"{base}[0:{rows}, {self._columns()}]" if base is not None else \
            f"{self.names[op.value]}[0:{rows}, 0:chunk_w]"
        start = python(offset)
        self.line(depth, f"nisa.dma_copy(dst=out{k}[{start}:{start} + {rows}, "
                         f"{self._columns()}], src={src})")


def emit_chunked(func: FuncOp, tile_sizes: Mapping[str, int],
                 sizes: Mapping[str, int] | None = None, chunks: int = CHUNKS
                 ) -> EmittedKernel:
    """The module of a lowered row kernel with its body printed by stages of column chunks
    (module docstring); Refused where `fold.row_plan` refuses it."""
    kernel = kernel_of(func)
    plan = row_plan(kernel)
    if isinstance(plan, str):
        raise Refused(f"@{func.sym_name.data}: not printed in column chunks: {plan}")
    printer = _ChunkedPrinter(kernel, func.sym_name.data, fixed=dict(sizes or {}), plan=plan,
                              chunks=chunks)
    return EmittedKernel(func.sym_name.data, printer.module(dict(tile_sizes)))
