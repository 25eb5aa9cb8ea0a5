"""A program cut in two: a stage that writes one intermediate to memory, and a stage that reads it.

A tiled kernel holds its whole function (`tiling.kernels`), which is the best plan while the
intermediates stay on chip and the worst when a reduction is recomputed by every program:
`x @ rowsum(w)` in one kernel sums all of `w` again for each row block of `x`, where a first
launch could sum it once. Cutting a function at a value V gives two functions:

- the *producer*: the ops V depends on, taking the parameters they read, returning V;
- the *consumer*: the function with V's definition replaced by a new last parameter (the ops
  only V needed are dropped; an op the rest also reads is kept there, computed again).

Each stage is tiled and proved like any program (`tiling.search`). The staged program,
`consumer(params, producer(params))`, is the function by substitution: every use of V reads
V's value instead of its definition, which is the definition's meaning, so it needs no further
proof (and the Triton cascade still checks the emitted launches against the program).

The intermediate's dtype (`intermediate_dtype`): a kernel computes in float32 whatever the
program's dtype (on chip a value is rounded to bf16 only where the program casts it or a dot
takes it as an operand), and so does an intermediate in memory where rounding it would cost
accuracy: V made by a reduction in a float narrower than float32 (bf16, f16), feeding further
arithmetic, is kept in float32 between the stages (not a max or min of elements, which the
narrow type holds exactly). The producer's reduction becomes an `ax.generic` of its own form in
f32, and each consumer op that reads it (through ops that only move data, which stay f32) an
`ax.generic` of its own form and dtype: it computes from the float32 value and rounds its own
result as before. Over the reals, which the proofs reason in, nothing changes (a rounding step
less); the cascade checks the launches against the program as before. 08_gemm_sum_scale's
`x @ rowsum(W)`: the row sum of a 4096-column W rounded to bf16 put the result 0.2 off the
float32 reference. Not widened: a value that a contraction reads as a matrix (two of its loop
dims: the matrix unit's operand, which the dot takes in the program's dtype, rounded as the
emitter rounds a fused one), and a value the consumer only moves or returns.

Where to cut (`cut_points`): an operand of a contraction that ops compute (rmsnorm(x) before
`@ w`: the plan an eager framework runs, a normalization kernel then a GEMM), then the result of
a reduction (a contraction included) that the function does not return; each in the
function's order, at most `limit` of them, and only where both stages reduce: a stage of maps
alone is a prologue or an epilogue that the other stage's kernel does better fused (the Triton
emitter splits a GEMM's elementwise prologue off by itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.ax import GenericOp, TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.interface import form_op, has_form
from axon.dialects.form.scalar import Read
from axon.nugraph.cost import is_contraction

#: cut points tried per function, by default
CUTS_MAX = 2
#: the dtype a narrow float reduction's result is kept in between two stages
WIDE_DTYPE = "f32"


@dataclass(frozen=True)
class Split:
    """A function cut at one value (see the module docstring)."""

    function: str
    """The function cut."""
    value: str
    """What was cut: the defining op's name and its position in the function (`ax.sum#0`)."""
    producer: FuncOp
    consumer: FuncOp
    producer_args: tuple[int, ...]
    """The function's parameters the producer takes, in its order (indices)."""
    consumer_args: tuple[int, ...]
    """The function's parameters the consumer takes before the producer's result (its last)."""
    dtype: str = ""
    """The intermediate's dtype in memory (`intermediate_dtype`)."""
    widened: str = ""
    """Why the intermediate is kept wider than the program's value (empty: it is not)."""


