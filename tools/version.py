"""Axon's version, for `axon --version` and `axon-opt --version`."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def axon_version() -> str:
    """The installed package's version (its metadata), or "unknown" in a checkout that was never
    installed."""
    try:
        return version("axon")
    except PackageNotFoundError:
        return "unknown"
