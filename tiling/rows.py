"""Row tiling: a row-local function as one kernel over blocks of `BM` rows.

A function is row-local when its results' first dim is one size `R` (the rows) and each row of
a result depends only on the same row of the inputs that have `R` as their first dim (softmax,
rmsnorm, layernorm, elementwise ops). Its row kernel runs one program per block of `BM` rows:
it loads the block of each row-indexed input (`[BM, ...]` at `[i*BM, 0, ...]`), loads every
other input whole, runs the function's own ops on the tiles (each op rebuilt by its class's
`make`, so its meaning and result type come from the tile types), and stores each result's
block. This is the one-pass variant of a row-wise normalization: the whole row is on chip.

Whether the function really is row-local is not decided here: the kernel is proposed, and the
verifier proves it equal to the function for every size and every `BM` its profile admits, or
it is rejected with the verifier's reason. What is decided here is only whether a kernel can be
written at all (`NotTileable` says why not).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.interface import form_op, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import KernelOp, LoadOp, StoreOp, YieldOp

#: the names the row kernel introduces (checked against the function's own sizes)
BLOCK = "BM"
PROGRAM = "i"


class NotTileable(ValueError):
    """The function cannot be written as a row kernel; the message says why."""


def row_kernel(func: FuncOp, constraints: Sequence[str], space: str) -> FuncOp:
    """`func` as one row kernel (see the module docstring), a new function named
    `<name>_rows` with the same signature; `constraints` join the kernel's assumptions (the
    profile's limits on `BM` and on a row's bytes) and its tiles live in memory space
    `space`."""
    name = func.sym_name.data
    params: list[TensorType] = list(func.function_type.inputs.data)  # type: ignore[arg-type]
    ret = func.body.block.last_op
    if not isinstance(ret, ReturnOp) or not all(isinstance(t, TensorType) for t in params):
        raise NotTileable(f"@{name} is not a function of !ax.tensor values ending in return")
    results: list[TensorType] = [v.type for v in ret.arguments]  # type: ignore[misc]
    rows = row_size(func)
    taken = {s for t in [*params, *results] for d in t.shape for s in d.symbols()}
    if {BLOCK, PROGRAM} & taken:
        raise NotTileable(f"@{name} already uses the name {BLOCK} or {PROGRAM}")
    block_of = {rows: IntExpr.sym(BLOCK)}

    out = FuncOp(f"{name}_rows", (params, results))
    body = Block(arg_types=params)
    values: dict[SSAValue, SSAValue] = {}
    for src, (arg, t) in zip(func.body.block.args, zip(body.args, params, strict=True),
                             strict=True):
        values[src] = _load(body, arg, t, rows, space)
    for op in func.body.block.ops:
        if op is ret:
            break
        if not has_form(op) or op.regions or len(op.results) != 1:
            raise NotTileable(f"@{name}: '{op.name}' is not a form op with one result")
        attrs = {k: _on_block(v, block_of) for k, v in form_op(op).attrs().items()}
        try:
            new = form_op(op).make([values[v] for v in op.operands], **attrs)
        except (ShapeError, ValueError) as err:
            raise NotTileable(f"@{name}: '{op.name}' does not take row blocks: {err}") from None
        result_type = new.results[0].type
        assert isinstance(result_type, TensorType)
        if any(rows in d.symbols() for d in result_type.shape):
            raise NotTileable(f"@{name}: '{op.name}' gives {result_type}, which still spans "
                              f"all {rows} rows")
        body.add_op(new)
        values[op.results[0]] = new.results[0]
    for k, v in enumerate(ret.arguments):
        tile = values[v].type
        assert isinstance(tile, TensorType)
        if tile.rank != results[k].rank or tile.shape[0] != IntExpr.sym(BLOCK):
            raise NotTileable(f"@{name}: result #{k} is computed as {tile}, not a block of "
                              f"{BLOCK} rows")
        body.add_op(StoreOp(values[v], k, [f"{PROGRAM}*{BLOCK}", *["0"] * (tile.rank - 1)]))
    body.add_op(YieldOp())
    kernel = KernelOp(list(out.body.block.args), results, [PROGRAM], [f"ceildiv({rows}, {BLOCK})"],
                      [BLOCK], Region(body), assume=[f"{BLOCK} >= 1", *constraints])
    out.body.block.add_ops([kernel, ReturnOp(*kernel.results)])
    return out


def row_size(func: FuncOp) -> str:
    """The size the function's results share as their first dim (the rows)."""
    results = list(func.function_type.outputs.data)
    first = [t.shape[0].as_symbol if isinstance(t, TensorType) and t.rank else None
             for t in results]
    if not results or first[0] is None or any(f != first[0] for f in first):
        raise NotTileable(f"@{func.sym_name.data}: the results do not share a first dim that "
                          "is a size (the rows)")
    return first[0]


def row_inputs(func: FuncOp, rows: str) -> list[TensorType]:
    """The inputs indexed by rows (their first dim is `rows`): loaded a block at a time."""
    return [t for t in func.function_type.inputs.data
            if isinstance(t, TensorType) and t.rank and t.shape[0] == IntExpr.sym(rows)]


def _load(body: Block, arg: SSAValue, t: TensorType, rows: str, space: str) -> SSAValue:
    """A block of rows of a row-indexed input, or the whole of any other input."""
    if t.rank and t.shape[0] == IntExpr.sym(rows):
        offsets = [f"{PROGRAM}*{BLOCK}", *["0"] * (t.rank - 1)]
        shape = [IntExpr.sym(BLOCK), *t.shape[1:]]
    elif any(rows in d.symbols() for d in t.shape):
        raise NotTileable(f"an input of type {t} spans the rows other than in its first dim")
    else:
        offsets, shape = ["0"] * t.rank, list(t.shape)
    load = LoadOp.make([arg], offsets=offsets, shape=shape, pad=0.0, space=space)
    body.add_op(load)
    return load.results[0]


def _on_block(value: object, block_of: dict[str, IntExpr]) -> object:
    """An op's attribute with the row size replaced by the block size where it is a dim list
    (an `ax.broadcast_to` shape, an `ax.constant` shape)."""
    if isinstance(value, tuple) and value and all(isinstance(v, IntExpr) for v in value):
        return tuple(v.substitute(block_of) for v in value)  # type: ignore[union-attr]
    return value
