"""Instruction fusion in a lowered NKI kernel: each rewrite kept only when proved.

`lower.py` gives every tile op its own instructions; the ISA does more in one instruction
(reference/nki.md 3.1-3.4). `fuse_kernel` finds, in a lowered function, instruction pairs
that one instruction (or one instruction and a `[P, 1]` one) computes, rewrites a copy of the
function, and keeps the copy only when the verifier proves it equal to the function before
(`prove_equivalent`, the prover of the lowering's own proof): Refuted and Unknown are recorded
and never admitted. Softmax's rows, before:

    %4 = nki.tensor_reduce %3 {op = "maximum", ...}
    %5 = nki.tensor_scalar %3, %4 {op0 = "subtract", ...}
    %6 = nki.activation %5 {func = "exp", ...}
    %7 = nki.tensor_reduce %6 {op = "add", ...}

after (`activation-bias`, then `reduce-negate`, then `activation-reduce`):

    %4 = nki.tensor_reduce %3 {op = "maximum", negate = true, ...}
    %6 = nki.activation %3, %4 {func = "exp", ...}
    %7 = nki.activation_reduce %3, %4 {func = "exp", reduce_op = "add", ...}

(the emitter prints an activation and the activation_reduce of the same operands right after
it as one `nisa.activation_reduce` with both `dst` and `reduce_res`).

The rules (`RULES`, tried in this order, the chain first so that `x * s + b` reaches an
activation as one `tensor_scalar`; each a pattern over one block's dataflow: an anchor
instruction and the instruction that makes its operand, so finding them is one walk):

- `tensor-scalar-chain`: two one-op `tensor_scalar`s, the first used only by the second -> one
  `tensor_scalar` with op0 and op1;
- `activation-scale-bias`: an activation (or activation_reduce) without bias or scale of a
  `tensor_scalar` used only there, `x * s`, `x + b`, `x - b`, `b - x` or `x * s + b` (`s`, `b`
  a constant or a `[P, 1]` vector) -> the activation of `x` with `scale=` / `bias=` (a constant
  bias is a `[P, 1]` memset, a subtracted vector is negated by a `[P, 1]` tensor_scalar);
- `reduce-negate`: `-1 * tensor_reduce(x)` of a reduction used only there -> the reduction with
  `negate`;
- `activation-reduce`: a row sum (`tensor_reduce` add over the free axis) of an activation ->
  `activation_reduce` of the activation's operands (the activation stays where its result
  has other uses: both results, one instruction);
- `square-reduce`: a row sum of `x * x` -> `activation_reduce` with `square` (the product,
  where still used, becomes `activation` square beside it);
- `dma-transpose`: the PSUM-to-SBUF copy of a TensorE `nc_transpose` of a 2-byte tile that a
  `tile.load` (the kernel's `dma_copy`, or a batched block's DMA into its squeezed tile)
  brought in for it alone -> `dma_transpose` of the tile, which the emitter prints as one DMA
  transposing on its way from HBM. Every NeuronCore profile has the 2-D DMA transpose
  (docs/nki.md); the dialect admits 2-byte dtypes only, and the rule asks the same;
- `divide-reciprocal`: a `[P, F]` tile divided by a `[P, 1]` column (then, maybe, a second
  op: attention's `s / c - m`) -> the tile times the column's reciprocal (one `[P, 1]`
  `tensor_scalar`, 1 / c): the same pass, now one that ScalarE runs too (its
  `tensor_scalar` multiplies and adds, it does not divide), so the emitter's engine balance
  can move it off VectorE (softmax's `exp / sum`), and one an activation absorbs as its
  `scale` (`activation-scale-bias`);
- `column-scale-bias`: an activation without scale or bias of a `[P, 1]` column made by
  `tensor_scalar`s of constants (`+ eps`, in its fp32 pieces) after, optionally, a
  `tensor_tensor` dividing or multiplying it by a column of constants (a mean's count) ->
  the activation of the column with that column's reciprocal (or itself) as `scale` and the
  constants as a `bias` column (`func(s * (1/N) + eps)`, rmsnorm's rsqrt). The new columns
  read constants only, so the emitter computes them once before the grid
  (`emit._grid_invariant`): each program loses the `[P, 1]` VectorE instructions between
  its row sum and ScalarE's function.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import LoadOp
from axon.targets.nki.hoist import hoist_kernel
from axon.targets.nki.lower import LoweredKernel, lower_and_prove
from axon.targets.nki.squeeze import unit_lead
from axon.targets.nki.synthesized import Choice
from axon.verifier import Proved, Refuted, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET, ProofBudget
from axon.verifier.cache import process_cache


@dataclass(frozen=True)
class Rule:
    """A fusion: `find(anchor)` gives the matched instructions (the anchor first) or None;
    `rewrite(matched)` rewrites them in place (their block is a copy)."""

    name: str
    find: Callable[[Operation], tuple[Operation, ...] | None]
    rewrite: Callable[[tuple[Operation, ...]], None]


@dataclass(frozen=True)
class Attempt:
    """One fusion tried on a kernel: the rule, the instructions it matched (as `nki.x <- nki.y`,
    the anchor first) and the verdict: `proved` (admitted, `detail` the proof id), `refuted`
    (`detail` the counterexample), `unknown` (the reason) or `invalid` (an instruction of the
    rewrite or the rewritten kernel breaks an NKI rule: `detail` says which)."""

    rule: str
    matched: str
    verdict: str
    detail: str
    seconds: float


@dataclass(frozen=True)
class FusedKernel:
    """A lowered function after fusion, and every fusion tried on it."""

    func: FuncOp
    attempts: tuple[Attempt, ...]
    seconds: float

    def summary(self) -> str:
        """`fused 2 (activation-scale-bias, activation-reduce); refuted 0; unknown 0`."""
        proved = [a.rule if a.rule != "hoist-invariants" else f"{a.rule}: {a.matched}"
                  for a in self.attempts if a.verdict == "proved"]
        counts = {v: sum(1 for a in self.attempts if a.verdict == v)
                  for v in ("refuted", "unknown", "invalid")}
        named = f" ({', '.join(proved)})" if proved else ""
        text = f"fused {len(proved)}{named}"
        return text + "".join(f"; {v} {n}" for v, n in counts.items() if n or v != "invalid")


def fuse_kernel(func: FuncOp, budget: ProofBudget | None = None,
                rules: Sequence[Rule] | None = None) -> FusedKernel:
    """`func` (a lowered function) with every fusion of `rules` (default `RULES`) that the
    verifier proves: each match is rewritten on a copy of the current function, and the copy
    replaces it only when proved equal to it. A match is tried once."""
    start = time.perf_counter()
    current = func
    attempts: list[Attempt] = []
    tried: set[tuple[str, SSAValue]] = set()
    chosen = RULES if rules is None else tuple(rules)
    while True:
        match = _next_match(current, chosen, tried)
        if match is None:
            break
        rule, ops = match
        tried.add((rule.name, ops[0].results[0]))
        mapper: dict[SSAValue, SSAValue] = {}
        candidate = current.clone(value_mapper=mapper)
        copied = tuple(_owner(mapper[op.results[0]]) for op in ops)
        matched = " <- ".join(op.name for op in ops)
        began = time.perf_counter()
        try:
            rule.rewrite(copied)
            candidate.verify()
        except (ShapeError, VerifyException) as err:
            attempts.append(Attempt(rule.name, matched, "invalid", str(err).splitlines()[0],
                                    time.perf_counter() - began))
            continue
        verdict = prove_equivalent(candidate, current,
                                   budget=DEFAULT_BUDGET if budget is None else budget,
                                   cache=process_cache())
        seconds = time.perf_counter() - began
        if isinstance(verdict, Proved):
            attempts.append(Attempt(rule.name, matched, "proved", verdict.proof_id, seconds))
            tried = {(name, mapper[v]) for name, v in tried if v in mapper}
            current = candidate
        elif isinstance(verdict, Refuted):
            attempts.append(Attempt(rule.name, matched, "refuted",
                                    str(verdict.counterexample), seconds))
        else:
            attempts.append(Attempt(rule.name, matched, "unknown",
                                    str(getattr(verdict, "reason", verdict.verdict)), seconds))
    return FusedKernel(current, tuple(attempts), time.perf_counter() - start)


def _owner(value: SSAValue) -> Operation:
    owner = value.owner
    assert isinstance(owner, Operation)
    return owner


def _next_match(func: FuncOp, rules: Sequence[Rule], tried: set[tuple[str, SSAValue]]
                ) -> tuple[Rule, tuple[Operation, ...]] | None:
    """The first untried match, rules in order, instructions in program order."""
    ops = [op for op in func.walk() if isinstance(op, nki.NkiOp)]
    for rule in rules:
        for op in ops:
            if (rule.name, op.results[0]) in tried:
                continue
            found = rule.find(op)
            if found is not None:
                return rule, found
    return None


# ---- helpers ------------------------------------------------------------------------------------
def _type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def _maker(value: SSAValue, cls: type[Operation] | tuple[type[Operation], ...],
           anchor: Operation, sole: bool = True) -> Any:
    """The instruction of class `cls` that made `value`, in `anchor`'s block, whose f32 result
    (`sole`: used only by `anchor`); None otherwise."""
    owner = value.owner
    if not isinstance(owner, cls) or not isinstance(owner, Operation):
        return None
    if owner.parent_block() is not anchor.parent_block() or _type(value).dtype != "f32":
        return None
    if sole and not (value.has_one_use() and next(iter(value.uses)).operation is anchor):
        return None
    return owner


def _props(op: Operation) -> dict[str, Any]:
    """An instruction's properties as `make` takes them."""
    assert isinstance(op, nki.NkiOp)
    return dict(op.attrs())


