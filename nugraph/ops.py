"""The tensor-level op classes by name, and the semantics of an e-node (its generic form and type).

The e-graph never re-states what an op means: it asks the op class (`semantics`, see
`dialects/form/interface.py`), the one definition shared with the verifier, the interpreter and the
SMT encoder. Its op table holds every op with a generic form in a registered dialect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from xdsl.ir import Operation

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.interface import Semantics, form_op_classes
from axon.nugraph.eclass import ENode


def op_classes() -> Mapping[str, type[Operation]]:
    """Every op class with a generic form in a registered dialect, by op name."""
    return form_op_classes()


def op_class(name: str) -> Any:
    """The op class named `name` (its `semantics` and `make` are what the nu-graph uses)."""
    try:
        return op_classes()[name]
    except KeyError:
        raise KeyError(f"'{name}' has no generic form in a registered dialect; the nu-graph "
                       "holds only such ops") from None


def node_semantics(node: ENode, child_types: Sequence[TensorType]) -> Semantics:
    """The generic form and result type of `node` applied to operands of `child_types`."""
    return semantics_of(node.op, node.attrs, tuple(child_types))


@lru_cache(maxsize=65536)
def semantics_of(op: str, attrs: tuple[tuple[str, Any], ...], child_types: tuple[TensorType, ...]
                 ) -> Semantics:
    """Cached `semantics`: an `ax.generic` parses its form text, which is slow to repeat."""
    return op_class(op).semantics(list(child_types), dict(attrs))
