"""The naive evaluator: a generic form run with plain Python loops, the independent cross-check.

It shares nothing with the reference interpreter's kernels: it visits every point of the output
domain, then every point of the (possibly triangular) reduced domain with bounds recomputed from
the outer indices, reads operands exactly through the index maps (an out-of-range read is an
error, never clipped or wrapped), and computes in float64 (booleans stay booleans). Obviously
correct beats fast here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from axon.dialects.ax import TensorOp
from axon.dialects.form import scalar
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Read
from axon.interpreter.indexing import InterpreterError, bind_sizes, reduction_identity

_COMBINE: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "mul": lambda a, b: a * b, "max": np.maximum, "min": np.minimum}


def evaluate_form(form: GenericForm, inputs: Sequence[np.ndarray],
                  sizes: Mapping[str, int]) -> np.ndarray:
    """Evaluate `form` on `inputs` with loops; float64 result (bool when every value is bool)."""
    if len(inputs) != form.num_operands:
        raise InterpreterError(f"form takes {form.num_operands} operand(s), got {len(inputs)}")
    # float64 everywhere so the check does not inherit the interpreter's rounding
    arrays = [np.asarray(x) if np.asarray(x).dtype == np.bool_ else np.asarray(x, np.float64)
              for x in inputs]
    try:
        extents = [d.upper.evaluate(sizes) for d in form.parallel]
    except KeyError as err:
        raise InterpreterError(f"generic form: {err.args[0]}") from None
    values: list[Any] = []
    # 0/0 in mean over nothing is nan by definition, not a warning
    with np.errstate(all="ignore"):
        for point in itertools.product(*(range(e) for e in extents)):
            env = {**sizes, **{d.name: i for d, i in zip(form.parallel, point, strict=True)}}
            values.append(_point(form, arrays, env))
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.array(values, dtype=np.bool_).reshape(extents)
    return np.array(values, dtype=np.float64).reshape(extents)


def _point(form: GenericForm, arrays: Sequence[np.ndarray], env: dict[str, int]) -> Any:
    """The output value at one point of the parallel domain."""

    def index(expr: IntExpr, at: Mapping[str, int]) -> int:
        return expr.evaluate(at)

    def read(r: Read, at: Mapping[str, int]) -> Any:
        x = arrays[r.operand]
        idx = tuple(e.evaluate(at) for e in r.index)
        if len(idx) != x.ndim or any(not 0 <= i < n for i, n in zip(idx, x.shape, strict=True)):
            raise InterpreterError(f"read {r} at {dict(at)} is outside operand #{r.operand} "
                                   f"of shape {x.shape}")
        return x[idx]

    def body(at: Mapping[str, int]) -> Any:
        return scalar.evaluate(form.body, lambda r: read(r, at), lambda e: index(e, at))

    if form.reduction is None:
        return _plain(body(env))
    acc: Any = reduction_identity(form.reduction, np.dtype(np.float64))
    for at in _reduced_points(form, env):
        acc = _COMBINE[form.reduction](acc, _plain(body(at)))
    if form.finalize is None:
        return acc
    return _plain(scalar.evaluate(form.finalize, lambda r: read(r, env),
                                  lambda e: index(e, env), acc))


def _reduced_points(form: GenericForm, env: dict[str, int]) -> Iterator[dict[str, int]]:
    """Every point of the reduced domain, each dim's bounds evaluated under the outer dims."""

    def walk(j: int, at: dict[str, int]) -> Iterator[dict[str, int]]:
        if j == len(form.reduced):
            yield at
            return
        d = form.reduced[j]
        for i in range(d.lower.evaluate(at), d.upper.evaluate(at)):
            yield from walk(j + 1, {**at, d.name: i})

    return walk(0, env)


def _plain(value: Any) -> Any:
    """A scalar as float64 (bools stay bools), so accumulation is always in float64."""
    value = np.asarray(value)
    if value.dtype == np.bool_:
        return np.bool_(value)
    return np.float64(value)


def evaluate_op_naive(op: TensorOp, inputs: Sequence[np.ndarray],
                      sizes: Mapping[str, int] | None = None) -> np.ndarray:
    """Evaluate one op's generic form with loops; `sizes` defaults to binding the operand types
    against the input shapes (give it for ops whose sizes the operands cannot fix, e.g. iota)."""
    if sizes is None:
        sizes = bind_sizes([t.shape for t in op.tensor_types()],
                           [np.shape(x) for x in inputs], what="operand")
    return evaluate_form(op.generic_form(), inputs, sizes)