def _erase(op: Operation) -> None:
    block = op.parent_block()
    assert block is not None
    block.erase_op(op)


def _attrs(op: Operation, **changes: Any) -> dict[str, Any]:
    """`op`'s properties as `make` takes them, with `changes` (a None value drops one)."""
    merged = {**_props(op), **changes}
    return {k: v for k, v in merged.items() if v is not None}


def _replace(old: Operation, new: Operation) -> None:
    """`new` in place of `old`, its uses moved to `new`."""
    block = old.parent_block()
    assert block is not None
    block.insert_op_before(new, old)
    old.results[0].replace_all_uses_with(new.results[0])
    block.erase_op(old)


def _insert_before(anchor: Operation, op: Operation) -> SSAValue:
    block = anchor.parent_block()
    assert block is not None
    block.insert_op_before(op, anchor)
    return op.results[0]


def _steps(ts: Operation) -> list[tuple[str, float | SSAValue, bool]]:
    """A `tensor_scalar`'s (op, operand, reverse) steps, an operand a constant or a vector."""
    attrs = _props(ts)
    vectors = iter(ts.operands[1:])
    steps: list[tuple[str, float | SSAValue, bool]] = []
    for k in (0, 1):
        op = attrs.get(f"op{k}")
        if op is None:
            continue
        scalar = attrs.get(f"scalar{k}")
        steps.append((str(op), float(scalar) if scalar is not None else next(vectors),
                      bool(attrs.get(f"reverse{k}"))))
    return steps


