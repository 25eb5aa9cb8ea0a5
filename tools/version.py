"""Axon's version, for `axon --version` and `axon-opt --version`, and its build: the version and
a digest of the package's own code, which the winner caches key on."""

from __future__ import annotations

import functools
import hashlib
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

#: what a build is made of: the package's Python sources, grammars and data (KB, profiles)
SOURCE_SUFFIXES = frozenset({".py", ".lark", ".yaml", ".yml", ".json"})
#: folders of the package root that are not the compiler (its tests, documents, build output)
NOT_CODE = frozenset({"tests", "lit_tests", "docs", "build", "dist"})


def axon_version() -> str:
    """The installed package's version (its metadata), or "unknown" in a checkout that was never
    installed."""
    try:
        return version("axon")
    except PackageNotFoundError:
        return "unknown"


def source_digest(root: Path) -> str:
    """A digest of the code under `root`: each file of `SOURCE_SUFFIXES` (its path relative to
    `root` and its bytes), in path order, skipping hidden and `__pycache__`-like folders, the
    `NOT_CODE` folders at the top and any `*.egg-info`; an explicit walk, no recursion."""
    digest = hashlib.sha256()
    files: list[tuple[str, Path]] = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        top = here == root
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_"))
                         and not d.endswith(".egg-info") and not (top and d in NOT_CODE))
        files += [(str((here / n).relative_to(root)), here / n) for n in names
                  if Path(n).suffix in SOURCE_SUFFIXES]
    for relative, path in sorted(files):
        digest.update(relative.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


@functools.cache
def axon_build() -> str:
    """`<version>+<digest of the package's code>`: two builds differ whenever their code does,
    even under one version string (a checkout between releases, an editable install), so a
    cached winner never outlives the compiler that chose it."""
    return f"{axon_version()}+{source_digest(Path(__file__).resolve().parent.parent)}"
