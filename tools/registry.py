"""The one registry of Axon's dialects and passes, shared by `axon-opt` and the embedding API.

Entries map a name to a zero-argument factory, as xDSL's own registries do
(`xdsl.dialects.get_all_dialects`, `xdsl.transforms.get_all_passes`): nothing is imported until a
dialect is parsed or a pass is requested, so `axon-opt --help` stays fast however many passes exist.
To add a pass, add one `name: factory` entry to `get_all_passes`; the driver, the embedding API
(`axon.tools.embed.run_pipeline`) and the tests pick it up from here.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


def _lazy(module: str, name: str) -> Callable[[], Any]:
    """A factory that imports `module` and returns its attribute `name` when first called."""
    return lambda: getattr(import_module(module), name)


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Axon's own dialects, by name (xDSL's upstream dialects are not included)."""
    return {
        "ax": _lazy("axon.dialects.ax", "Ax"),
        "nu": _lazy("axon.dialects.nu", "Nu"),
    }


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Axon's own passes, by their `-p` name (xDSL's upstream passes are not included)."""
    return {
        "verify-equivalence": _lazy("axon.passes.verify_equivalence", "VerifyEquivalencePass"),
        "build-nugraph": _lazy("axon.passes.build_nugraph", "BuildNugraphPass"),
        "propagate": _lazy("axon.passes.propagate", "PropagatePass"),
    }


def upstream_dialects() -> dict[str, Callable[[], Dialect]]:
    """xDSL's dialects (builtin, func, arith, ...), as the stock `xdsl-opt` sees them."""
    return dict(Universe.get_multiverse().all_dialects)


def upstream_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes (canonicalize, cse, dce, ...), as the stock `xdsl-opt` sees them."""
    return dict(Universe.get_multiverse().all_passes)


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass a pipeline may name: xDSL's, then Axon's (an Axon name shadows an upstream one;
    tests/tools/test_axon_opt.py checks that none does)."""
    return upstream_passes() | get_all_passes()


def register_dialects(ctx: Context) -> Context:
    """Register xDSL's and Axon's dialects in `ctx` (lazily) and return it."""
    for name, factory in (upstream_dialects() | get_all_dialects()).items():
        ctx.register_dialect(name, factory)
    return ctx