def cut_points(func: FuncOp, limit: int = CUTS_MAX) -> list[SSAValue]:
    """The values of `func` to cut at (see the module docstring), at most `limit`."""
    ops = _body(func)
    returned = set(ops[-1].operands) if ops and isinstance(ops[-1], ReturnOp) else set()
    operands: list[SSAValue] = []
    reduced: list[SSAValue] = []
    for op in ops:
        if not has_form(op) or len(op.results) != 1:
            continue
        form = form_op(op).meaning().form
        if form.reduction is not None:
            reduced.append(op.results[0])
        if is_contraction(form):
            operands += [v for v in op.operands if isinstance(v.owner, Operation)]
    found: list[SSAValue] = []
    for value in sorted(operands, key=lambda v: ops.index(v.owner)) + reduced:  # type: ignore[arg-type]
        if value in returned or value in found or not _reads_params(value):
            continue
        if _reduces(_slice(ops, {value}, stop=None)) and \
                _reduces(_slice(ops, returned, stop=value)):
            found.append(value)
    return found[:limit]


def split_function(func: FuncOp, value: SSAValue) -> Split:
    """`func` cut at `value` (an op result of its body; see the module docstring)."""
    ops = _body(func)
    owner = value.owner
    assert isinstance(owner, Operation) and owner in ops, "a value of the function's body"
    name = func.sym_name.data
    dtype, why = _intermediate(value)
    wide = {value} if why else set()
    producer_ops = _slice(ops, {value}, stop=None)
    producer, producer_args = _function(f"{name}_stage1", func, producer_ops, [value],
                                        extra=None, wide=wide)
    rest = ops[-1]
    assert isinstance(rest, ReturnOp)
    consumer_ops = _slice(ops, set(rest.operands), stop=value)
    consumer, consumer_args = _function(f"{name}_stage2", func, consumer_ops,
                                        list(rest.operands), extra=value, wide=wide)
    return Split(name, cut_name(func, value), producer, consumer, producer_args, consumer_args,
                 dtype, why)


def intermediate_dtype(value: SSAValue) -> str:
    """The dtype `value` takes in memory when its function is cut at it (see the module
    docstring): `WIDE_DTYPE` for a narrow float reduction's result that feeds arithmetic, else
    its own."""
    return _intermediate(value)[0]


def _intermediate(value: SSAValue) -> tuple[str, str]:
    """`intermediate_dtype` and why it is wider than `value`'s own (empty: it is not)."""
    t = value.type
    assert isinstance(t, TensorType)
    own = DTYPES[t.dtype]
    owner = value.owner
    if (not own.is_float or own.storage.itemsize >= DTYPES[WIDE_DTYPE].storage.itemsize
            or not has_form(owner) or not _rounds(form_op(owner).meaning().form)):
        return t.dtype, ""
    arithmetic = False
    todo, seen = [value], {value}
    while todo:  # the uses of `value`, through ops that only move it
        v = todo.pop()
        for use in v.uses:
            op = use.operation
            if not has_form(op) or _matrix_operand(op, use.index):
                return t.dtype, ""  # returned (moved) as it is, or a dot's operand
            if not _moves(op):
                arithmetic = True
            elif op.results[0] not in seen:
                seen.add(op.results[0])
                todo.append(op.results[0])
    if not arithmetic:
        return t.dtype, ""
    return WIDE_DTYPE, f"a {t.dtype} {owner.name} result that feeds arithmetic"


def _rounds(form: GenericForm) -> bool:
    """Whether `form` reduces to a value its dtype may not hold: a sum, a product, a mean, a
    contraction; not a max or min of its operand's own elements (one of them, exact)."""
    if form.reduction is None:
        return False
    return not (form.reduction in ("max", "min") and isinstance(form.body, Read)
                and form.finalize is None)


def _moves(op: Operation) -> bool:
    """Whether `op` only moves its one operand's elements (a transpose, reshape, broadcast,
    slice: its form's body is a read, no reduction)."""
    form = form_op(op).meaning().form
    return form.reduction is None and isinstance(form.body, Read) and len(op.operands) == 1


