"""Lowering a `tile` kernel to `nki` instructions, proved by the verifier.

The lowered function keeps the tiled kernel's structure (the `tile.kernel` grid, its
`tile.for` loops, its `tile.load` and `tile.store`, which the emitter prints as `nisa.dma_copy`
of the tile's region) and replaces every tile-level compute op by NeuronCore instructions:

    %7 = ax.mul %5, %6 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> ...
 -> %7 = nki.tensor_tensor %5, %6 {op = "multiply", buffer = "sbuf", dtype = f32}

- elementwise ops of two tiles -> `tensor_tensor`; of a tile and a per-row `[P, 1]` column
  or a constant -> `tensor_scalar` (`reverse0` when the tile is the right operand); unary
  functions -> `activation`, `ax.neg` -> `tensor_scalar` multiply by -1; a float cast that
  widens -> its operand's tile, one that narrows -> `tensor_copy` into its dtype (`cast`);
- a rank-0 value of sizes and constants (attention's `sqrt(cast(idx(D)))`) -> nothing until
  an elementwise op reads it with a tile; there a `[P, 1]` fp32 column made at the start of the
  body (`size_column`: the size as a count, then its functions), read by `tensor_scalar`;
- a tile times a row `[F]` (rmsnorm's weight) -> the row broadcast over the partitions by
  `nc_matmul` of a ones column `[1, P]` with it, then `tensor_tensor`;
- row reductions (sum, max, min over the last dim, kept) -> `tensor_reduce`; a mean is the sum
  divided by the count, a `tensor_reduce` of a ones tile (so no size is a constant);
- `ax.matmul` of `[P, K]` by `[K, N]` -> `nc_transpose` of the left tile (the stationary
  operand is `[K, P]`), its copy out of PSUM into SBUF, `nc_matmul` into PSUM; a loop's
  `acc + a @ b` is `tensor_tensor` add of the PSUM accumulator (`tile.full` in PSUM, fp32) and
  the product, which the emitter prints as `nc_matmul` accumulating into `acc`;
- `ax.matmul` of `[P, K]` by a vector `[K]` (one value per row, a `[P, 1]` column) ->
  `nc_transpose` of the tile (the stationary `[K, P]`) and `nc_matmul` by the vector as the
  moving column `[K, 1]` (a row reduction of another tile is one already; a loaded row is
  read into one by its DMA, one element a partition), accumulated in PSUM over a K loop like
  any matmul.

Every instruction computes in fp32 (its dst is fp32) except the copy into the result's dtype
before a store (a DMA does not convert, nor read PSUM). The lowering is only kept when the
verifier proves the lowered function equal to the tiled one (`lower_and_prove`); what does
not lower or is not proved is refused with the reason (`Refused`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects import nki
from axon.dialects.ax import (
    AbsOp,
    AddOp,
    BroadcastToOp,
    CastOp,
    ConcatOp,
    ConstantOp,
    CumsumOp,
    DivOp,
    ErfOp,
    ExpOp,
    GeluOp,
    GenericOp,
    LogOp,
    MatmulOp,
    MaxOp,
    MeanOp,
    MinOp,
    MulOp,
    NegOp,
    ReciprocalOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReluOp,
    ReshapeOp,
    RsqrtOp,
    SigmoidOp,
    SiluOp,
    SliceOp,
    SqrtOp,
    SquareOp,
    SubOp,
    SumOp,
    TanhOp,
    TensorType,
    TransposeOp,
)
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Const, Index, Read, ScalarExpr
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.dialects.tile.kernel import sole_kernel
from axon.dialects.tile.rebuild import KernelRebuild
from axon.targets.nki.squeeze import squeezed, unit_lead
from axon.targets.nki.synthesized import Choice
from axon.tiling.lane_cut import cut_picked_lanes
from axon.verifier import Proved, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET, ProofBudget
from axon.verifier.cache import process_cache

#: the dtype every instruction computes and writes in (a DMA or a copy before a store converts)
COMPUTE_DTYPE = "f32"

#: tile-level binary ops -> the ALU op of `tensor_tensor` / `tensor_scalar`
_ALU: dict[type[Operation], str] = {AddOp: "add", SubOp: "subtract", MulOp: "multiply",
                                    DivOp: "divide", MaxOp: "maximum", MinOp: "minimum"}
#: tile-level unary ops -> the `activation` function
_ACTIVATION: dict[type[Operation], str] = {
    ExpOp: "exp", LogOp: "log", SqrtOp: "sqrt", RsqrtOp: "rsqrt", ReciprocalOp: "reciprocal",
    TanhOp: "tanh", SigmoidOp: "sigmoid", SiluOp: "silu", GeluOp: "gelu", ErfOp: "erf",
    ReluOp: "relu", SquareOp: "square", AbsOp: "abs"}
#: tile-level row reductions -> the `tensor_reduce` op
_REDUCE: dict[type[Operation], str] = {SumOp: "add", MeanOp: "add", ReduceMaxOp: "maximum",
                                       ReduceMinOp: "minimum"}


class Refused(ValueError):
    """A kernel the NKI lowering refuses: "not lowered to nki: <why>"."""

    def __init__(self, why: str) -> None:
        super().__init__(f"not lowered to nki: {why}")


class NotTaken(Refused):
    """A synthesized lowering was chosen for a kind of tile op the kernel has none of (at the
    lowering's dtypes): the kernel lowered with it would be the kernel lowered without."""


def kernel_of(func: FuncOp) -> KernelOp:
    """The one `tile.kernel` of a tiled function; Refused otherwise."""
    found = sole_kernel(func)
    if isinstance(found, str):
        raise Refused(found)
    return found


def lower_function(func: FuncOp, choices: Mapping[str, Choice] | None = None) -> FuncOp:
    """`func` (one `tile.kernel` and its return) with its compute lowered to `nki`: a new
    function of the same name, signature and `axon.*` attributes. `choices`: a synthesized
    lowering to print for a tile-op kind in place of the lowering's own (`synthesized.py`);
    Refused where the kernel has no op of a chosen kind that takes it. Not yet proved: see
    `lower_and_prove`."""
    kernel = kernel_of(func)
    # the tiled kernel as NKI holds it: loads cut to the lane their uses pick, then
    # [1, 1, BM, D] tiles as [BM, D]; the proof below is against `func` as it was
    cut = kernel.clone()
    held = (squeezed(cut) or cut) if cut_picked_lanes(cut) else (squeezed(kernel) or kernel)
    out = FuncOp(func.sym_name.data, func.function_type)
    block = out.body.block
    args: dict[SSAValue, SSAValue] = dict(zip(func.body.block.args, block.args, strict=True))
    lowering = _Lowering(held, choices=dict(choices or {}))
    try:
        lowered = lowering.run([args[v] for v in kernel.inputs])
    except ShapeError as err:  # an instruction the lowering made does not take its operands
        raise Refused(f"@{func.sym_name.data}: an instruction breaks an NKI rule: {err}") \
            from None
    finally:  # the rewritten kernels are not kept: drop their uses of the function's values
        for temporary in {cut, held} - {kernel}:
            temporary.drop_all_references()
    unused = [c.label for k, c in lowering.choices.items() if k not in lowering.used]
    if unused:
        lowered.drop_all_references()
        raise NotTaken(f"@{func.sym_name.data}: no op of the kernel takes "
                       f"{', '.join(unused)}")
    block.add_op(lowered)
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    values: dict[SSAValue, SSAValue] = {**args, **dict(zip(kernel.results, lowered.results,
                                                           strict=True))}
    block.add_op(ReturnOp(*[values[v] for v in ret.arguments]))
    for name, attr in func.attributes.items():
        if name.startswith("axon."):
            out.attributes[name] = attr
    try:
        out.verify()
    except VerifyException as err:
        raise Refused(f"@{func.sym_name.data}: the lowered kernel breaks an NKI rule: "
                      f"{err}") from None
    return out


@dataclass(frozen=True)
class LoweredKernel:
    """A lowered function and the proof that it computes its tiled function."""

    func: FuncOp
    proof_id: str
    seconds: float


def lower_and_prove(func: FuncOp, budget: ProofBudget | None = None,
                    choices: Mapping[str, Choice] | None = None) -> LoweredKernel:
    """Lower `func` (with `choices`, as `lower_function`) and prove the result equal to it for
    every size and tile size its kernel admits; Refused (with the verdict's reason) unless
    proved: Unknown is not a proof."""
    lowered = lower_function(func, choices)
    verdict = prove_equivalent(lowered, func, budget=DEFAULT_BUDGET if budget is None else budget,
                               cache=process_cache())
    if not isinstance(verdict, Proved):
        why = getattr(verdict, "reason", None) or getattr(verdict, "counterexample", None)
        raise Refused(f"@{func.sym_name.data}: the lowering is not proved equal to the tiled "
                      f"kernel ({verdict.verdict}: {why})")
    return LoweredKernel(lowered, verdict.proof_id, verdict.seconds)


def _type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


#: fp32 pieces a constant may be split into (three cover a float64's 53 bits)
_MAX_PIECES = 3


def _fp32_pieces(value: float) -> list[float]:
    """Values fp32 holds exactly whose exact sum is `value` (one when fp32 holds it);
    Refused when three do not suffice (a value past fp32's range)."""
    pieces: list[float] = []
    rest = Fraction(value)
    while rest != 0 or not pieces:
        with np.errstate(over="ignore"):
            piece = float(np.float32(float(rest)))
        if len(pieces) == _MAX_PIECES or not np.isfinite(piece) or (piece == 0 and rest != 0):
            raise Refused(f"the constant {value!r} is not a sum of {_MAX_PIECES} fp32 values")
        pieces.append(piece)
        rest -= Fraction(piece)
    return pieces


def _buffer(value: SSAValue) -> str | None:
    """Where a lowered value lives: a load's or a fill's space, an instruction's buffer, a
    loop's carried value where its start lives."""
    while True:
        owner = value.owner
        if isinstance(owner, (LoadOp, FullOp)):
            return owner.space.data
        if isinstance(value, OpResult) and isinstance(owner, ForOp):
            value = owner.inits[value.index]
        elif isinstance(value, BlockArgument) and isinstance(value.block.parent_op(), ForOp):
            loop = value.block.parent_op()
            assert isinstance(loop, ForOp)
            value = loop.inits[value.index]
        else:
            return nki.buffer_of(value)


def _is_row(t: TensorType) -> bool:
    """A `[P, 1]` column: one value per partition."""
    return t.rank == 2 and t.shape[1] == IntExpr.const(1)


def _reads(expr: ScalarExpr) -> bool:
    """`expr` reads an operand (one walk of its tree on an explicit stack: a fused form of a
    long elementwise chain is as deep as the chain)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Read):
            return True
        stack.extend(e.children())
    return False


#: tile ops whose result is zero wherever their operand is (f(0) = 0)
_KEEP_ZERO_UNARY: tuple[type[Operation], ...] = (NegOp, SquareOp, AbsOp, ReluOp, TanhOp, SiluOp,
                                                 SqrtOp, GeluOp, ErfOp)


def _column_bound(condition: ScalarExpr, row: str, column: str
                  ) -> tuple[IntExpr, int, bool] | str:
    """A mask on the column index, `idx(a) < idx(b)` (or `<=`, `>`, `>=`) linear in `column`
    with no `row`, as `affine_select`'s `(size_offset, step, strict)`: the bound holds exactly
    where `size_offset + step * column` is > 0 (strict) or >= 0."""
    flips = {"gt": "lt", "ge": "le"}
    if not (isinstance(condition, Call) and condition.fn in ("lt", "le", "gt", "ge")
            and all(isinstance(a, Index) for a in condition.args)):
        return (f"a mask `{condition}` other than one bound on the column index has no NKI "
                "lowering")
    a, b = (arg.expr for arg in condition.args if isinstance(arg, Index))
    fn = condition.fn
    if fn in flips:
        a, b, fn = b, a, flips[fn]
    difference = b - a  # a < b: b - a > 0; a <= b: b - a >= 0
    offset = difference.substitute({column: 0})
    step = difference.substitute({column: 1}) - offset
    if not (step.is_const and step.value != 0 and difference == offset + IntExpr.sym(column)
            * step.value and row not in offset.symbols()):
        return (f"a mask `{condition}` that is not linear in the column index alone has no "
                "NKI lowering")
    return offset, step.value, fn == "lt"


def _zero_past_bounds(value: SSAValue) -> bool:
    """`value` (a tile of the tiled kernel) is zero wherever its block passes the tensor's
    end: a load padded with 0, or ops of such tiles that keep zeros (a product with any
    operand, a quotient of one, a function with f(0) = 0 of one, a sum or difference of two).
    A syntactic sufficient condition; the proof of the lowering is what decides. Each value's
    verdict after those it needs (`_zero_rule`), on an explicit stack: no recursion on the
    kernel's size."""
    known: dict[SSAValue, bool] = {}
    stack = [value]
    while stack:
        top = stack[-1]
        if top in known:
            stack.pop()
            continue
        needed, rule = _zero_rule(top)
        pending = [v for v in needed if v not in known]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        known[top] = rule(known)
    return known[value]


def _zero_rule(value: SSAValue) -> tuple[list[SSAValue], Callable[[dict[SSAValue, bool]], bool]]:
    """The values `_zero_past_bounds` needs for `value` and its rule given their verdicts."""
    owner = value.owner
    shape = _type(value).shape
    if isinstance(owner, LoadOp):
        pad_zero = owner.pad.value.data == 0.0
        return [], lambda k: pad_zero
    if isinstance(owner, MulOp):
        same = [v for v in owner.operands if _type(v).shape == shape]
        return same, lambda k: any(k[v] for v in same)
    if isinstance(owner, DivOp):
        first = owner.operands[0]
        if _type(first).shape != shape:
            return [], lambda k: False
        return [first], lambda k: k[first]
    if isinstance(owner, _KEEP_ZERO_UNARY):
        operand = owner.operands[0]
        return [operand], lambda k: k[operand]
    if isinstance(owner, (AddOp, SubOp)):
        terms = list(owner.operands)
        if any(_type(v).shape != shape for v in terms):
            return [], lambda k: False
        return terms, lambda k: all(k[v] for v in terms)
    if isinstance(owner, ReshapeOp) and unit_lead(_type(owner.operands[0]), _type(value)):
        block = owner.operands[0]  # a batched block without its unit dims (`squeeze.py`)
        return [block], lambda k: k[block]
    if isinstance(owner, MatmulOp):  # a column of a @ b is zero where b's column is
        right = owner.operands[1]
        return [right], lambda k: k[right]
    if isinstance(owner, ForOp) and isinstance(value, OpResult):  # 0 + sum of such terms
        init = owner.inits[value.index].owner
        end = owner.body.block.last_op
        assert isinstance(end, YieldOp)
        step = end.values[value.index].owner
        arg = owner.body.block.args[value.index]
        if not (isinstance(init, FullOp) and init.value.value.data == 0.0
                and isinstance(step, AddOp) and arg in step.operands):
            return [], lambda k: False
        terms = [v for v in step.operands if v is not arg]
        return terms, lambda k: all(k[v] for v in terms)
    return [], lambda k: False


def _row_factors(loop: ForOp) -> dict[int, tuple[SSAValue, SSAValue, SSAValue, str]]:
    """The carried values of a sequential `loop` that accumulate `acc + a @ w` from a PSUM
    zero, `a` a product `x * c` or a quotient `x / c` (then possibly times rows `[K]`) read
    only on the way to that matmul, `c` a `[P, 1]` column defined before the loop: by carried
    index, the product (quotient), the tile `x`, the column `c` and the ALU op. Since `c`
    scales whole rows of `a`, it scales the rows of every `a @ w` and of their sum: the
    lowering applies it once, to the sum (the hand-written rmsnorm_matmul's
    `diag(factor) ((x * g) @ w)`)."""
    found: dict[int, tuple[SSAValue, SSAValue, SSAValue, str]] = {}
    if loop.loop_kind != "sequential":
        return found
    end = loop.body.block.last_op
    assert isinstance(end, YieldOp)
    for index, (arg, value) in enumerate(zip(loop.body.block.args, end.values, strict=True)):
        init = loop.inits[index].owner
        step = value.owner
        if not (isinstance(init, FullOp) and init.space.data == "psum"
                and init.value.value.data == 0.0 and isinstance(step, AddOp)
                and arg.has_one_use() and value.has_one_use() and arg in step.operands):
            continue
        product = step.operands[1] if step.operands[0] is arg else step.operands[0]
        matmul = product.owner
        if not (isinstance(matmul, MatmulOp) and product.has_one_use()):
            continue
        left = matmul.operands[0]
        while isinstance(left.owner, (MulOp, DivOp)) and left.has_one_use():
            shape = _type(left).shape
            a, b = left.owner.operands
            pairs = ((a, b), (b, a)) if isinstance(left.owner, MulOp) else ((a, b),)
            columns = [(t, c) for t, c in ((t, _broadcast_column(c)) for t, c in pairs)
                       if _type(t).shape == shape
                       and _is_row(_type(c)) and _type(c).shape[0] == shape[0]
                       and not _inside(loop, c)]
            if columns:
                alu = "multiply" if isinstance(left.owner, MulOp) else "divide"
                found[index] = (left, *columns[0], alu)
                break
            if isinstance(left.owner, DivOp):
                break
            rows = [t for t, r in ((a, b), (b, a)) if _type(t).shape == shape
                    and _type(r).rank == 1]
            if not rows:
                break
            left = rows[0]
    return found


def _broadcast_column(value: SSAValue) -> SSAValue:
    """The `[P, 1]` column `value` broadcasts along the free dim (`broadcast_to(c, [P, F])`),
    else `value` itself."""
    owner = value.owner
    if isinstance(owner, BroadcastToOp):
        (column,) = owner.operands
        t, tc = _type(value), _type(column)
        if t.rank == 2 and tc.shape == (t.shape[0], IntExpr.const(1)):
            return column
    return value


def _inside(loop: ForOp, value: SSAValue) -> bool:
    """`value` is defined in `loop`'s body (at any depth)."""
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is not None and loop.is_ancestor(op)


def _row_reduction(op: Operation) -> bool:
    """`op` reduces each row of a `[P, F]` tile to one value, dropping the reduced dim (a
    rank-1 `[P]` result: `sum(x, axis=-1)`, or its blocked `ax.generic` form)."""
    if len(op.results) != 1 or _type(op.results[0]).rank != 1 or len(op.operands) != 1:
        return False
    x = _type(op.operands[0])
    if x.rank != 2 or x.shape[0] != _type(op.results[0]).shape[0]:
        return False
    if type(op) in _REDUCE:
        return [int(a) for a in op.attrs().get("axes", ())] == [1]  # type: ignore[attr-defined]
    return isinstance(op, GenericOp)


def _matvec(op: Operation) -> bool:
    """`op` is `ax.matmul` of a `[P, K]` tile by a vector `[K]`: one value per row of the
    tile, a rank-1 `[P]` result (gemm_sum_scale's `x @ sum(w, axis=1)`)."""
    if not isinstance(op, MatmulOp):
        return False
    a, v = (_type(x) for x in op.operands)
    result = _type(op.results[0])
    return a.rank == 2 and v.rank == 1 and result.rank == 1 and result.shape[0] == a.shape[0]


def _float_cast(op: Operation) -> bool:
    """`op` is `ax.cast` of a float to a float (`astype(x, f32)`); a cast from or to an integer
    has no NKI lowering."""
    if not isinstance(op, CastOp):
        return False
    source, result = _type(op.operands[0]).dtype, _type(op.results[0]).dtype
    return DTYPES[source].is_float and DTYPES[result].is_float


def _widening(op: Operation) -> bool:
    """`op` is a float cast to a dtype that holds every value of its operand's (bf16 or f16
    to f32, or to its own dtype): no rounding, so the lowering reads the operand's tile."""
    if not _float_cast(op):
        return False
    source, result = _type(op.operands[0]).dtype, _type(op.results[0]).dtype
    return source == result or result == "f32"


def _loaded_scalar(value: SSAValue) -> SSAValue | None:
    """The loaded rank-0 tile `value` is, through widening casts (`astype(s, f32)` reads `s`);
    None where it is not one."""
    while isinstance(value.owner, Operation) and _widening(value.owner):
        value = value.owner.operands[0]
    return value if _type(value).rank == 0 and isinstance(value.owner, LoadOp) else None


def _read_per_row(op: Operation, operand: int) -> bool:
    """`op` is a generic form of a rank-2 result reading its rank-1 operand `operand` only
    at the result's first (partition) dim: one value per row of the result (qknorm_gqa's
    `kn[d3, d2] * g[d2]`)."""
    if not isinstance(op, GenericOp):
        return False
    form = op.generic_form()
    if len(form.parallel) != 2:
        return False
    first = (IntExpr.sym(form.parallel[0].name),)
    mine = [r for r in form.reads() if r.operand == operand]
    return bool(mine) and all(tuple(r.index) == first for r in mine)


def _per_row_values(kernel: KernelOp) -> set[SSAValue]:
    """The rank-1 tiles of `kernel` that hold one value per row of its `[P, F]` tiles (a row
    reduction without keepdims, elementwise ops of such values, constants and scalars, a
    loop's values carrying them, a rank-1 load combined with them): the lowering holds each
    as a `[P, 1]` column, partition dim first, as NKI tiles are. A rank-1 tile read by an op
    with a rank-2 result (a weight row `[F]`) is not one."""
    ops = [op for op in kernel.walk() if op is not kernel]
    found: set[SSAValue] = set()

    def elementwise(op: Operation) -> bool:
        return (type(op) in _ALU or type(op) in _ACTIVATION or isinstance(op, NegOp)
                or _float_cast(op)) \
            and len(op.results) == 1 and _type(op.results[0]).rank == 1 \
            and not any(_type(u.operation.results[0]).rank == 2
                        and not _read_per_row(u.operation, u.index)
                        for u in op.results[0].uses if u.operation.results)

    changed = True
    while changed:
        before = len(found)
        for op in ops:
            if _row_reduction(op) or _matvec(op) or elementwise(op):
                found.add(op.results[0])
            if elementwise(op):
                found.update(v for v in op.operands if _type(v).rank == 1)
            if isinstance(op, ForOp):
                end = op.body.block.last_op
                assert isinstance(end, YieldOp)
                for values in zip(op.inits, op.body.block.args, op.results, end.values,
                                  strict=True):
                    if any(v in found for v in values):
                        found.update(values)
        changed = len(found) != before
    return found


@dataclass(eq=False)
class _Scalar:
    """A rank-0 value of the tiled kernel computed from sizes and constants (attention's
    `1 / sqrt(D)`: `cast(idx(D), bf16)`, then `sqrt`), kept unlowered until a tile reads it;
    there it is made as a `[P, 1]` fp32 column (`_Lowering.size_column`). `kind`: `size` (the
    value of `size`), `const` (`value`), `func` (the activation function `name` of `args[0]`)
    or `alu` (`args[0] name args[1]`, an ALU op of `tensor_scalar`). Compared by identity: a
    node is made once per value of the kernel, its column once per partition count."""

    kind: str
    name: str = ""
    size: IntExpr | None = None
    value: float = 0.0
    args: tuple[_Scalar, ...] = ()


#: the scalar language's binary functions -> the ALU op (`tensor_scalar`, `tensor_tensor`)
_FORM_ALU = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
             "max": "maximum", "min": "minimum"}


