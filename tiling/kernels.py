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

Which tiling is right is not decided here: a kernel is proposed and the verifier proves it equal
to the function for every size and every tile size its assumptions admit, or it is rejected with
the verifier's reason. `NotTileable` says why a kernel cannot even be written; that is checked
structurally (types, which dims ops reduce over), without recursion, in one pass over the ops.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.ax import AddOp, GenericOp, MatmulOp, MaxOp, MinOp, TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.interface import form_op, generic_form, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Index, call, substitute
from axon.dialects.form.syntax import parse_form
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp

#: the names a kernel introduces, per tiled symbol: (block parameter, program id or iteration)
ROWS = ("BM", "i")
COLS = ("BN", "j")
RED = ("BK", "k")
#: the iteration of a multi-pass kernel's last (writing) pass
SECOND = "c"
#: sequential loops one kernel may chain (a reduction reading the one before it)
MAX_LOOPS = 4
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

    @property
    def kind(self) -> str:
        """A short name: `rows`, `blocks`, `rows_k`, `blocks_k`, `rows_multipass`."""
        return (("blocks" if self.cols else "rows")
                + ("_multipass" if self.write_pass else "_k" if self.red else ""))

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

    def second_offsets(self) -> dict[str, str]:
        """Each tiled symbol's tile offset in the second pass (its own iteration `c`)."""
        assert self.red is not None
        return {**self.offsets(), self.red: f"{SECOND}*{RED[0]}"}


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
                if d.lower == IntExpr.const(0) and name is not None and name not in reduced:
                    reduced.append(name)
    found = [Tiling(rows, c, r) for c in col_options
             for r in [None, *(r for r in reduced if r not in in_results)]]
    # a row normalization whose row may not fit: reduce in a first pass, write in a second
    found += [Tiling(rows, None, r, write_pass=True) for r in reduced
              if r in in_results and r != rows]
    return found


def row_size(func: FuncOp) -> str:
    """The size the function's results share as their first dim (the rows)."""
    results = list(func.function_type.outputs.data)
    first = [t.shape[0].as_symbol if isinstance(t, TensorType) and t.rank else None
             for t in results]
    if not results or first[0] is None or any(f != first[0] for f in first):
        raise NotTileable(f"@{func.sym_name.data}: the results do not share a first dim that "
                          "is a size (the rows)")
    return first[0]


