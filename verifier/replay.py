"""Counterexample replay through the reference interpreter.

A z3 model is only a candidate: its exp, sums and the like are uninterpreted, so it may not be a
real counterexample. A refutation stands only when both functions, run by the reference interpreter
(`axon.interpreter.run_function`) in its exact mode (float64, nothing rounded to the program's
dtypes: the real meaning a proof is about) at concrete dims on concrete inputs, differ at an output
index by more than float64 rounding can explain: a relative 1e-9 plus an absolute slack that grows
with the number of input elements and the largest constant of either program (a cancelling sum of
large terms). This confirms small real differences that bf16 rounding hides (two same-sign values
1% apart) or a misplaced 1e-6 epsilon, and it never mistakes the program's own rounding for a
difference: `(x + 1e8) - 1e8` and `x` differ by up to 8 in float32, and are equal. (`differs`, the
dtype-faithful comparison with a margin, is kept for checking results against references.)

Inputs come first from the model (where it gives tensor values), then from several random seeds
and value ranges. `confirms` re-checks a counterexample the same way (tests and the fuzzer use it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.interface import generic_form, has_form
from axon.dialects.form.scalar import Const
from axon.interpreter import run_function
from axon.verifier.budget import OutOfTime, expired

#: random input ranges tried after the model's own values; positive ones keep log/sqrt defined
_RANGES = ((-2.0, 2.0), (0.25, 2.0), (-1.0, 1.0), (0.5, 1.5))
_SEEDS = (0, 1, 2)
#: results differ "for real" only beyond this multiple of the dtype's tolerance
_MARGIN = 50.0
_MAX_ELEMENTS = 4096
#: exact replays: the relative error float64 evaluation may have, and the absolute slack per input
#: element and unit of the largest constant (see the module docstring)
_EXACT_RTOL = 1e-9
_EXACT_ATOL = 1e-9
#: constants this large are masking sentinels, not values a sum could cancel (see
#: `_largest_constant`)
_SENTINEL = 1e30
#: model inputs larger than this are not replayed exactly (cancellation could fake a difference)
_EXACT_INPUT_BOUND = 1e3


@dataclass(frozen=True)
class Replayed:
    """A confirmed difference: dims, inputs, output number and index, and both values."""

    sizes: dict[str, int]
    inputs: list[np.ndarray]
    output: int
    index: tuple[int, ...]
    value_a: float
    value_b: float
    exact: bool


def shapes(func: FuncOp, sizes: Mapping[str, int]) -> list[tuple[int, ...]]:
    out = []
    for t in func.function_type.inputs.data:
        assert isinstance(t, TensorType)
        out.append(tuple(d.evaluate(sizes) for d in t.shape))
    return out


def replayable(func: FuncOp, sizes: Mapping[str, int]) -> bool:
    """Whether `func`'s inputs at `sizes` have no negative dim and at most `_MAX_ELEMENTS`
    elements in all (a replay is a quick look, not a large run)."""
    shp = shapes(func, sizes)
    return not any(n < 0 for s in shp for n in s) \
        and sum(int(np.prod(s)) for s in shp) <= _MAX_ELEMENTS


def differs(x: float, y: float, dtype: str) -> bool:
    """Both finite and apart by more than the margin times the dtype's tolerance."""
    if not (np.isfinite(x) and np.isfinite(y)):
        return False
    rtol, atol = DTYPES[dtype].tolerance if DTYPES[dtype].is_float else (1e-6, 1e-6)
    rtol, atol = max(rtol, 1e-6) * _MARGIN, max(atol, 1e-6) * _MARGIN
    return abs(x - y) > atol + rtol * max(abs(x), abs(y))


def differs_exactly(x: float, y: float, slack: float) -> bool:
    """Both finite and apart by more than float64 evaluation error (see the module docstring)."""
    if not (np.isfinite(x) and np.isfinite(y)):
        return False
    return abs(x - y) > slack + _EXACT_RTOL * max(abs(x), abs(y))


def exact_slack(a: FuncOp, b: FuncOp, inputs: Sequence[np.ndarray]) -> float:
    """The absolute slack of an exact replay of `a` against `b` on `inputs`."""
    elements = sum(int(np.size(x)) for x in inputs)
    return _EXACT_ATOL * max(1, elements) * (1.0 + max(_largest_constant(a), _largest_constant(b)))


def _largest_constant(func: FuncOp) -> float:
    """The largest magnitude of a constant the function adds or scales by: masking sentinels
    (a dtype's lowest value, infinities, anything from `_SENTINEL` up) are left out, since a
    selected-away or exp-ed-away sentinel never meets a value it could cancel against."""
    largest = 0.0
    for op in func.walk():
        if has_form(op):
            form = generic_form(op)
            stack = [e for e in (form.body, form.finalize) if e is not None]
            while stack:
                e = stack.pop()
                if isinstance(e, Const) and not isinstance(e.value, bool):
                    magnitude = abs(float(e.value))
                    if magnitude < _SENTINEL:
                        largest = max(largest, magnitude)
                stack.extend(e.children())
    return largest


