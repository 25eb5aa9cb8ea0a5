"""Generated documentation stays in step with the code."""

from __future__ import annotations

from pathlib import Path

from axon.tools.op_table import table

ROOT = Path(__file__).resolve().parents[1]


def test_op_table_is_current() -> None:
    assert (ROOT / "docs" / "ops.md").read_text() == table(), (
        "docs/ops.md is stale: run `python -m axon.tools.op_table > docs/ops.md`")