def tile_function(func: FuncOp, tiling: Tiling, space: str, accumulator_space: str) -> FuncOp:
    """`func` as one kernel of `tiling` (see the module docstring): a new function named
    `<name>_<kind>` with the same signature. Tiles live in memory space `space`, the loop's
    accumulators of a matmul in `accumulator_space`; the kernel assumes each tile parameter
    is at least 1 (a profile's limits join later: `KernelOp.assume_also`)."""
    return _Builder(func, tiling, space, accumulator_space).build()


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
        if len(whole) != 1 or form.reduction not in ACCUMULATE:
            raise NotTileable(f"@{self.name}: '{op.name}' reduces over {red} in a way the loop "
                              f"cannot accumulate (an add, max or min over [0, {red}) of one "
                              "dim)")
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
        clash = taken & ours
        if clash:
            raise NotTileable(f"@{self.name} already uses the name(s) {sorted(clash)}")
        for k, t in enumerate(results):
            if t.rank == 0 or t.shape[0].as_symbol != tiling.rows:
                raise NotTileable(f"@{self.name}: result #{k} ({t}) does not have the rows "
                                  f"{tiling.rows} first")
            if self.has_red(t) and not tiling.write_pass:
                raise NotTileable(f"@{self.name}: result #{k} ({t}) has the looped dim "
                                  f"{tiling.red}")
        ops = list(func.body.block.ops)[:-1]
        stages = self.stages(ops, ret)

        body = Block(arg_types=params)  # the kernel's body; its args are the global tensors
        args: dict[SSAValue, SSAValue] = dict(zip(func.body.block.args, body.args,
                                                   strict=True))
        outer: dict[SSAValue, SSAValue] = {}  # source value -> kernel value outside the loops
        for src, arg in args.items():
            if stages[src] == ("pre", 0) and src.uses:
                src_type = src.type
                assert isinstance(src_type, TensorType)
                load = self.load(arg, src_type)
                body.add_op(load)
                outer[src] = load.results[0]
        for op in ops:
            if stages[op.results[0]] == ("pre", 0):
                body.add_op(self.rebuild(op, [outer[v] for v in op.operands]))
                outer[op.results[0]] = body.last_op.results[0]  # type: ignore[union-attr]
        loops = max((stage for kind, stage in stages.values() if kind == "acc"), default=0)
        if tiling.red is not None and loops == 0:
            raise NotTileable(f"@{self.name}: nothing reduces over {tiling.red}")
        for n in range(loops):
            reductions = [op for op in ops if stages[op.results[0]] == ("acc", n + 1)]
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

        grid_ids = [ROWS[1]] + ([COLS[1]] if tiling.cols else [])
        grid = [f"ceildiv({tiling.rows}, {ROWS[0]})"]
        if tiling.cols:
            grid.append(f"ceildiv({tiling.cols}, {COLS[0]})")
        kernel_params = [b.as_symbol or "" for b in self.blocks.values()]
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
        - `post`, s: computed from the results of loop s - 1, between it and loop s.
        """
        tiling = self.tiling
        stage: dict[SSAValue, tuple[str, int]] = {}
        for src in self.func.body.block.args:
            t = src.type
            assert isinstance(t, TensorType)
            self.tile_dims(t, "an input")
            stage[src] = ("tile", 0) if self.has_red(t) else ("pre", 0)
        for op in ops:
            if not has_form(op) or op.regions or len(op.results) != 1:
                raise NotTileable(f"@{self.name}: '{op.name}' is not a form op with one result")
            result_type = op.results[0].type
            assert isinstance(result_type, TensorType)
            self.tile_dims(result_type, f"the result of '{op.name}'")
            kinds = {stage[v][0] for v in op.operands}
            level = max((stage[v][1] for v in op.operands), default=0)
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
        return stage

    def recompute(self, block: Block, wanted: Sequence[SSAValue], ops: list[Operation],
                  stages: dict[SSAValue, tuple[str, int]], args: dict[SSAValue, SSAValue],
                  outer: dict[SSAValue, SSAValue], offsets: dict[str, str]
                  ) -> dict[SSAValue, SSAValue]:
        """Build into `block` (a loop's body) the tile values `wanted` need: loads of the
        inputs on `red` tiles at `offsets` and the ops on tiles, in source order; values
        computed outside the loops are read from `outer`."""
        needed: set[SSAValue] = set()
        work = [v for v in wanted if stages[v][0] == "tile"]
        while work:
            v = work.pop()
            if v not in needed:
                needed.add(v)
                if isinstance(v.owner, Operation):
                    work.extend(u for u in v.owner.operands if stages[u][0] == "tile")
        inside: dict[SSAValue, SSAValue] = {}
        for src, arg in args.items():
            if src in needed:
                t = src.type
                assert isinstance(t, TensorType)
                block.add_op(self.load(arg, t, offsets))
                inside[src] = block.last_op.results[0]  # type: ignore[union-attr]
        for op in ops:
            if op.results[0] in needed:
                block.add_op(self.rebuild(op, [inside.get(v) or outer[v] for v in op.operands]))
                inside[op.results[0]] = block.last_op.results[0]  # type: ignore[union-attr]
        return inside

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
                                stages, args, outer, offsets)
        inits: list[SSAValue] = []
        joined: list[SSAValue] = []
        for op in reductions:
            partial = self.masked(
                self.rebuild(op, [inside.get(v) or outer[v] for v in op.operands]), iv)
            loop_body.add_op(partial)
            tile = partial.results[0].type
            assert isinstance(tile, TensorType)
            kind = generic_form(op).reduction or "add"
            start: Operation
            if kind == "add":
                space = self.accumulator_space if isinstance(op, MatmulOp) else self.space
                start = FullOp.make([], value=0.0, shape=tile.shape, dtype=tile.dtype,
                                    space=space)
            else:  # a max or min starts at the first block's (no infinities: no real is one)
                first = self.recompute(body, op.operands, ops, stages, args, outer,
                                       {**self.offsets, self.tiling.red or "": "0"})
                start = self.masked(
                    self.rebuild(op, [first.get(v) or outer[v] for v in op.operands]), "0")
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

    def masked(self, partial: Operation, iv: str) -> Operation:
        """A reduction over one `red` tile that reduces only the tile's elements inside `red`:
        past the end, an `add` adds 0 and a `max` or `min` sees the tile's first element again
        (always inside, and a repeat changes neither). A matmul is left as it is: its tiles are
        padded with 0, so its products past the end are 0."""
        if isinstance(partial, MatmulOp):
            return partial
        form = generic_form(partial)
        block = IntExpr.sym(RED[0])
        dim = next(d for d in form.reduced if d.upper == block and d.lower == IntExpr.const(0))
        position = IntExpr.sym(iv) * block + IntExpr.sym(dim.name) if iv != "0" else \
            IntExpr.sym(dim.name)
        inside = call("lt", Index(position), Index(IntExpr.sym(self.tiling.red or "")))
        past = (Const(0.0) if form.reduction == "add"
                else substitute(form.body, {dim.name: IntExpr.const(0)}))
        result = partial.results[0].type
        assert isinstance(result, TensorType)
        operands = list(partial.operands)
        partial.drop_all_references()  # replaced, never inserted
        return GenericOp.make(operands, form=str(replace(
            form, body=call("select", inside, form.body, past), finalize=None)),
            dtype=result.dtype)

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
        return StoreOp(value, k, [offsets.get(d.as_symbol or "", "0") for d in result.shape])

    def load(self, arg: SSAValue, t: TensorType,
             offsets: dict[str, str] | None = None) -> Operation:
        """The tile of input `arg` a program (or an iteration) reads."""
        dims = self.tile_dims(t, "an input")
        at = self.offsets if offsets is None else offsets
        return LoadOp.make([arg], offsets=[at.get(d.as_symbol or "", "0") for d in t.shape],
                           shape=dims, pad=0.0, space=self.space)