def _is_row_sum(op: Operation) -> bool:
    """A `tensor_reduce` add over the free axis of a `[P, F]` tile, kept as `[P, 1]`."""
    if not isinstance(op, nki.TensorReduceOp):
        return False
    attrs = op.attrs()
    return (attrs.get("op") == "add" and tuple(int(a) for a in attrs.get("axes", ())) == (1,)
            and bool(attrs.get("keepdims")) and not attrs.get("negate")
            and _type(op.operands[0]).rank == 2)


# ---- activation-scale-bias ----------------------------------------------------------------------
#: an affine step `x * scale + bias`: scale a constant or a vector (None: 1), bias a constant,
#: a vector, or a vector to negate (None: 0)
_Affine = tuple[float | SSAValue | None, float | SSAValue | None, bool]


def _affine(steps: list[tuple[str, float | SSAValue, bool]]) -> _Affine | None:
    """`x * scale + bias` (the bool: bias is subtracted) of one or two steps, else None."""
    if len(steps) == 1:
        ((op, operand, reverse),) = steps
        if op == "multiply":
            return operand, None, False
        if op == "add":
            return None, operand, False
        if op == "subtract":
            return (-1.0, operand, False) if reverse else (None, operand, True)
        return None
    (op0, s, r0), (op1, b, r1) = steps
    if op0 == "multiply" and op1 in ("add", "subtract") and not r1:
        return s, b, op1 == "subtract"
    return None


