"""Generic forms as an interface: any op of any dialect whose meaning is one generic form.

An op class opts in by carrying the `HasGenericForm` trait and implementing the `FormOp`
protocol: a classmethod `semantics(operand_types, attrs) -> Semantics` (the one definition of its
meaning), `attrs()` (its properties as Python values), `meaning()` (its semantics for its own
operands, usually memoized) and the builder `make(operands, **attrs)`. Everything that reads
meaning (the verifier, the reference interpreter's form evaluator, the cost model and the nu-graph)
goes through `has_form` and
`generic_form` here, never through a dialect's base class, so a new level (tiles, NKI
instructions, Triton-level ops) is verifiable, interpretable and storable by adding its ops.

The nu-graph's op table is `form_op_classes()`: every op with the trait in a dialect registered
with `register_dialect` (the `ax` dialect registers itself when imported).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, TypeGuard, runtime_checkable

from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.traits import OpTrait

from axon.dialects.form.generic_form import GenericForm


@dataclass(frozen=True)
class Semantics:
    """What an op means for given operand types: its generic form and its result type (a
    tensor-like type with `shape` and `dtype`)."""

    form: GenericForm
    result_type: Attribute


@dataclass(frozen=True)
class HasGenericForm(OpTrait):
    """The op's meaning is the generic form its class's `semantics` gives (see `FormOp`)."""


@runtime_checkable
class FormOp(Protocol):
    """What an op with the `HasGenericForm` trait provides."""

    name: str

    @classmethod
    def semantics(cls, operand_types: Sequence[Any], attrs: Mapping[str, Any]) -> Semantics:
        """The generic form and result type for operands of these types and these properties."""
        ...

    def attrs(self) -> dict[str, Any]:
        """The op's properties as Python values (the `attrs` that `semantics` takes)."""
        ...

    def meaning(self) -> Semantics:
        """`semantics` for this op's own operand types and properties."""
        ...

    @classmethod
    def make(cls, operands: Sequence[SSAValue], **attrs: Any) -> Operation:
        """The op over `operands` with these properties, its result type inferred."""
        ...


def has_form(op: object) -> TypeGuard[Operation]:
    """Is `op` an operation that states its meaning as a generic form? (A value's owner may be a
    block, for a block argument: that is no such op.)"""
    return isinstance(op, Operation) and op.has_trait(HasGenericForm)


def generic_form(op: Operation) -> GenericForm:
    """The generic form of an op that has one (`has_form(op)`)."""
    return form_op(op).meaning().form


def form_op(op: Operation) -> FormOp:
    """`op` as a `FormOp`; a TypeError names an op without the trait."""
    if not has_form(op):
        raise TypeError(f"'{op.name}' has no generic form (no HasGenericForm trait)")
    return op  # type: ignore[return-value]


_FORM_OPS: dict[str, type[Operation]] = {}


def register_dialect(dialect: Dialect) -> None:
    """Make the form ops of `dialect` known to `form_op_classes` (idempotent)."""
    for op in dialect.operations:
        if op.has_trait(HasGenericForm):
            _FORM_OPS[op.name] = op


def form_op_classes() -> Mapping[str, type[Operation]]:
    """Every op class with the `HasGenericForm` trait in a registered dialect, by op name."""
    return MappingProxyType(_FORM_OPS)


__all__ = ["FormOp", "HasGenericForm", "Semantics", "form_op", "form_op_classes", "generic_form",
           "has_form", "register_dialect"]
