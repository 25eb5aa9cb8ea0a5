"""The base class of tensor-level ops: semantics through one generic form.

Each op class implements `semantics(operand_types, attrs)`, returning its generic form and result
type. Everything else derives from that: the verifier (result type must equal the inferred one), the
builder used by both frontends (`Op.make(operands, **attrs)`), and `op.generic_form()` used by the
interpreter, the naive evaluator and the SMT encoder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, SSAValue, TypeAttribute
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax.shapes import ShapeError
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import dtype_attr, dtype_name
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.interface import Semantics
from axon.dialects.form.intexpr import IntExpr

#: memo of `TensorOp.meaning`, cleared whole when full (a simple bound on memory)
_MEANINGS: dict[tuple[Any, ...], Semantics] = {}
_MEANINGS_LIMIT = 1 << 14


def _memo_semantics(key: tuple[Any, ...], derive: Callable[[], Semantics]) -> Semantics:
    """An op's semantics, keyed on its class, operand types and properties (all immutable), so
    `make` and `meaning` derive each distinct one once."""
    hit = _MEANINGS.get(key)
    if hit is None:
        hit = derive()
        if len(_MEANINGS) >= _MEANINGS_LIMIT:
            _MEANINGS.clear()
        _MEANINGS[key] = hit
    return hit


# ---- attribute kinds: Python value <-> xDSL attribute ------------------------------------------
def _ints(values: Sequence[int]) -> Attribute:
    key = tuple(int(v) for v in values)
    attr = _INTS.get(key)
    if attr is None:
        if len(_INTS) >= _MEANINGS_LIMIT:
            _INTS.clear()
        attr = _INTS[key] = DenseArrayBase.from_list(i64, key)
    return attr


_BOOLS = {False: BoolAttr.from_bool(False), True: BoolAttr.from_bool(True)}


def _dims(values: Sequence[IntExpr | int | str]) -> Attribute:
    return ArrayAttr([StringAttr(str(IntExpr.lift(v))) for v in values])


#: one DenseArray per tuple of ints (axes, permutations), cleared whole when full
_INTS: dict[tuple[int, ...], Attribute] = {}
#: one FloatAttr per value, as a program's constants repeat (building one is not cheap); keyed
#: with the sign so that 0.0 and -0.0 stay apart, cleared whole when full
_FLOATS: dict[tuple[float, bool], FloatAttr] = {}


def _float(value: Any) -> FloatAttr:
    v = float(value)
    key = (v, math.copysign(1.0, v) < 0)
    attr = _FLOATS.get(key)
    if attr is None:  # a NaN never matches itself: a new one each time, which is right
        if len(_FLOATS) >= _MEANINGS_LIMIT:
            _FLOATS.clear()
        attr = _FLOATS[key] = FloatAttr(v, f64)
    return attr


TO_ATTR: dict[str, Any] = {
    "int": lambda v: IntegerAttr(int(v), i64),
    "ints": _ints,
    "float": _float,
    "bool": lambda v: _BOOLS[bool(v)],
    "dtype": dtype_attr,
    "dims": _dims,
    "text": StringAttr,
}


def from_attr(attr: Attribute) -> Any:
    """The Python value of a property (the inverse of TO_ATTR)."""
    if isinstance(attr, IntegerAttr):
        width = getattr(attr.type, "width", None)
        if width is not None and width.data == 1:
            return bool(attr.value.data)
        return int(attr.value.data)
    if isinstance(attr, DenseArrayBase):
        return tuple(int(v) for v in attr.get_values())
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, ArrayAttr):
        return tuple(IntExpr.lift(s.data) for s in attr.data)  # type: ignore[union-attr]
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, TypeAttribute):
        return dtype_name(attr)
    raise TypeError(f"no Python value for attribute {attr}")


class TensorOp(IRDLOperation):
    """An op of the `ax` dialect. Subclasses set `ATTRS` (property name -> kind) and `semantics`."""

    #: property name -> kind in TO_ATTR; the order is the builder's keyword order
    ATTRS: ClassVar[dict[str, str]] = {}
    #: values `make` uses for attributes the caller leaves out
    DEFAULTS: ClassVar[dict[str, Any]] = {}
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"

    # ---- the one semantic hook ----------------------------------------------------------------
    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        raise NotImplementedError

    # ---- derived ------------------------------------------------------------------------------
    @classmethod
    def make(cls, operands: Sequence[SSAValue], **attrs: Any) -> TensorOp:
        """Create the op with its result type inferred; ShapeError names what does not fit."""
        types = [_tensor_type(v, i, cls) for i, v in enumerate(operands)]
        attrs = {**cls.DEFAULTS, **attrs}
        unknown = set(attrs) - set(cls.ATTRS)
        if unknown:
            raise ShapeError(f"{cls.name}: unknown attribute(s) {', '.join(sorted(unknown))}")
        props = {k: TO_ATTR[kind](attrs[k]) for k, kind in cls.ATTRS.items()
                 if attrs.get(k) is not None}
        sem = _memo_semantics((cls, tuple(types), tuple(sorted(props.items()))),
                              lambda: cls.semantics(types, attrs))
        return cls.create(operands=list(operands), result_types=[sem.result_type],
                          properties=props)

    def attrs(self) -> dict[str, Any]:
        """Python values of this op's properties."""
        return {k: from_attr(v) for k, v in self.properties.items() if k in self.ATTRS}

    def tensor_types(self) -> list[TensorType]:
        return [_tensor_type(v, i, type(self)) for i, v in enumerate(self.operands)]

    def meaning(self) -> Semantics:
        """The op's semantics for its current operand types and properties (memoized on them:
        they are all immutable attributes, and deriving a form re-runs shape inference)."""
        key = (type(self), tuple(v.type for v in self.operands),
               tuple(sorted((k, v) for k, v in self.properties.items() if k in self.ATTRS)))
        return _memo_semantics(key, lambda: type(self).semantics(self.tensor_types(),
                                                                 self.attrs()))

    def generic_form(self) -> GenericForm:
        """The generic form of this op instance."""
        return self.meaning().form

    def verify_(self) -> None:
        try:
            sem = self.meaning()
        except (ShapeError, ValueError) as err:
            raise VerifyException(f"'{self.name}': {err}") from None
        declared = self.results[0].type
        if declared != sem.result_type:
            raise VerifyException(
                f"'{self.name}': result type is {_show(declared)}, but the operands give "
                f"{_show(sem.result_type)}")


def _tensor_type(value: SSAValue, index: int, cls: type[TensorOp]) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise ShapeError(f"{cls.name}: operand #{index} has type {value.type}, "
                         f"expected !ax.tensor")
    return value.type


def _show(t: Attribute) -> str:
    if isinstance(t, TensorType):
        return f"!ax.tensor<[{', '.join(d.data for d in t.dims.data)}], {t.dtype}>"
    return str(t)


def operand_names(count: int, names: Sequence[str] | None = None) -> list[str]:
    """Names used in diagnostics: the IRDL operand names when given, else `operand #i`."""
    if names is not None:
        return [f"operand #{i} ({n})" for i, n in enumerate(names)]
    return [f"operand #{i}" for i in range(count)]