def _find_activation_scale_bias(op: Operation) -> tuple[Operation, ...] | None:
    if not isinstance(op, (nki.ActivationOp, nki.ActivationReduceOp)) or len(op.operands) != 1:
        return None
    if float(op.attrs().get("scale") or 1.0) != 1.0:
        return None
    ts = _maker(op.operands[0], nki.TensorScalarOp, op, sole=False)
    partner = None if ts is None else _partner(ts, op)
    if ts is not None and partner is None and not _sole_or_chained(ts, op):
        return None
    affine = None if ts is None else _affine(_steps(ts))
    if affine is None:
        return None
    scale, bias, negated = affine
    # a constant bias, a negated one or a vector scale alone take a [P, 1] instruction of
    # their own: no gain where the data is a [P, 1] column too
    extra = (bias is not None and (negated or not isinstance(bias, SSAValue))) \
        or (isinstance(scale, SSAValue) and bias is None)
    if extra and _type(ts.operands[0]).shape[1] == IntExpr.const(1):
        return None
    if partner is None:
        return op, ts
    block = op.parent_block()
    assert block is not None
    first, second = sorted((op, partner), key=block.get_operation_index)
    return first, ts, second  # the new columns go before the first of the two


def _partner(ts: Operation, act: Operation) -> Operation | None:
    """The other reader of `ts` where it is `act`'s twin: an activation and the
    `activation_reduce` of the same function and operands beside it (`activation-reduce`
    made the pair, which the emitter prints as one instruction); the two absorb `ts`
    together."""
    readers = [use.operation for use in ts.results[0].uses]
    if len(readers) != 2:
        return None
    (other,) = [r for r in readers if r is not act] or [None]
    if not isinstance(other, (nki.ActivationOp, nki.ActivationReduceOp)) \
            or type(other) is type(act) or other.parent_block() is not act.parent_block() \
            or list(other.operands) != list(act.operands) \
            or _props(other).get("func") != _props(act).get("func") \
            or float(_props(other).get("scale") or 1.0) != 1.0:
        return None
    return other


def _sole_or_chained(ts: Operation, act: Operation) -> bool:
    """Is `act` the only reader of `ts`, or is the other a one-op `tensor_scalar` that
    `tensor-scalar-chain` then joins to `ts` (layernorm's `x - mean`, squared and summed by
    the activation and multiplied by the rstd: absorbing it leaves the product its sole
    reader)?"""
    readers = [use.operation for use in ts.results[0].uses]
    others = [r for r in readers if r is not act]
    if len(readers) == 1:
        return True
    return len(readers) == 2 and len(others) == 1 and isinstance(others[0], nki.TensorScalarOp) \
        and others[0].operands[0] is ts.results[0] and len(_steps(others[0])) == 1 \
        and others[0].parent_block() is ts.parent_block()


