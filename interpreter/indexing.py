"""Shared pieces of the interpreters: the error type, size binding and vectorized index maths.

Both the reference interpreter and the naive evaluator bind size symbols the same way, so the
binding lives here once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from axon.dialects.form.intexpr import Atom, IntExpr


class InterpreterError(RuntimeError):
    """A program could not be run: bad inputs, an unbound size, an unsupported op."""


class StrayReadError(InterpreterError):
    """A read outside its operand at a point whose value is used: the program has no value
    there (the interpreter never invents one)."""


def bind_sizes(dims_per_param: Sequence[Sequence[IntExpr]], shapes: Sequence[Sequence[int]],
               sizes: Mapping[str, int] | None = None, what: str = "argument"
               ) -> dict[str, int]:
    """Unify concrete shapes with symbolic parameter dims; returns symbol -> value.

    Bare symbols bind directly. An expression dim with exactly one still-unbound symbol that
    occurs affinely (`2*K`, `K + 1`) is solved for it, so a reshape-style signature runs without
    extra bindings. Every dim is then checked against its value; a mismatch raises
    InterpreterError naming the parameter, the dim and both values. `sizes` gives bindings the
    shapes cannot determine (and is checked like any other binding).
    """
    env: dict[str, int] = {k: int(v) for k, v in (sizes or {}).items()}
    if len(dims_per_param) != len(shapes):
        raise InterpreterError(f"expected {len(dims_per_param)} {what}(s), got {len(shapes)}")
    for i, (dims, shape) in enumerate(zip(dims_per_param, shapes, strict=True)):
        if len(dims) != len(shape):
            raise InterpreterError(
                f"{what} #{i}: expected rank {len(dims)} (dims [{', '.join(map(str, dims))}]), "
                f"got an array of shape {tuple(shape)}")
        for k, (dim, value) in enumerate(zip(dims, shape, strict=True)):
            name = dim.as_symbol
            if name is None:
                continue
            if name in env and env[name] != value:
                raise InterpreterError(
                    f"{what} #{i} dim {k}: size symbol '{name}' is {value} here but was bound "
                    f"to {env[name]} before")
            env[name] = int(value)
    # solve affine dims with one unknown until nothing changes (`2*K` after `K` is unknown)
    progress = True
    while progress:
        progress = False
        for dims, shape in zip(dims_per_param, shapes, strict=True):
            for dim, value in zip(dims, shape, strict=True):
                unknown = dim.symbols() - set(env)
                if len(unknown) != 1:
                    continue
                (sym,) = unknown
                if not dim.is_affine_in([sym]):
                    continue
                base = dim.evaluate({**env, sym: 0})
                coeff = dim.evaluate({**env, sym: 1}) - base
                if coeff != 0 and (value - base) % coeff == 0 and (value - base) // coeff >= 0:
                    env[sym] = (value - base) // coeff
                    progress = True
    for i, (dims, shape) in enumerate(zip(dims_per_param, shapes, strict=True)):
        for k, (dim, value) in enumerate(zip(dims, shape, strict=True)):
            unknown = dim.symbols() - set(env)
            if unknown:
                raise InterpreterError(
                    f"{what} #{i} dim {k} ({dim}): size symbol(s) "
                    f"{', '.join(sorted(unknown))} cannot be bound from the input shapes; "
                    f"pass them in `sizes`")
            expected = dim.evaluate(env)
            if expected != value:
                raise InterpreterError(
                    f"{what} #{i} dim {k}: expected {dim} = {expected}, got {value}")
    return env


def eval_dims(dims: Sequence[IntExpr], sizes: Mapping[str, int], where: str) -> tuple[int, ...]:
    """Concrete values of dims (IntExpr.evaluate), InterpreterError naming `where` if unbound."""
    try:
        return tuple(d.evaluate(sizes) for d in dims)
    except KeyError as err:
        raise InterpreterError(f"{where}: {err.args[0]}") from None


def eval_index(expr: IntExpr, env: Mapping[str, Any]) -> Any:
    """IntExpr.evaluate with numpy arrays allowed as symbol values (broadcasting).

    floordiv and mod round toward -inf, as IntExpr.evaluate does (numpy's floor_divide and mod
    agree with Python's // and %).
    """
    total: Any = 0
    for mono, coeff in expr.terms:
        prod: Any = coeff
        for atom in mono:
            prod = prod * _eval_atom(atom, env)
        total = total + prod
    return total


def _eval_atom(atom: Atom, env: Mapping[str, Any]) -> Any:
    if atom.kind == "sym":
        if atom.name not in env:
            raise InterpreterError(f"no value for size symbol '{atom.name}'")
        return env[atom.name]
    a, b = (eval_index(arg, env) for arg in atom.args)
    if atom.kind == "floordiv":
        return np.floor_divide(a, b)
    if atom.kind == "mod":
        return np.mod(a, b)
    return np.minimum(a, b) if atom.kind == "min" else np.maximum(a, b)


def reduction_identity(kind: str, dtype: np.dtype, limits: np.dtype | None = None) -> Any:
    """The value an empty `kind` reduction gives, as a scalar of `dtype`.

    Floats use 0, 1, -inf, +inf. Integers have no infinities, so max/min of nothing saturate at
    the extreme values of `limits` (the storage dtype: i32 computes in int64, and int64's extremes
    would wrap to 0 and -1 when the result is rounded to int32); booleans use False/True.
    """
    dtype = np.dtype(dtype)
    if kind == "add":
        return dtype.type(0)
    if kind == "mul":
        return dtype.type(1)
    if dtype == np.bool_:
        return np.bool_(kind == "min")
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(limits if limits is not None else dtype)
        return dtype.type(info.min if kind == "max" else info.max)
    return dtype.type(-np.inf if kind == "max" else np.inf)
