"""Checking an emitted Triton module against the reference interpreter.

    report = check_emitted(source, tiled, shapes=[{"M": 5, "N": 3}, ...],
                           blocks={"BM": 2, "BK": 4})

runs the module `staged.emit_tiled(tiled)` prints with Triton's CPU interpreter
(`TRITON_INTERPRET=1`, set here before Triton is imported; CPU torch tensors, no GPU) at each
shape, on the same random inputs as `axon.interpreter.run_function` on the `source` program,
and compares every result within its dtype's tolerance (`dialects/form/dtypes.py`). The
interpreter's bf16 `tl.dot` is wrong (docs/xe_triton.md), so check float32 programs.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.interpreter import run_function
from axon.targets.xe_triton.emit import EmittedModule
from axon.targets.xe_triton.staged import emit_tiled


@dataclass(frozen=True)
class ShapeCheck:
    """One shape's comparison: the largest error over the results, and whether it is within
    tolerance."""

    sizes: dict[str, int]
    max_abs_error: float
    passed: bool


@dataclass(frozen=True)
class CheckReport:
    """An emitted module and its comparison at every shape."""

    module: EmittedModule
    shapes: tuple[ShapeCheck, ...]

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.shapes)


def load_module(emitted: EmittedModule, directory: Path, *, interpret: bool = True
                ) -> ModuleType:
    """Import an emitted module from a file in `directory` (Triton reads a kernel's source
    from its file), under the CPU interpreter unless `interpret` is False (a GPU then runs
    it: the process must not have imported Triton under the interpreter)."""
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    path = directory / f"{emitted.name}_triton.py"
    path.write_text(emitted.text)
    spec = importlib.util.spec_from_file_location(f"axon_emitted_{emitted.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def check_emitted(source: FuncOp, tiled: FuncOp, shapes: Sequence[Mapping[str, int]],
                  blocks: Mapping[str, int], seed: int = 0, device: str = "h200", *,
                  options: Mapping[str, Any] | None = None) -> CheckReport:
    """Emit `tiled`, run it at each shape with `blocks` under the CPU interpreter, and compare
    with `source` (the program `tiled` tiles) run by the reference interpreter. `options` are
    keywords of the host function (`block_io`, `GROUP_SIZE_M`, `int64`, ...). A split loop's
    two launches run as one module (`staged.emit_tiled`)."""
    emitted = emit_tiled(tiled, device, blocks)
    with tempfile.TemporaryDirectory() as scratch:
        module = load_module(emitted, Path(scratch))
        checks = compare(source, module, emitted.name, shapes, seed, options=options)
    return CheckReport(emitted, tuple(checks))


def compare(source: FuncOp, module: ModuleType, name: str, shapes: Sequence[Mapping[str, int]],
            seed: int = 0, *, options: Mapping[str, Any] | None = None,
            device: str = "cpu") -> list[ShapeCheck]:
    """Run the host function `name` of a loaded module at each shape (its launch defaults,
    and `options`) on torch tensors on `device` and compare with `source` on the same inputs,
    uniform in [0.5, 1.5) and rounded to each input's dtype."""
    import torch

    def tensor(x: np.ndarray, t: TensorType) -> Any:
        if t.dtype == "bf16":  # through float32: torch takes no numpy bfloat16 (exact in both)
            return torch.from_numpy(np.asarray(x, np.float32)).to(device, torch.bfloat16)
        return torch.from_numpy(np.array(x)).to(device)

    run = getattr(module, name)
    params = [t for t in source.function_type.inputs.data if isinstance(t, TensorType)]
    rng = np.random.default_rng(seed)
    checks = []
    for sizes in shapes:
        inputs = [rng.uniform(0.5, 1.5, tuple(d.evaluate(sizes) for d in t.shape))
                  .astype(DTYPES[t.dtype].storage) for t in params]
        want = run_function(source, inputs, dict(sizes))
        got: Any = run(*(tensor(x, t) for x, t in zip(inputs, params, strict=True)),
                       **(options or {}))
        got = got if isinstance(got, tuple) else (got,)
        worst, passed = 0.0, True
        for g, w, t in zip(got, want, source.function_type.outputs.data, strict=True):
            assert isinstance(t, TensorType)
            rtol, atol = DTYPES[t.dtype].tolerance
            g_np = g.detach().float().cpu().numpy().astype(np.float64)
            w_np = np.asarray(w, np.float64)
            same = g_np.shape == w_np.shape
            passed &= same and bool(np.allclose(g_np, w_np, rtol=rtol, atol=atol))
            if same and g_np.size:
                worst = max(worst, float(np.max(np.abs(g_np - w_np))))
        checks.append(ShapeCheck(dict(sizes), worst, passed))
    return checks
