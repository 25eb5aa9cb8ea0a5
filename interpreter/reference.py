"""The reference interpreter's ops: every `ax` op runs on numpy arrays, dtype-faithfully.

Functions, loops and calls are run by `driver.py` on xDSL's region interpreter; each op in them
runs here (`compute_op`; `run_op` runs a single op), through one kernel from a registry
(`@kernel(MatmulOp)`). A kernel receives its operands as held (their storage dtypes) and returns a
value that is rounded once to the result dtype, the way an eager framework evaluates op by op:
operands are widened to the compute dtype (`dtypes.to_compute`), the op computes there, and the
result is rounded (`dtypes.round_to`).

With `exact=True` the same kernels run under exact arithmetic (`interpreter/arithmetic.py`): every
float dtype is computed and held in float64 without rounding to its own precision, i32 in int64
without wrapping. That is the program's real-arithmetic meaning, the one the verifier proves, as
closely as numpy computes it.

Elementwise ops have no kernel of their own: their numpy computation is their generic form's body,
evaluated with NumPy broadcasting. Structural and contraction ops use vectorized numpy kernels, and
`ax.generic` uses a vectorized evaluator of an arbitrary generic form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from xdsl.ir import Operation

from axon.dialects.ax import (
    BinaryOp,
    BroadcastToOp,
    CastOp,
    ConcatOp,
    ConstantOp,
    CumsumOp,
    GenericOp,
    IotaOp,
    MatmulOp,
    PowOp,
    ReduceOp,
    ReshapeOp,
    SelectOp,
    SliceOp,
    TensorOp,
    TensorType,
    TransposeOp,
    UnaryOp,
)
from axon.dialects.form import scalar
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Read
from axon.interpreter.arithmetic import Arithmetic, arithmetic
from axon.interpreter.indexing import (
    InterpreterError,
    StrayReadError,
    eval_dims,
    eval_index,
    reduction_identity,
)

#: kernel(op, operands as held, size bindings, arithmetic) -> value before the result rounding
Kernel = Callable[[TensorOp, list[np.ndarray], Mapping[str, int], Arithmetic], Any]

KERNELS: dict[type[Operation], Kernel] = {}


def kernel(*op_classes: type[Operation]) -> Callable[[Kernel], Kernel]:
    """Register a kernel for op classes; subclasses inherit it (UnaryOp covers every unary op)."""

    def register(fn: Kernel) -> Kernel:
        for cls in op_classes:
            KERNELS[cls] = fn
        return fn

    return register


def find_kernel(op: Operation | type[Operation]) -> Kernel | None:
    """The kernel registered for an op (or op class), or for its nearest base class."""
    for cls in (op if isinstance(op, type) else type(op)).__mro__:
        if cls in KERNELS:
            return KERNELS[cls]
    return None


# ---- one op --------------------------------------------------------------------------------------
def run_op(op: Operation, operands: Sequence[np.ndarray], sizes: Mapping[str, int], *,
           exact: bool = False) -> np.ndarray:
    """Run one op on arrays in their storage dtypes; the result is rounded to the result dtype.

    With `exact=True` the operands are held exactly (float64, int64, bool; see run_function) and
    so is the result."""
    if len(operands) != len(op.operands):
        raise InterpreterError(f"'{op.name}' takes {len(op.operands)} operand(s), "
                               f"got {len(operands)}")
    # domain errors (log of a negative, 0/0) give nan/inf as in an eager framework, not warnings
    with np.errstate(all="ignore"):
        return compute_op(op, operands, sizes, arithmetic(exact))


def compute_op(op: Operation, operands: Sequence[np.ndarray], sizes: Mapping[str, int],
               arith: Arithmetic) -> np.ndarray:
    """run_op for a caller that runs many ops: it has matched the operands to the op and silenced
    numpy's floating-point warnings once for all of them (entering `np.errstate` costs as much
    as a small op's kernel)."""
    fn = find_kernel(op)
    if fn is None or not isinstance(op, TensorOp):
        raise InterpreterError(f"unsupported op '{op.name}'")
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    shape = eval_dims(result_type.shape, sizes, f"result of '{op.name}'")
    result = arith.store(fn(op, list(operands), sizes, arith), result_type.dtype)
    if result.shape != shape:
        raise InterpreterError(f"'{op.name}' computed shape {result.shape}, but its result type "
                               f"{result_type} gives {shape}")
    return result


def _widen(op: TensorOp, operands: Sequence[np.ndarray], arith: Arithmetic) -> list[np.ndarray]:
    return [arith.widen(x, t.dtype) for x, t in zip(operands, op.tensor_types(), strict=True)]


