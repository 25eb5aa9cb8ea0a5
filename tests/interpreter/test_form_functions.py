"""The interpreter's table of form ops beyond `ax`: one entry per op class, even where two
dialects name their op classes alike (`tile.load` and `xt.load` are both `LoadOp`)."""

from __future__ import annotations

import axon.dialects.tile
import axon.dialects.xt  # noqa: F401  (registers the xt ops as form ops)
from axon.dialects.ax import ALL_OPS
from axon.dialects.form.interface import form_op_classes
from axon.interpreter.form_functions import _functions_class


def test_every_form_op_class_has_its_own_entry() -> None:
    others = frozenset(form_op_classes().values()) - frozenset(ALL_OPS)
    names = {cls.name for cls in others}
    assert {"tile.load", "xt.load"} <= names
    assert len({cls.__name__ for cls in others}) < len(others)  # the clash is there to hide
    table = dict(_functions_class(others)._impls())
    assert set(table) == set(others)
