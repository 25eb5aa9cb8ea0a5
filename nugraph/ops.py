"""The tensor-level op classes by name, and the semantics of an e-node (its generic form and type).

The e-graph never re-states what an op means: it asks the op class (`TensorOp.semantics`), the one
definition shared with the verifier, the interpreter and the SMT encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

from axon.dialects.ax import ALL_OPS, Semantics, TensorOp
from axon.dialects.ax.tensor_type import TensorType
from axon.nugraph.eclass import ENode


@cache
def op_classes() -> dict[str, type[TensorOp]]:
    """Every `ax` op class, by op name."""
    return {cls.name: cls for cls in ALL_OPS}


def op_class(name: str) -> type[TensorOp]:
    try:
        return op_classes()[name]
    except KeyError:
        raise KeyError(f"'{name}' is not an ax op; the nu-graph holds ax ops") from None


def node_semantics(node: ENode, child_types: Sequence[TensorType]) -> Semantics:
    """The generic form and result type of `node` applied to operands of `child_types`."""
    return semantics_of(node.op, node.attrs, tuple(child_types))


@lru_cache(maxsize=65536)
def semantics_of(op: str, attrs: tuple[tuple[str, Any], ...], child_types: tuple[TensorType, ...]
                 ) -> Semantics:
    """Cached `semantics`: an `ax.generic` parses its form text, which is slow to repeat."""
    return op_class(op).semantics(list(child_types), dict(attrs))
