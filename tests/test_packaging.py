"""Packaging guards for the root layout (the repository root is the `axon` package) and for CI.

An editable install finds every subpackage, but a wheel ships only those listed in
[tool.setuptools].packages and only the data files matched by package-data; these tests catch an
omission before a non-editable install (the README's test command) does.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: top-level folders that are not part of the package
NOT_PACKAGE = {"tests", "lit_tests", "build", "docs"}


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _package_dirs() -> dict[str, Path]:
    """`axon.x.y` -> folder, for every folder below the root holding an `__init__.py`."""
    found = {}
    for init in ROOT.rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        top = rel.parts[0] if rel.parts else ""
        if top.startswith(".") or top in NOT_PACKAGE or top.endswith(".egg-info"):
            continue
        found[".".join(["axon", *rel.parts])] = init.parent
    return found


def test_every_subpackage_is_listed() -> None:
    listed = set(_setuptools()["packages"])
    missing = sorted(set(_package_dirs()) - listed)
    assert not missing, f"add to [tool.setuptools].packages in pyproject.toml: {missing}"


def test_every_listed_package_exists() -> None:
    stale = sorted(set(_setuptools()["packages"]) - set(_package_dirs()) - {"axon"})
    assert not stale, f"listed in [tool.setuptools].packages but missing on disk: {stale}"


def test_data_files_are_package_data() -> None:
    """Non-module files inside a package (grammars, benchmark programs) must match package-data,
    or the wheel leaves them out."""
    package_data = _setuptools().get("package-data", {})
    packages = _package_dirs()
    package_folders = set(packages.values())
    unshipped = []
    for name, folder in packages.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            here = Path(dirpath)
            # subpackages are checked on their own; caches are not shipped
            dirnames[:] = [d for d in dirnames
                           if here / d not in package_folders and d != "__pycache__"]
            for filename in filenames:
                rel = (here / filename).relative_to(folder).as_posix()
                if here == folder and filename.endswith(".py"):
                    continue  # a module of the package itself
                if not any(fnmatch.fnmatch(rel, pattern) for pattern in package_data.get(name, [])):
                    unshipped.append(f"{name}: {rel}")
    assert not unshipped, f"add to [tool.setuptools.package-data]: {unshipped}"


def test_no_python_files_at_the_root() -> None:
    """A root-level module (even conftest.py) would ship as `axon/<name>.py`, and a root
    `__init__.py` makes pytest import the checkout folder as a second package."""
    stray = sorted(p.name for p in ROOT.glob("*.py"))
    assert not stray, f"no .py files at the repository root (move them into a package): {stray}"


# ---- .ci/run and the README stay in step -------------------------------------------------------
def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"<!-- test-command -->(.*?)<!-- /test-command -->", text, re.S)
    assert len(blocks) == 1, "README.md needs exactly one <!-- test-command --> block"
    lines = [line.strip() for line in blocks[0].splitlines()
             if line.strip() and not line.strip().startswith("```")]
    assert len(lines) == 1, f"the README test-command block must hold one command: {lines}"
    return lines[0]


def test_ci_runs_the_readme_test_command() -> None:
    command = _readme_test_command()
    script = ROOT / ".ci" / "run"
    assert os.access(script, os.X_OK), ".ci/run must be executable"
    printed = subprocess.run(["bash", str(script), "--print-command"], capture_output=True,
                             text=True, check=True, timeout=60).stdout
    assert printed == command + "\n"


def test_readme_test_command_runs_both_suites() -> None:
    steps = [step.strip() for step in _readme_test_command().split("&&")]
    assert steps[0].startswith("pip install") and "[test]" in steps[0]
    assert any(step.split()[:1] == ["pytest"] for step in steps) and "lit -v lit_tests" in steps
