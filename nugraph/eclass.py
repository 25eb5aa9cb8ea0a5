"""E-nodes and e-classes.

An e-node is an op applied to e-classes: the op name (`ax.matmul`, `ax.generic`, ... or `input`
for a program parameter), its properties as hashable Python values (the values of
the op's `attrs()`), and the ids of its child classes. Identity is structural, which is what
hash-consing needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from axon.dialects.ax.tensor_type import TensorType

INPUT_OP = "input"
"""The op name of a parameter leaf; its attrs are (("index", i), ("name", name))."""

Attrs = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class ENode:
    """`op(children...)` with properties `attrs` (sorted by name)."""

    op: str
    attrs: Attrs
    children: tuple[int, ...]

    @staticmethod
    def make(op: str, attrs: dict[str, Any], children: tuple[int, ...]) -> ENode:
        return ENode(op, tuple(sorted((k, v) for k, v in attrs.items() if v is not None)),
                     children)

    def attr_dict(self) -> dict[str, Any]:
        return dict(self.attrs)

    def map_children(self, fn: Any) -> ENode:
        return ENode(self.op, self.attrs, tuple(fn(c) for c in self.children))

    @property
    def is_input(self) -> bool:
        return self.op == INPUT_OP

    def label(self) -> str:
        """A short human-readable name: `ax.sum{axes=(1,)}`."""
        if self.is_input:
            return str(self.attr_dict()["name"])
        shown = {k: v for k, v in self.attrs if k != "form"}
        form = self.attr_dict().get("form")
        text = self.op
        if shown:
            text += "{" + ", ".join(f"{k}={_show(v)}" for k, v in shown.items()) + "}"
        if form is not None:
            text += f"[{form}]"
        return text


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ")"
    return str(value)


@dataclass
class EClass:
    """A set of equal e-nodes (by node id) of one tensor type, with the data of the graph's
    analysis (`analysis.py`; under the default analysis the data is the type itself)."""

    id: int
    type: TensorType
    data: Any
    nodes: list[int] = field(default_factory=list)
