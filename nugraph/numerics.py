"""The float-error check: a candidate program's error, in its own dtype, against the exact
meaning of the program it replaces.

A proof says two programs are equal over the reals; it says nothing about rounding, so a proved
rewrite can still be catastrophic in float32 (`(x + 1e8) - 1e8` for `x`). Before `propagate` emits a
program, `FloatCheck.measure` runs it on concrete inputs and compares:

- sizes: every size symbol gets a small value of its own (`_POOL`, distinct multiples of 4 in
  16..64 so a transposed dim or an `N mod 4` assumption still shows), never the sizes the cost model
  was given; values shrink until every tensor (and every `ax.generic` iteration domain) holds at
  most `MAX_ELEMENTS`. A concrete dim in a type is used as it is when at most `MAX_CONCRETE_DIM`;
  larger ones are scaled down with every constant they relate to (`shrink.plan`: the original
  and each candidate are rewritten alike), and a program whose concrete dims do not scale down
  skips the check, with the reason.
- inputs: realistic magnitudes, drawn per seed (`DRAWS`): two standard-normal draws (activations)
  and one uniform in [0.5, 1.5] (positive, like gains, and inside the domain of log, sqrt and
  rsqrt); i32 inputs are small integers, i1 inputs random booleans. Every input is a value of its
  parameter's dtype.
- reference: the original program run with the interpreter's `exact=True` (float64, no rounding).
- error of a result of dtype d with tolerance (rtol, atol) = DTYPES[d].tolerance:
  max over elements of |y - ref| / (|ref| + s * atol / rtol), the smallest e with
  |y - ref| <= e * |ref| + e * s * atol / rtol everywhere, where s = max(1, rms(ref)). For a
  result of order one, e <= rtol is exactly the dtype's tolerance test, so the error prints next
  to rtol. The dtype's atol is meant for results of order one (the benchmark suite scales its
  inputs so products are); unscaled normal inputs through a matmul give results of order
  sqrt(K), whose near-zero elements would then fail on rounding alone, so atol scales with the
  result's rms. For i32 and i1 (tolerance 0) the error is max |y - ref|. Elements whose
  reference is not finite are not compared; a non-finite candidate element where the reference
  is finite is an infinite error.
- rule: a candidate passes when, for every result, its error (the worst over the draws) is at most
  `allowed = max(rtol, ORIGINAL_ERROR_FACTOR * the original's own error)`, the original run
  dtype-faithfully on the same inputs. The original always passes its own check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import GenericOp, TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.intexpr import IntExpr
from axon.interpreter import InterpreterError, run_function
from axon.nugraph.shrink import IDENTITY, Shrink, Unshrinkable, plan

#: A candidate may be this many times less accurate than the program it replaces. The dtype
#: tolerances fit one rounding of a result; a program that rounds every intermediate (bf16 norms
#: feeding a matmul, a softmax) already exceeds them on its own, and a proved reordering moves
#: where the rounding happens (a scale applied after a matmul instead of before), which changes
#: the error by a small factor. Measured on the benchmark suite (originals up to 1.8x the bf16
#: tolerance), the top-6 candidates stay within 1.4x of their original's error; a catastrophic
#: rewrite (cancellation against a large constant, an overflow) is orders of magnitude beyond
#: either bound.
ORIGINAL_ERROR_FACTOR = 4.0

#: preferred sizes, in order of the symbols' first appearance: distinct, multiples of 4
_POOL = (48, 40, 32, 56, 24, 64, 36, 44, 28, 52, 20, 60, 16)
#: the most elements any value (or `ax.generic` iteration domain) may hold, so each run is fast
MAX_ELEMENTS = 1 << 17
#: the largest concrete dim of a type the check runs at
MAX_CONCRETE_DIM = 256
#: (distribution, seed) of each input draw
DRAWS = (("normal", 0), ("normal", 1), ("positive", 2))


@dataclass(frozen=True)
class FloatError:
    """The measured float error of one program, or why it was not measured.

    `error` is the worst result's error (see the module docstring), `dtype` that result's dtype,
    `tolerance` its rtol, `original` the input program's own error there and `allowed` the bound;
    `ok` says whether every result is within its bound.
    When nothing was measured `error` is None and `reason` says why; an unmeasured program passes
    when the whole check was skipped (`ok=True`) and fails when only it could not be run."""

    ok: bool
    error: float | None = None
    dtype: str = ""
    tolerance: float = 0.0
    original: float = 0.0
    allowed: float = 0.0
    reason: str = ""

    def describe(self) -> str:
        """`float error 3.1e-07 (f32 tolerance 2e-05)`, with the widened bound when it applies."""
        if self.error is None:
            return f"float error not checked ({self.reason})"
        text = f"float error {self.error:.1e} ({self.dtype} tolerance {self.tolerance:.0e}"
        if self.allowed > self.tolerance:
            text += f"; input program {self.original:.1e}, allowed {self.allowed:.1e}"
        return text + ")"


class FloatCheck:
    """The float-error check against one original program (sizes, inputs and reference built once).

    `skipped` is the reason the check does not apply to this program (None when it does)."""

    def __init__(self, original: FuncOp) -> None:
        self.original = original
        self.shrink: Shrink = IDENTITY
        self.skipped: str | None = None
        self.sizes: dict[str, int] = {}
        self.inputs: list[list[np.ndarray]] = []
        self.references: list[list[np.ndarray]] = []
        self.result_dtypes: list[str] = []
        self.original_errors: list[float] = []
        try:
            self._prepare()
        except _Skip as skip:
            self.skipped = str(skip)

    def measure(self, candidate: FuncOp) -> FloatError:
        """The candidate's float error against the exact original, and whether it passes."""
        if self.skipped is not None:
            return FloatError(True, reason=self.skipped)
        try:
            # the original's own errors were measured on the same inputs
            errors = (self.original_errors if candidate is self.original
                      else self._errors(self.shrink.apply(candidate)))
        except (InterpreterError, Unshrinkable, _Skip) as err:
            return FloatError(False, reason=f"the program does not run at the check's sizes: "
                                            f"{err}")
        worst: FloatError | None = None
        ratio = -1.0
        ok = True
        for error, own, dtype in zip(errors, self.original_errors, self.result_dtypes,
                                     strict=True):
            rtol = DTYPES[dtype].tolerance[0]
            allowed = max(rtol, ORIGINAL_ERROR_FACTOR * own)
            ok = ok and error <= allowed
            r = error / allowed if allowed > 0 else (0.0 if error == 0 else math.inf)
            if r > ratio:
                ratio, worst = r, FloatError(True, error, dtype, rtol, own, allowed)
        assert worst is not None
        return FloatError(ok, worst.error, worst.dtype, worst.tolerance, worst.original,
                          worst.allowed)

    # ---- preparation ----------------------------------------------------------------------------
    def _prepare(self) -> None:
        planned = plan([self.original], MAX_CONCRETE_DIM)
        if isinstance(planned, str):
            raise _Skip(f"its concrete dims do not scale down: {planned}")
        self.shrink, (original,) = planned
        self.sizes = choose_sizes(original)
        params: list[TensorType] = []
        for t in original.function_type.inputs.data:
            # as `_draw` needs: the frontend and `ax` verifier only make !ax.tensor parameters
            assert isinstance(t, TensorType), f"parameter type {t} is not an !ax.tensor"
            params.append(t)
        self.result_dtypes = [t.dtype for t in self.original.function_type.outputs.data
                              if isinstance(t, TensorType)]
        if len(self.result_dtypes) != len(self.original.function_type.outputs.data):
            raise _Skip("a result is not an !ax.tensor")
        for dist, seed in DRAWS:
            rng = np.random.default_rng(seed)
            inputs = [_draw(rng, dist, t, self.sizes) for t in params]
            try:
                exact = run_function(original, inputs, self.sizes, exact=True)
            except InterpreterError as err:
                raise _Skip(f"the input program does not run at the check's sizes: {err}") from None
            self.inputs.append(inputs)
            self.references.append(exact)
        self.original_errors = self._errors(original)

    def _errors(self, func: FuncOp) -> list[float]:
        """Per result, the worst error over the draws of `func` run dtype-faithfully."""
        worst = [0.0] * len(self.result_dtypes)
        for inputs, reference in zip(self.inputs, self.references, strict=True):
            got = run_function(func, inputs, self.sizes)
            if len(got) != len(reference):
                raise _Skip(f"{len(got)} results, the input program has {len(reference)}")
            for k, (y, ref, dtype) in enumerate(zip(got, reference, self.result_dtypes,
                                                    strict=True)):
                if y.shape != ref.shape:
                    raise _Skip(f"result #{k} has shape {y.shape}, expected {ref.shape}")
                worst[k] = max(worst[k], result_error(y, ref, dtype))
        return worst