def _rewrite_activation_scale_bias(ops: tuple[Operation, ...]) -> None:
    act, ts, *partner = ops
    affine = _affine(_steps(ts))
    assert affine is not None
    scale, bias, negated = affine
    data = ts.operands[0]
    rows = [_type(data).shape[0], IntExpr.const(1)]

    def column(value: float) -> SSAValue:
        return _insert_before(act, nki.MemsetOp.make([], value=value, shape=rows, dtype="f32",
                                                     buffer="sbuf"))

    bias_vector: SSAValue | None = None
    if isinstance(bias, SSAValue):
        bias_vector = bias if not negated else _insert_before(act, nki.TensorScalarOp.make(
            [bias], op0="multiply", scalar0=-1.0, buffer="sbuf", dtype="f32"))
    elif bias is not None:
        bias_vector = column(-bias if negated else bias)
    operands = [data]
    constant_scale: float | None = None
    if isinstance(scale, SSAValue):
        operands += [bias_vector if bias_vector is not None else column(0.0), scale]
    else:
        constant_scale = scale
        operands += [bias_vector] if bias_vector is not None else []
    for reader in (act, *partner):
        assert isinstance(reader, (nki.ActivationOp, nki.ActivationReduceOp))
        _replace(reader, type(reader).make(operands, **_attrs(reader, scale=constant_scale)))
    if not ts.results[0].uses:
        _erase(ts)


# ---- reduce-negate ------------------------------------------------------------------------------
def _find_reduce_negate(op: Operation) -> tuple[Operation, ...] | None:
    if not isinstance(op, nki.TensorScalarOp) or _steps(op) != [("multiply", -1.0, False)]:
        return None
    reduce = _maker(op.operands[0], nki.TensorReduceOp, op)
    if reduce is None or reduce.attrs().get("negate") or reduce.attrs().get("op") == "multiply":
        return None
    return op, reduce


def _rewrite_reduce_negate(ops: tuple[Operation, ...]) -> None:
    neg, reduce = ops
    _replace(neg, nki.TensorReduceOp.make(list(reduce.operands), **_attrs(
        reduce, negate=True, dtype=_type(neg.results[0]).dtype)))
    _erase(reduce)


# ---- tensor-scalar-chain ------------------------------------------------------------------------
def _find_tensor_scalar_chain(op: Operation) -> tuple[Operation, ...] | None:
    if not isinstance(op, nki.TensorScalarOp) or len(_steps(op)) != 1:
        return None
    first = _maker(op.operands[0], nki.TensorScalarOp, op)
    if first is None or len(_steps(first)) != 1:
        return None
    return op, first


def _rewrite_tensor_scalar_chain(ops: tuple[Operation, ...]) -> None:
    second, first = ops
    a, b = _props(first), _props(second)
    engine = a.get("engine") if a.get("engine") == b.get("engine") else None
    _replace(second, nki.TensorScalarOp.make(
        [*first.operands, *second.operands[1:]], op0=a["op0"], scalar0=a.get("scalar0"),
        reverse0=bool(a.get("reverse0")), op1=b["op0"], scalar1=b.get("scalar0"),
        reverse1=bool(b.get("reverse0")), buffer=b["buffer"], dtype=b.get("dtype"),
        **({"engine": engine} if engine else {})))
    _erase(first)


# ---- activation-reduce, square-reduce -----------------------------------------------------------
def _find_activation_reduce(op: Operation) -> tuple[Operation, ...] | None:
    if not _is_row_sum(op):
        return None
    act = _maker(op.operands[0], nki.ActivationOp, op, sole=False)
    return None if act is None else (op, act)


def _rewrite_activation_reduce(ops: tuple[Operation, ...]) -> None:
    reduce, act = ops
    fused = nki.ActivationReduceOp.make(list(act.operands), **_attrs(
        act, reduce_op="add", buffer=_props(reduce)["buffer"],
        dtype=_type(reduce.results[0]).dtype))
    _place_reduction(reduce, act, fused)


def _place_reduction(reduce: Operation, elementwise: Operation, fused: Operation) -> None:
    """`fused` right after `elementwise` in place of `reduce`; `elementwise` erased when
    nothing else reads it."""
    block = elementwise.parent_block()
    assert block is not None
    block.insert_op_after(fused, elementwise)
    reduce.results[0].replace_all_uses_with(fused.results[0])
    block.erase_op(reduce)
    if not elementwise.results[0].uses:
        block.erase_op(elementwise)


