"""A Forge problem in KernelBench format, as the harness loads, draws and compares it.

A problem file holds `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`, module-level
int size globals that the two functions read when called, and a global `dtype`. The harness
trusts that file (it is the problem set's, not a candidate's): it is imported in the parent.
`load_problem` imports it with some size globals and the dtype replaced; `draw_run` builds, for
one seed, what a check needs: the init inputs, the model's state dict in the run's dtype, the
inputs, and the reference (the model in float32 on the dtype-rounded inputs widened to float32,
as `benchmarks/forge/problem_set.py` checks). `compare` is the one element-by-element rule of
the Forge path. Standard library and torch only (a leaf: see `__init__.py`).
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from axon.targets.xe_triton.harness.inputs import TORCH_DTYPES

#: (rtol, atol) of a result of each dtype against a float32 reference: the numbers of
#: `dialects/form/dtypes.py` (`DType.tolerance`), which the harness may not import; a test
#: checks they are equal
TOLERANCES: dict[str, tuple[float, float]] = {
    "f32": (2e-5, 2e-6), "f16": (4e-3, 1e-3), "bf16": (3e-2, 8e-3)}
#: torch dtype -> the dtype's name
DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}

_loaded = itertools.count()


class ProblemFileError(ValueError):
    """A problem file that is not in the format, or a size it does not have."""


def load_file(path: Path, module_name: str) -> ModuleType:
    """Import the Python file `path` as a fresh module named `module_name` (runs the file; Triton
    reads a kernel's source from its file, so kernels are loaded from theirs)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def size_names(module: ModuleType) -> list[str]:
    """The size globals of a loaded problem: its module-level ints."""
    return [k for k, v in vars(module).items()
            if not k.startswith("_") and isinstance(v, int) and not isinstance(v, bool)]


def load_problem(path: Path, sizes: Mapping[str, int] | None = None,
                 dtype: str | None = None) -> ModuleType:
    """A fresh module of the problem file `path` with the size globals in `sizes` and the
    `dtype` global (a dtype name) replaced; ProblemFileError for a size it does not have or a
    file missing a part of the format."""
    module = load_file(path, f"axon_forge_problem_{next(_loaded)}")
    for part in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, part):
            raise ProblemFileError(f"{path}: not a problem file: no {part}")
    known = size_names(module)
    for key, value in (sizes or {}).items():
        if key not in known:
            raise ProblemFileError(f"{path.name}: no size {key!r}; its sizes are "
                                   f"{', '.join(known)}")
        setattr(module, key, int(value))
    if dtype is not None:
        vars(module)["dtype"] = TORCH_DTYPES[dtype]
    if not any(vars(module).get("dtype") is d for d in DTYPE_NAMES):
        raise ProblemFileError(f"{path.name}: its `dtype` global is not one of "
                               f"{', '.join(str(d) for d in DTYPE_NAMES)}")
    return module


def results(out: Any) -> list[Any]:
    """A forward's results as a list (a tuple or list as it is, anything else alone)."""
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], dtype: torch.dtype,
            rtol: float, atol: float) -> tuple[float, str]:
    """(max |error|, "" or why not): every result of `got` is of `dtype` and within
    `atol + rtol * |want|` of `want`, element by element (a NaN is never within)."""
    if len(got) != len(want):
        return float("nan"), f"{len(got)} results, expected {len(want)}"
    worst = 0.0
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if tuple(g.shape) != tuple(w.shape):
            return float("nan"), f"result {k} has shape {list(g.shape)}, expected {list(w.shape)}"
        if g.dtype != dtype:
            return float("nan"), f"result {k} is {g.dtype}, expected {dtype}"
        g, w = g.to(w.device), w.float()
        error = (g.float() - w).abs()
        if error.numel():
            worst = max(worst, float(torch.nan_to_num(error, nan=float("inf")).max()))
        bad = ~(error <= atol + rtol * w.abs())
        if bool(bad.any()):
            index = tuple(int(i) for i in torch.nonzero(bad)[0])
            return worst, (f"result {k}{list(index)}: got {float(g[index]):.6g}, expected "
                           f"{float(w[index]):.6g} (max |error| {worst:.3g}; rtol {rtol:g}, "
                           f"atol {atol:g})")
    return worst, ""


@dataclass
class Run:
    """One check of a problem: its seed and sizes, the init inputs, the model's state dict (in
    the run's dtype, on the CPU), the inputs (CPU, the run's dtype) and the float32 reference
    (on the device)."""

    seed: int
    sizes: dict[str, int]
    init_inputs: list[Any]
    state: dict[str, torch.Tensor]
    inputs: list[Any]
    want: list[torch.Tensor]
    model: torch.nn.Module

    @property
    def label(self) -> str:
        """`seed 1, sizes batch_size=33 dim=1100` (for a reason line)."""
        sizes = " ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f"seed {self.seed}, sizes {sizes}" if sizes else f"seed {self.seed}"

    def job(self) -> dict[str, Any]:
        """What the child needs of it (torch.save-able with `weights_only` loading)."""
        return {"init": self.init_inputs, "state": self.state, "inputs": self.inputs}


def draw_run(module: ModuleType, seed: int, device: str) -> Run:
    """Build the problem's Model and inputs from `seed` (`torch.manual_seed(seed)` before
    `get_init_inputs()` and the Model, `seed + 1` before `get_inputs()`), cast to the module's
    dtype, and compute the reference on `device`."""
    run_dtype: torch.dtype = module.dtype
    torch.manual_seed(seed)
    init_inputs = list(module.get_init_inputs())
    torch.manual_seed(seed)
    model = module.Model(*init_inputs).to(dtype=run_dtype)
    reference = copy.deepcopy(model).to(device=device, dtype=torch.float32)
    torch.manual_seed(seed + 1)
    inputs = list(module.get_inputs())
    widened = [x.to(device=device, dtype=torch.float32)
               if isinstance(x, torch.Tensor) and x.is_floating_point()
               else x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        want = [w.float() for w in results(reference(*widened))]
    sizes = {k: getattr(module, k) for k in size_names(module)}
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return Run(seed, sizes, init_inputs, state, [x.cpu() if isinstance(x, torch.Tensor) else x
                                                 for x in inputs], want, model.to(device))