class _Skip(Exception):
    """The check cannot run; the message says why."""


def result_error(value: np.ndarray, reference: np.ndarray, dtype: str) -> float:
    """max |value - ref| / (|ref| + max(1, rms(ref)) * atol / rtol) over the elements with a
    finite reference (max |value - ref| for dtypes with rtol 0); a non-finite value there is an
    infinite error."""
    rtol, atol = DTYPES[dtype].tolerance
    ref = np.asarray(reference, dtype=np.float64)
    diff = np.abs(np.asarray(value, dtype=np.float64) - ref)
    finite = np.isfinite(ref)
    diff = np.where(np.isnan(diff), np.inf, diff)[finite]
    if diff.size == 0:
        return 0.0
    if rtol == 0:
        return float(diff.max())
    ref = ref[finite]
    scale = max(1.0, float(np.sqrt(np.mean(ref * ref))))
    return float(np.max(diff / (np.abs(ref) + scale * atol / rtol)))


# ---- sizes --------------------------------------------------------------------------------------
def choose_sizes(func: FuncOp) -> dict[str, int]:
    """Small distinct sizes for `func`'s size symbols, shrunk until every value fits
    MAX_ELEMENTS; raises _Skip when a concrete dim is too large or nothing fits."""
    types = _types(func)
    symbols: dict[str, None] = {}
    for t in types:
        for d in t.shape:
            if d.is_const and d.value > MAX_CONCRETE_DIM:
                raise _Skip(f"a concrete dim {d.value} is larger than {MAX_CONCRETE_DIM}")
            for s in sorted(d.symbols()):
                symbols.setdefault(s, None)
    if len(symbols) > len(_POOL):
        raise _Skip(f"{len(symbols)} size symbols, more than the check's {len(_POOL)} sizes")
    sizes = dict(zip(symbols, _POOL, strict=False))
    domains = _domains(func)
    while True:
        counts = [(math.prod(_evaluate(d, sizes) for d in dims), dims) for dims in domains]
        count, dims = max(counts, key=lambda c: c[0], default=(0, ()))
        if count <= MAX_ELEMENTS:
            return sizes
        # shrink the largest symbol of the largest value to the next free smaller size
        names = sorted({s for d in dims for s in d.symbols()}, key=lambda s: -sizes[s])
        if not names:
            raise _Skip(f"a value of {count} elements has concrete dims only")
        name = names[0]
        smaller = [v for v in range(sizes[name] - 1, 1, -1) if v not in sizes.values()]
        if not smaller:
            raise _Skip(f"no sizes keep every value within {MAX_ELEMENTS} elements")
        sizes[name] = next((v for v in smaller if v % 4 == 0), smaller[0])


