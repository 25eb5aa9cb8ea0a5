"""The ALU operators and activation functions `nki.language` exposes (`nl.add`, `nl.exp`).

Each is an `Op`: a token the `nki.isa` instructions take (`op=nl.add`) and, called on tiles, the
`nki.language` elementwise convenience function of the same name. Arithmetic is done in fp32 on
numpy arrays; bitvec operators work on the integers themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

F32 = np.float32


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(F32)


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / np.sqrt(F32(2.0))))).astype(F32)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    inner = np.sqrt(F32(2.0 / math.pi)) * (x + F32(0.044715) * x * x * x)
    return (0.5 * x * (1.0 + np.tanh(inner))).astype(F32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x))).astype(F32)


class Op:
    """An ALU operator (`binary`) or an activation function (`unary`), by its NKI name.

    `valid` is the input range ScalarE's approximation covers (../shared/reference/nki.md section
    3.3, from SDK@HEAD:nki/api/nki.api.shared.rst "nki-act-func"); the simulator computes exact
    values and warns about inputs outside it."""

    def __init__(self, name: str, *, binary: Callable[[Any, Any], Any] | None = None,
                 unary: Callable[[Any], Any] | None = None, bitvec: bool = False,
                 valid: tuple[float, float] | None = None, valid_magnitude: bool = False,
                 reduce: bool = False):
        self.name = name
        self.binary = binary
        self.unary = unary
        self.bitvec = bitvec
        self.valid = valid
        self.valid_magnitude = valid_magnitude
        """`valid` bounds the input's magnitude rather than its value (reciprocal)."""
        self.reduce = reduce
        """Usable as a reduction operator (tensor_reduce, activation's reduce_op)."""

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from axon.targets.nki.simulator.language import elementwise

        return elementwise(self, args, kwargs)


def _cmp(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: fn(a, b).astype(F32)


add = Op("add", binary=np.add, reduce=True)
subtract = Op("subtract", binary=np.subtract, reduce=True)
multiply = Op("multiply", binary=np.multiply, reduce=True)
divide = Op("divide", binary=np.divide)
maximum = Op("maximum", binary=np.maximum, reduce=True)
minimum = Op("minimum", binary=np.minimum, reduce=True)
power = Op("power", binary=np.power)
abs_max = Op("abs_max", binary=lambda a, b: np.maximum(np.abs(a), np.abs(b)))
abs_min = Op("abs_min", binary=lambda a, b: np.minimum(np.abs(a), np.abs(b)))
equal = Op("equal", binary=_cmp(np.equal))
not_equal = Op("not_equal", binary=_cmp(np.not_equal))
greater = Op("greater", binary=_cmp(np.greater))
greater_equal = Op("greater_equal", binary=_cmp(np.greater_equal))
less = Op("less", binary=_cmp(np.less))
less_equal = Op("less_equal", binary=_cmp(np.less_equal))
logical_and = Op("logical_and", binary=_cmp(lambda a, b: (a != 0) & (b != 0)), reduce=True)
logical_or = Op("logical_or", binary=_cmp(lambda a, b: (a != 0) | (b != 0)), reduce=True)
logical_xor = Op("logical_xor", binary=_cmp(lambda a, b: (a != 0) ^ (b != 0)), reduce=True)
bitwise_and = Op("bitwise_and", binary=np.bitwise_and, bitvec=True, reduce=True)
bitwise_or = Op("bitwise_or", binary=np.bitwise_or, bitvec=True, reduce=True)
bitwise_xor = Op("bitwise_xor", binary=np.bitwise_xor, bitvec=True, reduce=True)
left_shift = Op("left_shift", binary=np.left_shift, bitvec=True)
right_shift = Op("right_shift", binary=np.right_shift, bitvec=True)
invert = Op("invert", unary=np.invert, bitvec=True)

copy = Op("copy", unary=lambda x: x)
exp = Op("exp", unary=np.exp)
log = Op("log", unary=np.log, valid=(2.0 ** -64, 2.0 ** 64))
sqrt = Op("sqrt", unary=np.sqrt, valid=(2.0 ** -116, 2.0 ** 118))
rsqrt = Op("rsqrt", unary=lambda x: F32(1.0) / np.sqrt(x), valid=(2.0 ** -87, 2.0 ** 97))
reciprocal = Op("reciprocal", unary=lambda x: F32(1.0) / x, valid=(2.0 ** -42, 2.0 ** 42),
                valid_magnitude=True)
square = Op("square", unary=np.square)
tanh = Op("tanh", unary=np.tanh)
sigmoid = Op("sigmoid", unary=_sigmoid)
relu = Op("relu", unary=lambda x: np.maximum(x, F32(0.0)))
gelu = Op("gelu", unary=_gelu)
gelu_apprx_tanh = Op("gelu_apprx_tanh", unary=_gelu_tanh)
silu = Op("silu", unary=lambda x: x * _sigmoid(x))
softplus = Op("softplus", unary=lambda x: np.logaddexp(F32(0.0), x).astype(F32))
mish = Op("mish", unary=lambda x: x * np.tanh(np.logaddexp(F32(0.0), x)).astype(F32))
erf = Op("erf", unary=_erf)
sin = Op("sin", unary=np.sin, valid=(-math.pi, math.pi))
arctan = Op("arctan", unary=np.arctan, valid=(-math.pi / 2, math.pi / 2))
sign = Op("sign", unary=np.sign)
abs = Op("abs", unary=np.abs)  # noqa: A001 - the NKI name
negative = Op("negative", unary=np.negative)

#: every operator by name
OPS: dict[str, Op] = {op.name: op for op in globals().values() if isinstance(op, Op)}

#: numpy ufuncs legacy kernels pass as operators (`op=np.add`)
UFUNCS: dict[object, Op] = {
    np.add: add, np.subtract: subtract, np.multiply: multiply, np.divide: divide,
    np.maximum: maximum, np.minimum: minimum, np.power: power, np.equal: equal,
    np.not_equal: not_equal, np.greater: greater, np.greater_equal: greater_equal,
    np.less: less, np.less_equal: less_equal, np.bitwise_and: bitwise_and,
    np.bitwise_or: bitwise_or, np.bitwise_xor: bitwise_xor, np.exp: exp, np.tanh: tanh,
    np.sqrt: sqrt, np.square: square, np.abs: abs, np.sign: sign,
}
