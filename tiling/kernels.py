"""Tiled kernels of a function: blocks of rows, of columns, and a sequential loop over a
reduced dim, with every op of the function fused into the one kernel.

A `Tiling` names up to three size symbols of a function:

- `rows` (the results' first dim), split over the grid in blocks of `BM` (program id `i`);
- `cols` (the results' last dim), split over the grid in blocks of `BN` (program id `j`);
- `red`, a dim the function reduces over (the contraction dim of a matmul, or a row
  normalization's columns), walked by sequential loops in steps of `BK`, each reduction over it
  accumulated on chip.

Each program loads the blocks of its inputs (a dim equal to a tiled symbol becomes its block,
at offset `i*BM`, `j*BN` or `k*BK`, wherever it is in the input; every other dim is loaded
whole), runs the function's own ops on the tiles (each rebuilt by its class's `make`, so no
op's meaning is written twice; a generic form gets the block sizes as its loop bounds), and
stores its block of each result. Every intermediate stays on chip: the kernel is the node
fusion of the whole function.

With `red` the values fall in stages, by dataflow in one pass over the ops (`stages`): values
with no `red` tile in them are computed once before any loop; a reduction over `red` of values
that read the results of the first s loops is accumulated by loop s (its partial result over
one tile, masked to the tile's elements inside `red`, joins the accumulator with the
reduction's own `add`, `max` or `min`; a mean's finalizer is applied after the loop); values
on `red` tiles are recomputed in each loop that needs them, from the inputs; what reads a
loop's results and has no `red` dim is computed between that loop and the next. So rmsnorm
then matmul is one loop accumulating the sum of squares, and a second accumulating the matmul
of the scaled tiles, or a single loop when propagation moved the scale after the matmul; a
softmax is a loop for the max, one for the sum of exponentials, and, its result having the dim
`red`, a last parallel loop over the blocks of `red` writing `exp(x - max) / sum`
(`write_pass`). At most `MAX_LOOPS` loops are chained.

A nested tiling (`Tiling.inner`) also walks a second reduced dim, `inner`, in steps of `BL`
(iteration `l`), inside the loops over `red`: a reduction over `inner` of values on `inner`
tiles whose result is on `red` tiles (the mlp's `x @ w1`, contracting K, read by the F loop's
`h @ w3`) is accumulated by a loop over the blocks of `inner` nested in each loop over `red`
that needs it, one inner loop for all such reductions of one loop (they share its tiles: `x`
is loaded once for `x @ w1` and `x @ w2`), its accumulators started at 0 in every iteration
of the outer loop. Values on `inner` tiles are computed only there, so no tile spans the whole
of `inner` (a NeuronCore contraction spans at most its 128 partitions).

Which tiling is right is not decided here: a kernel is proposed and the verifier proves it equal
to the function for every size and every tile size its assumptions admit, or it is rejected with
the verifier's reason. `NotTileable` says why a kernel cannot even be written; that is checked
structurally (types, which dims ops reduce over), without recursion, in one pass over the ops.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from axon.dialects.ax import (
    AddOp,
    CastOp,
    ExpOp,
    GenericOp,
    MatmulOp,
    MaxOp,
    MinOp,
    MulOp,
    ReshapeOp,
    SubOp,
    TensorType,
)
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.interface import form_op, generic_form, has_form
from axon.dialects.form.intexpr import IntExpr, parse_int_expr
from axon.dialects.form.ranges import simplify_form, simplify_index
from axon.dialects.form.scalar import (
    Const,
    Index,
    Read,
    ScalarExpr,
    call,
    index_exprs,
    map_reads,
    reads,
    substitute,
)
from axon.dialects.form.syntax import parse_form
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.nugraph.cost import is_contraction
from axon.tiling.split_loop import NotSplit, split_kernels

#: the names a kernel introduces, per tiled symbol: (block parameter, program id or iteration)
ROWS = ("BM", "i")
COLS = ("BN", "j")
RED = ("BK", "k")
#: the block parameter and iteration of a loop nested in a loop over `red` (`Tiling.inner`)
INNER = ("BL", "l")
#: the iteration of a multi-pass kernel's last (writing) pass
SECOND = "c"
#: the program ids of a batched tiling's leading dims
BATCH = "b"
#: a split online loop's blocks per program and the program id of its stretch (`Tiling.split`)
SPLIT = ("NB", "s")
#: sequential loops one kernel may chain (a reduction reading the one before it)
MAX_LOOPS = 4
#: the names a kernel may introduce (block parameters, program ids, iterations; batch ids of up
#: to 8 leading dims): a program's size symbol must not be one of them (`build` refuses the
#: clash); a frontend naming sizes after a user's variables renames these (`frontend/torch`)
RESERVED_NAMES = frozenset(
    {*ROWS, *COLS, *RED, *INNER, SECOND, *SPLIT}
    | {f"{RED[1]}{n}" for n in range(1, MAX_LOOPS)}
    | {f"{INNER[1]}{n}" for n in range(1, MAX_LOOPS)}
    | {f"{BATCH}{n}" for n in range(8)})
#: ops an online loop's invariant composes into one body (the scalar tools walk a body by
#: recursion on its depth, which composing makes as deep as the chain)
MAX_COMPOSED = 64
#: how a reduction's partial result joins its accumulator
ACCUMULATE: dict[str, type[Operation]] = {"add": AddOp, "max": MaxOp, "min": MinOp}


class NotTileable(ValueError):
    """The function cannot be written as a kernel of the asked tiling; the message says why."""


@dataclass(frozen=True)
class Tiling:
    """Which size symbols a kernel tiles (see the module docstring)."""

    rows: str
    cols: str | None = None
    red: str | None = None
    write_pass: bool = False
    """`red` is also a dim of the results (a row normalization's columns): the sequential
    loops are the first passes (the reductions), and a last, parallel loop over the blocks of
    `red` writes the results a block at a time."""
    lead: int = 0
    """The results' first `lead` dims (batch, heads) are split over the grid one index per
    program (program ids `b0`, `b1`, ...); the rows are the dim after them."""
    online: bool = False
    """The loop of a max over `red` and the loop of the sums that read it are one loop: the
    running max, and each sum rescaled by `exp(m_old - m_new)` as the max grows (the online
    softmax of flash attention). The loop states its invariant for the verifier."""
    inner: str | None = None
    """A second dim the function reduces over, walked inside each loop over `red` that needs
    it: a reduction over `inner` whose result is on `red` tiles is accumulated by a loop over
    the blocks of `inner` (`BL`, iteration `l`) nested in that loop (see the module
    docstring)."""
    split: bool = False
    """The online loop's blocks are split across programs, `NB` blocks of `red` a program
    (program id `s`): each program writes its stretch's running max and sums, and a second
    kernel combines them (flash-decoding; `tiling.split_loop`)."""

    @property
    def kind(self) -> str:
        """A short name: `rows`, `blocks`, `rows_k`, `blocks_k`, `rows_multipass`, each with
        a `batched_` prefix when leading dims are split one index per program, an
        `_online` suffix for the online loop (`_online_split` split across programs) and a
        `_nested` suffix for a loop over `inner`
        nested in the loop over `red` (`rows_k_nested`, `blocks_k_nested`)."""
        return (("batched_" if self.lead else "") + ("blocks" if self.cols else "rows")
                + ("_multipass" if self.write_pass else "_k" if self.red else "")
                + ("_online" if self.online else "") + ("_split" if self.split else "")
                + ("_nested" if self.inner else ""))

    def blocks(self) -> dict[str, IntExpr]:
        """Each tiled symbol's block parameter."""
        found = {self.rows: IntExpr.sym(ROWS[0])}
        if self.cols:
            found[self.cols] = IntExpr.sym(COLS[0])
        if self.red:
            found[self.red] = IntExpr.sym(RED[0])
        if self.inner:
            found[self.inner] = IntExpr.sym(INNER[0])
        return found

    def offsets(self) -> dict[str, str]:
        """Each tiled symbol's tile offset."""
        found = {self.rows: f"{ROWS[1]}*{ROWS[0]}"}
        if self.cols:
            found[self.cols] = f"{COLS[1]}*{COLS[0]}"
        if self.red:
            found[self.red] = f"{RED[1]}*{RED[0]}"
        return found

    def second_offsets(self) -> dict[str, str]:
        """Each tiled symbol's tile offset in the second pass (its own iteration `c`)."""
        assert self.red is not None
        return {**self.offsets(), self.red: f"{SECOND}*{RED[0]}"}


def tilings(func: FuncOp) -> list[Tiling]:
    """The tilings worth proposing for `func`: rows, plus column blocks when the results share
    a last dim, each with and without a loop over each dim the function reduces over whole;
    the same again with the leading dims of results of rank 3 or more split one index per
    program, the rows being the last size before the columns (attention: a grid over batch and
    heads, the rows the query positions)."""
    lead = _lead(func)
    try:
        found = _tilings(func, 0)
    except NotTileable:
        if not lead:
            raise
        found = []
    return found + (_tilings(func, lead) if lead else [])


def _lead(func: FuncOp) -> int:
    """How many leading dims a batched tiling splits one index per program: the results have
    rank >= 3 and share every dim but the last; the dim before the last is a size (the rows)."""
    results = [t for t in func.function_type.outputs.data if isinstance(t, TensorType)]
    if not results or any(t.rank < 3 or t.shape[:-1] != results[0].shape[:-1]
                          for t in results):
        return 0
    lead = results[0].rank - 2
    return lead if results[0].shape[lead].as_symbol is not None else 0


def _tilings(func: FuncOp, lead: int) -> list[Tiling]:
    rows = row_size(func, lead)
    results = [t for t in func.function_type.outputs.data if isinstance(t, TensorType)]
    last = {t.shape[-1].as_symbol if t.rank >= 2 else None for t in results}
    cols = last.pop() if len(last) == 1 else None
    col_options = [None] if cols is None or cols == rows else [None, cols]
    if cols is None and not lead:
        col_options += _middle_dims(results, rows)
    in_results = {s for t in results for d in t.shape for s in d.symbols()}
    reduced: list[str] = []
    for op in func.body.block.ops:
        if has_form(op):
            for d in generic_form(op).reduced:
                name = d.upper.as_symbol
                if d.lower == IntExpr.const(0) and name is not None and name not in reduced:
                    reduced.append(name)
    found = [Tiling(rows, c, r, lead=lead) for c in col_options
             for r in [None, *(r for r in reduced if r not in in_results)]]
    # a row normalization whose row may not fit: reduce in a first pass, write in a second
    found += [Tiling(rows, None, r, write_pass=True, lead=lead) for r in reduced
              if r in in_results and r != rows]
    maxed = {d.upper.as_symbol for op in func.body.block.ops if has_form(op)
             for d in generic_form(op).reduced if generic_form(op).reduction == "max"}
    found += [replace(t, online=True) for t in list(found) if t.red in maxed]
    found += [replace(t, split=True) for t in list(found) if t.online and t.lead]
    found += [replace(t, inner=inner) for t in list(found)
              if t.red is not None and not t.write_pass and not t.online
              for inner in _nested_dims(func, t.red, reduced, in_results)]
    return found


def _middle_dims(results: list[TensorType], rows: str) -> list[str]:
    """Where the results' last dim is no size to split (rope's `2*D2`, its pairs): the sizes
    every result has between its rows and its last dim (rope's heads), each a dim the column
    blocks may split instead, so a program holds `[BM, BN, 2*D2]`: all 128 partitions, a
    free size a block of heads long, and its DMAs in and out overlapping the other programs'
    compute."""
    middle: list[str] = []
    for k in range(1, results[0].rank - 1):
        names = {t.shape[k].as_symbol if t.rank == results[0].rank else None for t in results}
        name = names.pop() if len(names) == 1 else None
        if name is not None and name != rows and name not in middle:
            middle.append(name)
    return middle


def _nested_dims(func: FuncOp, red: str, reduced: list[str], in_results: set[str]
                 ) -> list[str]:
    """The dims a loop nested in the loop over `red` may walk: a dim other than `red` and the
    results' dims that ops reduce over whole, each of them to a result with the dim `red` (so
    each is computed inside a loop over `red`; lora's `x @ w` contracts K outside any loop
    over R, and K is no nested dim of its R loop)."""
    inside: list[str] = []
    outside: set[str] = set()
    for op in func.body.block.ops:
        if not has_form(op) or len(op.results) != 1:
            continue
        result = op.results[0].type
        on_red = isinstance(result, TensorType) and any(d.as_symbol == red
                                                        for d in result.shape)
        for d in generic_form(op).reduced:
            name = d.upper.as_symbol
            if name is None or name == red or name in in_results or name not in reduced:
                continue
            if on_red and d.lower == IntExpr.const(0):
                inside.append(name)
            else:
                outside.add(name)
    return [n for n in dict.fromkeys(inside) if n not in outside]


def row_size(func: FuncOp, lead: int = 0) -> str:
    """The size the function's results share as their dim #`lead` (the rows)."""
    results = list(func.function_type.outputs.data)
    first = [t.shape[lead].as_symbol if isinstance(t, TensorType) and t.rank > lead else None
             for t in results]
    if not results or first[0] is None or any(f != first[0] for f in first):
        raise NotTileable(f"@{func.sym_name.data}: the results do not share a "
                          f"{'first dim' if not lead else f'dim #{lead}'} that is a size "
                          "(the rows)")
    return first[0]


def accumulates_products(op: Operation) -> bool:
    """Is `op` a sum of products, which a matmul unit accumulates where its profile keeps
    accumulators (a NeuronCore's PSUM): an `ax.matmul`, or an `ax.generic` contraction
    (`nugraph.cost.is_contraction`: masked or not; a propagated variant's batched `p @ v`,
    gqa's `in1[d0, d1 floordiv G, r0, d3]`)?"""
    if isinstance(op, MatmulOp):
        return True
    if not isinstance(op, GenericOp):
        return False
    form = generic_form(op)
    return form.finalize is None and is_contraction(form)


def tile_function(func: FuncOp, tiling: Tiling, space: str, accumulator_space: str) -> FuncOp:
    """`func` as one kernel of `tiling` (see the module docstring): a new function named
    `<name>_<kind>` with the same signature. Tiles live in memory space `space`, the loop's
    accumulators of a matmul in `accumulator_space`; the kernel assumes each tile parameter
    is at least 1 (a profile's limits join later: `KernelOp.assume_also`). A split tiling
    gives two kernels, the partials and their combine (`tiling.split_loop`)."""
    built = _Builder(func, tiling, space, accumulator_space).build()
    if not tiling.split:
        return built
    try:
        return split_kernels(built, SPLIT[1])
    except NotSplit as err:
        raise NotTileable(f"@{func.sym_name.data}: {err}") from None


def _places(form: GenericForm) -> bool:
    """Whether `form`'s value depends on the element's place, not only on what it reads: an
    `idx(...)` of a loop variable outside the reads (an iota; `rebuild` takes this for ops
    that read nothing: a concat's `idx` picks its operand, and the emitter joins those
    itself)."""
    loops = set(form.loop_names)
    body = map_reads(form.body, lambda r: Const(0.0))
    return any(e.symbols() & loops for e in index_exprs(body))


class _Builder:
    def __init__(self, func: FuncOp, tiling: Tiling, space: str, accumulator_space: str):
        self.func = func
        self.name = func.sym_name.data
        self.tiling = tiling
        self.space = space
        self.accumulator_space = accumulator_space
        self.blocks = tiling.blocks()
        self.offsets = tiling.offsets()
        symbols = [tiling.rows, tiling.cols, tiling.red, tiling.inner]
        given = [s for s in symbols if s is not None]
        if len(set(given)) != len(given):
            raise NotTileable(f"@{self.name}: a tiling needs distinct dims, got {given}")
        if tiling.split and not tiling.online:
            raise NotTileable(f"@{self.name}: only an online loop is split across programs")
        if tiling.inner is not None and (tiling.red is None or tiling.write_pass
                                         or tiling.online):
            raise NotTileable(f"@{self.name}: a loop over {tiling.inner} nests only in "
                              "the loops of a tiling with a loop over a reduced dim, neither "
                              "multi-pass nor online")
        results = [t for t in func.function_type.outputs.data if isinstance(t, TensorType)]
        #: where the results hold the columns: last, or, where their last dim is no size
        #: (rope's `2*D2`), the dim between rows and last that `_middle_dims` proposed
        self.col_dim = -1
        if tiling.cols is not None and results and results[0].rank >= 3 \
                and results[0].shape[-1].as_symbol is None:
            self.col_dim = next((k for k, d in enumerate(results[0].shape)
                                 if d.as_symbol == tiling.cols), -1)
        #: each leading dim's extent and its program id (one index per program)
        self.batch: dict[IntExpr, str] = {}
        for n in range(tiling.lead):
            extent = results[0].shape[n] if results and results[0].rank > n else None
            if extent is None or extent in self.batch or extent.symbols() & set(given):
                raise NotTileable(f"@{self.name}: leading dim #{n} cannot be split one index "
                                  "per program (no such dim, or it repeats a tiled one)")
            self.batch[extent] = f"{BATCH}{n}"
        #: offsets of input dims each program reads one index of (`footprints`)
        self.footprint: dict[SSAValue, dict[int, IntExpr]] = {}
        #: the sums over `inner` a nested loop accumulates (`stages`)
        self.inner_sums: set[Operation] = set()

    # ---- types ---------------------------------------------------------------------------
    def tile_dims(self, t: TensorType, what: str, result: bool = False,
                  footprint: dict[int, IntExpr] | None = None) -> list[IntExpr]:
        """`t`'s dims with each tiled symbol replaced by its block; a tiled symbol in a dim
        mixed with others cannot be tiled, nor can a result whose rows are not first or whose
        columns are not last (an input or an intermediate may hold them anywhere: `x.T` loads
        a `[BK, BM]` tile of `x` and transposes it on chip)."""
        tiled = set(self.blocks)
        dims: list[IntExpr] = []
        for position, d in enumerate(t.shape):
            name = d.as_symbol
            if footprint and position in footprint:
                dims.append(IntExpr.const(1))
                continue
            if d in self.batch:
                if result and self.batch[d] != f"{BATCH}{position}":
                    raise NotTileable(f"@{self.name}: {what} of type {t} has the leading dim "
                                      f"{d} in dim {position}")
                dims.append(IntExpr.const(1))
                continue
            if name in tiled:
                if not result:
                    dims.append(self.blocks[name])
                    continue
                if name == self.tiling.rows and position != self.tiling.lead:
                    raise NotTileable(f"@{self.name}: {what} of type {t} has the rows "
                                      f"{name} in dim {position}, not #{self.tiling.lead}")
                if name == self.tiling.cols and position != t.rank - 1 and (
                        position != self.col_dim or t.shape[-1].as_symbol is not None):
                    raise NotTileable(f"@{self.name}: {what} of type {t} has the columns "
                                      f"{name} in dim {position}, not last")
                dims.append(self.blocks[name])
            elif d.symbols() & tiled:
                raise NotTileable(f"@{self.name}: {what} of type {t} has a dim {d} that mixes "
                                  f"a tiled size with others")
            else:
                dims.append(d)
        return dims

    def is_ours(self, name: str) -> bool:
        """A name the kernel introduces (a program id or a loop's iteration): not a size."""
        looped = f"({RED[1]}|{INNER[1]})" if self.tiling.inner is not None else RED[1]
        return (name in self.batch.values() or name in (ROWS[1], COLS[1], SECOND)
                or (self.tiling.split and name == SPLIT[1])
                or re.fullmatch(rf"{looped}\d*", name) is not None)

    def offsets_of(self, v: SSAValue, offsets: dict[str, str]) -> list[IntExpr]:
        """Where the tile of source value `v` starts in each dim, in a tile at `offsets`."""
        t = v.type
        assert isinstance(t, TensorType)
        foot = self.footprint.get(v, {})
        found = []
        for position, d in enumerate(t.shape):
            text = offsets.get(d.as_symbol or "")
            found.append(foot[position] if position in foot
                         else IntExpr.sym(self.batch[d]) if d in self.batch
                         else parse_int_expr(text) if text else IntExpr.const(0))
        return found

    def footprints(self) -> None:
        """The dims of each input a program reads one index of, beyond the leading dims: every
        reader is an `ax.generic` whose reads of the input in that dim, with the output's
        leading dims at their program ids, name no loop variable (gqa reads the kv head
        `b1 floordiv G` of `k` where query head b1 is computed): the input is loaded there, one
        index wide, instead of whole."""
        if not self.batch:
            return
        tiled = set(self.blocks)
        for src in self.func.body.block.args:
            t = src.type
            assert isinstance(t, TensorType)
            open_dims = [p for p, d in enumerate(t.shape)
                         if d not in self.batch and not d.symbols() & tiled]
            found: dict[int, IntExpr | None] = {}
            for use in src.uses if open_dims else ():
                op = use.operation
                if not isinstance(op, GenericOp):
                    found = dict.fromkeys(open_dims)
                    break
                form = generic_form(op)
                out = op.results[0].type
                assert isinstance(out, TensorType)
                env = {d.name: IntExpr.sym(self.batch[e])
                       for d, e in zip(form.parallel, out.shape, strict=True) if e in self.batch}
                names = set(form.loop_names)
                for read in reads(form.body):
                    if read.operand != use.index:
                        continue
                    for p in open_dims:
                        at = simplify_index(read.index[p].substitute(env), {}, self.is_ours)
                        known = found.get(p, at)
                        found[p] = at if known == at and not at.symbols() & names else None
            self.footprint[src] = {p: e for p, e in found.items() if e is not None}

    def has_red(self, t: TensorType) -> bool:
        return self.tiling.red is not None and any(
            d.as_symbol == self.tiling.red for d in t.shape)

    def has_inner(self, t: TensorType) -> bool:
        return self.tiling.inner is not None and any(
            d.as_symbol == self.tiling.inner for d in t.shape)

    def reduces_inner(self, op: Operation) -> bool:
        """Whether `op` reduces over `inner`; NotTileable unless it is a sum over
        [0, `inner`) of one dim that reduces over nothing else tiled (what a nested loop
        accumulates)."""
        inner = self.tiling.inner
        if inner is None:
            return False
        form = generic_form(op)
        over = {s for d in form.reduced for b in (d.lower, d.upper) for s in b.symbols()}
        if inner not in over:
            return False
        whole = [d for d in form.reduced if d.upper == IntExpr.sym(inner)
                 and d.lower == IntExpr.const(0)]
        if len(whole) != 1 or form.reduction != "add" or over & set(self.blocks) - {inner}:
            raise NotTileable(f"@{self.name}: '{op.name}' reduces over {inner} in a way a "
                              f"nested loop cannot accumulate (a sum over [0, {inner}) of "
                              "one dim, over no other tiled dim)")
        return True

    # ---- ops -----------------------------------------------------------------------------
    def reduced_tiled(self, op: Operation) -> tuple[str, str | None]:
        """Which tiled symbol `op` reduces over ("" if none) and the reduction's kind."""
        form = generic_form(op)
        over = {s for d in form.reduced for b in (d.lower, d.upper) for s in b.symbols()}
        for name in (self.tiling.rows, self.tiling.cols):
            if name is not None and name in over:
                raise NotTileable(f"@{self.name}: '{op.name}' reduces over {name}, which is "
                                  f"split across programs")
        for extent, pid in self.batch.items():
            if any(d.upper == extent or extent.symbols() & d.upper.symbols()
                   for d in form.reduced):
                raise NotTileable(f"@{self.name}: '{op.name}' reduces over {extent}, which is "
                                  f"split one index per program ({pid})")
        red = self.tiling.red
        if red is None or red not in over:
            return "", form.reduction
        whole = [d for d in form.reduced if d.upper == IntExpr.sym(red)
                 and d.lower == IntExpr.const(0)]
        if len(whole) != 1 or form.reduction not in ACCUMULATE:
            raise NotTileable(f"@{self.name}: '{op.name}' reduces over {red} in a way the loop "
                              f"cannot accumulate (an add, max or min over [0, {red}) of one "
                              "dim)")
        return red, form.reduction

    def rebuild(self, op: Operation, operands: list[SSAValue],
                offsets: dict[str, str] | None = None) -> Operation:
        """`op` on tiles at `offsets` (the program's own by default): its class's `make` with
        dim-list attributes on blocks; a generic form is rewritten in the tiles' coordinates
        (`form_on_tiles`)."""
        attrs = dict(form_op(op).attrs())
        for key, value in attrs.items():
            if isinstance(value, tuple) and value and all(isinstance(v, IntExpr) for v in value):
                attrs[key] = tuple(self.on_tiles(v) for v in value)
        if op.name == "ax.generic":
            form = parse_form(str(attrs["form"]), len(operands))
            attrs["form"] = str(self.form_on_tiles(form, op, offsets or self.offsets))
        try:
            if op.name != "ax.generic" and not op.operands and _places(generic_form(op)):
                # an iota (a causal mask's positions): its `idx(d)` on tiles, as a generic's
                t = op.results[0].type
                assert isinstance(t, TensorType)
                form = self.form_on_tiles(generic_form(op), op, offsets or self.offsets)
                return GenericOp.make(operands, form=str(form), dtype=t.dtype)
            return form_op(op).make(operands, **attrs)
        except (ShapeError, ValueError) as err:
            raise NotTileable(f"@{self.name}: '{op.name}' does not take tiles: {err}") from None

    def on_tiles(self, e: IntExpr) -> IntExpr:
        """A dim's extent on tiles: 1 for a leading dim split one index per program, each tiled
        size its block."""
        return IntExpr.const(1) if e in self.batch else e.substitute(self.blocks)

    def form_on_tiles(self, form: GenericForm, op: Operation, offsets: dict[str, str]
                      ) -> GenericForm:
        """A generic form on tiles: each loop variable of a tiled dim is its tile's offset
        plus the place in the tile, each read subtracts its operand tile's offset, the loop
        bounds are the blocks (`form_on_blocks`), and the indices are simplified under the
        tiles' ranges. Where every read is aligned with the output (`in0[d0, r0]`), the form
        reads as before; a read through an index map (`in1[d0, d1 floordiv G, d3, r0]`) or an
        `idx(d0)` keeps its meaning in the whole tensor."""
        env = {d.name: IntExpr.sym(d.name) + o
               for d, o in zip(form.parallel, self.offsets_of(op.results[0], offsets),
                               strict=True) if o != IntExpr.const(0)}
        for looped in (self.tiling.red, self.tiling.inner):
            at = offsets.get(looped or "")
            for d in form.reduced if at else ():
                if d.upper.as_symbol == looped and d.lower == IntExpr.const(0):
                    env[d.name] = IntExpr.sym(d.name) + parse_int_expr(at or "0")
        starts = [self.offsets_of(v, offsets) for v in op.operands]

        def shifted(r: Read) -> ScalarExpr:
            return Read(r.operand, tuple(e - o for e, o in zip(r.index, starts[r.operand],
                                                                strict=True)))

        body = map_reads(substitute(form.body, env), shifted)
        return simplify_form(self.form_on_blocks(replace(form, body=body)), self.is_ours)

    def form_on_blocks(self, form: GenericForm) -> GenericForm:
        """A generic form's loop bounds on tiles (`on_tiles`; its body, `idx(K)` included,
        keeps the sizes: a mean over K still divides by K)."""
        def on(dims: tuple) -> tuple:  # type: ignore[type-arg]
            return tuple(replace(d, lower=self.on_tiles(d.lower), upper=self.on_tiles(d.upper))
                         for d in dims)
        return replace(form, parallel=on(form.parallel), reduced=on(form.reduced))

    # ---- the kernel ----------------------------------------------------------------------
    def build(self) -> FuncOp:
        func, tiling = self.func, self.tiling
        params: list[TensorType] = list(func.function_type.inputs.data)  # type: ignore[arg-type]
        ret = func.body.block.last_op
        if not isinstance(ret, ReturnOp) or not all(isinstance(t, TensorType) for t in params):
            raise NotTileable(f"@{self.name} is not a function of !ax.tensor values ending in "
                              "return")
        results: list[TensorType] = [v.type for v in ret.arguments]  # type: ignore[misc]
        taken = {s for t in [*params, *results] for d in t.shape for s in d.symbols()}
        ours = {n for pair in (ROWS, COLS, RED) for n in pair} | {SECOND}
        ours |= {f"{RED[1]}{n}" for n in range(1, MAX_LOOPS)}  # the later loops' iterations
        if tiling.inner is not None:  # the names of the loops nested in them
            ours |= {*INNER, *(f"{INNER[1]}{n}" for n in range(1, MAX_LOOPS))}
        ours |= set(self.batch.values()) | (set(SPLIT) if tiling.split else set())
        clash = taken & ours
        if clash:
            raise NotTileable(f"@{self.name} already uses the name(s) {sorted(clash)}")
        for k, t in enumerate(results):
            if t.rank <= tiling.lead or t.shape[tiling.lead].as_symbol != tiling.rows:
                raise NotTileable(f"@{self.name}: result #{k} ({t}) does not have the rows "
                                  f"{tiling.rows} in dim #{tiling.lead}")
            if self.has_red(t) and not tiling.write_pass:
                raise NotTileable(f"@{self.name}: result #{k} ({t}) has the looped dim "
                                  f"{tiling.red}")
        ops = list(func.body.block.ops)[:-1]
        self.footprints()
        stages = self.stages(ops, ret)

        body = Block(arg_types=params)  # the kernel's body; its args are the global tensors
        args: dict[SSAValue, SSAValue] = dict(zip(func.body.block.args, body.args,
                                                   strict=True))
        outer: dict[SSAValue, SSAValue] = {}  # source value -> kernel value outside the loops
        for src, arg in args.items():
            if stages[src] == ("pre", 0) and src.uses:
                src_type = src.type
                assert isinstance(src_type, TensorType)
                load = self.load(src, arg, src_type)
                body.add_op(load)
                outer[src] = load.results[0]
        for op in ops:
            if stages[op.results[0]] == ("pre", 0):
                body.add_op(self.rebuild(op, [outer[v] for v in op.operands]))
                outer[op.results[0]] = body.last_op.results[0]  # type: ignore[union-attr]
        loops = max((stage for kind, stage in stages.values() if kind == "acc"), default=0)
        if tiling.red is not None and loops == 0:
            raise NotTileable(f"@{self.name}: nothing reduces over {tiling.red}")
        if tiling.online and loops != 2:
            raise NotTileable(f"@{self.name}: an online loop merges a max over {tiling.red} "
                              f"with the one loop of sums reading it; this needs {loops}")
        for n in range(loops):
            reductions = [op for op in ops if stages[op.results[0]] == ("acc", n + 1)]
            if tiling.online and n == 0:
                sums = [op for op in ops if stages[op.results[0]] == ("acc", 2)]
                _Online(self, ops, stages, args, outer).build(body, reductions, sums)
            elif not (tiling.online and n == 1):
                self.loop(body, n, reductions, ops, stages, args, outer)
            for op in ops:
                if stages[op.results[0]] == ("post", n + 1):
                    body.add_op(self.rebuild(op, [outer[v] for v in op.operands]))
                    outer[op.results[0]] = body.last_op.results[0]  # type: ignore[union-attr]
        written = [v for v in ret.arguments if stages[v][0] == "tile"]
        if written:
            body.add_op(self.write_pass(written, ops, stages, args, outer, ret, results))
        for k, v in enumerate(ret.arguments):
            if stages[v][0] != "tile":
                body.add_op(self.store(outer[v], k, results[k], self.offsets))
        body.add_op(YieldOp())

        grid_ids = [*self.batch.values(), ROWS[1]] + ([COLS[1]] if tiling.cols else [])
        grid = [*(str(e) for e in self.batch), f"ceildiv({tiling.rows}, {ROWS[0]})"]
        if tiling.cols:
            grid.append(f"ceildiv({tiling.cols}, {COLS[0]})")
        kernel_params = [b.as_symbol or "" for b in self.blocks.values()]
        if tiling.split:
            grid_ids.append(SPLIT[1])
            grid.append(f"ceildiv({tiling.red}, {RED[0]}*{SPLIT[0]})")
            kernel_params.append(SPLIT[0])
        out = FuncOp(f"{self.name}_{tiling.kind}", (params, results))
        kernel = KernelOp(list(out.body.block.args), results, grid_ids, grid, kernel_params,
                          Region(body), assume=[f"{p} >= 1" for p in kernel_params])
        out.body.block.add_ops([kernel, ReturnOp(*kernel.results)])
        return out

    def stages(self, ops: list[Operation], ret: ReturnOp) -> dict[SSAValue, tuple[str, int]]:
        """Each source value's kind and stage, in one pass over the ops:

        - `pre`, 0: no `red` tile in it: computed once, before any loop;
        - `tile`, s: a value on `red` tiles (an input with the dim `red`, or computed from
          one) that reads what the first s loops give: recomputed in each loop that needs it;
        - `acc`, s + 1: a reduction over `red` of values of stage s: accumulated by loop s;
        - `post`, s: computed from the results of loop s - 1, between it and loop s;
        - `inner`, s (a nested tiling): a value on `inner` tiles (an input with the dim
          `inner`, or computed from one without reducing over it) that reads what the first s
          loops give: computed in the loops over `inner` nested in the loops over `red`; a
          sum over `inner` of such values is a `tile` value, accumulated by such a loop.
        """
        tiling = self.tiling
        stage: dict[SSAValue, tuple[str, int]] = {}
        for src in self.func.body.block.args:
            t = src.type
            assert isinstance(t, TensorType)
            self.tile_dims(t, "an input", footprint=self.footprint.get(src))
            stage[src] = (("inner", 0) if self.has_inner(t) else ("tile", 0) if self.has_red(t)
                          else ("pre", 0))
        for op in ops:
            if not has_form(op) or op.regions or len(op.results) != 1:
                raise NotTileable(f"@{self.name}: '{op.name}' is not a form op with one result")
            result_type = op.results[0].type
            assert isinstance(result_type, TensorType)
            self.tile_dims(result_type, f"the result of '{op.name}'")
            kinds = {stage[v][0] for v in op.operands}
            level = max((stage[v][1] for v in op.operands), default=0)
            if self.reduces_inner(op) or "inner" in kinds:
                stage[op.results[0]] = self.inner_stage(op, level)
                if stage[op.results[0]][0] == "tile":
                    self.inner_sums.add(op)
                continue
            over, _ = self.reduced_tiled(op)
            if over:
                if level + 1 > MAX_LOOPS:
                    raise NotTileable(f"@{self.name}: '{op.name}' needs loop {level + 1} over "
                                      f"{tiling.red}; at most {MAX_LOOPS} are built")
                stage[op.results[0]] = ("acc", level + 1)
            elif self.has_red(result_type) or "tile" in kinds:
                if not self.has_red(result_type):
                    raise NotTileable(f"@{self.name}: '{op.name}' uses a {tiling.red} tile "
                                      f"without reducing over {tiling.red}")
                stage[op.results[0]] = ("tile", level)
            elif kinds & {"acc", "post"}:
                stage[op.results[0]] = ("post", level)
            else:
                stage[op.results[0]] = ("pre", 0)
        for v in ret.arguments:
            if stage[v][0] == "tile" and not tiling.write_pass:
                raise NotTileable(f"@{self.name}: a result is computed on {tiling.red} tiles")
            if stage[v][0] == "inner":
                raise NotTileable(f"@{self.name}: a result is computed on {tiling.inner} tiles")
        return stage

    def inner_stage(self, op: Operation, level: int) -> tuple[str, int]:
        """The stage of an op of a nested tiling that reads or reduces `inner` tiles: `inner`
        when its result keeps the dim `inner`, `tile` for a sum over `inner` whose result is
        on `red` tiles (a nested loop accumulates it inside a loop over `red`)."""
        result_type = op.results[0].type
        assert isinstance(result_type, TensorType)
        inner, red = self.tiling.inner, self.tiling.red
        if not self.reduces_inner(op):
            if not self.has_inner(result_type):
                raise NotTileable(f"@{self.name}: '{op.name}' uses an {inner} tile without "
                                  f"reducing over {inner}")
            return "inner", level
        if self.has_inner(result_type) or not self.has_red(result_type):
            raise NotTileable(f"@{self.name}: '{op.name}' reduces over {inner} to a result "
                              f"without the dim {red}; a loop over {inner} is built only "
                              f"nested in a loop over {red}")
        return "tile", level

    def recompute(self, block: Block, wanted: Sequence[SSAValue], ops: list[Operation],
                  stages: dict[SSAValue, tuple[str, int]], args: dict[SSAValue, SSAValue],
                  outer: dict[SSAValue, SSAValue], offsets: dict[str, str],
                  built: dict[SSAValue, SSAValue] | None = None, nested_iv: str | None = None
                  ) -> dict[SSAValue, SSAValue]:
        """Build into `block` (a loop's body) the tile values `wanted` need: loads of the
        inputs on `red` tiles at `offsets` and the ops on tiles, in source order; values
        computed outside the loops are read from `outer`, those `built` already in the block
        from there (they are returned with the new ones). The sums over `inner` among them
        are accumulated by one loop over `inner` with iteration `nested_iv` (`nested`), built
        after the values they read and before those that read them."""
        needed: set[SSAValue] = set()
        on_inner: set[SSAValue] = set()  # values on `inner` tiles the nested loop computes
        inside: dict[SSAValue, SSAValue] = dict(built or {})
        work = [v for v in wanted if stages[v][0] in ("tile", "inner")]
        while work:
            v = work.pop()
            if v not in needed and v not in on_inner and v not in inside:
                (on_inner if stages[v][0] == "inner" else needed).add(v)
                if isinstance(v.owner, Operation):
                    work.extend(u for u in v.owner.operands
                                if stages[u][0] in ("tile", "inner"))
        sums = [op for op in ops if op.results[0] in needed and op in self.inner_sums]
        before = self.read_by(sums, stages, needed)
        for src, arg in args.items():
            if src in needed:
                t = src.type
                assert isinstance(t, TensorType)
                block.add_op(self.load(src, arg, t, offsets))
                inside[src] = block.last_op.results[0]  # type: ignore[union-attr]
        for op in ops:  # what the sums over `inner` read comes before their loop
            if op.results[0] in before:
                self.add_rebuilt(block, op, inside, outer, offsets)
        if sums:
            if nested_iv is None:
                raise NotTileable(f"@{self.name}: a sum over {self.tiling.inner} is needed "
                                  f"outside a loop over {self.tiling.red}")
            self.nested(block, sums, on_inner, ops, args, outer, inside, offsets, nested_iv)
        for op in ops:
            if op.results[0] in needed and op.results[0] not in inside:
                self.add_rebuilt(block, op, inside, outer, offsets)
        return inside

    def add_rebuilt(self, block: Block, op: Operation, inside: dict[SSAValue, SSAValue],
                    outer: dict[SSAValue, SSAValue], offsets: dict[str, str]) -> None:
        """`op` rebuilt on the tiles at `offsets` into `block`, recorded in `inside`."""
        block.add_op(self.rebuild(op, [inside.get(v) or outer[v] for v in op.operands],
                                  offsets))
        inside[op.results[0]] = block.last_op.results[0]  # type: ignore[union-attr]

    def read_by(self, sums: list[Operation], stages: dict[SSAValue, tuple[str, int]],
                needed: set[SSAValue]) -> set[SSAValue]:
        """The `needed` values the sums over `inner` read (through values on `inner` tiles
        too); NotTileable when one of those sums reads another (its loop would have to come
        first: loops over `inner` are not chained)."""
        found: set[SSAValue] = set()
        work = [v for op in sums for v in op.operands]
        seen: set[SSAValue] = set()
        while work:
            v = work.pop()
            if v in seen:
                continue
            seen.add(v)
            if isinstance(v.owner, Operation) and v.owner in self.inner_sums:
                raise NotTileable(f"@{self.name}: a sum over {self.tiling.inner} reads another "
                                  f"('{v.owner.name}'); one loop over {self.tiling.inner} is "
                                  f"nested in each loop over {self.tiling.red}")
            if v in needed:
                found.add(v)
            if stages[v][0] in ("tile", "inner") and isinstance(v.owner, Operation):
                work.extend(v.owner.operands)
        return found

    def nested(self, block: Block, sums: list[Operation], on_inner: set[SSAValue],
               ops: list[Operation], args: dict[SSAValue, SSAValue],
               outer: dict[SSAValue, SSAValue], inside: dict[SSAValue, SSAValue],
               offsets: dict[str, str], iv: str) -> None:
        """The loop over the blocks of `inner` nested in a loop over `red` (into `block`, its
        body): it loads the inputs on `inner` tiles at `iv*BL` (and the outer loop's offsets
        in their other dims), computes the values on `inner` tiles, and accumulates each sum's
        masked partial into an accumulator started at 0 in `block`, so in every iteration of
        the outer loop; the sums' values (finalized) join `inside`."""
        inner = self.tiling.inner or ""
        at = {**offsets, inner: f"{iv}*{INNER[0]}"}
        loop_body = Block()
        here = dict(inside)
        for src, arg in args.items():
            if src in on_inner:
                t = src.type
                assert isinstance(t, TensorType)
                loop_body.add_op(self.load(src, arg, t, at))
                here[src] = loop_body.last_op.results[0]  # type: ignore[union-attr]
        for op in ops:
            if op.results[0] in on_inner:
                self.add_rebuilt(loop_body, op, here, outer, at)
        inits: list[SSAValue] = []
        joined: list[SSAValue] = []
        for op in sums:
            partial = self.masked(self.rebuild(
                op, [here.get(v) or outer[v] for v in op.operands], at), iv,
                (inner, INNER[0]))
            loop_body.add_op(partial)
            tile = partial.results[0].type
            assert isinstance(tile, TensorType)
            space = self.accumulator_space if accumulates_products(op) else self.space
            zero = FullOp.make([], value=0.0, shape=tile.shape, dtype=tile.dtype, space=space)
            block.add_op(zero)
            inits.append(zero.results[0])
            carried = loop_body.insert_arg(tile, len(loop_body.args))
            step = AddOp.make([carried, partial.results[0]])
            loop_body.add_op(step)
            joined.append(step.results[0])
        loop_body.add_op(YieldOp(*joined))
        loop = ForOp(inits, iv, f"ceildiv({inner}, {INNER[0]})", Region(loop_body))
        block.add_op(loop)
        for op, result in zip(sums, loop.results, strict=True):
            inside[op.results[0]] = self.finalized(block, op, result)

    def loop(self, body: Block, n: int, reductions: list[Operation], ops: list[Operation],
             stages: dict[SSAValue, tuple[str, int]], args: dict[SSAValue, SSAValue],
             outer: dict[SSAValue, SSAValue]) -> None:
        """Loop `n` over `red`: each reduction's partial result over one tile joins its
        accumulator (started at the reduction's identity); the loop's results are the
        reductions' values."""
        loop_body = Block()
        iv = RED[1] if n == 0 else f"{RED[1]}{n}"  # each loop's own iteration name
        offsets = {**self.offsets, self.tiling.red or "": f"{iv}*{RED[0]}"}
        inside = self.recompute(loop_body, [v for op in reductions for v in op.operands], ops,
                                stages, args, outer, offsets,
                                nested_iv=INNER[1] if n == 0 else f"{INNER[1]}{n}")
        inits: list[SSAValue] = []
        joined: list[SSAValue] = []
        for op in reductions:
            partial = self.masked(
                self.rebuild(op, [inside.get(v) or outer[v] for v in op.operands], offsets), iv)
            loop_body.add_op(partial)
            tile = partial.results[0].type
            assert isinstance(tile, TensorType)
            kind = generic_form(op).reduction or "add"
            start: Operation
            if kind == "add":
                space = self.accumulator_space if accumulates_products(op) else self.space
                start = FullOp.make([], value=0.0, shape=tile.shape, dtype=tile.dtype,
                                    space=space)
            else:  # a max or min starts at the first block's (no infinities: no real is one)
                start = self.first_block(body, op, ops, stages, args, outer)
            body.add_op(start)
            inits.append(start.results[0])
            carried = loop_body.insert_arg(tile, len(loop_body.args))
            join = ACCUMULATE[kind]
            step = join.make([carried, partial.results[0]])  # type: ignore[attr-defined]
            loop_body.add_op(step)
            joined.append(step.results[0])
        loop_body.add_op(YieldOp(*joined))
        loop = ForOp(inits, iv, f"ceildiv({self.tiling.red}, {RED[0]})", Region(loop_body))
        body.add_op(loop)
        for op, result in zip(reductions, loop.results, strict=True):
            outer[op.results[0]] = self.finalized(body, op, result)

    def first_block(self, body: Block, op: Operation, ops: list[Operation],
                    stages: dict[SSAValue, tuple[str, int]], args: dict[SSAValue, SSAValue],
                    outer: dict[SSAValue, SSAValue]) -> Operation:
        """A reduction over `red` on its first block only, masked (a max or min loop's start),
        built into `body` with the tiles it reads; not inserted itself."""
        at_first = {**self.offsets, self.tiling.red or "": str(self.red_at("0"))}
        first = self.recompute(body, op.operands, ops, stages, args, outer, at_first)
        return self.masked(
            self.rebuild(op, [first.get(v) or outer[v] for v in op.operands], at_first), "0")

    def finalized(self, body: Block, op: Operation, total: SSAValue) -> SSAValue:
        """A reduction's value from its accumulated `total`: its finalizer applied (a mean
        divides the sum by the whole extent) after the loop, or `total` itself."""
        finalize = generic_form(op).finalize
        if finalize is None:
            return total
        tile = total.type
        assert isinstance(tile, TensorType)
        names = [f"d{n}" for n in range(tile.rank)]
        out = ", ".join(f"{d} < {e}" for d, e in zip(names, tile.shape, strict=True))
        text = re.sub(r"\bacc\b", f"in0[{', '.join(names)}]", str(finalize))
        done = GenericOp.make([total], form=f"out[{out}] = {text}", dtype=tile.dtype)
        body.add_op(done)
        return done.results[0]

    def red_at(self, iv: str) -> IntExpr:
        """Where iteration `iv` of a loop over `red` starts its tile (`iv` "0": the first
        block): `iv*BK`, from the program's stretch `BK*NB*s` on in a split loop."""
        at = IntExpr.const(0) if iv == "0" else IntExpr.sym(iv) * IntExpr.sym(RED[0])
        if self.tiling.split:
            at = IntExpr.sym(RED[0]) * IntExpr.sym(SPLIT[0]) * IntExpr.sym(SPLIT[1]) + at
        return at

    def masked(self, partial: Operation, iv: str,
               over: tuple[str, str] | None = None, past: SSAValue | None = None
               ) -> Operation:
        """A reduction over one `red` tile (or, `over` = (dim, block), one tile of that dim)
        that reduces only the tile's elements inside the dim: past the end, an `add` adds 0
        and a `max` or `min` sees the tile's first element again (always inside, and a repeat
        changes neither), or, given `past` (a value of the result's type), that value's
        element. A matmul is left as it is: its tiles are padded with 0, so its products past
        the end are 0."""
        if isinstance(partial, MatmulOp):
            return partial
        size, block_name = over or (self.tiling.red or "", RED[0])
        form = generic_form(partial)
        block = IntExpr.sym(block_name)
        dim = next(d for d in form.reduced if d.upper == block and d.lower == IntExpr.const(0))
        start = (self.red_at(iv) if over is None
                 else IntExpr.sym(iv) * block if iv != "0" else IntExpr.const(0))
        position = start + IntExpr.sym(dim.name)
        inside = call("lt", Index(position), Index(IntExpr.sym(size)))
        operands = list(partial.operands)
        outside: ScalarExpr = (
            Const(0.0) if form.reduction == "add"
            else substitute(form.body, {dim.name: IntExpr.const(0)}) if past is None
            else Read(len(operands), tuple(IntExpr.sym(d.name) for d in form.parallel)))
        result = partial.results[0].type
        assert isinstance(result, TensorType)
        partial.drop_all_references()  # replaced, never inserted
        return GenericOp.make([*operands, *([past] if past is not None else [])], form=str(
            replace(form, body=call("select", inside, form.body, outside), finalize=None,
                    num_operands=len(operands) + (past is not None))), dtype=result.dtype)

    def write_pass(self, written: list[SSAValue], ops: list[Operation],
                   stages: dict[SSAValue, tuple[str, int]], args: dict[SSAValue, SSAValue],
                   outer: dict[SSAValue, SSAValue], ret: ReturnOp,
                   results: list[TensorType]) -> ForOp:
        """The last pass of a multi-pass kernel: a parallel loop over the blocks of `red` that
        computes the results on `red` tiles (again from the inputs, reading what the loops
        gave) and stores each a block at a time."""
        offsets = self.tiling.second_offsets()
        body = Block()
        inside = self.recompute(body, written, ops, stages, args, outer, offsets)
        for k, v in enumerate(ret.arguments):
            if stages[v][0] == "tile":
                body.add_op(self.store(inside[v], k, results[k], offsets))
        body.add_op(YieldOp())
        return ForOp([], SECOND, f"ceildiv({self.tiling.red}, {RED[0]})", Region(body),
                     kind="parallel")

    def store(self, value: SSAValue, k: int, result: TensorType,
              offsets: dict[str, str]) -> StoreOp:
        tile = value.type
        assert isinstance(tile, TensorType)
        if tile.shape != tuple(self.tile_dims(result, f"result #{k}", result=True)):
            raise NotTileable(f"@{self.name}: result #{k} is computed as {tile}, not a block "
                              f"of {result}")
        return StoreOp(value, k, [self.batch.get(d) or offsets.get(d.as_symbol or "", "0")
                                  for d in result.shape])

    def load(self, src: SSAValue, arg: SSAValue, t: TensorType,
             offsets: dict[str, str] | None = None) -> Operation:
        """The tile of input `src` (the kernel's `arg`) a program (or an iteration) reads."""
        dims = self.tile_dims(t, "an input", footprint=self.footprint.get(src))
        at = self.offsets if offsets is None else offsets
        return LoadOp.make([arg], offsets=[str(o) for o in self.offsets_of(src, at)],
                           shape=dims, pad=0.0, space=self.space)


class _Online:
    """The online loop of a `Tiling(online=True)` kernel: one loop over the blocks of `red`
    carrying the running max `m` and every sum that reads it, each sum rescaled by
    `exp(m_old - m_new)` before the block's partial joins it; and the loop's invariant.

    The invariant (the verifier proves the loop by induction on it, `verifier/induction.py`)
    claims nothing of `m` and states each sum after `k` iterations as the sum over the first
    `min(k*BK, red)` elements of its body at the running max: the body is the sum's own form
    with every value between it and the max composed in (elementwise ops only), and the values
    that do not read the max are `defs`, each the generic form of the op built on tiles whole
    along `red`, reading the kernel's inputs and the defs before it. Whether the rescaling is
    right for a given program is not decided here: the verifier proves the kernel or says why
    not."""

    def __init__(self, builder: _Builder, ops: list[Operation],
                 stages: dict[SSAValue, tuple[str, int]], args: dict[SSAValue, SSAValue],
                 outer: dict[SSAValue, SSAValue]):
        self.b = builder
        self.ops = ops
        self.stages = stages
        self.args = args
        self.outer = outer

    def build(self, body: Block, maxes: list[Operation], sums: list[Operation]) -> None:
        b, red = self.b, self.b.tiling.red or ""
        if (len(maxes) != 1 or generic_form(maxes[0]).reduction != "max" or not sums
                or any(generic_form(op).reduction != "add" for op in sums)):
            raise NotTileable(f"@{b.name}: an online loop needs one max over {red} and sums "
                              "over it that read it")
        (mx,) = maxes
        iv = RED[1]
        offsets = {**b.offsets, red: str(b.red_at(iv))}
        ops, stages, args, outer = self.ops, self.stages, self.args, self.outer
        loop_body = Block()
        inside = b.recompute(loop_body, list(mx.operands), ops, stages, args, outer, offsets)
        rebuilt = b.rebuild(mx, [inside.get(v) or outer[v] for v in mx.operands], offsets)
        m_old = loop_body.insert_arg(rebuilt.results[0].type, 0)
        # a split loop's last stretch may have blocks wholly past the end, whose first lane
        # is outside too: their lanes see the running max (any value: the loop claims none)
        partial = b.masked(rebuilt, iv, past=m_old if b.tiling.split else None)
        loop_body.add_op(partial)
        start = b.first_block(body, mx, ops, stages, args, outer)
        body.add_op(start)
        m_new = self.add(loop_body, MaxOp.make([m_old, partial.results[0]]))
        local = {**outer, mx.results[0]: m_new}
        for op in ops:  # what reads only the max (and values outside the loop), at m_new
            if stages[op.results[0]] == ("post", 1):
                local[op.results[0]] = self.add(
                    loop_body, b.rebuild(op, [local[v] for v in op.operands], offsets))
        inside = b.recompute(loop_body, [v for op in sums for v in op.operands], ops, stages,
                             args, local, offsets, built=inside)
        scale = self.add(loop_body, ExpOp.make([self.add(loop_body,
                                                         SubOp.make([m_old, m_new]))]))
        inits, joined = [start.results[0]], [m_new]
        for op in sums:
            part = b.masked(b.rebuild(op, [inside.get(v) or local[v] for v in op.operands],
                                      offsets), iv)
            loop_body.add_op(part)
            tile = part.results[0].type
            assert isinstance(tile, TensorType)
            space = b.accumulator_space if accumulates_products(op) else b.space
            zero = FullOp.make([], value=0.0, shape=tile.shape, dtype=tile.dtype, space=space)
            body.add_op(zero)
            inits.append(zero.results[0])
            carried = loop_body.insert_arg(tile, len(loop_body.args))
            factor = scale
            assert isinstance(scale.type, TensorType)
            if scale.type.dtype != tile.dtype:  # a sum kept wider than the max (tiling.split)
                factor = self.add(loop_body, CastOp.make([scale], dtype=tile.dtype))
            rescaled = self.add(loop_body, MulOp.make([carried,
                                                       self.shaped(loop_body, factor, tile)]))
            joined.append(self.add(loop_body, AddOp.make([rescaled, part.results[0]])))
        loop_body.add_op(YieldOp(*joined))
        defs, invariant = self.invariant(mx, sums, [a.type for a in loop_body.args])
        extent = SPLIT[0] if b.tiling.split else f"ceildiv({red}, {RED[0]})"
        loop = ForOp(inits, iv, extent, Region(loop_body), invariant=invariant, defs=defs)
        body.add_op(loop)
        outer[mx.results[0]] = loop.results[0]
        for op, result in zip(sums, loop.results[1:], strict=True):
            outer[op.results[0]] = b.finalized(body, op, result)

    @staticmethod
    def add(block: Block, op: Operation) -> SSAValue:
        block.add_op(op)
        return op.results[0]

    def shaped(self, block: Block, scale: SSAValue, tile: TensorType) -> SSAValue:
        """The rescaling factor (the max's shape) as it multiplies a sum of type `tile`: as it
        is where it broadcasts, reshaped where the sum dropped the max's kept dim of 1."""
        factor = scale.type
        assert isinstance(factor, TensorType)
        try:
            if MulOp.make([block.args[-1], scale]).results[0].type == tile:
                return scale
        except (ShapeError, ValueError):
            pass
        if tuple(factor.shape[:-1]) == tuple(tile.shape) and factor.shape[-1] == IntExpr.const(1):
            return self.add(block, ReshapeOp.make([scale], shape=tile.shape))
        raise NotTileable(f"@{self.b.name}: a sum of type {tile} cannot be rescaled by the max "
                          f"of type {factor}")

    def invariant(self, mx: Operation, sums: list[Operation],
                  carried_types: Sequence[Attribute]) -> tuple[list[str], list[str]]:
        """The loop's `defs` and `invariant` texts (see the class docstring)."""
        b, red = self.b, self.b.tiling.red or ""
        whole = copy.copy(b)
        whole.blocks = {**b.blocks, red: IntExpr.sym(red)}
        whole.offsets = {**b.offsets, red: "0"}
        params = list(b.func.function_type.inputs.data)
        scratch = Block(arg_types=[*params, *carried_types])
        n_in = len(params)
        reads_max = {mx.results[0]}
        for op in self.ops:
            if any(v in reads_max for v in op.operands):
                reads_max.add(op.results[0])
        wanted: set[SSAValue] = set()
        work = [v for op in sums for v in op.operands]
        while work:
            v = work.pop()
            if v not in wanted and v is not mx.results[0]:
                wanted.add(v)
                if isinstance(v.owner, Operation):
                    work.extend(v.owner.operands)
        value: dict[SSAValue, SSAValue] = {mx.results[0]: scratch.args[n_in]}
        index: dict[SSAValue, int] = {a: k for k, a in enumerate(scratch.args[:n_in])}
        defs: list[str] = []
        for src, arg in zip(b.func.body.block.args, scratch.args, strict=False):
            if src in wanted:
                t = src.type
                assert isinstance(t, TensorType)
                op = whole.load(src, arg, t, whole.offsets)
                scratch.add_op(op)
                value[src] = op.results[0]
                index[op.results[0]] = n_in + len(defs)
                defs.append(str(self.renamed(generic_form(op), op, index, n_in + len(defs),
                                             b.is_ours)))
        built: list[tuple[Operation, Operation]] = []
        for op in [o for o in self.ops if o.results[0] in wanted] + sums:
            new = whole.rebuild(op, [value[v] for v in op.operands], whole.offsets)
            scratch.add_op(new)
            value[op.results[0]] = new.results[0]
            if op.results[0] in reads_max or op in sums:
                built.append((op, new))
            else:
                index[new.results[0]] = n_in + len(defs)
                defs.append(str(self.renamed(generic_form(new), new, index, n_in + len(defs),
                                             b.is_ours)))
        if len(built) > MAX_COMPOSED:
            raise NotTileable(f"@{b.name}: {len(built)} ops between the max and its sums; an "
                              f"online loop's invariant composes at most {MAX_COMPOSED}")
        total = n_in + len(defs) + len(carried_types)
        carried: dict[SSAValue, int] = {scratch.args[n_in + k]: n_in + len(defs) + k
                                        for k in range(len(carried_types))}
        composed: dict[SSAValue, GenericForm] = {}
        texts = [""]
        first = b.red_at("0")  # the sums so far run over [first, limit)
        limit = (b.red_at(RED[1])).min(IntExpr.sym(red))
        for op, new in built:  # in source order: what a value reads is composed before it
            form = generic_form(new)
            body = self.compose(form, new, index, carried, composed)
            if op in sums:
                reduced = tuple(replace(d, lower=first, upper=limit)
                                if d.upper == IntExpr.sym(red) else d for d in form.reduced)
                texts.append(str(simplify_form(replace(
                    form, body=body, reduced=reduced, finalize=None, num_operands=total),
                    b.is_ours)))
            elif form.reduction is not None:
                raise NotTileable(f"@{b.name}: '{op.name}' reduces a value that reads the max; "
                                  "the online loop's invariant composes elementwise ops only")
            else:
                composed[new.results[0]] = replace(form, body=body, num_operands=total)
        return defs, texts

    @staticmethod
    def renamed(form: GenericForm, op: Operation, index: dict[SSAValue, int], count: int,
                opaque: Callable[[str], bool]) -> GenericForm:
        """`form` of `op` reading the invariant's operands (inputs, then defs) by number, its
        indices simplified (a dim of one is index 0)."""
        return simplify_form(replace(form, num_operands=count, body=map_reads(
            form.body, lambda r: Read(index[op.operands[r.operand]], r.index))), opaque)

    @staticmethod
    def compose(form: GenericForm, op: Operation, index: dict[SSAValue, int],
                carried: dict[SSAValue, int], composed: dict[SSAValue, GenericForm]
                ) -> ScalarExpr:
        """`form`'s body (of `op`) with reads of defs and carried values by number and each
        read of a value between it and the max replaced by that value's composed body."""
        def read(r: Read) -> ScalarExpr:
            v = op.operands[r.operand]
            if v in composed:
                inner = composed[v]
                return substitute(inner.body, {d.name: i for d, i in
                                               zip(inner.parallel, r.index, strict=True)})
            return Read(carried[v] if v in carried else index[v], r.index)
        return map_reads(form.body, read)