def _find_square_reduce(op: Operation) -> tuple[Operation, ...] | None:
    if not _is_row_sum(op):
        return None
    product = _maker(op.operands[0], nki.TensorTensorOp, op, sole=False)
    if product is None or product.attrs().get("op") != "multiply" \
            or product.operands[0] is not product.operands[1]:
        return None
    return op, product


def _rewrite_square_reduce(ops: tuple[Operation, ...]) -> None:
    reduce, product = ops
    (x, _) = product.operands
    fused = nki.ActivationReduceOp.make([x], func="square", reduce_op="add",
                                        buffer=_props(reduce)["buffer"],
                                        dtype=_type(reduce.results[0]).dtype)
    if product.results[0].has_one_use():
        _place_reduction(reduce, product, fused)
        return
    square = nki.ActivationOp.make([x], func="square", buffer=_props(product)["buffer"],
                                   dtype=_type(product.results[0]).dtype)
    _replace(product, square)
    _place_reduction(reduce, square, fused)


# ---- dma-transpose ------------------------------------------------------------------------------
def _find_dma_transpose(op: Operation) -> tuple[Operation, ...] | None:
    if not isinstance(op, nki.TensorCopyOp) or op.attrs().get("buffer") != "sbuf":
        return None
    transpose = op.operands[0].owner
    if not isinstance(transpose, nki.NcTransposeOp) or transpose.parent_block() is not \
            op.parent_block() or not transpose.results[0].has_one_use():
        return None
    data = transpose.operands[0]
    dtype = _type(data).dtype
    if dtype not in ("bf16", "f16") or _type(data).rank != 2 \
            or _type(op.results[0]).dtype != dtype:
        return None
    # only a tile loaded for this transpose alone: the DMA transpose then replaces the load;
    # of a tile computed on chip it would be one more DMA (SBUF to SBUF, at half the rate, its
    # fixed latency in the loop's dependence chain), dearer than TensorE's transpose
    if not (data.has_one_use() and _loaded_alone(data)):
        return None
    return op, transpose


def _loaded_alone(tile: SSAValue) -> bool:
    """`tile` is what a load brings in: the load's own tile, or the tile a batched kernel's
    block `[1, 1, BK, D]` is held as (`squeeze.py`: the lowering's DMA reshape of a load
    used only there, which the emitter prints as the load itself)."""
    owner = tile.owner
    if isinstance(owner, LoadOp):
        return True
    if not (isinstance(owner, nki.DmaCopyOp) and owner.buffer_name() == "sbuf"):
        return False
    (block,) = owner.operands
    return isinstance(block.owner, LoadOp) and block.has_one_use() \
        and bool(unit_lead(_type(block), _type(tile)))


def _rewrite_dma_transpose(ops: tuple[Operation, ...]) -> None:
    copy, transpose = ops
    _replace(copy, nki.DmaTransposeOp.make([transpose.operands[0]], buffer="sbuf"))
    _erase(transpose)


# ---- divide-reciprocal -------------------------------------------------------------------------
def _find_divide_reciprocal(op: Operation) -> tuple[Operation, ...] | None:
    """A `[P, F]` tile divided by a `[P, 1]` column (a `tensor_scalar` whose first op divides,
    not reversed; a second op may follow: attention's `s / sqrt(D) - max`)."""
    if not isinstance(op, nki.TensorScalarOp) or op.attrs().get("engine") not in (None, "vector"):
        return None
    steps = _steps(op)
    if steps[0][0] != "divide" or steps[0][2] or not isinstance(steps[0][1], SSAValue):
        return None
    if _type(op.operands[0]).shape[1] == IntExpr.const(1):
        return None  # a column by a column: nothing to gain
    return (op,)


def _rewrite_divide_reciprocal(ops: tuple[Operation, ...]) -> None:
    (divide,) = ops
    data, column, *rest = divide.operands
    reciprocal = _insert_before(divide, nki.TensorScalarOp.make(
        [column], op0="divide", scalar0=1.0, reverse0=True, buffer="sbuf", dtype="f32"))
    _replace(divide, nki.TensorScalarOp.make([data, reciprocal, *rest], **_attrs(
        divide, op0="multiply")))


