"""The Forge bundle: KernelBench-format problems, the user's kernel and Axon's candidates.

    BUNDLE/manifest.json                    the cases (below)
    BUNDLE/<case>/problem.py                Model, get_inputs(), get_init_inputs(), int size
                                            globals and a `dtype` global
    BUNDLE/<case>/input.py                  the user's own kernel: class ModelNew (optional)
    BUNDLE/<case>/<candidate>.py            Axon's candidates: class ModelNew

    {"format": "axon-forge-bundle", "version": 1, "profile": "h200", "seed": 0,
     "axon_version": "...",
     "cases": [{"case": "01_gemm_bias_relu", "problem": "01_gemm_bias_relu/problem.py",
                "sizes": {"batch_size": 2048}, "dtype": "bf16", "atol_scale": 1.0,
                "input_kernel": "01_gemm_bias_relu/input.py",
                "candidates": [{"id": "axon_1", "module": "01_gemm_bias_relu/axon_1.py",
                                "note": "free text"}]}]}

`sizes` are the size globals set before `get_inputs` / `get_init_inputs` are called (`{}`: the
file's own); `dtype` sets the problem's `dtype` global; `input_kernel` may be null. Every module
(input kernel, candidates) defines `class ModelNew(nn.Module)` taking the problem's init inputs
and holding the problem's Model's parameters (state dict keys and shapes). `read_forge_bundle`
raises `BundleError` naming the file and the JSON path of the first mistake, as `bundle.py` does
(its reader's checks are reused); every path must be a `.py` file inside the bundle. Standard
library only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from axon.targets.xe_triton.harness.bundle import (
    MANIFEST,
    _Reader,
    _show,
    read_manifest,
)

FORMAT = "axon-forge-bundle"
VERSION = 1


@dataclass(frozen=True)
class ForgeCandidate:
    """One of Axon's kernels for a case: its id, its module (relative to the bundle), a note."""

    id: str
    module: str
    note: str = ""


@dataclass(frozen=True)
class ForgeCase:
    """One problem at one set of sizes and one dtype, with the user's kernel and Axon's."""

    case: str
    problem: str
    sizes: dict[str, int]
    dtype: str
    atol_scale: float
    input_kernel: str | None
    candidates: tuple[ForgeCandidate, ...]


@dataclass(frozen=True)
class ForgeBundle:
    """A whole Forge bundle: where it lies, the device profile, the seed, its cases."""

    root: Path
    profile: str
    seed: int
    axon_version: str
    cases: tuple[ForgeCase, ...] = field(default_factory=tuple)

    def path(self, relative: str) -> Path:
        """The file of a module or problem named in the manifest."""
        return self.root / relative


def bundle_format(root: Path) -> str | None:
    """The manifest's `format` (None when there is no readable manifest with one): what
    `axon-bench --run` tells the two kinds of bundle apart by."""
    try:
        data = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    value = data.get("format") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def read_forge_bundle(root: Path) -> ForgeBundle:
    """Read and check `root/manifest.json`; BundleError at the first mistake."""
    path, data = read_manifest(root)
    return _ForgeReader(path).forge_bundle(data, root)


def write_forge_bundle(bundle: ForgeBundle, files: dict[str, str]) -> Path:
    """Write `bundle.root/manifest.json` and every file it names (`files` maps a manifest path
    to its text); the written bundle reads back equal."""
    for relative, text in files.items():
        target = bundle.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    data = {"format": FORMAT, "version": VERSION, "profile": bundle.profile, "seed": bundle.seed,
            "axon_version": bundle.axon_version,
            "cases": [{"case": c.case, "problem": c.problem, "sizes": dict(c.sizes),
                       "dtype": c.dtype, "atol_scale": c.atol_scale,
                       "input_kernel": c.input_kernel,
                       "candidates": [{"id": k.id, "module": k.module, "note": k.note}
                                      for k in c.candidates]} for c in bundle.cases]}
    path = bundle.root / MANIFEST
    bundle.root.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


class _ForgeReader(_Reader):
    """`bundle.py`'s reader with the Forge bundle's fields."""

    def forge_bundle(self, data: Any, root: Path) -> ForgeBundle:
        profile, seed, axon_version, cases_json = self.header(data, FORMAT)
        cases = self.named(cases_json, "cases", "case",
                           lambda c, where: self.forge_case(c, where, root))
        return ForgeBundle(root, profile, seed, axon_version, tuple(cases))

    def forge_candidate(self, data: Any, where: str, root: Path) -> ForgeCandidate:
        if not isinstance(data, dict):
            raise self.error(where, f"expected a candidate object, got {_show(data)}")
        cid = self.ident(data, "id", where)
        module = self.file(data, "module", where, root)
        assert module is not None
        return ForgeCandidate(cid, module, self.get(data, "note", where, str, ""))

    def forge_case(self, data: Any, where: str, root: Path) -> ForgeCase:
        if not isinstance(data, dict):
            raise self.error(where, f"expected a case object, got {_show(data)}")
        name = self.ident(data, "case", where)
        problem = self.file(data, "problem", where, root)
        assert problem is not None
        sizes_json = self.get(data, "sizes", where, dict, {}, "an object of sizes")
        sizes = {symbol: self.count(value, f"{where}.sizes.{symbol}")
                 for symbol, value in sizes_json.items()}
        dtype = self.dtype(data, where)
        atol_scale = float(self.get(data, "atol_scale", where, (int, float), 1.0, "a number"))
        if not (math.isfinite(atol_scale) and atol_scale > 0):
            raise self.error(f"{where}.atol_scale", f"expected a number > 0, got {atol_scale}")
        input_kernel = self.file(data, "input_kernel", where, root, optional=True)
        candidates_json = self.get(data, "candidates", where, list, what="a list of candidates")
        candidates = self.named(candidates_json, f"{where}.candidates", "id",
                                lambda c, here: self.forge_candidate(c, here, root))
        return ForgeCase(name, problem, sizes, dtype, atol_scale, input_kernel,
                         tuple(candidates))
