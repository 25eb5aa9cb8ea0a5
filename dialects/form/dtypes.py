"""Element types of the tensor level: names, xDSL types, numpy storage, compute rules, tolerances.

Every fact about a dtype lives here once. Ops compute in float32 for floating types (float16 and
bfloat16 are widened, then the result is rounded back), in int64 for i32 (then wrapped), and in bool
for i1: the same rule an eager framework follows, so the reference interpreter is dtype-faithful.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerType
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type."""

    name: str
    storage: np.dtype
    compute: np.dtype
    is_float: bool
    #: (rtol, atol) for comparing a result of this dtype against a float64/float32 reference
    tolerance: tuple[float, float]


DTYPES: dict[str, DType] = {d.name: d for d in [
    DType("f32", np.dtype(np.float32), np.dtype(np.float32), True, (2e-5, 2e-6)),
    DType("f16", np.dtype(np.float16), np.dtype(np.float32), True, (4e-3, 1e-3)),
    DType("bf16", np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32), True, (3e-2, 8e-3)),
    DType("i32", np.dtype(np.int32), np.dtype(np.int64), False, (0.0, 0.0)),
    DType("i1", np.dtype(np.bool_), np.dtype(np.bool_), False, (0.0, 0.0)),
]}


#: Relative error allowed for a division by a value the same in every lane computed as a multiply
#: by its reciprocal (the Triton emitter does so for attention's `/ sqrt(D)`: NVPTX's default
#: float32 division is the IEEE `div.rn.f32` sequence; gqa prefill on the H200 at 128x64, 8
#: warps, 4 stages went from 0.99 to 0.93 ms). `x * fl(1 / c)` has one rounding more than
#: `fl(x / c)`: at most 2**-23 relative more in the float32 the kernels compute in.
RECIPROCAL_DIVISION_RTOL = 2.0 ** -23


def reciprocal_division_allowed(name: str) -> bool:
    """Whether a result of dtype `name` may be computed dividing by a reciprocal: a float whose
    rtol is ten times `RECIPROCAL_DIVISION_RTOL` or more (float32: 2e-5 against 1.2e-7)."""
    d = DTYPES[name]
    return d.is_float and RECIPROCAL_DIVISION_RTOL * 10 <= d.tolerance[0]


#: Relative error allowed for a softmax's `exp(x / c - max)` computed as `exp2(x * (log2(e) / c)
#: - max')` (the Triton emitter's attention kernels; one multiply a score less, gqa prefill on the
#: H200 0.93 -> 0.64 ms): the argument gains two float32 roundings (2**-23 of its size), and a
#: softmax-weighted mean of |x / c - max| stays under 16 for any score whose term is not below
#: e**-16 of the total.
RESCALED_EXP_RTOL = 16 * 2.0 ** -22


def rescaled_exp_allowed(name: str) -> bool:
    """Whether a result of dtype `name` may be computed with the rescaled `exp2`: a float whose
    rtol is four times `RESCALED_EXP_RTOL` or more (float32: 2e-5 against 3.8e-6)."""
    d = DTYPES[name]
    return d.is_float and RESCALED_EXP_RTOL * 4 <= d.tolerance[0]


_DTYPE_ATTRS: dict[str, Attribute] = {
    "f32": Float32Type(), "f16": Float16Type(), "bf16": BFloat16Type(),
    "i32": IntegerType(32), "i1": IntegerType(1)}


def dtype_attr(name: str) -> Attribute:
    """The xDSL builtin type for a dtype name (one shared instance each: attributes are
    immutable values)."""
    return _DTYPE_ATTRS[name]


def dtype_name(attr: Attribute) -> str:
    """The dtype name of an xDSL builtin type; ValueError for anything else."""
    if isinstance(attr, Float32Type):
        return "f32"
    if isinstance(attr, Float16Type):
        return "f16"
    if isinstance(attr, BFloat16Type):
        return "bf16"
    if isinstance(attr, IntegerType) and attr.width.data in (32, 1):
        return f"i{attr.width.data}"
    raise ValueError(f"unsupported element type {attr}; expected one of {', '.join(DTYPES)}")


def numpy_dtype(name: str) -> np.dtype:
    """Storage dtype of a dtype name."""
    return DTYPES[name].storage


def round_to(value: np.ndarray, name: str) -> np.ndarray:
    """Round a computed value to the storage of dtype `name` (the dtype-faithful step)."""
    d = DTYPES[name]
    value = np.asarray(value)
    if d.name == "i32":
        return value.astype(np.int64).astype(np.int32)
    return value.astype(d.storage)


def to_compute(value: np.ndarray, name: str) -> np.ndarray:
    """Widen a stored value to the dtype it is computed in."""
    return np.asarray(value).astype(DTYPES[name].compute)