# ---- column-scale-bias --------------------------------------------------------------------------
#: how far back a column's instructions are followed to see that they read only constants
_CONSTANT_DEPTH = 4


def _constant_made(value: SSAValue, depth: int = _CONSTANT_DEPTH) -> bool:
    """Is `value` an instruction's result computed from constants alone (memsets, and
    instructions of those: `lower.py`'s count, a reduction of a ones tile)? The emitter runs
    such instructions once, before the grid (`emit._grid_invariant`)."""
    owner = value.owner
    if isinstance(owner, nki.MemsetOp):
        return True
    if depth == 0 or not isinstance(owner, nki.NkiOp) or isinstance(owner, nki.DmaCopyOp) \
            or not owner.operands:
        return False
    return all(_constant_made(v, depth - 1) for v in owner.operands)


def _constant_steps(steps: list[tuple[str, float | SSAValue, bool]]
                    ) -> tuple[list[float], list[tuple[str, float]]] | None:
    """`tensor_scalar` steps of constants, in order, as `x * k0 * k1 ... + bias`: the
    multipliers and the steps that make the bias from 0 (`add c`, `subtract c`, and
    `multiply k` once a bias is there); None for a vector operand, a reversed step or another
    op."""
    scale: list[float] = []
    bias: list[tuple[str, float]] = []
    for op, operand, reverse in steps:
        if isinstance(operand, SSAValue) or reverse or op not in ("add", "subtract",
                                                                   "multiply"):
            return None
        if op == "multiply":
            scale.append(operand)
            if bias:
                bias.append((op, operand))
        else:
            bias.append((op, operand))
    return scale, bias


def _find_column_scale_bias(op: Operation) -> tuple[Operation, ...] | None:
    """An activation without scale or bias of a `[P, 1]` column `s` through `tensor_scalar`s of
    constants (rmsnorm's `+ eps` as fp32 pieces), after, optionally, a `tensor_tensor` that
    divides or multiplies `s` by a column `c` made of constants (a mean's count), each read only
    by the next: the anchor, the `tensor_scalar`s from the last back, then the `tensor_tensor`
    if any."""
    if not isinstance(op, (nki.ActivationOp, nki.ActivationReduceOp)) or len(op.operands) != 1 \
            or float(op.attrs().get("scale") or 1.0) != 1.0:
        return None
    chain: list[Operation] = []
    reader = op
    while True:
        ts = _maker(reader.operands[0], nki.TensorScalarOp, reader)
        if ts is None or _type(ts.results[0]).shape[1] != IntExpr.const(1) \
                or _constant_steps(_steps(ts)) is None:
            break
        chain.append(ts)
        reader = ts
    if not chain:
        return None
    tt = _maker(reader.operands[0], nki.TensorTensorOp, reader)
    if tt is not None and tt.attrs().get("op") in ("divide", "multiply") \
            and _constant_made(tt.operands[1]) and _type(tt.operands[1]).dtype == "f32":
        chain.append(tt)
    # s: the column the activation reads in the end; constant-made, all of it runs before the
    # grid already and there is nothing to gain
    s = chain[-1].operands[0]
    if _constant_made(s) or _type(s).shape[1] != IntExpr.const(1):
        return None
    return (op, *chain)