def _matrix_operand(op: Operation, operand: int) -> bool:
    """Whether `op` is a contraction that reads its operand #`operand` as a matrix: with two
    of its loop dims (a dot's operand on the matrix unit; a vector of a mat-vec reads one)."""
    form = form_op(op).meaning().form
    if not is_contraction(form):
        return False
    names = set(form.loop_names)
    return any(len({s for at in r.index for s in at.symbols() & names}) >= 2
               for r in form.reads() if r.operand == operand)


def cut_name(func: FuncOp, value: SSAValue) -> str:
    """How a cut at `value` is shown: its defining op's name and position among the ops of
    that name in `func` (`ax.sum#0`)."""
    owner = value.owner
    assert isinstance(owner, Operation)
    same = [op for op in _body(func) if op.name == owner.name]
    return f"{owner.name}#{same.index(owner)}"


def _body(func: FuncOp) -> list[Operation]:
    return list(func.body.block.ops)


def _reduces(ops: list[Operation]) -> bool:
    """Whether one of `ops` reduces (a contraction included)."""
    return any(has_form(op) and form_op(op).meaning().form.reduction is not None for op in ops)


def _reads_params(value: SSAValue) -> bool:
    """Whether `value` depends on a parameter (a block argument) of its function."""
    seen: set[SSAValue] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if not isinstance(v.owner, Operation):
            return True
        todo.extend(v.owner.operands)
    return False


def _slice(ops: list[Operation], wanted: set[SSAValue], stop: SSAValue | None
           ) -> list[Operation]:
    """The ops of `ops` that `wanted` depends on, in order; `stop` is read as given (its
    definition is not followed)."""
    need = set(wanted)
    kept: list[Operation] = []
    for op in reversed(ops):
        if isinstance(op, ReturnOp) or not any(r in need for r in op.results):
            continue
        if stop is not None and stop in op.results:
            continue
        kept.append(op)
        need.update(op.operands)
    kept.reverse()
    return kept


def _function(name: str, func: FuncOp, ops: list[Operation], results: list[SSAValue],
              extra: SSAValue | None, wide: set[SSAValue]) -> tuple[FuncOp, tuple[int, ...]]:
    """A function of `ops` (cloned) returning `results`, taking the parameters of `func` they
    read (in `func`'s order) and, where given, `extra` as its last parameter; and the indices
    of those parameters in `func`. The values of `wide` are made (or taken) in `WIDE_DTYPE`,
    and the ops reading them rebuilt as `ax.generic`s of their own forms (see the module
    docstring)."""
    params = list(func.body.block.args)
    read = {v for op in ops for v in op.operands} | set(results)
    taken = tuple(n for n, p in enumerate(params) if p in read)
    types = [params[n].type for n in taken]
    if extra is not None:
        types.append(_widened(extra.type) if extra in wide else extra.type)
    block = Block(arg_types=types)
    mapping: dict[SSAValue, SSAValue] = {params[n]: block.args[k] for k, n in enumerate(taken)}
    widened: set[SSAValue] = set()
    if extra is not None:
        mapping[extra] = block.args[-1]
        if extra in wide:
            widened.add(block.args[-1])
    for op in ops:
        operands = [mapping[v] for v in op.operands]
        reads_wide = any(v in widened for v in operands)
        clone: Operation
        if op.results[0] in wide or reads_wide:
            keeps = op.results[0] in wide or _moves(op)
            t = op.results[0].type
            assert isinstance(t, TensorType)
            clone = GenericOp.make(operands, form=str(form_op(op).meaning().form),
                                   dtype=WIDE_DTYPE if keeps else t.dtype)
            if keeps:
                widened.add(clone.results[0])
        else:
            clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping.update(zip(op.results, clone.results, strict=True))
    block.add_op(ReturnOp(*(mapping[r] for r in results)))
    made = FuncOp(name, (types, [mapping[r].type for r in results]), Region(block))
    return made, taken


def _widened(t: object) -> TensorType:
    assert isinstance(t, TensorType)
    return TensorType(t.shape, WIDE_DTYPE)