def _scalar_of_form(body: ScalarExpr) -> _Scalar | str:
    """The chain of a rank-0 form's body of sizes and constants (`cast(idx(D), bf16)`), or why
    it is not one. Post-order on an explicit stack (each subexpression once)."""
    made: dict[int, _Scalar] = {}
    stack = [body]
    while stack:
        expr = stack[-1]
        if id(expr) in made:
            stack.pop()
            continue
        pending = [k for k in expr.children() if id(k) not in made]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        args = tuple(made[id(k)] for k in expr.children())
        if isinstance(expr, Index):
            node = _Scalar("size", size=expr.expr)
        elif isinstance(expr, Const) and not isinstance(expr.value, bool):
            node = _Scalar("const", value=float(expr.value))
        elif isinstance(expr, Call) and expr.fn == "cast" and expr.param in ("bf16", "f16",
                                                                             "f32"):
            node = args[0]  # the program rounds here; the column holds the exact value
        elif isinstance(expr, Call) and expr.fn in _FORM_ALU:
            node = _Scalar("alu", _FORM_ALU[expr.fn], args=args)
        elif isinstance(expr, Call) and expr.fn == "neg":
            node = _Scalar("alu", "multiply", args=(args[0], _Scalar("const", value=-1.0)))
        elif isinstance(expr, Call) and expr.fn in nki.ACTIVATIONS and expr.fn != "copy":
            node = _Scalar("func", expr.fn, args=args)
        else:
            return (f"`{expr}` is not a size, a constant, a float cast, an ALU op or an "
                    "activation function of those")
        made[id(expr)] = node
    return made[id(body)]


