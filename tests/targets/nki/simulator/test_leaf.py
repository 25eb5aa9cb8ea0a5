"""The simulator is a leaf package: it imports the standard library, numpy and ml_dtypes, and
its own modules, nothing else of Axon."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import axon.targets.nki.simulator as simulator

ALLOWED_THIRD_PARTY = {"numpy", "ml_dtypes"}


def test_imports_only_numpy_ml_dtypes_and_itself() -> None:
    package = Path(simulator.__file__).parent
    found: dict[str, set[str]] = {}
    for source in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name, set()).add(source.name)
    bad = {name: files for name, files in found.items()
           if not (name.startswith("axon.targets.nki.simulator")
                   or name.partition(".")[0] in ALLOWED_THIRD_PARTY
                   or name.partition(".")[0] in sys.stdlib_module_names)}
    assert not bad, f"the simulator must stay a leaf: {bad}"
    assert "axon.targets.nki.simulator.trace" in found
