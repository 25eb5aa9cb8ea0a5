"""Tiled kernels of a function: blocks of rows, of columns, and a sequential loop over a
reduced dim, with every op of the function fused into the one kernel.

A `Tiling` names up to three size symbols of a function:

- `rows` (the results' first dim), split over the grid in blocks of `BM` (program id `i`);
- `cols` (the results' last dim), split over the grid in blocks of `BN` (program id `j`);
- `red`, a dim the function reduces over (the contraction dim of a matmul), walked by a
  sequential loop in steps of `BK` (iteration `k`), each reduction over it accumulated on chip.

Each program loads the blocks of its inputs (a dim equal to a tiled symbol becomes its block,
at offset `i*BM`, `j*BN` or `k*BK`; every other dim is loaded whole), runs the function's own ops
on the tiles (each rebuilt by its class's `make`, so no op's meaning is written twice; a generic
form gets the block sizes as its loop bounds), and stores its block of each result. Every
intermediate stays on chip: the kernel is the node fusion of the whole function.

With a `red` loop the ops fall in three phases, by dataflow: the *prologue* (no `red` dim, no
reduction over it: computed once before the loop), the *loop* (ops on `red` tiles, and each
reduction over `red`, whose partial result over one tile joins the loop's accumulator with the
reduction's own `add`, `max` or `min`), and the *epilogue* (whatever reads an accumulator:
after the loop). A value of the epilogue that feeds the loop again (the max of a softmax
feeding its exponent) is not tileable this way: that loop's state is not an accumulation.

Which tiling is right is not decided here: a kernel is proposed and the verifier proves it equal
to the function for every size and every tile size its assumptions admit, or it is rejected with
the verifier's reason. `NotTileable` says why a kernel cannot even be written; that is checked
structurally (types, which dims ops reduce over), without recursion, in one pass over the ops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.ax import AddOp, MatmulOp, MaxOp, MinOp, TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.interface import form_op, generic_form, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.syntax import parse_form
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp

#: the names a kernel introduces, per tiled symbol: (block parameter, program id or iteration)
ROWS = ("BM", "i")
COLS = ("BN", "j")
RED = ("BK", "k")
#: how a reduction's partial result joins its accumulator, and the accumulator's start
ACCUMULATE: dict[str, tuple[type[Operation], float]] = {
    "add": (AddOp, 0.0), "max": (MaxOp, -math.inf), "min": (MinOp, math.inf)}


class NotTileable(ValueError):
    """The function cannot be written as a kernel of the asked tiling; the message says why."""


@dataclass(frozen=True)
class Tiling:
    """Which size symbols a kernel tiles (see the module docstring)."""

    rows: str
    cols: str | None = None
    red: str | None = None

    @property
    def kind(self) -> str:
        """A short name: `rows`, `blocks`, `rows_k`, `blocks_k`."""
        return ("blocks" if self.cols else "rows") + ("_k" if self.red else "")

    def blocks(self) -> dict[str, IntExpr]:
        """Each tiled symbol's block parameter."""
        found = {self.rows: IntExpr.sym(ROWS[0])}
        if self.cols:
            found[self.cols] = IntExpr.sym(COLS[0])
        if self.red:
            found[self.red] = IntExpr.sym(RED[0])
        return found

    def offsets(self) -> dict[str, str]:
        """Each tiled symbol's tile offset."""
        found = {self.rows: f"{ROWS[1]}*{ROWS[0]}"}
        if self.cols:
            found[self.cols] = f"{COLS[1]}*{COLS[0]}"
        if self.red:
            found[self.red] = f"{RED[1]}*{RED[0]}"
        return found


def tilings(func: FuncOp) -> list[Tiling]:
    """The tilings worth proposing for `func`: rows, plus column blocks when the results share
    a last dim, each with and without a loop over each dim the function reduces over whole."""
    rows = row_size(func)
    results = [t for t in func.function_type.outputs.data if isinstance(t, TensorType)]
    last = {t.shape[-1].as_symbol if t.rank >= 2 else None for t in results}
    cols = last.pop() if len(last) == 1 else None
    col_options = [None] if cols is None or cols == rows else [None, cols]
    in_results = {s for t in results for d in t.shape for s in d.symbols()}
    reduced: list[str] = []
    for op in func.body.block.ops:
        if has_form(op):
            for d in generic_form(op).reduced:
                name = d.upper.as_symbol
                if (d.lower == IntExpr.const(0) and name is not None and name not in in_results
                        and name not in reduced):
                    reduced.append(name)
    return [Tiling(rows, c, r) for c in col_options for r in [None, *reduced]]