def _run(func: FuncOp, inputs: Sequence[np.ndarray], sizes: Mapping[str, int], exact: bool
         ) -> list[np.ndarray] | None:
    try:
        with np.errstate(all="ignore"):
            results = run_function(func, inputs, dict(sizes), exact=exact)
        return [np.asarray(r, dtype=np.float64) for r in results]
    except Exception:  # an input the interpreter rejects is simply not a witness
        return None


def confirms(a: FuncOp, b: FuncOp, sizes: Mapping[str, int], inputs: list[np.ndarray],
             output: int, index: tuple[int, ...], exact: bool) -> bool:
    """Do `a` and `b` differ at result #output[index] on these inputs, as a replay requires?"""
    ra, rb = _run(a, inputs, sizes, exact), _run(b, inputs, sizes, exact)
    if ra is None or rb is None or output >= min(len(ra), len(rb)):
        return False
    x, y = float(ra[output][index]), float(rb[output][index])
    if exact:
        return differs_exactly(x, y, exact_slack(a, b, inputs))
    t = a.function_type.outputs.data[output]
    assert isinstance(t, TensorType)
    return differs(x, y, t.dtype)


def _compare(a: FuncOp, b: FuncOp, inputs: list[np.ndarray], sizes: Mapping[str, int],
             prefer: tuple[int, tuple[int, ...]] | None) -> Replayed | None:
    """The first output index where the exact results differ beyond float64 error."""
    ra, rb = _run(a, inputs, sizes, True), _run(b, inputs, sizes, True)
    if ra is None or rb is None or len(ra) != len(rb):
        return None
    slack = exact_slack(a, b, inputs)
    candidates: list[tuple[int, tuple[int, ...]]] = []
    if prefer is not None:
        candidates.append(prefer)
    for k, (out_a, out_b) in enumerate(zip(ra, rb, strict=True)):
        if out_a.shape != out_b.shape:
            return None  # shape mismatches are reported by the prover, not here
        candidates.extend((k, tuple(int(i) for i in ix)) for ix in np.ndindex(*out_a.shape))
    for k, ix in candidates:
        if k >= len(ra) or ra[k].shape != rb[k].shape or any(
                not 0 <= i < n for i, n in zip(ix, ra[k].shape, strict=False)):
            continue
        x, y = float(ra[k][ix]), float(rb[k][ix])
        if differs_exactly(x, y, slack):
            return Replayed(dict(sizes), inputs, k, ix, x, y, True)
    return None


def _witness(a: FuncOp, b: FuncOp, inputs: list[np.ndarray], sizes: Mapping[str, int],
             prefer: tuple[int, tuple[int, ...]] | None) -> Replayed | None:
    """A difference on these inputs in exact arithmetic (inputs of bounded magnitude only)."""
    if expired():
        raise OutOfTime("the query ran past its safety net while replaying counterexamples")
    if not all(np.all(np.abs(np.asarray(x, dtype=np.float64)) <= _EXACT_INPUT_BOUND)
               for x in inputs):
        return None
    return _compare(a, b, inputs, sizes, prefer)


def replay(a: FuncOp, b: FuncOp, sizes: Mapping[str, int],
           model_inputs: list[np.ndarray] | None,
           prefer: tuple[int, tuple[int, ...]] | None, attempts: int | None = None
           ) -> Replayed | None:
    """Search for a confirmed difference at `sizes`: the model's inputs, then random ones (all
    the ranges and seeds, or the first `attempts` of them)."""
    if not replayable(a, sizes):
        return None
    shp = shapes(a, sizes)
    if model_inputs is not None:
        found = _witness(a, b, model_inputs, sizes, prefer)
        if found is not None:
            return found
    types = list(a.function_type.inputs.data)
    draws = [(lo, hi, seed) for lo, hi in _RANGES for seed in _SEEDS]
    for lo, hi, seed in draws[:attempts]:
        rng = np.random.default_rng(seed)
        inputs: list[np.ndarray] = []
        for s, t in zip(shp, types, strict=True):
            assert isinstance(t, TensorType)
            if t.dtype == "i1":
                inputs.append(rng.random(s) < 0.5)
            elif t.dtype == "i32":
                inputs.append(rng.integers(-3, 4, s).astype(np.int32))
            else:
                inputs.append(rng.uniform(lo, hi, s))
        found = _witness(a, b, inputs, sizes, prefer)
        if found is not None:
            return found
    return None
