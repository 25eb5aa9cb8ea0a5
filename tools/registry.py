"""The one registry of Axon's dialects and passes, shared by `axon-opt` and the embedding API.

Entries map a name to a zero-argument factory, as xDSL's own registries do
(`xdsl.dialects.get_all_dialects`, `xdsl.transforms.get_all_passes`): nothing is imported until a
dialect is parsed or a pass is requested, so `axon-opt --help` stays fast however many passes exist.
To add a pass, add one `name: factory` entry to `get_all_passes`; the driver, the embedding API
(`axon.tools.embed.run_pipeline`) and the tests pick it up from here.

Of xDSL's own passes and targets, only those that take Axon IR are offered: the generic cleanups
(`GENERIC_UPSTREAM_PASSES`) and the MLIR printer. The others are written for xDSL's own dialects
(RISC-V, LLVM, CSL, ...) or run external tools (`mlir-opt`): asked for by name, they are refused
with a one-line reason rather than crashing on IR they were not written for.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from importlib import import_module
from typing import Any

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.arg_spec import parse_pipeline

#: xDSL's passes that take Axon IR: they read only op traits (purity, side effects) and the
#: func/scf/arith ops Axon programs are built with
GENERIC_UPSTREAM_PASSES = ("canonicalize", "cse", "dce", "licm")

#: the one xDSL target that prints Axon IR (`-t mlir`, the default)
AXON_TARGETS = ("mlir",)

#: Axon's dialects, by name, in a line each (for `axon-opt --help`; the dialects load lazily)
DIALECT_SUMMARIES = {
    "ax": "the tensor-level ops, each with its generic form (docs/ops.md)",
    "nu": "the nu-graph: e-classes and e-nodes, each e-node with the proof that admitted it",
}


def _lazy(module: str, name: str) -> Callable[[], Any]:
    """A factory that imports `module` and returns its attribute `name` when first called."""
    return lambda: getattr(import_module(module), name)


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Axon's own dialects, by name (xDSL's upstream dialects are not included)."""
    return {
        "ax": _lazy("axon.dialects.ax", "Ax"),
        "nki": _lazy("axon.dialects.nki", "Nki"),
        "nu": _lazy("axon.dialects.nu", "Nu"),
        "tile": _lazy("axon.dialects.tile", "Tile"),
        "xt": _lazy("axon.dialects.xt", "Xt"),
    }


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Axon's own passes, by their `-p` name (xDSL's upstream passes are not included)."""
    return {
        "propagate": _lazy("axon.passes.propagate", "PropagatePass"),
        "verify-equivalence": _lazy("axon.passes.verify_equivalence", "VerifyEquivalencePass"),
        "build-nugraph": _lazy("axon.passes.build_nugraph", "BuildNugraphPass"),
        "tile": _lazy("axon.passes.tile", "TilePass"),
        "lower-nki": _lazy("axon.passes.lower_nki", "LowerNkiPass"),
        "fuse-nki": _lazy("axon.passes.fuse_nki", "FuseNkiPass"),
    }


def upstream_dialects() -> dict[str, Callable[[], Dialect]]:
    """xDSL's dialects (builtin, func, arith, ...), as the stock `xdsl-opt` sees them."""
    return dict(Universe.get_multiverse().all_dialects)


def upstream_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes (canonicalize, cse, dce, ...), as the stock `xdsl-opt` sees them."""
    return dict(Universe.get_multiverse().all_passes)


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass a pipeline may name: Axon's, then xDSL's generic ones (an Axon name would
    shadow an upstream one; tests/tools/test_axon_opt.py checks that none does)."""
    upstream = upstream_passes()
    return get_all_passes() | {name: upstream[name] for name in GENERIC_UPSTREAM_PASSES}


class PassNameError(ValueError):
    """A pipeline names a pass that is not available (unknown, or xDSL's for other dialects)."""


def check_pass_names(pipeline: str) -> None:
    """A `PassNameError` naming the first pass of `pipeline` that is not available, and why: unknown
    (with close names), or one of xDSL's passes that do not take Axon IR. Bad syntax is left to
    the pipeline parser (an `ArgSpecParseError`)."""
    available = available_passes()
    for spec in parse_pipeline(pipeline):
        if spec.name in available:
            continue
        names = ", ".join(available)
        if spec.name in upstream_passes():
            raise PassNameError(f"'{spec.name}' is an xDSL pass for other dialects; it does not "
                                f"take Axon IR (the passes are: {names})")
        close = difflib.get_close_matches(spec.name, available, n=2)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise PassNameError(f"unknown pass '{spec.name}'; {hint}the passes are: {names}")


def upstream_targets() -> list[str]:
    """xDSL's output targets (`-t`), as the stock `xdsl-opt` sees them."""
    return list(Universe.get_multiverse().all_targets)


def register_dialects(ctx: Context) -> Context:
    """Register xDSL's and Axon's dialects in `ctx` (lazily) and return it."""
    for name, factory in (upstream_dialects() | get_all_dialects()).items():
        ctx.register_dialect(name, factory)
    return ctx
