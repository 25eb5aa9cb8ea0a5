"""Rows folded over partitions: a printing choice of the NKI emitter for row kernels of few rows.

A row kernel (the `rows` tiling: a grid over blocks of BM rows, each row whole in one tile
`[BM, N]`) computes on BM of the 128 partitions. With few rows that is most of the engines
idle and every instruction walking the whole row on each partition: ntrans at M = 8 runs its
ten elementwise passes over 4096 elements on 8 partitions (29.9 us on trn2, 22x its DMA floor).

`emit_folded` prints the same lowered kernel with each row spread over S = pmax // BM
partitions:

- a row tile `[BM, N]` is held as `[BM*S, N/S]`: row r's columns `[s*F, (s+1)*F)` on partition
  `r*S + s` (F = N / S), which is the tile's row-major order, so one DMA moves it as it lies
  in HBM (`in.ap(pattern=[[F, n*S], [1, F]])` for a block of n rows);
- a per-row column `[BM, 1]` as `[BM*S, 1]`: each row's value on each of its S partitions, so a
  `tensor_scalar` or `activation` reading it is printed as it is;
- a row `[N]` broadcast over the rows (`lower.py`'s `ones.T @ row`) as one DMA of its `[S, F]`
  view repeated BM times (a source `[BM, S, F]` whose first stride is 0);
- elementwise instructions are printed as they are, on the folded tiles: each element is the
  same function of the same elements;
- a row sum (`tensor_reduce` add over the free dim, `activation_reduce`) is the same
  instruction, now the sum of each partition's F elements, followed by one `nc_matmul` of
  those partial sums by the block-diagonal ones matrix `B [P, P]` (`B[p, q] = 1` where
  `p // S == q // S`) into PSUM and its copy back: each partition gets the sum of its row's S
  partial sums, which is the row's sum (the same terms, in another order), in fp32 as the
  reduction was. `B = E.T @ E` of `E [BM, P]` (`E[r, q] = 1` where `r*S <= q < (r+1)*S`,
  two `affine_select`s of a ones tile), made once before the grid.

It is an emission, not a rewrite of the lowering (as `pair.py`'s two programs at a time): the
kernel printed this way is checked on the simulator against the reference like every
candidate, and priced by the cost model. It asserts `N % S == 0` when traced (selection offers
it only at sizes where that holds); a last block of n < BM rows takes n*S partitions. Anything
but the above (a loop in the body, a row max, a load or store of part of a row, a view) is
refused with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue

from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.targets.nki.emit import (
    EmittedKernel,
    _broadcast_row,
    _count_of_ones,
    _dtype,
    _fill,
    _held_shape,
    _Printer,
    _reduction_beside,
    _type,
    python,
)
from axon.targets.nki.lower import Refused, kernel_of

__all__ = ["FOLD", "RowPlan", "RowPrinter", "emit_folded", "fold_factor", "fold_refusal",
           "row_plan", "row_sum"]

#: the way's name in a candidate's label
FOLD = "rows over partitions"

#: instructions printed as they are on the folded tiles
_AS_THEY_ARE = (nki.TensorTensorOp, nki.TensorScalarOp, nki.ActivationOp, nki.TensorCopyOp,
                nki.MemsetOp, nki.ActivationReduceOp, nki.TensorReduceOp)


@dataclass(frozen=True)
class RowPlan:
    """What a foldable kernel's row tiles are: `rows` (the partition tile size, BM) by
    `cols` (the row's length, N), in blocks over the program id `pid`."""

    rows: IntExpr
    cols: IntExpr
    pid: str


def row_plan(kernel: KernelOp) -> RowPlan | str:
    """The kernel's rows where it folds (module docstring), else why it does not."""
    if len(kernel.program_names()) != 1:
        return "a grid of more than one program id"
    (pid,) = kernel.program_names()
    loads = [op for op in kernel.walk() if isinstance(op, LoadOp)]
    blocks = [op for op in loads if _type(op.result).rank == 2]
    if not blocks:
        return "no row block is loaded"
    rows, cols = _type(blocks[0].result).shape
    if rows.as_symbol is None or rows.as_symbol not in kernel.param_names():
        return f"the row block's partition dim {rows} is not a tile size"
    broadcasts = [hit for op in kernel.walk() if (hit := _broadcast_row(op)) is not None]
    parts: set[Operation] = {x for hit in broadcasts for x in hit}
    outputs = kernel.output_types()
    for op in kernel.walk():
        if op is kernel or op in parts or isinstance(op, YieldOp) and op.parent_op() is kernel:
            continue
        if isinstance(op, ForOp):
            return "a loop in the kernel's body"
        if isinstance(op, LoadOp | StoreOp):
            if isinstance(op, LoadOp):
                t, whole = _type(op.result), _type(op.source)
                offsets = [IntExpr.lift(o.data) for o in op.offsets.data]
            else:
                t, whole = _type(op.value), outputs[op.result.value.data]
                offsets = op.offset_exprs()
            if list(t.shape) != [rows, cols] or whole.rank != 2 or whole.shape[1] != cols \
                    or offsets != [rows * IntExpr.sym(pid), IntExpr.const(0)]:
                return f"'{op.name}' of {t} at {', '.join(map(str, offsets))}: not a block of " \
                       "whole rows"
            continue
        if isinstance(op, FullOp):
            shape = list(_type(op.result).shape)
            if shape not in ([rows, cols], [rows, IntExpr.const(1)]):
                return f"'{op.name}' of shape {shape}"
            continue
        if not isinstance(op, _AS_THEY_ARE):
            return f"'{op.name}' has no folded form"
        if isinstance(op, nki.TensorReduceOp) and (
                op.attrs().get("op") != "add"
                or tuple(int(a) for a in op.attrs()["axes"]) != (1,)):
            return f"a row {op.attrs().get('op')} over partitions (only sums fold)"
        for value in (*op.operands, *op.results):
            shape = list(_type(value).shape)
            if shape not in ([rows, cols], [rows, IntExpr.const(1)]) \
                    and value.owner not in parts:
                return f"'{op.name}' has an operand or result of shape {shape}"
    for _, load, _, _ in broadcasts:
        (offset,) = (IntExpr.lift(o.data) for o in load.offsets.data)
        if offset != IntExpr.const(0) or list(_type(load.source).shape) != [cols]:
            return "a broadcast row that is not a whole input row"
    return RowPlan(rows, cols, pid)


def fold_refusal(func: FuncOp) -> str:
    """Why `func`'s lowered kernel does not fold ('' where it does)."""
    plan = row_plan(kernel_of(func))
    return plan if isinstance(plan, str) else ""


def fold_factor(func: FuncOp, tile_sizes: Mapping[str, int], sizes: Mapping[str, int],
                partitions: int) -> int:
    """S, the partitions each row takes, where `func` folds at these sizes (S >= 2 and S
    divides the row's length); else 0."""
    plan = row_plan(kernel_of(func))
    if isinstance(plan, str):
        return 0
    env = {**sizes, **tile_sizes}
    rows, cols = plan.rows.evaluate(env), plan.cols.evaluate(env)
    folds = partitions // rows if rows > 0 else 0
    return folds if folds >= 2 and cols % folds == 0 else 0


def row_sum(op: Operation) -> SSAValue | None:
    """The row sum `op` prints, if any: a `tensor_reduce` (not a count of ones, printed as its
    count) or an `activation_reduce`'s result, or that of the `activation_reduce` an
    `activation` is printed with (`emit._reduction_beside`)."""
    if isinstance(op, nki.ActivationReduceOp) or (
            isinstance(op, nki.TensorReduceOp) and _count_of_ones(op) is None):
        return op.results[0]
    if isinstance(op, nki.ActivationOp):
        beside = _reduction_beside(op)
        if beside is not None:
            return beside.results[0]
    return None


@dataclass
class RowPrinter(_Printer):
    """The emitter's printer for a row kernel (`row_plan`), which the row printings extend."""

    plan: RowPlan = field(default_factory=lambda: RowPlan(IntExpr.const(1), IntExpr.const(1), ""))

    def block_rows(self, offset: IntExpr, whole: IntExpr, depth: int) -> str:
        """The name bound to the rows of the block at `offset` inside a dim of `whole`."""
        rows = self.fresh("n")
        self.line(depth, f"{rows} = min({python(self.plan.rows)}, {python(whole - offset)})")
        return rows


@dataclass
class _FoldedPrinter(RowPrinter):
    """The emitter's printer with row tiles held folded (module docstring)."""

    def prelude(self) -> None:
        rows, cols = python(self.plan.rows), python(self.plan.cols)
        self.line(1, f"fold_s = nl.tile_size.pmax // {rows}  # each row on fold_s partitions")
        self.line(1, f"fold_p = {rows} * fold_s")
        self.line(1, f"assert {cols} % fold_s == 0, \"{self.name}: rows folded over "
                     f"partitions: assumes {cols} % (pmax // {rows}) == 0\"")
        self.line(1, f"fold_f = {cols} // fold_s")
        self.line(1, "# fold_b[p, q] = 1 where p and q hold the same row: E.T @ E, "
                     "E[r, q] = 1 where r*fold_s <= q < (r+1)*fold_s")
        self.line(1, f"fold_ones = nl.ndarray(({rows}, fold_p), dtype=nl.float32, "
                     "buffer=nl.sbuf)")
        self.line(1, "nisa.memset(dst=fold_ones, value=1.0)")
        self.line(1, f"fold_e1 = nl.ndarray(({rows}, fold_p), dtype=nl.float32, buffer=nl.sbuf)")
        self.line(1, "nisa.affine_select(dst=fold_e1, pattern=[[1, fold_p]], "
                     "channel_multiplier=-fold_s, on_true_tile=fold_ones, on_false_value=0.0, "
                     "cmp_op=nl.greater_equal, offset=0)")
        self.line(1, f"fold_e = nl.ndarray(({rows}, fold_p), dtype=nl.float32, buffer=nl.sbuf)")
        self.line(1, "nisa.affine_select(dst=fold_e, pattern=[[-1, fold_p]], "
                     "channel_multiplier=fold_s, on_true_tile=fold_e1, on_false_value=0.0, "
                     "cmp_op=nl.greater_equal, offset=fold_s - 1)")
        self.line(1, "fold_bp = nl.ndarray((fold_p, fold_p), dtype=nl.float32, buffer=nl.psum)")
        self.line(1, "nisa.nc_matmul(dst=fold_bp, stationary=fold_e, moving=fold_e)")
        self.line(1, "fold_b = nl.ndarray((fold_p, fold_p), dtype=nl.float32, buffer=nl.sbuf)")
        self.line(1, "nisa.tensor_copy(dst=fold_b, src=fold_bp)")
        self.line(1, "del fold_ones, fold_e1, fold_e, fold_bp")
        for op in self.kernel.walk():  # a broadcast's row and ones: printed by `broadcast`
            hit = _broadcast_row(op)
            if hit is not None:
                _, load, row, ones = hit
                self.folded.update((load, row, ones))
                self.names[load.result] = self.names[row.results[0]] = \
                    self.names[ones.results[0]] = ""

    def grids(self, body: Block, tile_sizes: Mapping[str, int]) -> None:
        (extent,) = self.kernel.grid_exprs()
        self.line(1, f"for {self.plan.pid} in nl.affine_range({python(extent)}):")
        self.block(body, 2)

    def allocate_as(self, name: str, t: TensorType, depth: int, buffer: str) -> None:
        shape = _held_shape(t)
        if len(shape) != 2 or shape[0] != self.plan.rows:
            super().allocate_as(name, t, depth, buffer)
            return
        free = "fold_f" if shape[1] == self.plan.cols else python(shape[1])
        self.buffers[name] = buffer
        self.line(depth, f"{name} = nl.ndarray((fold_p, {free}), dtype={_dtype(t.dtype)}, "
                         f"buffer=nl.{buffer})")

    def _folded_view(self, tensor: str, rows: str, offset: IntExpr) -> str:
        return (f"{tensor}.ap(pattern=[[fold_f, {rows} * fold_s], [1, fold_f]], "
                f"offset=({python(offset)}) * ({python(self.plan.cols)}))")

    def load(self, op: LoadOp, depth: int, transposed: nki.DmaTransposeOp | None = None,
             into: tuple[str, str, str] | None = None) -> None:
        t = _type(op.result)
        name = self.allocate(op.result, depth, op.space.data)
        offset = IntExpr.lift(op.offsets.data[0].data)
        rows = self.block_rows(offset, _type(op.source).shape[0], depth)
        self.line(depth, f"if {rows} < {python(self.plan.rows)}:")
        self.line(depth + 1, f"nisa.memset(dst={name}, value={_fill(op.pad.value.data, t.dtype)})")
        self.line(depth, f"nisa.dma_copy(dst={name}[0:{rows} * fold_s, 0:fold_f], "
                         f"src={self._folded_view(self.names[op.source], rows, offset)})")

    def store(self, op: StoreOp, depth: int) -> None:
        k = op.result.value.data
        offset = op.offset_exprs()[0]
        rows = self.block_rows(offset, self.kernel.output_types()[k].shape[0], depth)
        self.line(depth, f"nisa.dma_copy(dst={self._folded_view(f'out{k}', rows, offset)}, "
                         f"src={self.names[op.value]}[0:{rows} * fold_s, 0:fold_f])")

    def broadcast(self, op: nki.NcMatmulOp, load: LoadOp, depth: int) -> None:
        t = _type(load.result)
        name = self.fresh()
        self.names[op.results[0]] = name
        self.buffers[name] = "sbuf"
        self.line(depth, f"{name} = nl.ndarray((fold_p, fold_f), dtype={_dtype(t.dtype)}, "
                         "buffer=nl.sbuf)")
        # the row's [S, F] view once for each of the block's rows: a source [BM, S, F] whose
        # first dim has stride 0, moved in the dst's row-major order
        self.line(depth, f"nisa.dma_copy(dst={name}, src={self.names[load.source]}.ap("
                         f"pattern=[[0, {python(self.plan.rows)}], [fold_f, fold_s], "
                         "[1, fold_f]], offset=0))")

    def instruction(self, op: nki.NkiOp, depth: int) -> None:
        super().instruction(op, depth)
        total = row_sum(op)  # (an activation_reduce printed with its activation is skipped)
        if total is not None:
            self._row_sums(total, depth)

    def _row_sums(self, column: SSAValue, depth: int) -> None:
        """Each partition's partial sum in `column` replaced by its row's sum."""
        name = self.names[column]
        total = self.fresh()
        self.line(depth, f"{total} = nl.ndarray((fold_p, 1), dtype=nl.float32, buffer=nl.psum)")
        self.line(depth, f"nisa.nc_matmul(dst={total}, stationary=fold_b, moving={name})")
        self.line(depth, f"nisa.tensor_copy(dst={name}, src={total})")
        self.line(depth, f"del {total}")


def emit_folded(func: FuncOp, tile_sizes: Mapping[str, int],
                sizes: Mapping[str, int] | None = None) -> EmittedKernel:
    """The module of a lowered row kernel with its rows folded over partitions (module
    docstring); Refused where it does not fold."""
    kernel = kernel_of(func)
    plan = row_plan(kernel)
    if isinstance(plan, str):
        raise Refused(f"@{func.sym_name.data}: rows do not fold over partitions: {plan}")
    printer = _FoldedPrinter(kernel, func.sym_name.data, fixed=dict(sizes or {}), plan=plan)
    return EmittedKernel(func.sym_name.data, printer.module(dict(tile_sizes)))