def _column_args(node: _Scalar) -> list[_Scalar]:
    """The chains whose columns `node`'s column is computed from: the operand of a function,
    the operands of an ALU op but a constant (an immediate; the first of two constants)."""
    if node.kind == "func":
        return [node.args[0]]
    if node.kind != "alu":
        return []
    a, b = node.args
    if b.kind == "const":
        return [a]
    return [b] if a.kind == "const" else [a, b]


@dataclass
class _Lowering(KernelRebuild):
    #: scalar constants (`ax.constant` of shape []) by their value
    constants: dict[SSAValue, float] = field(default_factory=dict)
    #: transposes whose every use is a matmul's left operand: lowered to their input tile
    pretransposed: set[SSAValue] = field(default_factory=set)
    #: products `tile * row` whose every use is a matmul's left operand: lowered to the tile,
    #: the row applied to the transposed tile as a column (`lower_matmul`)
    row_scaled: dict[SSAValue, SSAValue] = field(default_factory=dict)
    #: products `tile * column` feeding a loop's accumulated matmul, the column defined before
    #: the loop: lowered to the tile, the column applied to the loop's sum (`row_factor`)
    unscaled: dict[SSAValue, SSAValue] = field(default_factory=dict)
    #: `broadcast_to` of a `[P, 1]` column over the free dim whose every use is an
    #: elementwise op of two tiles: lowered to nothing, the op reads the column by
    #: `tensor_scalar` (`lower_binary`)
    broadcast_columns: dict[SSAValue, SSAValue] = field(default_factory=dict)
    #: rank-1 `[P]` tiles of per-row values, each lowered to a `[P, 1]` column
    #: (`_per_row_values`)
    per_row: set[SSAValue] = field(default_factory=set)
    #: a loaded scalar (rank 0) broadcast over P partitions, by the scalar and P
    scalar_columns: dict[tuple[SSAValue, IntExpr], SSAValue] = field(default_factory=dict)
    #: a tile of more than one free dim stretched over size-1 dims (`nki.access`), by the
    #: tile and the shape
    stretched: dict[tuple[SSAValue, tuple[IntExpr, ...]], SSAValue] = field(
        default_factory=dict)
    #: a squeezed tile given its leading unit dims back for its stores (`squeeze.py`): the
    #: rank-2 tile it reshapes
    unsqueezed: dict[SSAValue, SSAValue] = field(default_factory=dict)
    #: rank-0 values of sizes and constants, kept as chains until a tile reads them
    #: (`size_scalar`, `size_column`)
    scalars: dict[SSAValue, _Scalar] = field(default_factory=dict)
    #: a chain as a `[P, 1]` column, by the chain and P
    size_columns: dict[tuple[_Scalar, IntExpr], SSAValue] = field(default_factory=dict)
    #: the last op put at the start of the lowered kernel's body (`early`)
    early_last: Operation | None = None
    #: a synthesized lowering to print in place of the lowering's own sequence, by tile-op
    #: kind (`synthesized.py`: row_sum, cumsum, transpose), and the kinds it was printed for
    choices: Mapping[str, Choice] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def run(self, inputs: list[SSAValue]) -> KernelOp:
        self.per_row = _per_row_values(self.kernel)
        return self.rebuild(inputs)

    def rebuild_op(self, op: Operation, target: Block) -> list[tuple[Block, Block]]:
        return self.lower_op(op, target)

    def lower_op(self, op: Operation, target: Block) -> list[tuple[Block, Block]]:
        if isinstance(op, (ForOp, YieldOp, StoreOp)) and any(v in self.scalars
                                                              for v in op.operands):
            raise Refused(f"'{op.name}' of a rank-0 value of sizes (such a value lowers where "
                          "an elementwise op reads it with a [P, F] tile or a [P, 1] column)")
        if isinstance(op, ForOp):
            if op.invariant is not None or op.loop_kind not in ("sequential", "parallel"):
                raise Refused(f"a {op.loop_kind} tile.for over '{op.iv.data}'"
                              f"{' stating an invariant' if op.invariant is not None else ''}"
                              " (sequential accumulations and parallel loops only)")
            loop, bodies = self.loop(op, target)
            for index, (product, tile, column, alu) in _row_factors(op).items():
                # sum_k (x * c) @ w = c * sum_k x @ w: c once, on the sum's way out of PSUM
                self.unscaled[product] = tile
                self.values[op.results[index]] = self.add(target, nki.TensorScalarOp.make(
                    [loop.results[index], self.column(column, target)], op0=alu,
                    buffer="sbuf", dtype=COMPUTE_DTYPE))
            return bodies
        if isinstance(op, YieldOp):
            target.add_op(YieldOp(*[self.values[v] for v in op.values]))
        elif isinstance(op, LoadOp):
            new = op.clone()
            new.operands = [self.values[op.source]]  # type: ignore[assignment]
            self.values[op.result] = self.add(target, new)
            if op.result in self.per_row:  # one value per partition: [P] -> [P, 1] by the DMA
                self.values[op.result] = self.add(target, nki.DmaCopyOp.make(
                    [new.results[0]], buffer="sbuf",
                    shape=[_type(op.result).shape[0], IntExpr.const(1)]))
        elif isinstance(op, FullOp) and op.result in self.per_row:
            t = _type(op.result)
            self.values[op.result] = self.add(target, FullOp.make(
                [], value=op.value.value.data, shape=[t.shape[0], IntExpr.const(1)],
                dtype=COMPUTE_DTYPE, space=op.space.data))
        elif isinstance(op, FullOp):
            t = _type(op.result)
            # a loop's accumulator is written by fp32 instructions: it starts in fp32 too
            carried = t.rank == 2 and any(isinstance(u.operation, ForOp)
                                          for u in op.result.uses)
            dtype = COMPUTE_DTYPE if op.space.data == "psum" or carried else t.dtype
            self.values[op.result] = self.add(target, FullOp.make(
                [], value=op.value.value.data, shape=list(t.shape), dtype=dtype,
                space=op.space.data))
        elif isinstance(op, StoreOp):
            out = self.kernel.output_types()[op.result.value.data]
            stored = self.unsqueezed.get(op.value, op.value)
            value = self.values[stored]
            if stored.has_one_use() and _type(value).dtype != out.dtype:
                value = self.rounded_in_place(value, out.dtype)
                self.round_factors(stored, value)
            if stored.has_one_use() and _type(value).dtype != out.dtype:
                value = self.rounded_through_accesses(value, out.dtype) or value
            if _type(value).dtype != out.dtype or _buffer(value) != "sbuf":
                value = self.add(target, nki.TensorCopyOp.make(
                    [value], buffer="sbuf", dtype=out.dtype))
            if op.value in self.per_row or stored is not op.value:
                # the column [P, 1] as the rank-1 block [P]; a squeezed tile as its block
                value = self.add(target, nki.DmaCopyOp.make(
                    [value], buffer="hbm", shape=list(_type(op.value).shape)))
            target.add_op(StoreOp(value, op.result.value.data, op.offset_exprs()))
        elif isinstance(op, ConstantOp) and _type(op.results[0]).rank == 0:
            self.constants[op.results[0]] = op.value.value.data
        elif len(op.results) == 1 and _type(op.results[0]).rank == 0 \
                and op.operands and op.operands[0] in self.values and _widening(op):
            # a loaded scalar widened (`astype(s, f32)`): the scalar itself, as `cast` does
            self.values[op.results[0]] = self.values[op.operands[0]]
        elif len(op.results) == 1 and _type(op.results[0]).rank == 0:
            self.scalars[op.results[0]] = self.size_scalar(op)
        else:
            self.values[op.results[0]] = self.lower_compute(op, target)
        return []

    def rounded_in_place(self, value: SSAValue, dtype: str) -> SSAValue:
        """`value`, made only to be stored, written in `dtype` by its own instruction (one
        rounding, no copy) where that instruction writes SBUF and has a `dtype`."""
        owner = value.owner
        if not (isinstance(owner, nki.NkiOp) and owner.buffer_name() == "sbuf"
                and "dtype" in type(owner).ATTRS and not value.uses):
            return value
        new = type(owner).make(list(owner.operands), **{**owner.attrs(), "dtype": dtype})
        block = owner.parent_block()
        assert block is not None
        block.insert_op_before(new, owner)
        block.erase_op(owner)
        return new.results[0]

    def rounded_through_accesses(self, value: SSAValue, dtype: str) -> SSAValue | None:
        """`value`, a reshape or concatenation access of instructions made only for it (rope's
        interleaved pairs), rebuilt with those instructions writing `dtype` (one rounding
        each, no copy of the whole); None where one of them cannot (`rounded_in_place`'s
        rule)."""

        def access(owner: object) -> bool:
            return isinstance(owner, nki.AccessOp) and owner.layout.data in ("reshape", "concat")

        def roundable(v: SSAValue) -> bool:
            owner = v.owner
            if not (isinstance(owner, nki.NkiOp) and (v.has_one_use() or not v.uses)):
                return False
            return not isinstance(owner, nki.AccessOp) and owner.buffer_name() == "sbuf" \
                and "dtype" in type(owner).ATTRS

        # the accesses and instructions under `value`, each before the accesses that read it
        # (a walk on an explicit stack, no recursion); None where one cannot round
        order: list[SSAValue] = []
        stack: list[tuple[SSAValue, bool]] = [(value, False)]
        while stack:
            v, expanded = stack.pop()
            owner = v.owner
            if expanded or not access(owner):
                if not expanded and not roundable(v):
                    return None
                order.append(v)
                continue
            if not (v.has_one_use() or not v.uses):
                return None
            stack.append((v, True))
            assert isinstance(owner, Operation)
            stack.extend((u, False) for u in reversed(owner.operands))
        made: dict[SSAValue, SSAValue] = {}
        old: list[Operation] = []
        for v in order:
            owner = v.owner
            assert isinstance(owner, nki.NkiOp)
            if access(owner):
                new = nki.AccessOp.make([made[u] for u in owner.operands], **owner.attrs())
            else:
                new = type(owner).make(list(owner.operands), **{**owner.attrs(), "dtype": dtype})
            block = owner.parent_block()
            assert block is not None
            block.insert_op_before(new, owner)
            old.append(owner)
            made[v] = new.results[0]
        for owner in reversed(old):  # the outermost first: each has no use left
            block = owner.parent_block()
            assert block is not None
            block.erase_op(owner)
        return made[value]

    def round_factors(self, tile_value: SSAValue, value: SSAValue) -> None:
        """The factors of `value`, a `tensor_tensor` product writing a 16-bit dtype, written in
        that dtype by their own instructions where the tile op each lowers gives that dtype and
        `value` is their only reader: the tiled kernel rounds there (every tile op's result is
        of its dtype), so the kernel rounds where the program does, and VectorE reads two
        16-bit tiles in one pass (reference/nki.md 6.1; 6.2's perf mode) where an fp32 operand
        takes two (rmsnorm's `x * rstd` before `* g`). Products only: a factor rounded adds its
        relative error to the product's, one rounding of the result's own size, where the
        terms of a sum rounded first may cancel (layernorm's `... * g + b`). Followed down a
        chain of products. The proof is about values, not their rounding: this is a choice of
        precision, the program's own, checked on the simulator against the reference."""
        work = [(tile_value, value)]  # a worklist down the chain, no recursion
        while work:
            tile_value, value = work.pop()
            work.extend(self.round_factors_of(tile_value, value))

    def round_factors_of(self, tile_value: SSAValue, value: SSAValue
                         ) -> list[tuple[SSAValue, SSAValue]]:
        """`round_factors`' step at one product: its factors rewritten, returned to follow."""
        owner = value.owner
        tile_op = tile_value.owner
        dtype = _type(value).dtype
        follow: list[tuple[SSAValue, SSAValue]] = []
        if not (isinstance(owner, nki.TensorTensorOp) and isinstance(tile_op, Operation)
                and owner.attrs().get("op") == "multiply" and dtype in ("bf16", "f16")
                and owner.buffer_name() == "sbuf"):
            return follow
        for tile_operand in tile_op.operands:
            lowered = self.values.get(tile_operand)
            if lowered is None or lowered not in owner.operands or not lowered.has_one_use():
                continue
            maker = lowered.owner
            if not (_type(tile_operand).dtype == dtype and _type(lowered).dtype == COMPUTE_DTYPE
                    and _type(lowered).shape == _type(value).shape
                    and isinstance(maker, nki.NkiOp) and maker.buffer_name() == "sbuf"
                    and "dtype" in type(maker).ATTRS):
                continue
            new = type(maker).make(list(maker.operands), **{**maker.attrs(), "dtype": dtype})
            block = maker.parent_block()
            assert block is not None
            block.insert_op_before(new, maker)
            maker.results[0].replace_all_uses_with(new.results[0])
            block.erase_op(maker)
            self.values[tile_operand] = new.results[0]
            follow.append((tile_operand, new.results[0]))
        return follow

    # ---- compute --------------------------------------------------------------------------------
    def lower_compute(self, op: Operation, target: Block) -> SSAValue:
        result = _type(op.results[0])
        if op.results[0] in self.per_row:
            return self.lower_per_row(op, target)
        if isinstance(op, ReshapeOp) and (moved := self.squeeze_dma(op, target)) is not None:
            return moved
        if isinstance(op, (SliceOp, ReshapeOp, ConcatOp)) or (
                isinstance(op, BroadcastToOp) and result.rank > 2):
            return self.lower_access(op, target)
        elementwise = type(op) in _ACTIVATION or type(op) in _ALU or isinstance(op, NegOp) \
            or _float_cast(op)
        if result.rank != 2 and not (elementwise and result.rank > 2):
            raise Refused(f"'{op.name}' gives a rank-{result.rank} tile {result} (NKI tiles "
                          "here are [partitions, free])")
        if type(op) in _ACTIVATION:
            return self.add(target, nki.ActivationOp.make(
                [self.tile(op.operands[0])], func=_ACTIVATION[type(op)],
                buffer="sbuf", dtype=COMPUTE_DTYPE))
        if isinstance(op, NegOp):
            return self.add(target, nki.TensorScalarOp.make(
                [self.tile(op.operands[0])], op0="multiply", scalar0=-1.0,
                buffer="sbuf", dtype=COMPUTE_DTYPE))
        if _float_cast(op):
            return self.cast(op, self.tile(op.operands[0]), target)
        if isinstance(op, CastOp):
            raise Refused(f"'ax.cast' from {_type(op.operands[0]).dtype} to {result.dtype} "
                          "has no NKI lowering (float to float casts only)")
        if type(op) in _ALU:
            return self.lower_binary(op, _ALU[type(op)], target)
        if type(op) in _REDUCE:
            return self.lower_reduce(op, _REDUCE[type(op)], target)
        if isinstance(op, MatmulOp):
            return self.lower_matmul(op, target)
        if isinstance(op, TransposeOp):
            return self.lower_transpose(op, target)
        if isinstance(op, CumsumOp):
            return self.lower_cumsum(op, target)
        if isinstance(op, GenericOp):
            return self.lower_generic(op, target)
        if isinstance(op, BroadcastToOp):
            return self.lower_broadcast(op, target)
        raise Refused(f"'{op.name}' has no NKI lowering yet")

    def cast(self, op: Operation, lowered: SSAValue, target: Block) -> SSAValue:
        """A float cast of the lowered `lowered`: the value itself where the cast widens (every
        instruction reads its operands' dtype and computes in fp32; a store copies into the
        result's dtype), else `tensor_copy` into the cast's dtype, which rounds as the cast
        does. Over the reals, where the verifier proves, both are the identity."""
        if _widening(op):
            return lowered
        return self.add(target, nki.TensorCopyOp.make(
            [lowered], buffer="sbuf", dtype=_type(op.results[0]).dtype))

    def squeeze_dma(self, op: ReshapeOp, target: Block) -> SSAValue | None:
        """The reshapes `squeeze.py` puts next to a batched kernel's loads and stores: a
        loaded `[1, 1, BM, D]` block as the tile `[BM, D]` is the load's DMA itself (a DMA
        needs only equal element counts; `emit.py` prints one `dma_copy`); a tile given its
        unit dims back only to be stored is stored by a DMA of that shape (`lower_op`).
        None for any other reshape."""
        (x,) = op.operands
        tx, tr = _type(x), _type(op.results[0])
        if isinstance(x.owner, LoadOp) and unit_lead(tx, tr) and tr.rank == 2:
            return self.add(target, nki.DmaCopyOp.make(
                [self.values[x]], buffer="sbuf", shape=list(tr.shape)))
        if tx.rank == 2 and unit_lead(tr, tx) and op.results[0].uses \
                and all(isinstance(u.operation, StoreOp) for u in op.results[0].uses):
            self.unsqueezed[op.results[0]] = x
            return self.values[x]
        return None

    def tile(self, value: SSAValue) -> SSAValue:
        """The lowered `[P, F]` tile of `value`."""
        if value in self.constants:
            raise Refused("a scalar constant used as a tile")
        if value in self.scalars:
            raise Refused("a rank-0 value of sizes used as a tile (it lowers where an "
                          "elementwise op reads it with a [P, F] tile or a [P, 1] column)")
        lowered = self.values[value]
        if _type(lowered).rank < 2:
            raise Refused(f"a rank-{_type(lowered).rank} tile {_type(lowered)} used as a "
                          "[partitions, free] tile")
        return lowered

    def column(self, value: SSAValue, target: Block) -> SSAValue:
        """A `[P, 1]` column as `tensor_scalar` reads it: fp32 in SBUF."""
        lowered = self.tile(value)
        if _type(lowered).dtype != COMPUTE_DTYPE or _buffer(lowered) != "sbuf":
            lowered = self.add(target, nki.TensorCopyOp.make([lowered], buffer="sbuf",
                                                             dtype=COMPUTE_DTYPE))
        return lowered

    def lower_binary(self, op: Operation, alu: str, target: Block) -> SSAValue:
        if op.results[0] in self.unscaled:  # its column scales the loop's sum instead
            return self.tile(self.unscaled[op.results[0]])
        a, b = op.operands
        result = _type(op.results[0])
        ta, tb = _type(a), _type(b)
        for tile, other, reverse in ((a, b, False), (b, a, True)):
            if other in self.constants and _type(tile).shape == result.shape:
                return self.by_constant(op.name, self.tile(tile), alu,
                                        self.constants[other], reverse, target)
        for tile, other, reverse in ((a, b, False), (b, a, True)):
            if other in self.scalars and _type(tile).rank == 2 \
                    and _type(tile).shape == result.shape:
                return self.by_size_scalar(self.tile(tile), self.scalars[other], alu, reverse,
                                           target)
        for tile, other, reverse in ((a, b, False), (b, a, True)):
            if other in self.broadcast_columns and tile not in self.broadcast_columns \
                    and _type(tile).shape == result.shape:
                # x alu broadcast_to(c): the column broadcast along the free dim
                return self.add(target, nki.TensorScalarOp.make(
                    [self.tile(tile), self.column(self.broadcast_columns[other], target)],
                    op0=alu, reverse0=reverse, buffer="sbuf", dtype=COMPUTE_DTYPE))
        if result.rank > 2 and ta.rank == tb.rank == result.rank \
                and (ta.shape != result.shape or tb.shape != result.shape):
            # numpy's broadcast between tiles: the smaller stretched by a stride-0 access
            x, y = (self.stretch(v, result, target) for v in (a, b))
            return self.add(target, nki.TensorTensorOp.make(
                [x, y], op=alu, buffer="sbuf", dtype=COMPUTE_DTYPE))
        if ta.shape == tb.shape == result.shape:
            x, y = self.tile(a), self.tile(b)
            # a PSUM accumulator plus a product in PSUM stays there (the emitter folds it into
            # the matmul); any other pair of PSUM tiles is read with one copied out first
            accumulating = isinstance(op, AddOp) and (self.is_accumulator(a)
                                                      or self.is_accumulator(b))
            both = _buffer(x) == _buffer(y) == "psum"
            if both and not accumulating:
                y = self.add(target, nki.TensorCopyOp.make([y], buffer="sbuf",
                                                           dtype=COMPUTE_DTYPE))
            return self.add(target, nki.TensorTensorOp.make(
                [x, y], op=alu, buffer="psum" if both and accumulating else "sbuf",
                dtype=COMPUTE_DTYPE))
        for tile, other, reverse in ((a, b, False), (b, a, True)):
            to = _type(other)
            if _type(tile).shape != result.shape:
                continue
            if _is_row(to) and to.shape[0] == result.shape[0]:
                return self.add(target, nki.TensorScalarOp.make(
                    [self.tile(tile), self.column(other, target)], op0=alu,
                    reverse0=reverse, buffer="sbuf", dtype=COMPUTE_DTYPE))
            if to.rank == 1 and to.shape[0] == result.shape[1]:
                product = op.results[0]
                if alu == "multiply" and product.uses and all(
                        isinstance(u.operation, MatmulOp) and u.index == 0
                        and u.operation.operands[1] is not product for u in product.uses):
                    # (x * g) @ w: g scales the contraction's rows of the transposed x
                    self.row_scaled[product] = other
                    return self.tile(tile)
                row = self.broadcast_row(other, result, target)
                operands = [row, self.tile(tile)] if reverse \
                    else [self.tile(tile), row]
                return self.add(target, nki.TensorTensorOp.make(
                    operands, op=alu, buffer="sbuf", dtype=COMPUTE_DTYPE))
        for tile, other, reverse in ((a, b, False), (b, a, True)):
            if _loaded_scalar(other) is not None \
                    and _type(tile).rank == 2 and _type(tile).shape == result.shape:
                # a scalar the kernel takes (a value of sizes the caller computed), on each
                # partition
                return self.add(target, nki.TensorScalarOp.make(
                    [self.tile(tile), self.scalar_column(other, result.shape[0], target)],
                    op0=alu, reverse0=reverse, buffer="sbuf", dtype=COMPUTE_DTYPE))
        raise Refused(f"'{op.name}' of {ta} and {tb} (tiles of one shape, a tile and a [P, 1] "
                      "column, a row [F], a constant or a loaded scalar)")

    def by_constant(self, name: str, tile: SSAValue, alu: str, value: float,
                    reverse: bool, target: Block) -> SSAValue:
        """`tile alu value` (`value alu tile` when `reverse`) by `tensor_scalar` immediates.
        An engine holds an immediate in fp32 (the instructions' forms say so), so a constant
        that fp32 does not hold exactly (rmsnorm's 1e-6) is added as the sum of its fp32
        pieces, two per instruction; a product or quotient by it is refused."""
        pieces = _fp32_pieces(value)
        if len(pieces) > 1 and alu not in ("add", "subtract"):
            raise Refused(f"'{name}' by the constant {value!r}, which fp32 does not hold "
                          "exactly (an engine's immediate is fp32; only a sum splits into "
                          "fp32 pieces)")
        # x - c is x - c0 - c1 - ...; c - x is (c0 - x) + c1 + ...
        rest = "add" if alu == "add" or reverse else "subtract"
        steps = [(alu, pieces[0], reverse), *((rest, p, False) for p in pieces[1:])]
        value_now = tile
        while steps:
            (op0, c0, rev0), *steps = steps
            attrs: dict[str, object] = {"op0": op0, "scalar0": c0, "reverse0": rev0}
            if steps:
                (op1, c1, _), *steps = steps
                attrs |= {"op1": op1, "scalar1": c1}
            value_now = self.add(target, nki.TensorScalarOp.make(
                [value_now], buffer="sbuf", dtype=COMPUTE_DTYPE, **attrs))
        return value_now

    def is_accumulator(self, value: SSAValue) -> bool:
        """`value` is a loop's carried value started by a PSUM `tile.full` (a matmul's
        accumulator)."""
        lowered = self.values[value]
        if not isinstance(lowered, BlockArgument):
            return False
        loop = lowered.block.parent_op()
        if not isinstance(loop, ForOp):
            return False
        init = loop.inits[lowered.index].owner
        return isinstance(init, FullOp) and init.space.data == "psum"

    def row_column(self, value: SSAValue, target: Block) -> SSAValue:
        """A row `[F]` as a column `[F, 1]` (one value per partition, fp32 in SBUF):
        `nc_transpose` of the row as one partition `[1, F]`."""
        lowered = self.values[value]
        free = _type(lowered).shape[0]
        one_partition = self.add(target, nki.DmaCopyOp.make(
            [lowered], buffer="sbuf", shape=[IntExpr.const(1), free]))
        transposed = self.add(target, nki.NcTransposeOp.make([one_partition], buffer="psum"))
        return self.add(target, nki.TensorCopyOp.make([transposed], buffer="sbuf",
                                                      dtype=COMPUTE_DTYPE))

    def broadcast_row(self, value: SSAValue, result: TensorType, target: Block) -> SSAValue:
        """A row `[F]` held on every partition `[P, F]`: `nc_matmul` of a ones column `[1, P]`
        (stationary) by the row as one partition `[1, F]` (moving), in PSUM."""
        lowered = self.values[value]
        dtype = _type(lowered).dtype
        free = _type(lowered).shape[0]
        one_partition = self.add(target, nki.DmaCopyOp.make(
            [lowered], buffer="sbuf", shape=[IntExpr.const(1), free]))
        ones = self.add(target, nki.MemsetOp.make(
            [], value=1.0, shape=[IntExpr.const(1), result.shape[0]], dtype=dtype,
            buffer="sbuf"))
        return self.add(target, nki.NcMatmulOp.make([ones, one_partition], buffer="psum"))

    def lower_per_row(self, op: Operation, target: Block) -> SSAValue:
        """An op whose rank-1 result `[P]` holds one value per row (`_per_row_values`), on
        `[P, 1]` columns: a row reduction -> `tensor_reduce` kept as `[P, 1]` (its `ax.generic`
        form as `lower_generic` reads it); an elementwise op of columns, constants and loaded
        scalars (each broadcast over the partitions: `scalar_column`) -> `tensor_tensor`,
        `tensor_scalar` or `activation` of the columns."""
        if type(op) in _REDUCE:
            return self.lower_reduce(op, _REDUCE[type(op)], target)
        if isinstance(op, GenericOp):
            return self.lower_generic(op, target)
        if isinstance(op, MatmulOp):
            return self.lower_matvec(op, target)
        partitions = _type(op.results[0]).shape[0]
        if _float_cast(op):
            return self.cast(op, self.per_row_column(op.operands[0], partitions, target), target)
        if type(op) in _ACTIVATION:
            return self.add(target, nki.ActivationOp.make(
                [self.per_row_column(op.operands[0], partitions, target)],
                func=_ACTIVATION[type(op)], buffer="sbuf", dtype=COMPUTE_DTYPE))
        if isinstance(op, NegOp):
            return self.add(target, nki.TensorScalarOp.make(
                [self.per_row_column(op.operands[0], partitions, target)], op0="multiply",
                scalar0=-1.0, buffer="sbuf", dtype=COMPUTE_DTYPE))
        if type(op) not in _ALU:
            raise Refused(f"'{op.name}' of per-row values [P] has no NKI lowering yet")
        alu = _ALU[type(op)]
        a, b = op.operands
        for tile, other, reverse in ((a, b, False), (b, a, True)):
            if other in self.constants:
                return self.by_constant(op.name, self.per_row_column(tile, partitions, target),
                                        alu, self.constants[other], reverse, target)
            if other in self.scalars:
                return self.by_size_scalar(self.per_row_column(tile, partitions, target),
                                           self.scalars[other], alu, reverse, target)
        x, y = (self.per_row_column(v, partitions, target) for v in (a, b))
        both = _buffer(x) == _buffer(y) == "psum"
        # a PSUM accumulator plus a matrix-vector product stays there (as `lower_binary`'s
        # matmul accumulation: the emitter folds the add into the matmul)
        accumulating = both and isinstance(op, AddOp) and any(
            self.is_accumulator(v) for v in (a, b))
        if both and not accumulating:
            y = self.add(target, nki.TensorCopyOp.make([y], buffer="sbuf",
                                                       dtype=COMPUTE_DTYPE))
        return self.add(target, nki.TensorTensorOp.make(
            [x, y], op=alu, buffer="psum" if accumulating else "sbuf", dtype=COMPUTE_DTYPE))

    def lower_matvec(self, op: MatmulOp, target: Block) -> SSAValue:
        """`ax.matmul` of a `[P, K]` tile by a vector `[K]` on TensorE: the tile transposed
        (`nc_transpose`, the stationary `[K, P]`) times the vector as a column `[K, 1]` (the
        moving operand: a per-row value of another tile is one already, a loaded row `[K]` is
        read into one by its DMA, another row transposed by `row_column`), one value per row
        `[P, 1]` in PSUM: `lower_matmul` with the column as its moving operand."""
        v = op.operands[1]
        if v in self.per_row:
            column = self.values[v]
        elif isinstance(v.owner, LoadOp):  # a loaded row: one element a partition, by the DMA
            column = self.add(target, nki.DmaCopyOp.make(
                [self.values[v]], buffer="sbuf", shape=[_type(v).shape[0], IntExpr.const(1)]))
        else:
            column = self.row_column(v, target)
        return self.lower_matmul(op, target, moving=column)

    def per_row_column(self, value: SSAValue, partitions: IntExpr, target: Block
                       ) -> SSAValue:
        """The `[P, 1]` column of a per-row value, or of a loaded scalar (`scalar_column`)."""
        t = _type(value)
        if _loaded_scalar(value) is not None:
            return self.scalar_column(value, partitions, target)
        if value not in self.per_row:
            raise Refused(f"a {t} tile read as one value per row (a [P, 1] column)")
        return self.values[value]

    def scalar_column(self, value: SSAValue, partitions: IntExpr, target: Block) -> SSAValue:
        """A loaded scalar on each of `partitions` partitions, fp32 in SBUF: the scalar as one
        partition `[1, 1]`, `nc_matmul` of a ones column `[1, P]` by it (as `broadcast_row`),
        copied out of PSUM; made once per scalar and P."""
        value = _loaded_scalar(value) or value  # through widening casts
        key = (value, partitions)
        if key not in self.scalar_columns:
            lowered = self.values[value]
            one = self.add(target, nki.DmaCopyOp.make(
                [lowered], buffer="sbuf", shape=[IntExpr.const(1), IntExpr.const(1)]))
            ones = self.add(target, nki.MemsetOp.make(
                [], value=1.0, shape=[IntExpr.const(1), partitions], dtype=_type(lowered).dtype,
                buffer="sbuf"))
            product = self.add(target, nki.NcMatmulOp.make([ones, one], buffer="psum"))
            self.scalar_columns[key] = self.add(target, nki.TensorCopyOp.make(
                [product], buffer="sbuf", dtype=COMPUTE_DTYPE))
        return self.scalar_columns[key]

    # ---- rank-0 values of sizes ------------------------------------------------------------
    def size_scalar(self, op: Operation) -> _Scalar:
        """The chain of a rank-0 op made of sizes and constants: a form of them with no operand
        (`cast(idx(D), bf16)`), an activation function or `ax.neg` of such a value, an ALU op
        of two such values or constants. Nothing is lowered here: a tile reading the value
        makes it as a column (`by_size_scalar`). Refused otherwise: NKI tiles are [P, F]."""
        result = _type(op.results[0])

        def chain(value: SSAValue) -> _Scalar | None:
            if value in self.constants:
                return _Scalar("const", value=self.constants[value])
            return self.scalars.get(value)

        args = [chain(v) for v in op.operands]
        why = "it has no NKI lowering yet"
        if isinstance(op, GenericOp):
            form = op.generic_form()
            found = _scalar_of_form(form.body) if not op.operands and not form.reduced \
                and form.finalize is None else "it reads operands or reduces"
            if isinstance(found, _Scalar):
                return found
            why = found
        elif any(a is None for a in args):
            why = "it reads a value that is not made of sizes and constants"
        elif _float_cast(op):  # the chain is fp32 throughout, rounded once when stored
            (arg,) = (a for a in args if a is not None)
            return arg
        elif type(op) in _ACTIVATION:
            (arg,) = (a for a in args if a is not None)
            return _Scalar("func", _ACTIVATION[type(op)], args=(arg,))
        elif isinstance(op, NegOp):
            (arg,) = (a for a in args if a is not None)
            return _Scalar("alu", "multiply", args=(arg, _Scalar("const", value=-1.0)))
        elif type(op) in _ALU:
            return _Scalar("alu", _ALU[type(op)], args=tuple(a for a in args if a is not None))
        raise Refused(f"'{op.name}' gives a rank-{result.rank} tile {result} (NKI tiles here "
                      "are [partitions, free]; a rank-0 value lowers where it is made of sizes "
                      f"and constants, and {why})")

    def by_size_scalar(self, tile: SSAValue, node: _Scalar, alu: str, reverse: bool,
                       target: Block) -> SSAValue:
        """`tile alu node` (`node alu tile` when `reverse`) for a lowered `[P, F]` tile or
        `[P, 1]` column: `tensor_scalar` by the chain's column (`size_column`). A divide stays
        one here, so the lowered kernel reads as the tiled one (softmax's max of `x / sqrt(D)`
        is a reduction of the same body on both sides); fusion makes it a multiply by the
        column's reciprocal (`fuse.py`'s `divide-reciprocal`), which ScalarE runs too."""
        column = self.size_column(node, _type(tile).shape[0])
        return self.add(target, nki.TensorScalarOp.make(
            [tile, column], op0=alu, reverse0=reverse, buffer="sbuf", dtype=COMPUTE_DTYPE))

    def size_column(self, node: _Scalar, partitions: IntExpr) -> SSAValue:
        """The chain `node` on each of `partitions` partitions, a `[P, 1]` fp32 column in SBUF,
        made once per chain and P at the start of the kernel's body (`early`: it reads no
        tile, so the emitter computes it once before the grid, `emit._grid_invariant`): a size
        as `count` (which the emitter prints as a memset of the size), a constant by `memset`,
        a function by `activation`, an ALU op with a constant by `tensor_scalar` immediates
        (`by_constant`), of two chains by `tensor_tensor`. Every instruction writes fp32: the
        column holds the exact size (below 2**24) and fp32 functions of it where the program
        rounds each step to its dtype (`cast(idx(D), bf16)`); the proof is about values (a
        float cast is the identity there) and the result is rounded once, when stored."""
        stack = [node]
        while stack:
            top = stack[-1]
            if (top, partitions) in self.size_columns:
                stack.pop()
                continue
            needed = _column_args(top)
            pending = [a for a in needed if (a, partitions) not in self.size_columns]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            columns = [self.size_columns[(a, partitions)] for a in needed]
            scratch = Block()
            if top.kind == "size":
                assert top.size is not None
                made = self.count(partitions, top.size, scratch)
            elif top.kind == "const":
                if len(_fp32_pieces(top.value)) > 1:
                    raise Refused(f"the constant {top.value!r} of a rank-0 value of sizes, "
                                  "which fp32 does not hold exactly")
                made = self.add(scratch, nki.MemsetOp.make(
                    [], value=top.value, shape=[partitions, IntExpr.const(1)],
                    dtype=COMPUTE_DTYPE, buffer="sbuf"))
            elif top.kind == "func":
                made = self.add(scratch, nki.ActivationOp.make(
                    columns, func=top.name, buffer="sbuf", dtype=COMPUTE_DTYPE))
            else:
                a, b = top.args
                if b.kind == "const" or a.kind == "const":
                    reverse = b.kind != "const"
                    constant = a.value if reverse else b.value
                    made = self.by_constant(f"a rank-0 '{top.name}'", columns[0], top.name,
                                            constant, reverse, scratch)
                else:
                    made = self.add(scratch, nki.TensorTensorOp.make(
                        columns, op=top.name, buffer="sbuf", dtype=COMPUTE_DTYPE))
            for op in list(scratch.ops):
                scratch.detach_op(op)
                self.early(op)
            self.size_columns[(top, partitions)] = made
        return self.size_columns[(node, partitions)]

    def early(self, op: Operation) -> None:
        """`op` put at the start of the lowered kernel's body, after those put there before."""
        assert self.body is not None
        if self.early_last is not None:
            self.body.insert_op_after(op, self.early_last)
        elif self.body.first_op is not None:
            self.body.insert_op_before(op, self.body.first_op)
        else:
            self.body.add_op(op)
        self.early_last = op

    def lower_access(self, op: Operation, target: Block) -> SSAValue:
        """A structural op of tiles that keeps the partition dim (a strided slice of the free
        dims, a reshape of them, a broadcast over size-1 free dims, a concatenation along a
        free dim) -> `nki.access` of the same meaning: a view the instructions read in place
        (rope's interleaved pairs at free stride 2) or a tile filled in windows."""
        attrs = dict(op.attrs())  # type: ignore[attr-defined]
        layouts: dict[type[Operation], str] = {SliceOp: "slice", ReshapeOp: "reshape",
                                               BroadcastToOp: "broadcast_to",
                                               ConcatOp: "concat"}
        layout = layouts[type(op)]
        operands = [self.tile(v) for v in op.operands]
        try:
            made = nki.AccessOp.make(operands, layout=layout, buffer="sbuf", **attrs)
        except ShapeError as err:
            raise Refused(f"'{op.name}' of {', '.join(str(_type(v)) for v in op.operands)}: "
                          f"{err}") from None
        return self.add(target, made)

    def stretch(self, value: SSAValue, result: TensorType, target: Block) -> SSAValue:
        """`value`'s tile stretched over its size-1 dims to `result`'s shape (itself where it
        has that shape): a `broadcast_to` access, made once per tile and shape."""
        x = self.tile(value)
        if _type(x).shape == result.shape:
            return x
        key = (value, tuple(result.shape))
        if key not in self.stretched:
            self.stretched[key] = self.add(target, nki.AccessOp.make(
                [x], layout="broadcast_to", shape=list(result.shape), buffer="sbuf"))
        return self.stretched[key]

    def lower_broadcast(self, op: BroadcastToOp, target: Block) -> SSAValue:
        """`broadcast_to` of a `[P, 1]` column over the free dim, or of a row (`[F]` or
        `[1, F]`) over the partitions, to a `[P, F]` tile:

        - a column whose every use is an elementwise op with a `[P, F]` tile: nothing; the
          op reads the column by `tensor_scalar` (`lower_binary`); a loop's
          `acc + (x * broadcast(c)) @ w` with `c` made before the loop scales the loop's sum
          once (`_row_factors`);
        - any other column: a ones tile `[P, F]` times the column (`tensor_scalar`; `1 * c`
          is `c` exactly in fp32);
        - a row: `nc_matmul` of a ones column `[1, P]` by the row as one partition, into
          PSUM (as `broadcast_row`; each element one exact product)."""
        (x,) = op.operands
        result = op.results[0]
        tr, tx = _type(result), _type(x)
        if x in self.constants:
            raise Refused(f"'{op.name}' of a scalar constant (only a [P, 1] column or a row "
                          "[F] / [1, F] broadcast to a [P, F] tile lowers)")
        partitions, free = tr.shape
        if tx.rank == 2 and tx.shape == (partitions, IntExpr.const(1)):
            if result.uses and all(
                    type(u.operation) in _ALU and any(
                        v is not result and _type(v).shape == tr.shape
                        and v not in self.constants for v in u.operation.operands)
                    for u in result.uses):
                self.broadcast_columns[result] = x
                return self.values[x]
            ones = self.add(target, nki.MemsetOp.make(
                [], value=1.0, shape=[partitions, free], dtype=COMPUTE_DTYPE, buffer="sbuf"))
            return self.add(target, nki.TensorScalarOp.make(
                [ones, self.column(x, target)], op0="multiply", buffer="sbuf",
                dtype=COMPUTE_DTYPE))
        if tx.rank == 1 and tx.shape[0] == free:
            return self.broadcast_row(x, tr, target)
        if tx.rank == 2 and tx.shape == (IntExpr.const(1), free):
            row = self.tile(x)
            if _buffer(row) != "sbuf":
                row = self.add(target, nki.TensorCopyOp.make([row], buffer="sbuf",
                                                             dtype=COMPUTE_DTYPE))
            ones = self.add(target, nki.MemsetOp.make(
                [], value=1.0, shape=[IntExpr.const(1), partitions], dtype=_type(row).dtype,
                buffer="sbuf"))
            return self.add(target, nki.NcMatmulOp.make([ones, row], buffer="psum"))
        raise Refused(f"'{op.name}' of {tx} to {tr} (a [P, 1] column over the free dim or a "
                      "row [F] / [1, F] over the partitions)")

    def lower_generic(self, op: GenericOp, target: Block) -> SSAValue:
        """The `ax.generic` forms tiled kernels contain (a multipass tiling's statistics):

        - a row reduction of a `[P, F]` tile, `out[d0 < P, d1 < 1] = add over r0 in [0, F) of
          in0[d0, r0]` (sum, max, min) -> `tensor_reduce`; a masked sum, `select(<bound>,
          in0[d0, r0], 0.0)`, the same where its tile is zero past the tensor's end (a
          zero-padded load and ops keeping zeros: rmsnorm's `x * x`); the proof checks the
          mask against the load's bound;
        - an elementwise form (`generic_elementwise`): e.g. a tile and a size,
          `in0[d0, d1] / idx(N)` (the mean's count) -> the count as the row sum of a ones tile
          `[P, N]` (as a mean's, so no size is a constant of the lowered function; the emitter
          writes N), then `tensor_tensor` of two columns or `tensor_scalar` of a `[P, F]`
          tile by the count column;
        - a contraction of two tiles over a whole dim of each, either operand read either way
          round (`q @ k.T`, `p @ v`), masked or not -> `nc_matmul` (`generic_contraction`).

        Anything else is refused with the form and what is missing."""
        form = op.generic_form()
        if form.finalize is not None:
            found: SSAValue | str = "a finalized reduction has no NKI lowering yet"
        elif form.reduction is None:
            found = self.generic_elementwise(op, form, target)
        elif len(op.operands) == 2:
            found = self.generic_contraction(op, form, target)
        else:
            found = self.generic_row_reduce(op, form, target)
        if isinstance(found, str):
            raise Refused(f"'ax.generic' with the form `{form}`: {found}")
        return found

    def generic_contraction(self, op: GenericOp, form: GenericForm, target: Block
                            ) -> SSAValue | str:
        """`out[d0 < P, d1 < N] = add over r0 in [0, K) of in0[.] * in1[.]`, `in0` read at
        `[d0, r0]` or `[r0, d0]`, `in1` at `[r0, d1]` or `[d1, r0]`, each a whole tile ->
        `nc_matmul` of the stationary `[K, P]` by the moving `[K, N]`, a tile read the other
        way round transposed on TensorE first (as `lower_matmul`'s left operand). The two
        the other way round (`in0` by `d1`, `in1` by `d0`: `(x @ w).T` composed) swap roles,
        the product commuting: `w` as loaded is the stationary `[K, N]`. Masked by a
        bound on the indices, `select(<bound>, in0[.] * in1[.], 0.0)`, the same where one
        operand is zero past the tensor's end (a zero-padded load: attention's values past
        L); the proof checks the mask against the load's bound."""
        if not (form.reduction == "add" and len(form.parallel) == 2 and len(form.reduced) == 1
                and form.reduced[0].lower == IntExpr.const(0)):
            return "a contraction other than a sum over one dim into a [P, N] tile"
        (d0, d1), (r0,) = form.parallel, form.reduced
        body = form.body
        masked = isinstance(body, Call) and body.fn == "select" and not _reads(body.args[0]) \
            and isinstance(body.args[2], Const) and body.args[2].value == 0
        product = body.args[1] if masked and isinstance(body, Call) else body
        if not (isinstance(product, Call) and product.fn == "mul"
                and all(isinstance(a, Read) for a in product.args)):
            return "a contraction whose body is not a product of two reads"
        reads = {a.operand: a for a in product.args if isinstance(a, Read)}
        if sorted(reads) != [0, 1]:
            return "a contraction that does not read each operand once"
        p, n, k = (IntExpr.sym(d.name) for d in (d0, d1, r0))
        ways: dict[tuple[int, tuple[IntExpr, ...]], bool] = {
            (0, (p, k)): False, (0, (k, p)): True, (1, (k, n)): False, (1, (n, k)): True}
        a_src, b_src = op.operands
        if tuple(reads[0].index) in ((n, k), (k, n)) and tuple(reads[1].index) in ((p, k), (k, p)):
            # the operands the other way round (`(x @ w).T`: `in0[d1, r0] * in1[r0, d0]`):
            # the product commutes, so `in1` is the left operand: the stationary operand is
            # `w`'s tile as loaded, `[K, P]`, and the product is the result's tile itself
            a_src, b_src = b_src, a_src
            reads = {0: reads[1], 1: reads[0]}
        transposed = [ways.get((i, tuple(reads[i].index))) for i in (0, 1)]
        if None in transposed:
            return "a contraction reading an operand other than [d0, r0] / [r0, d0] and " \
                "[r0, d1] / [d1, r0]"
        want = [(d0.upper, r0.upper), (r0.upper, d1.upper)]
        for src, flip, shape in zip((a_src, b_src), transposed, want, strict=True):
            held = tuple(reversed(shape)) if flip else shape
            if _type(src).shape != held:
                return f"the operand {_type(src)} is not the whole tile {list(held)} it reads"
        if masked and not (_zero_past_bounds(a_src) or _zero_past_bounds(b_src)):
            return ("a masked contraction of tiles neither of which is zero past the tensor's "
                    "end needs a mask built on chip, not built yet")
        a, b = self.tile(a_src), self.tile(b_src)
        dtype = _type(b).dtype if _type(b).dtype != COMPUTE_DTYPE else _type(a).dtype
        # the stationary operand is [K, P]: the left tile read as [r0, d0] is; [d0, r0] is
        # transposed (TensorE reads one dtype for both operands)
        stationary = a if transposed[0] else self.transposed(a, dtype, target)
        moving = self.transposed(b, dtype, target) if transposed[1] else b
        operands = []
        for x in (stationary, moving):
            if _type(x).dtype != dtype or _buffer(x) != "sbuf":
                x = self.add(target, nki.TensorCopyOp.make([x], buffer="sbuf", dtype=dtype))
            operands.append(x)
        return self.add(target, nki.NcMatmulOp.make(operands, buffer="psum"))

    def transposed(self, x: SSAValue, dtype: str, target: Block) -> SSAValue:
        """`x` transposed on TensorE (`nc_transpose` into PSUM), copied into SBUF in
        `dtype`."""
        if _type(x).dtype != dtype or _buffer(x) != "sbuf":
            x = self.add(target, nki.TensorCopyOp.make([x], buffer="sbuf", dtype=dtype))
        flipped = self.add(target, nki.NcTransposeOp.make([x], buffer="psum"))
        return self.add(target, nki.TensorCopyOp.make([flipped], buffer="sbuf", dtype=dtype))

    def generic_elementwise(self, op: GenericOp, form: GenericForm, target: Block
                            ) -> SSAValue | str:
        """An elementwise form of `[P, F]` tiles read in place, `[P, 1]` columns (a per-row
        `[P]` value read at `[d0]`, a column at `[d0, 0]`), sizes `idx(S)` (their count
        columns) and constants, combined by +, -, *, /, max, min, neg and the activation
        functions (the nu-graph's fused rmsnorm: `in0[d0, d1] * rsqrt(in1[d0] / idx(D) +
        1e-6)`) -> one instruction per node: `tensor_tensor` of two tiles or two columns,
        `tensor_scalar` of a tile by a column or a constant, `activation`. Float casts are
        the identity on values (the proof's reading too; the tiled kernel rounds where the
        program does, the lowered one computes in fp32). A `[P, 1]` result reads its operands
        of that shape as columns. Why not where a node has no such lowering; nothing is added
        to `target` then."""
        why = ("an elementwise form other than tiles read in place, columns, sizes and "
               "constants combined by ALU ops, neg, float casts and activation functions has "
               "no NKI lowering yet")
        if len(form.parallel) != 2:
            return why
        p_dim, f_dim = form.parallel
        rows = p_dim.upper
        here = (IntExpr.sym(p_dim.name), IntExpr.sym(f_dim.name))
        shape = _type(op.results[0]).shape
        want = "col" if _is_row(_type(op.results[0])) else "tile"
        loops = {p_dim.name, f_dim.name}
        functions = set(_ACTIVATION.values())
        scratch = Block()
        made: dict[int, tuple[str, SSAValue | float]] = {}  # node id: ("tile"|"col"|"const", v)

        def leaf(node: ScalarExpr) -> tuple[str, SSAValue | float] | None:
            if isinstance(node, Const):
                return "const", float(node.value)
            if isinstance(node, Index):
                if node.expr.symbols() & loops:
                    return None
                return "col", self.count(rows, node.expr, scratch)
            if not isinstance(node, Read):
                return None
            src = op.operands[node.operand]
            t = _type(src)
            if tuple(node.index) == here and t.shape == shape:
                return (want, self.column(src, scratch) if want == "col" else self.tile(src))
            if tuple(node.index) == here[::-1] and t.shape == shape[::-1]:  # on TensorE
                x = self.tile(src)
                return "tile", self.transposed(x, _type(x).dtype, scratch)
            if tuple(node.index) == here[:1] and src in self.per_row:
                return "col", self.column(src, scratch)
            if tuple(node.index) == (here[0], IntExpr.const(0)) and _is_row(t) \
                    and t.shape[0] == rows:
                return "col", self.column(src, scratch)
            return None

        def combine(node: Call, args: list[tuple[str, SSAValue | float]]
                    ) -> tuple[str, SSAValue | float] | None:
            if node.fn == "cast" and node.param in ("bf16", "f16", "f32") \
                    and args[0][0] != "const":
                return args[0]
            if len(args) == 1 and args[0][0] != "const" and node.fn in functions | {"neg"}:
                kind, x = args[0]
                assert isinstance(x, SSAValue)
                made_op = nki.TensorScalarOp.make(
                    [x], op0="multiply", scalar0=-1.0, buffer="sbuf", dtype=COMPUTE_DTYPE) \
                    if node.fn == "neg" else nki.ActivationOp.make(
                        [x], func=node.fn, buffer="sbuf", dtype=COMPUTE_DTYPE)
                return kind, self.add(scratch, made_op)
            if len(args) != 2 or node.fn not in _FORM_ALU:
                return None
            (ka, a), (kb, b) = args
            alu = _FORM_ALU[node.fn]
            if ka == "const" and kb == "const":
                return None
            if "const" in (ka, kb):
                reverse = ka == "const"
                kind, x = (kb, b) if reverse else (ka, a)
                c = a if reverse else b
                assert isinstance(x, SSAValue) and isinstance(c, float)
                return kind, self.by_constant("ax.generic", x, alu, c, reverse, scratch)
            assert isinstance(a, SSAValue) and isinstance(b, SSAValue)
            if ka == kb:
                return ka, self.add(scratch, nki.TensorTensorOp.make(
                    [a, b], op=alu, buffer="sbuf", dtype=COMPUTE_DTYPE))
            reverse = ka == "col"
            tile, col = (b, a) if reverse else (a, b)
            return "tile", self.add(scratch, nki.TensorScalarOp.make(
                [tile, col], op0=alu, reverse0=reverse, buffer="sbuf", dtype=COMPUTE_DTYPE))

        stack: list[tuple[ScalarExpr, bool]] = [(form.body, False)]
        try:
            while stack:  # post-order on an explicit stack: no recursion on the form's depth
                node, ready = stack.pop()
                if isinstance(node, Call) and not ready:
                    stack.append((node, True))
                    stack.extend((c, False) for c in node.children())
                    continue
                value = combine(node, [made[id(c)] for c in node.children()]) \
                    if isinstance(node, Call) else leaf(node)
                if value is None:
                    return why
                made[id(node)] = value
        except (Refused, ShapeError) as err:
            return f"{why} ({err})"
        kind, result = made[id(form.body)]
        if kind != want or not isinstance(result, SSAValue):
            return why
        for moved in list(scratch.ops):
            moved.detach()
            target.add_op(moved)
        return result

    def count(self, partitions: IntExpr, size: IntExpr, target: Block) -> SSAValue:
        """A `[P, 1]` column holding the size `size`: the row sum of a ones tile `[P, size]`
        (the emitter writes the count itself: `emit._count_of_ones`)."""
        ones = self.add(target, nki.MemsetOp.make(
            [], value=1.0, shape=[partitions, size], dtype=COMPUTE_DTYPE, buffer="sbuf"))
        return self.add(target, nki.TensorReduceOp.make(
            [ones], op="add", axes=(1,), keepdims=True, buffer="sbuf", dtype=COMPUTE_DTYPE))

    def generic_row_reduce(self, op: GenericOp, form: GenericForm, target: Block
                           ) -> SSAValue | str:
        """A row reduction over the free dim of one `[P, F]` tile, kept (`[P, 1]`), of the
        tile itself or of it masked (`select(<bound>, in0[d0, r0], 0.0)`, sums only)."""
        reduce = {"add": "add", "max": "maximum", "min": "minimum"}.get(str(form.reduction))
        if reduce is None:
            return f"a '{form.reduction}' reduction has no NKI lowering"
        # kept as [P, 1], or one value per row [P] (held as that column: `per_row`)
        dropped = op.results[0] in self.per_row and len(form.parallel) == 1
        if len(op.operands) != 1 or len(form.parallel) != 2 - dropped or len(form.reduced) != 1:
            return ("only a row reduction of one [P, F] tile over its free dim lowers (one "
                    "operand, two parallel dims, one reduced)")
        (x_src,) = op.operands
        tx = _type(x_src)
        d0 = form.parallel[0]
        (r0,) = form.reduced
        if not (tx.rank == 2 and (dropped or form.parallel[1].upper == IntExpr.const(1))
                and d0.upper == tx.shape[0]
                and r0.lower == IntExpr.const(0) and r0.upper == tx.shape[1]):
            return (f"the reduction over {r0} of a {tx} tile is not a whole row kept as "
                    "[P, 1]")
        whole = Read(0, (IntExpr.sym(d0.name), IntExpr.sym(r0.name)))
        body = form.body
        if body == whole:
            return self.add(target, nki.TensorReduceOp.make(
                [self.tile(x_src)], op=reduce, axes=(1,), keepdims=True, buffer="sbuf",
                dtype=COMPUTE_DTYPE))
        if reduce == "add" and body == Call("mul", (whole, whole)):
            # a sum of squares (rmsnorm's, fused into one form): the squares on ScalarE, then
            # their row sum (instruction fusion makes it one `activation` with its reduce)
            squares = self.add(target, nki.ActivationOp.make(
                [self.tile(x_src)], func="square", buffer="sbuf", dtype=COMPUTE_DTYPE))
            return self.add(target, nki.TensorReduceOp.make(
                [squares], op="add", axes=(1,), keepdims=True, buffer="sbuf",
                dtype=COMPUTE_DTYPE))
        if not (isinstance(body, Call) and body.fn == "select" and body.args[1] == whole
                and not _reads(body.args[0])):
            return ("a reduction body other than the tile or the tile masked by a bound on "
                    "its indices has no NKI lowering yet")
        fallback = body.args[2]
        zero_fill = isinstance(fallback, Const) and fallback.value == 0
        if reduce == "add" and zero_fill and _zero_past_bounds(x_src):
            return self.add(target, nki.TensorReduceOp.make(
                [self.tile(x_src)], op="add", axes=(1,), keepdims=True, buffer="sbuf",
                dtype=COMPUTE_DTYPE))
        column = Read(0, (IntExpr.sym(d0.name), IntExpr.const(0)))
        if not ((reduce == "add" and zero_fill) or (reduce != "add" and fallback == column)):
            return (f"a masked '{form.reduction}' reduction whose masked columns read "
                    f"`{fallback}` has no NKI lowering (a sum's take 0.0, a max's or min's "
                    "column 0)")
        bound = _column_bound(body.args[0], d0.name, r0.name)
        if isinstance(bound, str):
            return bound
        masked = self.column_masked(self.tile(x_src), bound, reduce, target)
        return self.add(target, nki.TensorReduceOp.make(
            [masked], op=reduce, axes=(1,), keepdims=True, buffer="sbuf", dtype=COMPUTE_DTYPE))

    def column_masked(self, x: SSAValue, bound: tuple[IntExpr, int, bool], reduce: str,
                      target: Block) -> SSAValue:
        """The `[P, F]` tile `x` with the columns the bound excludes replaced: by 0.0 for a sum,
        by column 0 for a max or min (`select(inside, x[d0, r0], x[d0, 0])`). The mask is
        built on chip by `affine_select` on GpSimd, its offset the bound's `size_offset`
        (`N - BK*k`, traced as a Python integer): `select(inside, x, 0.0)`, plus, for a max,
        column 0 times `select(inside, 0.0, 1.0)` (exact: one term of each sum is 0)."""
        offset, step, strict = bound
        if _buffer(x) != "sbuf":
            x = self.add(target, nki.TensorCopyOp.make([x], buffer="sbuf"))
        kept = self.add(target, nki.AffineSelectOp.make(
            [x], pattern=[step], channel_multiplier=0, offset=0, size_offset=[offset],
            cmp_op="greater" if strict else "greater_equal", on_false_value=0.0,
            buffer="sbuf", dtype=COMPUTE_DTYPE))
        if reduce == "add":
            return kept
        shape = list(_type(x).shape)
        ones = self.add(target, nki.MemsetOp.make(
            [], value=1.0, shape=shape, dtype=COMPUTE_DTYPE, buffer="sbuf"))
        # outside: -(offset + step*f) >= 0 where the bound is strict (> 0), > 0 where not
        outside = self.add(target, nki.AffineSelectOp.make(
            [ones], pattern=[-step], channel_multiplier=0, offset=0, size_offset=[-offset],
            cmp_op="greater_equal" if strict else "greater", on_false_value=0.0,
            buffer="sbuf", dtype=COMPUTE_DTYPE))
        first = self.add(target, nki.AccessOp.make(
            [x], layout="slice", start=[0, 0], stop=[shape[0], 1], step=[1, 1],
            buffer="sbuf"))
        if _type(first).dtype != COMPUTE_DTYPE:
            first = self.add(target, nki.TensorCopyOp.make([first], buffer="sbuf",
                                                           dtype=COMPUTE_DTYPE))
        filler = self.add(target, nki.TensorScalarOp.make(
            [outside, first], op0="multiply", buffer="sbuf", dtype=COMPUTE_DTYPE))
        return self.add(target, nki.TensorTensorOp.make(
            [kept, filler], op="add", buffer="sbuf", dtype=COMPUTE_DTYPE))

    def lower_reduce(self, op: Operation, reduce: str, target: Block) -> SSAValue:
        (x,) = op.operands
        result = _type(op.results[0])
        axes = [int(a) for a in op.attrs().get("axes", ())]  # type: ignore[attr-defined]
        kept = bool(op.attrs().get("keepdims")) or op.results[0] in self.per_row  # type: ignore[attr-defined]
        if axes != [1] or not kept:
            raise Refused(f"'{op.name}' over axes {axes} (a row reduction over the last dim "
                          "of a [P, F] tile, keepdims)")
        tile = self.tile(x)
        total = self.chosen("row_sum", [tile], target) if reduce == "add" else None
        if total is None:
            total = self.add(target, nki.TensorReduceOp.make(
                [tile], op=reduce, axes=(1,), keepdims=True, buffer="sbuf",
                dtype=COMPUTE_DTYPE))
        if not isinstance(op, MeanOp):
            return total
        ones = self.add(target, nki.MemsetOp.make(
            [], value=1.0, shape=list(_type(tile).shape), dtype=COMPUTE_DTYPE, buffer="sbuf"))
        count = self.add(target, nki.TensorReduceOp.make(
            [ones], op="add", axes=(1,), keepdims=True, buffer="sbuf", dtype=COMPUTE_DTYPE))
        assert result.shape == _type(total).shape or op.results[0] in self.per_row
        return self.add(target, nki.TensorTensorOp.make(
            [total, count], op="divide", buffer="sbuf", dtype=COMPUTE_DTYPE))

    def chosen(self, kind: str, tiles: list[SSAValue], target: Block) -> SSAValue | None:
        """The synthesized lowering chosen for `kind`, printed over `tiles` (on chip: a PSUM
        tile is copied out first), where one is chosen for a tile of its dtype; else None."""
        choice = self.choices.get(kind)
        if choice is None:
            return None
        spec = choice.func.function_type.inputs.data
        if choice.binding([_type(t) for t in tiles]) is None or any(
                _type(t).dtype != p.dtype for t, p in zip(tiles, spec, strict=True)
                if isinstance(p, TensorType)):
            return None
        tiles = [t if _buffer(t) == "sbuf" else
                 self.add(target, nki.TensorCopyOp.make([t], buffer="sbuf")) for t in tiles]
        self.used.add(kind)
        return choice.inline(tiles, lambda new: self.add(target, new))

    def lower_cumsum(self, op: CumsumOp, target: Block) -> SSAValue:
        """A prefix sum along the free dim: `tensor_tensor_scan` (add, add) of a zero tile and
        the data, started at 0 (`r[f] = (0 + r[f - 1]) + x[f]`)."""
        if op.axis.value.data not in (1, -1):
            raise Refused(f"'{op.name}' along axis {op.axis.value.data} (a prefix sum along "
                          "the free dim of a [P, F] tile)")
        x = self.tile(op.operands[0])
        chosen = self.chosen("cumsum", [x], target)
        if chosen is not None:
            return chosen
        zeros = self.add(target, nki.MemsetOp.make(
            [], value=0.0, shape=list(_type(x).shape), dtype=COMPUTE_DTYPE, buffer="sbuf"))
        return self.add(target, nki.TensorTensorScanOp.make(
            [zeros, x], op0="add", op1="add", initial=0.0, buffer="sbuf", dtype=COMPUTE_DTYPE))

    def lower_transpose(self, op: TransposeOp, target: Block) -> SSAValue:
        """A 2-D transpose: `nc_transpose` into PSUM, copied into SBUF; none where every use
        is a matmul's left operand, which takes the untransposed tile as its stationary
        operand (`pretransposed`)."""
        x = self.tile(op.operands[0])
        result = op.results[0]
        if result.uses and all(isinstance(u.operation, MatmulOp) and u.index == 0
                               for u in result.uses):
            self.pretransposed.add(result)
            return x
        if _buffer(x) != "sbuf":
            x = self.add(target, nki.TensorCopyOp.make([x], buffer="sbuf"))
        chosen = self.chosen("transpose", [x], target)
        if chosen is not None:
            return chosen
        transposed = self.add(target, nki.NcTransposeOp.make([x], buffer="psum"))
        return self.add(target, nki.TensorCopyOp.make([transposed], buffer="sbuf",
                                                      dtype=COMPUTE_DTYPE))

    def lower_matmul(self, op: MatmulOp, target: Block, moving: SSAValue | None = None
                     ) -> SSAValue:
        """`nc_matmul` of the left tile transposed (the stationary `[K, P]`) by the right one,
        or by `moving` where given (a matrix-vector product's column `[K, 1]`)."""
        left = op.operands[0]
        a = self.tile(left)
        b = self.tile(op.operands[1]) if moving is None else moving
        ta, tb = _type(a), _type(b)
        # TensorE reads bf16/f16 with bf16/f16, or fp32 with fp32: one dtype for both; fp32
        # where the program multiplies fp32 operands (a widened bf16 tile is copied, exactly)
        dtype = COMPUTE_DTYPE if all(_type(v).dtype == COMPUTE_DTYPE for v in op.operands) \
            else tb.dtype if tb.dtype != COMPUTE_DTYPE else ta.dtype
        if ta.dtype != dtype or _buffer(a) != "sbuf":
            a = self.add(target, nki.TensorCopyOp.make([a], buffer="sbuf", dtype=dtype))
        if tb.dtype != dtype or _buffer(b) != "sbuf":
            b = self.add(target, nki.TensorCopyOp.make([b], buffer="sbuf", dtype=dtype))
        if left in self.pretransposed:  # the tile is already the stationary [K, P]
            return self.add(target, nki.NcMatmulOp.make([a, b], buffer="psum"))
        transposed = self.add(target, nki.NcTransposeOp.make([a], buffer="psum"))
        if left in self.row_scaled:  # (x * g) @ w: x.T times g as a column, out of PSUM
            scale = self.row_column(self.row_scaled[left], target)
            stationary = self.add(target, nki.TensorScalarOp.make(
                [transposed, scale], op0="multiply", buffer="sbuf", dtype=dtype))
        else:
            stationary = self.add(target, nki.TensorCopyOp.make([transposed], buffer="sbuf"))
        return self.add(target, nki.NcMatmulOp.make([stationary, b], buffer="psum"))