def row_size(func: FuncOp) -> str:
    """The size the function's results share as their first dim (the rows)."""
    results = list(func.function_type.outputs.data)
    first = [t.shape[0].as_symbol if isinstance(t, TensorType) and t.rank else None
             for t in results]
    if not results or first[0] is None or any(f != first[0] for f in first):
        raise NotTileable(f"@{func.sym_name.data}: the results do not share a first dim that "
                          "is a size (the rows)")
    return first[0]


def tile_function(func: FuncOp, tiling: Tiling, space: str, accumulator_space: str,
                  constraints: Sequence[str] = ()) -> FuncOp:
    """`func` as one kernel of `tiling` (see the module docstring): a new function named
    `<name>_<kind>` with the same signature. Tiles live in memory space `space`, the loop's
    accumulators of a matmul in `accumulator_space`; `constraints` join the kernel's
    assumptions."""
    return _Builder(func, tiling, space, accumulator_space).build(constraints)


@dataclass
class _Placed:
    """Where a source value lives in the kernel: its tile, and its phase."""

    value: SSAValue
    phase: str  # "pre", "loop" or "post"


class _Builder:
    def __init__(self, func: FuncOp, tiling: Tiling, space: str, accumulator_space: str):
        self.func = func
        self.name = func.sym_name.data
        self.tiling = tiling
        self.space = space
        self.accumulator_space = accumulator_space
        self.blocks = tiling.blocks()
        self.offsets = tiling.offsets()
        symbols = [tiling.rows, tiling.cols, tiling.red]
        given = [s for s in symbols if s is not None]
        if len(set(given)) != len(given):
            raise NotTileable(f"@{self.name}: a tiling needs distinct dims, got {given}")

    # ---- types ---------------------------------------------------------------------------
    def tile_dims(self, t: TensorType, what: str, result: bool = False) -> list[IntExpr]:
        """`t`'s dims with each tiled symbol replaced by its block; a tiled symbol in a dim
        mixed with others cannot be tiled, nor can a result whose rows are not first or whose
        columns are not last (an input or an intermediate may hold them anywhere: `x.T` loads
        a `[BK, BM]` tile of `x` and transposes it on chip)."""
        tiled = set(self.blocks)
        dims: list[IntExpr] = []
        for position, d in enumerate(t.shape):
            name = d.as_symbol
            if name in tiled:
                if not result:
                    dims.append(self.blocks[name])
                    continue
                if name == self.tiling.rows and position != 0:
                    raise NotTileable(f"@{self.name}: {what} of type {t} has the rows "
                                      f"{name} in dim {position}, not first")
                if name == self.tiling.cols and position != t.rank - 1:
                    raise NotTileable(f"@{self.name}: {what} of type {t} has the columns "
                                      f"{name} in dim {position}, not last")
                dims.append(self.blocks[name])
            elif d.symbols() & tiled:
                raise NotTileable(f"@{self.name}: {what} of type {t} has a dim {d} that mixes "
                                  f"a tiled size with others")
            else:
                dims.append(d)
        return dims

    def has_red(self, t: TensorType) -> bool:
        return self.tiling.red is not None and any(
            d.as_symbol == self.tiling.red for d in t.shape)

    # ---- ops -----------------------------------------------------------------------------
    def reduced_tiled(self, op: Operation) -> tuple[str, str | None]:
        """Which tiled symbol `op` reduces over ("" if none) and the reduction's kind."""
        form = generic_form(op)
        over = {s for d in form.reduced for b in (d.lower, d.upper) for s in b.symbols()}
        for name in (self.tiling.rows, self.tiling.cols):
            if name is not None and name in over:
                raise NotTileable(f"@{self.name}: '{op.name}' reduces over {name}, which is "
                                  f"split across programs")
        red = self.tiling.red
        if red is None or red not in over:
            return "", form.reduction
        whole = [d for d in form.reduced if d.upper == IntExpr.sym(red)
                 and d.lower == IntExpr.const(0)]
        if len(whole) != 1 or form.reduction not in ACCUMULATE or form.finalize is not None:
            raise NotTileable(f"@{self.name}: '{op.name}' reduces over {red} in a way the loop "
                              f"cannot accumulate (an add, max or min over [0, {red}) of one "
                              f"dim, with no finalizer)")
        return red, form.reduction

    def rebuild(self, op: Operation, operands: list[SSAValue]) -> Operation:
        """`op` on tiles: its class's `make` with dim-list attributes and a generic form's loop
        bounds on blocks."""
        attrs = dict(form_op(op).attrs())
        for key, value in attrs.items():
            if isinstance(value, tuple) and value and all(isinstance(v, IntExpr) for v in value):
                attrs[key] = tuple(v.substitute(self.blocks) for v in value)
        if op.name == "ax.generic":
            attrs["form"] = str(self.form_on_blocks(parse_form(str(attrs["form"]),
                                                               len(operands))))
        try:
            return form_op(op).make(operands, **attrs)
        except (ShapeError, ValueError) as err:
            raise NotTileable(f"@{self.name}: '{op.name}' does not take tiles: {err}") from None

    def form_on_blocks(self, form: GenericForm) -> GenericForm:
        """A generic form's loop bounds with each tiled symbol as its block (its body, `idx(K)`
        included, keeps the sizes: a mean over K still divides by K)."""
        def on(dims: tuple) -> tuple:  # type: ignore[type-arg]
            return tuple(replace(d, lower=d.lower.substitute(self.blocks),
                                 upper=d.upper.substitute(self.blocks)) for d in dims)
        return replace(form, parallel=on(form.parallel), reduced=on(form.reduced))

    # ---- the kernel ----------------------------------------------------------------------
    def build(self, constraints: Sequence[str]) -> FuncOp:
        func, tiling = self.func, self.tiling
        params: list[TensorType] = list(func.function_type.inputs.data)  # type: ignore[arg-type]
        ret = func.body.block.last_op
        if not isinstance(ret, ReturnOp) or not all(isinstance(t, TensorType) for t in params):
            raise NotTileable(f"@{self.name} is not a function of !ax.tensor values ending in "
                              "return")
        results: list[TensorType] = [v.type for v in ret.arguments]  # type: ignore[misc]
        names = [ROWS, COLS, RED]
        taken = {s for t in [*params, *results] for d in t.shape for s in d.symbols()}
        clash = taken & {n for pair in names for n in pair}
        if clash:
            raise NotTileable(f"@{self.name} already uses the name(s) {sorted(clash)}")
        for k, t in enumerate(results):
            if t.rank == 0 or t.shape[0].as_symbol != tiling.rows:
                raise NotTileable(f"@{self.name}: result #{k} ({t}) does not have the rows "
                                  f"{tiling.rows} first")
            if self.has_red(t):
                raise NotTileable(f"@{self.name}: result #{k} ({t}) has the looped dim "
                                  f"{tiling.red}")

        pre = Block(arg_types=params)  # the kernel body; its args are the global tensors
        loop_body = Block()
        post: list[Operation] = []
        placed: dict[SSAValue, _Placed] = {}
        accumulators: list[tuple[SSAValue, type[Operation], SSAValue, SSAValue]] = []

        # inputs: loaded where they are first needed (before the loop, or in it)
        used = {v for op in func.body.block.ops for v in op.operands}
        for src, arg, t in zip(func.body.block.args, pre.args, params, strict=True):
            if src not in used:
                continue
            phase = "loop" if self.has_red(t) else "pre"
            load = self.load(arg, t)
            (loop_body if phase == "loop" else pre).add_op(load)
            placed[src] = _Placed(load.results[0], phase)

        for op in func.body.block.ops:
            if op is ret:
                break
            if not has_form(op) or op.regions or len(op.results) != 1:
                raise NotTileable(f"@{self.name}: '{op.name}' is not a form op with one result")
            result_type = op.results[0].type
            assert isinstance(result_type, TensorType)
            self.tile_dims(result_type, f"the result of '{op.name}'")
            phases = {placed[v].phase for v in op.operands}
            over, reduction = self.reduced_tiled(op)
            new = self.rebuild(op, [placed[v].value for v in op.operands])
            if over:
                if "post" in phases:
                    raise NotTileable(self._feeds_back(op))
                loop_body.add_op(new)
                join, start = ACCUMULATE[reduction or "add"]
                partial = new.results[0]
                assert isinstance(partial.type, TensorType)
                space = (self.accumulator_space if isinstance(op, MatmulOp) else self.space)
                init = FullOp.make([], value=start, shape=partial.type.shape,
                                   dtype=partial.type.dtype, space=space)
                pre.add_op(init)
                carried = loop_body.insert_arg(partial.type, len(loop_body.args))
                accumulators.append((init.results[0], join, carried, partial))
                placed[op.results[0]] = _Placed(partial, "acc")
                continue
            if self.has_red(result_type) or "loop" in phases:
                if "post" in phases or "acc" in phases:
                    raise NotTileable(self._feeds_back(op))
                if not self.has_red(result_type):
                    raise NotTileable(f"@{self.name}: '{op.name}' uses a {tiling.red} tile "
                                      f"without reducing over {tiling.red}")
                loop_body.add_op(new)
                placed[op.results[0]] = _Placed(new.results[0], "loop")
            elif phases & {"post", "acc"}:
                post.append(new)
                placed[op.results[0]] = _Placed(new.results[0], "post")
            else:
                pre.add_op(new)
                placed[op.results[0]] = _Placed(new.results[0], "pre")

        if tiling.red is not None and not accumulators:
            raise NotTileable(f"@{self.name}: nothing reduces over {tiling.red}")
        if accumulators:
            self.close_loop(pre, loop_body, accumulators, placed, post)
        for op in post:
            pre.add_op(op)
        for k, v in enumerate(ret.arguments):
            tile = placed[v].value.type
            assert isinstance(tile, TensorType)
            if tile.shape != tuple(self.tile_dims(results[k], f"result #{k}", result=True)):
                raise NotTileable(f"@{self.name}: result #{k} is computed as {tile}, not a "
                                  f"block of {results[k]}")
            offsets = [self.offsets.get(d.as_symbol or "", "0") for d in results[k].shape]
            pre.add_op(StoreOp(placed[v].value, k, offsets))
        pre.add_op(YieldOp())

        grid_ids = [ROWS[1]] + ([COLS[1]] if tiling.cols else [])
        grid = [f"ceildiv({tiling.rows}, {ROWS[0]})"]
        if tiling.cols:
            grid.append(f"ceildiv({tiling.cols}, {COLS[0]})")
        kernel_params = [b.as_symbol or "" for b in self.blocks.values()]
        out = FuncOp(f"{self.name}_{tiling.kind}", (params, results))
        kernel = KernelOp(list(out.body.block.args), results, grid_ids, grid, kernel_params,
                          Region(pre), assume=[*(f"{p} >= 1" for p in kernel_params),
                                               *constraints])
        out.body.block.add_ops([kernel, ReturnOp(*kernel.results)])
        return out

    def close_loop(self, pre: Block, body: Block,
                   accumulators: list[tuple[SSAValue, type[Operation], SSAValue, SSAValue]],
                   placed: dict[SSAValue, _Placed], post: list[Operation]) -> None:
        """End the loop body with each accumulator joined with its partial result, put the loop
        in the kernel, and let the epilogue read the loop's results for the reductions."""
        joined: list[SSAValue] = []
        for _, join, carried, partial in accumulators:
            step = join.make([carried, partial])  # type: ignore[attr-defined]
            body.add_op(step)
            joined.append(step.results[0])
        body.add_op(YieldOp(*joined))
        red = self.tiling.red
        loop = ForOp([init for init, *_ in accumulators], RED[1], f"ceildiv({red}, {RED[0]})",
                     Region(body))
        pre.add_op(loop)
        final = {partial: result for (_, _, _, partial), result
                 in zip(accumulators, loop.results, strict=True)}
        for value in placed.values():
            if value.phase == "acc":
                value.value, value.phase = final[value.value], "post"
        for op in post:  # epilogue ops were built on the partial results: read the loop's
            for index, operand in enumerate(op.operands):
                if operand in final:
                    op.operands[index] = final[operand]

    def load(self, arg: SSAValue, t: TensorType) -> Operation:
        """The tile of input `arg` a program (or an iteration) reads."""
        dims = self.tile_dims(t, "an input")
        offsets = [self.offsets.get(d.as_symbol or "", "0") for d in t.shape]
        return LoadOp.make([arg], offsets=offsets, shape=dims, pad=0.0, space=self.space)

    def _feeds_back(self, op: Operation) -> str:
        return (f"@{self.name}: '{op.name}' reads a reduction over {self.tiling.red} and feeds "
                f"the loop over it again: that loop's state is not an accumulation")