def _rewrite_column_scale_bias(ops: tuple[Operation, ...]) -> None:
    act, *chain = ops
    tt = chain.pop() if isinstance(chain[-1], nki.TensorTensorOp) else None
    composed = _constant_steps([step for ts in reversed(chain) for step in _steps(ts)])
    assert composed is not None
    multipliers, bias_steps = composed
    s = (tt or chain[-1]).operands[0]
    rows = [_type(s).shape[0], IntExpr.const(1)]

    def column(value: float) -> SSAValue:
        return _insert_before(act, nki.MemsetOp.make([], value=value, shape=rows, dtype="f32",
                                                     buffer="sbuf"))

    def apply(start: SSAValue, steps: list[tuple[str, float]]) -> SSAValue:
        value = start
        while steps:
            (op0, k0), *steps = steps
            attrs: dict[str, Any] = {"op0": op0, "scalar0": k0}
            if steps:
                (op1, k1), *steps = steps
                attrs |= {"op1": op1, "scalar1": k1}
            value = _insert_before(act, nki.TensorScalarOp.make(
                [value], buffer="sbuf", dtype="f32", **attrs))
        return value

    scale: SSAValue | None = None
    if tt is not None:
        c = tt.operands[1]
        scale = c if _props(tt).get("op") == "multiply" else _insert_before(
            act, nki.TensorScalarOp.make([c], op0="divide", scalar0=1.0, reverse0=True,
                                         buffer="sbuf", dtype="f32"))
        scale = apply(scale, [("multiply", k) for k in multipliers])
    elif multipliers:
        scale = apply(column(multipliers[0]), [("multiply", k) for k in multipliers[1:]])
    first = bias_steps[0] if bias_steps else ("add", 0.0)
    # the first step adds to 0 (or subtracts from it): the memset's value, negated exactly
    bias = apply(column(first[1] if first[0] == "add" else -first[1]), bias_steps[1:])
    assert isinstance(act, (nki.ActivationOp, nki.ActivationReduceOp))
    operands = [s, bias] + ([scale] if scale is not None else [])
    _replace(act, type(act).make(operands, **_attrs(act, scale=None)))
    for op in (*chain, *((tt,) if tt is not None else ())):
        _erase(op)


RULES: tuple[Rule, ...] = (
    Rule("tensor-scalar-chain", _find_tensor_scalar_chain, _rewrite_tensor_scalar_chain),
    Rule("activation-scale-bias", _find_activation_scale_bias, _rewrite_activation_scale_bias),
    Rule("reduce-negate", _find_reduce_negate, _rewrite_reduce_negate),
    Rule("activation-reduce", _find_activation_reduce, _rewrite_activation_reduce),
    Rule("square-reduce", _find_square_reduce, _rewrite_square_reduce),
    Rule("dma-transpose", _find_dma_transpose, _rewrite_dma_transpose),
    Rule("divide-reciprocal", _find_divide_reciprocal, _rewrite_divide_reciprocal),
    Rule("column-scale-bias", _find_column_scale_bias, _rewrite_column_scale_bias),
)


def lower_and_fuse(func: FuncOp, budget: ProofBudget | None = None,
                   choices: Mapping[str, Choice] | None = None,
                   rules: Sequence[Rule] | None = None
                   ) -> tuple[LoweredKernel, FusedKernel]:
    """`lower.lower_and_prove` of a tiled function (with `choices`: synthesized lowerings of
    its tile ops, `synthesized.py`), then `fuse_kernel` of the lowering and
    `hoist.hoist_kernel` of the fused function (its attempt, where anything moves, last among
    the fusions'): the result with the lowering's proof id (each rewrite has its own, in the
    record); Refused as `lower_and_prove` is. Hoisting after fusion, not before: it then
    takes the constant columns fusion makes (`divide-reciprocal`'s `1 / c`) out of the loops
    too, and the tile it shares keeps its other uses through fusion, so gqa's query tile
    stays on TensorE's transpose (534 us at B=1, HKV=2, G=4, S=L=512 on trn2) rather than a
    DMA transpose at each program's start (688 us, hoisting first). `rules`: the fusions to
    try (default `RULES`; none for the naive lowering, which fuses no instructions)."""
    lowered = lower_and_prove(func, budget, choices)
    fused = fuse_kernel(lowered.func, budget, rules)
    moved = hoist_kernel(fused.func, budget)
    if moved.verdict != "unchanged":
        fused = dataclasses.replace(fused, func=moved.func, seconds=fused.seconds + moved.seconds,
                                    attempts=(*fused.attempts, Attempt(
                                        "hoist-invariants",
                                        f"{moved.hoisted} hoisted, {moved.shared} shared",
                                        moved.verdict, moved.detail, moved.seconds)))
    return LoweredKernel(fused.func, lowered.proof_id, lowered.seconds + fused.seconds), fused