def _evaluate(dim: IntExpr, sizes: Mapping[str, int]) -> int:
    return max(dim.evaluate(sizes), 0)


def _types(func: FuncOp) -> list[TensorType]:
    """The types of the function's parameters and of every op result."""
    block = func.body.blocks.first
    values = [*(block.args if block is not None else ()),
              *(r for op in func.walk() for r in op.results)]
    return [v.type for v in values if isinstance(v.type, TensorType)]


def _domains(func: FuncOp) -> list[Sequence[IntExpr]]:
    """Dims whose product bounds what one run holds: every value's shape, and for `ax.generic`
    (evaluated over a grid of its whole loop nest) the parallel dims and each reduced dim's upper
    bound (the grid covers the bounding box of a triangular range)."""
    domains: list[Sequence[IntExpr]] = [t.shape for t in _types(func)]
    for op in func.walk():
        if isinstance(op, GenericOp):
            form = op.generic_form()
            # an outer loop dim in a bound is at most its own upper bound
            bounds: dict[str, IntExpr] = {}
            for d in (*form.parallel, *form.reduced):
                bounds[d.name] = d.upper.substitute(bounds)
            domains.append(list(bounds.values()))
    return domains


# ---- inputs -------------------------------------------------------------------------------------
def _draw(rng: np.random.Generator, dist: str, t: TensorType,
          sizes: Mapping[str, int]) -> np.ndarray:
    """One input of type `t`, as a value of its dtype."""
    shape = tuple(_evaluate(d, sizes) for d in t.shape)
    d = DTYPES[t.dtype]
    positive = dist == "positive"
    if t.dtype == "i1":
        return rng.random(shape) < 0.5
    if not d.is_float:
        return rng.integers(1 if positive else -8, 9, shape).astype(d.storage)
    value = rng.uniform(0.5, 1.5, shape) if positive else rng.standard_normal(shape)
    return value.astype(np.float32).astype(d.storage)