def _no_index(expr: IntExpr) -> Any:
    raise InterpreterError(f"unexpected index expression {expr} in an elementwise body")


def _no_read(read: Read) -> Any:
    raise InterpreterError(f"unexpected read {read} in a finalizer")


# ---- kernels ------------------------------------------------------------------------------------
@kernel(UnaryOp, BinaryOp, PowOp, SelectOp, CastOp)
def _elementwise(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
                 arith: Arithmetic) -> Any:
    # the body reads in<k> at (broadcast) loop indices; NumPy broadcasting of the whole operand
    # arrays is exactly that index map, so the read callback hands back the operand itself
    widened = _widen(op, operands, arith)
    return scalar.evaluate(arith.body(op.generic_form().body), lambda r: widened[r.operand],
                           _no_index)


@kernel(MatmulOp)
def _matmul(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
            arith: Arithmetic) -> Any:
    a, b = _widen(op, operands, arith)
    return np.matmul(a, b)


_REDUCERS: dict[str, Callable[..., Any]] = {
    "add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}


@kernel(ReduceOp)
def _reduce(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
            arith: Arithmetic) -> Any:
    assert isinstance(op, ReduceOp)
    (x,) = _widen(op, operands, arith)
    storage = DTYPES[op.tensor_types()[0].dtype].storage
    attrs = op.attrs()
    axes = tuple(attrs["axes"])
    keepdims = bool(attrs.get("keepdims", False))
    kind = op.REDUCTION
    if kind in ("max", "min"):
        # `initial` gives empty reductions their identity instead of raising
        value = _REDUCERS[kind](x, axis=axes, keepdims=keepdims,
                                initial=reduction_identity(kind, x.dtype, storage))
    else:
        value = _REDUCERS[kind](x, axis=axes, keepdims=keepdims)
    form = op.generic_form()
    if form.finalize is not None:
        # mean's `acc / idx(K)`: K is a size expression; a Python int keeps the compute dtype
        value = scalar.evaluate(form.finalize, _no_read, lambda e: int(e.evaluate(sizes)), value)
    return value


@kernel(CumsumOp)
def _cumsum(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
            arith: Arithmetic) -> Any:
    (x,) = _widen(op, operands, arith)
    return np.cumsum(x, axis=int(op.attrs()["axis"]))


@kernel(TransposeOp)
def _transpose(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
               arith: Arithmetic) -> Any:
    return np.transpose(operands[0], tuple(op.attrs()["perm"]))


@kernel(ReshapeOp)
def _reshape(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
             arith: Arithmetic) -> Any:
    shape = eval_dims(op.attrs()["shape"], sizes, "ax.reshape shape")
    return np.reshape(operands[0], shape, order="C")


@kernel(BroadcastToOp)
def _broadcast_to(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
                  arith: Arithmetic) -> Any:
    return np.broadcast_to(operands[0], eval_dims(op.attrs()["shape"], sizes, "ax.broadcast_to"))


@kernel(SliceOp)
def _slice(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
           arith: Arithmetic) -> Any:
    attrs = op.attrs()
    start, stop, step = (eval_dims(attrs[k], sizes, f"ax.slice {k}")
                         for k in ("start", "stop", "step"))
    (x,) = operands
    for k, (lo, hi, dim) in enumerate(zip(start, stop, x.shape, strict=True)):
        if not 0 <= lo <= hi <= dim:
            raise InterpreterError(f"ax.slice dim {k}: [{lo}:{hi}] does not fit in extent {dim}")
    return x[tuple(slice(lo, hi, st) for lo, hi, st in zip(start, stop, step, strict=True))]


@kernel(ConcatOp)
def _concat(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
            arith: Arithmetic) -> Any:
    return np.concatenate(operands, axis=int(op.attrs().get("axis", 0)))


@kernel(ConstantOp)
def _constant(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
              arith: Arithmetic) -> Any:
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    form = op.generic_form()
    assert isinstance(form.body, scalar.Const)
    shape = eval_dims(result_type.shape, sizes, "ax.constant shape")
    return np.full(shape, form.body.value, dtype=arith.compute(result_type.dtype))


@kernel(IotaOp)
def _iota(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
          arith: Arithmetic) -> Any:
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    shape = eval_dims(result_type.shape, sizes, "ax.iota shape")
    axis = int(op.attrs().get("axis", 0))
    ramp = np.arange(shape[axis]).reshape([-1 if k == axis else 1 for k in range(len(shape))])
    return np.broadcast_to(ramp, shape).astype(arith.compute(result_type.dtype))


@kernel(GenericOp)
def _generic(op: TensorOp, operands: list[np.ndarray], sizes: Mapping[str, int],
             arith: Arithmetic) -> Any:
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    return evaluate_form_vectorized(op.generic_form(), _widen(op, operands, arith), sizes,
                                    result_type.dtype, exact=arith.exact, where=op.name)


# ---- vectorized generic forms -------------------------------------------------------------------
def evaluate_form_vectorized(form: GenericForm, operands: Sequence[np.ndarray],
                             sizes: Mapping[str, int], dtype: str | None = None, *,
                             exact: bool = False, where: str = "generic form") -> np.ndarray:
    """Evaluate any generic form over index grids; operands are already in compute dtypes.

    Loop dims become broadcastable `arange` grids (parallel dims, then reduced dims). A reduced dim
    whose bounds depend on outer dims iterates over the bounding box of its range and a mask
    keeps the points inside; masked points contribute the reduction identity. Reads are gathers
    through the index maps. numpy's `where` evaluates both branches of a `select`, so a read a
    `select` discards (a concat's other operand) is gathered clipped into range and its value
    thrown away; a read outside its operand at a point whose value is used (inside the domain and
    not discarded by a `select`) has no value, and raises an InterpreterError naming `where` (the
    op), the read and the point: the oracle never invents a value. `dtype` names the
    result dtype (the caller rounds to it): for a float result, index values become its compute
    dtype so `acc / idx(K)` stays in float32 instead of promoting to float64; for an i32 result,
    empty max/min saturate at the int32 extremes. `exact=True` evaluates under exact arithmetic
    (`interpreter/arithmetic.py`): float64 index values, float casts dropped from the body.
    """
    arith = arithmetic(exact)
    if exact:
        form = _exact_form(form, arith)
    compute = arith.compute(dtype) if dtype is not None else None
    limits = DTYPES[dtype].storage if dtype == "i32" else None
    par_ext = eval_dims([d.upper for d in form.parallel], sizes, "generic form parallel dims")
    npar, nred = len(form.parallel), len(form.reduced)
    ndim = npar + nred
    float_index = compute is not None and np.issubdtype(compute, np.floating)

    def grid(extent: int, axis: int, start: int = 0, rank: int = ndim) -> np.ndarray:
        return (start + np.arange(extent)).reshape([-1 if k == axis else 1 for k in range(rank)])

    env: dict[str, Any] = dict(sizes)
    for k, d in enumerate(form.parallel):
        env[d.name] = grid(par_ext[k], k)
    mask: Any = True
    empty = any(e == 0 for e in par_ext)
    red_shape: list[int] = []
    for j, d in enumerate(form.reduced):
        if empty:
            red_shape.append(0)
            env[d.name] = grid(0, npar + j)
            continue
        lo = np.asarray(eval_index(d.lower, env))
        hi = np.asarray(eval_index(d.upper, env))
        box_lo, box_hi = int(lo.min()), int(hi.max())
        extent = max(box_hi - box_lo, 0)
        red_shape.append(extent)
        env[d.name] = grid(extent, npar + j, box_lo)
        mask = mask & (env[d.name] >= lo) & (env[d.name] < hi)
        empty = extent == 0
    full_shape = (*par_ext, *red_shape)

    #: reads that fall outside their operand somewhere in the bounding box
    strays: list[Read] = []

    def read(r: Read) -> Any:
        x = operands[r.operand]
        if x.ndim != len(r.index):
            raise InterpreterError(f"form reads {r} but operand #{r.operand} has rank {x.ndim}")
        if 0 in full_shape:
            return np.zeros(full_shape, dtype=x.dtype)  # an empty domain reads nothing
        points = [np.asarray(eval_index(e, env)) for e in r.index]
        if x.size == 0 or np.any(_outside(points, x.shape)):
            strays.append(r)
            if x.size == 0:
                return np.zeros(full_shape, dtype=x.dtype)
            return x[tuple(np.clip(p, 0, n - 1) for p, n in zip(points, x.shape, strict=True))]
        return x[tuple(points)]  # every point inside: clipping would change none

    def index(expr: IntExpr) -> Any:
        value = eval_index(expr, env)
        return np.asarray(value, dtype=compute) if float_index and not np.isscalar(value) else value

    body = np.broadcast_to(np.asarray(scalar.evaluate(form.body, read, index)), full_shape)
    if strays:
        _check_reads(form, operands, env, mask, full_shape, index, where)
    if form.reduction is None:
        return body
    identity = reduction_identity(form.reduction, body.dtype,
                                  limits if np.issubdtype(body.dtype, np.integer) else None)
    body = np.where(mask, body, identity).astype(body.dtype, copy=False)
    axes = tuple(range(npar, ndim))
    if form.reduction in ("max", "min"):
        acc = _REDUCERS[form.reduction](body, axis=axes, initial=identity)
    else:
        acc = _REDUCERS[form.reduction](body, axis=axes)
    if form.finalize is None:
        return acc
    fin_env: dict[str, Any] = dict(sizes)
    for k, d in enumerate(form.parallel):
        fin_env[d.name] = grid(par_ext[k], k, rank=npar)

    def fin_index(expr: IntExpr) -> Any:
        value = eval_index(expr, fin_env)
        return np.asarray(value, dtype=compute) if float_index and not np.isscalar(value) else value

    return np.broadcast_to(np.asarray(scalar.evaluate(form.finalize, _no_read, fin_index, acc)),
                           tuple(par_ext))


#: exact arithmetic's form of each form evaluated exactly, by the form's identity (a form is
#: immutable, and an op's is memoized with its meaning: each run of a kernel's loop meets the
#: same object, and rebuilding it re-ran the form's structural checks every time)
_EXACT_FORMS: dict[int, tuple[GenericForm, GenericForm]] = {}
_EXACT_FORMS_HELD = 4096


def _exact_form(form: GenericForm, arith: Arithmetic) -> GenericForm:
    """`form` with the body exact arithmetic evaluates (`Arithmetic.body`)."""
    held = _EXACT_FORMS.get(id(form))
    if held is not None and held[0] is form:
        return held[1]
    body = arith.body(form.body)
    exact = form if body == form.body else replace(form, body=body)
    if len(_EXACT_FORMS) >= _EXACT_FORMS_HELD:
        _EXACT_FORMS.clear()
    _EXACT_FORMS[id(form)] = (form, exact)
    return exact


def _outside(points: Sequence[np.ndarray], shape: Sequence[int]) -> Any:
    """Where an index (one broadcastable array per dim) falls outside `shape`."""
    out: Any = False
    for p, n in zip(points, shape, strict=True):
        out = out | (p < 0) | (p >= n)
    return out


def _check_reads(form: GenericForm, operands: Sequence[np.ndarray], env: Mapping[str, Any],
                 domain: Any, full_shape: tuple[int, ...], index: Callable[[IntExpr], Any],
                 where: str) -> None:
    """Raise on a read outside its operand at a point whose value is used.

    A read's value is used where the point is in the (possibly triangular) domain and no
    enclosing `select` discards it: walking the body from the root, a select's branches inherit
    the points where its condition picks them. Conditions are evaluated again here, only for a
    form with a read that leaves its operand somewhere (a concat's, or a wrong one)."""

    def no_read(r: Read) -> Any:
        # a condition's own reads are checked as reads of the select (their points are used)
        x = operands[r.operand]
        if x.size == 0:
            return np.zeros(full_shape, dtype=x.dtype)
        points = [np.asarray(eval_index(e, env)) for e in r.index]
        return x[tuple(np.clip(p, 0, n - 1) for p, n in zip(points, x.shape, strict=True))]

    stack: list[tuple[scalar.ScalarExpr, Any]] = [(form.body, domain)]
    while stack:
        expr, used = stack.pop()
        if isinstance(expr, Read):
            x = operands[expr.operand]
            points = [np.asarray(eval_index(e, env)) for e in expr.index]
            bad = np.broadcast_to(used & _outside(points, x.shape) if x.size else used,
                                  full_shape)
            if np.any(bad):
                at = tuple(int(i) for i in np.argwhere(bad)[0])
                names = [d.name for d in (*form.parallel, *form.reduced)]
                point = ", ".join(f"{n} = {i}" for n, i in zip(names, at, strict=True))
                values = tuple(int(np.broadcast_to(p, full_shape)[at]) for p in points)
                raise StrayReadError(
                    f"'{where}' reads {expr} outside operand #{expr.operand} of shape "
                    f"{tuple(x.shape)}: {f'at {point} ' if point else ''}the index is {values}")
            continue
        if isinstance(expr, scalar.Call) and expr.fn == "select":
            cond, then, other = expr.args
            picked = np.asarray(scalar.evaluate(cond, no_read, index)).astype(bool)
            stack.extend([(cond, used), (then, used & picked), (other, used & ~picked)])
            continue
        stack.extend((child, used) for child in expr.children())
