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

from axon.dialects.form.interface import form_op, has_form
from axon.nugraph.cost import is_contraction

#: cut points tried per function, by default
CUTS_MAX = 2


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
    producer_ops = _slice(ops, {value}, stop=None)
    producer, producer_args = _function(f"{name}_stage1", func, producer_ops, [value], extra=None)
    rest = ops[-1]
    assert isinstance(rest, ReturnOp)
    consumer_ops = _slice(ops, set(rest.operands), stop=value)
    consumer, consumer_args = _function(f"{name}_stage2", func, consumer_ops,
                                        list(rest.operands), extra=value)
    return Split(name, cut_name(func, value), producer, consumer, producer_args, consumer_args)


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
              extra: SSAValue | None) -> tuple[FuncOp, tuple[int, ...]]:
    """A function of `ops` (cloned) returning `results`, taking the parameters of `func` they
    read (in `func`'s order) and, where given, `extra` as its last parameter; and the indices
    of those parameters in `func`."""
    params = list(func.body.block.args)
    read = {v for op in ops for v in op.operands} | set(results)
    taken = tuple(n for n, p in enumerate(params) if p in read)
    types = [params[n].type for n in taken] + ([extra.type] if extra is not None else [])
    block = Block(arg_types=types)
    mapping: dict[SSAValue, SSAValue] = {params[n]: block.args[k] for k, n in enumerate(taken)}
    if extra is not None:
        mapping[extra] = block.args[-1]
    for op in ops:
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping.update(zip(op.results, clone.results, strict=True))
    block.add_op(ReturnOp(*(mapping[r] for r in results)))
    made = FuncOp(name, (types, [r.type for r in results]), Region(block))
    return made, taken
