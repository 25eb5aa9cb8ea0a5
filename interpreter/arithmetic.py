"""How the reference interpreter holds numbers: dtype-faithfully, or exactly.

`FAITHFUL` follows `dialects/form/dtypes.py`: an op widens its operands to the compute dtype,
computes there and rounds its result to the storage dtype, as an eager framework does. `EXACT`
evaluates the program's real-arithmetic meaning as closely as numpy can: every float dtype (bf16,
f16 and f32 alike) is computed and held in float64 and never rounded to its own precision, i32 is
computed and held in int64 without wrapping, and i1 stays bool. Exact is the meaning the SMT
verifier proves things about; faithful is what a device computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from axon.dialects.form import scalar
from axon.dialects.form.dtypes import DTYPES, round_to, to_compute


@dataclass(frozen=True)
class Arithmetic:
    """One way of holding values: `exact=False` is dtype-faithful, `exact=True` is float64/int64."""

    exact: bool

    def compute(self, name: str) -> np.dtype:
        """The numpy dtype values of dtype `name` are computed in."""
        if not self.exact:
            return DTYPES[name].compute
        return _EXACT[name]

    def widen(self, value: np.ndarray, name: str) -> np.ndarray:
        """A held value of dtype `name` in its compute dtype."""
        if not self.exact:
            return to_compute(value, name)
        return np.asarray(value).astype(_EXACT[name])

    def store(self, value: np.ndarray, name: str) -> np.ndarray:
        """A computed value as held for dtype `name`: rounded (faithful) or kept (exact)."""
        if not self.exact:
            return round_to(value, name)
        return np.asarray(value).astype(_EXACT[name])

    def body(self, expr: scalar.ScalarExpr) -> scalar.ScalarExpr:
        """A form's scalar body as this arithmetic evaluates it.

        Exact arithmetic drops casts to float dtypes: on the reals a float cast is the identity
        (as in the verifier), while the body's `cast` would round to the target's precision.
        Casts to i32 and i1 stay (truncation toward zero and `!= 0` are their meaning).
        """
        if not self.exact or not isinstance(expr, scalar.Call):
            return expr
        args = tuple(self.body(a) for a in expr.args)
        if expr.fn == "cast" and isinstance(expr.param, str) and DTYPES[expr.param].is_float:
            return args[0]
        return scalar.Call(expr.fn, args, expr.param)


#: the numpy dtype each dtype is computed and held in by exact arithmetic
_EXACT: dict[str, np.dtype] = {
    name: np.dtype(np.float64) if d.is_float else np.dtype(np.int64) if name == "i32"
    else np.dtype(np.bool_)
    for name, d in DTYPES.items()}

FAITHFUL = Arithmetic(exact=False)
EXACT = Arithmetic(exact=True)


def arithmetic(exact: bool) -> Arithmetic:
    """`EXACT` or `FAITHFUL`."""
    return EXACT if exact else FAITHFUL
