"""The sizes and dtypes a user's kernel launches have at a problem's sizes, recorded without a
GPU: the kernel file's `ModelNew.forward` run on tensors of the meta device, each Triton
kernel's launch `kernel[grid](...)` intercepted.

    record = record_launches(KernelFile.read(kernel), kernel, problem)   # problem's own sizes
    launch = record.at(site)            # the first launch from this site, or None
    launch.size("N"), launch.size("G0"), launch.dtype("x_ptr")           # 4096, 4096, "bf16"
    launch.tensor("y_ptr")          # TensorArg: shape, strides, dtype, storage

The raised path (`raised_path.py`) prices its selection at these sizes and selects in these
dtypes: the text has neither (a size is a host expression such as `M * N`, a dtype is whatever
the host allocated). The problem file is imported (its Python runs, as the torch path runs it)
and the kernel file too (it imports Triton); `Model` and `ModelNew` are built and the inputs
drawn under `torch.device("meta")`, so no data is made (a problem's inputs can be gigabytes)
and no kernel runs: each launched kernel's module global is replaced by a recorder that binds
the launch's arguments to the kernel's parameters, as Triton does, and keeps the integers and
each tensor's shape, strides, dtype and storage (whether a result is written into the user's
buffer directly depends on its layout and on its sharing no memory with an input). Host code
that needs real data (`.item()`, a data-dependent shape) fails on meta: the record then holds
the error and no launch, and the caller falls back to its own rule.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import torch

from axon.forge.source import KernelFile
from axon.frontend.triton.parse import LaunchSite
from axon.targets.xe_triton.harness.forge_problem import load_file, load_problem
from axon.targets.xe_triton.harness.inputs import TORCH_DTYPES

__all__ = ["LaunchRecord", "RecordedLaunch", "TensorArg", "record_launches"]

#: torch dtype -> Axon's dtype name
_DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}

_loaded = itertools.count()


@dataclass(frozen=True)
class TensorArg:
    """A tensor a launch passed: its shape, strides (in elements), dtype (Axon's name, such as
    "bf16", or torch's for a dtype Axon does not name) and storage (a number of the record's:
    tensors with one storage, views of one buffer, have the same)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    storage: int = 0


@dataclass(frozen=True)
class RecordedLaunch:
    """One launch of `kernel` from the host line `line`: the grid (None where it could not be
    evaluated) and each parameter's argument (an int, float or bool, a TensorArg, or None for
    anything else)."""

    kernel: str
    line: int
    grid: tuple[int, ...] | None
    args: dict[str, int | float | bool | TensorArg | None]

    def size(self, symbol: str) -> int | None:
        """The value of a raised kernel's size symbol: a parameter's integer argument, or the
        grid's dim `G<k>`; None when the launch gives no integer for it."""
        if symbol.startswith("G") and symbol[1:].isdigit() and symbol not in self.args:
            k = int(symbol[1:])
            return self.grid[k] if self.grid is not None and k < len(self.grid) else None
        value = self.args.get(symbol)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def dtype(self, param: str) -> str | None:
        """The dtype of the tensor bound to `param`, or None for a non-tensor."""
        tensor = self.tensor(param)
        return tensor.dtype if tensor is not None else None

    def tensor(self, param: str) -> TensorArg | None:
        """The tensor bound to `param`, or None for a non-tensor."""
        value = self.args.get(param)
        return value if isinstance(value, TensorArg) else None


@dataclass
class LaunchRecord:
    """The launches one forward made, in order, at the problem sizes `sizes`; `error` says why
    none was recorded ("" when the forward ran)."""

    sizes: dict[str, int]
    launches: list[RecordedLaunch] = field(default_factory=list)
    error: str = ""
    sites: dict[tuple[str, int], int] = field(default_factory=dict)
    """(kernel, the site's first line) -> the site's last line: launches are matched to sites
    by the host line they ran from."""

    def at(self, site: LaunchSite) -> RecordedLaunch | None:
        """The first launch made from `site`, or None when it made none."""
        last = self.sites.get((site.kernel, site.loc[0]), site.loc[0])
        return next((launch for launch in self.launches if launch.kernel == site.kernel
                     and site.loc[0] <= launch.line <= last), None)


class _Recorder:
    """Stands for a Triton kernel: `recorder[grid](*args, **kwargs)` records the launch."""

    def __init__(self, name: str, params: list[str], filename: str,
                 out: list[RecordedLaunch], storages: dict[int, int]) -> None:
        self.name = name
        self.params = params
        self.filename = filename
        self.out = out
        self.storages = storages

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launch(*args: Any, **kwargs: Any) -> None:
            bound = dict(zip(self.params, args, strict=False))
            bound.update({k: v for k, v in kwargs.items() if k in self.params})
            self.out.append(RecordedLaunch(self.name, self._host_line(sys._getframe(1)),
                                           _grid(grid, {**kwargs, **bound}),
                                           {k: _argument(v, self.storages)
                                            for k, v in bound.items()}))
        return launch

    def _host_line(self, frame: FrameType | None) -> int:
        """The line of the kernel file the launch ran from (the nearest such frame)."""
        while frame is not None and Path(frame.f_code.co_filename) != Path(self.filename):
            frame = frame.f_back
        return frame.f_lineno if frame is not None else 0


def _argument(value: Any, storages: dict[int, int]) -> int | float | bool | TensorArg | None:
    """A launch argument as recorded; `storages` numbers the storages met so far (a meta tensor
    has no address: its storage's C object, alive while the forward holds the tensor, is what
    views of one buffer share; a freed buffer's reused one merges two storages, never splits
    one)."""
    if isinstance(value, torch.Tensor):
        storage = storages.setdefault(value.untyped_storage()._cdata, len(storages))
        return TensorArg(tuple(value.shape), tuple(value.stride()),
                         _DTYPE_NAMES.get(value.dtype, str(value.dtype)), storage)
    if isinstance(value, (bool, int, float)):
        return value
    return None


def _grid(grid: Any, meta: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The grid's dims as integers (a callable grid is called on the launch's arguments, as
    Triton does); None where they are not integers or the call fails."""
    try:
        dims = grid(dict(meta)) if callable(grid) else grid
        dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
        return tuple(int(d) for d in dims) if all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims) else None
    except Exception:  # noqa: BLE001 (the user's grid function: no grid recorded)
        return None


def record_launches(file: KernelFile, kernel_path: Path, problem_path: Path,
                    sizes: Mapping[str, int] | None = None) -> LaunchRecord:
    """Run the kernel file's `ModelNew` on the problem's inputs on the meta device (module
    docstring), at the problem file's own size globals with `sizes` replacing some; every
    launch of a kernel the file launches is recorded. RUNS the problem's and the kernel file's
    Python. A failure is the record's `error`."""
    record = LaunchRecord(dict(sizes or {}))
    before = set(sys.modules)
    try:
        problem = load_problem(problem_path, sizes)
        record.sizes = {k: v for k, v in vars(problem).items() if not k.startswith("_")
                        and isinstance(v, int) and not isinstance(v, bool)}
        kernels = load_file(kernel_path, f"axon_forge_kernel_record_{next(_loaded)}")
        storages: dict[int, int] = {}
        for site in file.module.launches:
            statement = _statement_lines(file, site)
            record.sites[(site.kernel, site.loc[0])] = statement
            if site.kernel in file.module.kernels:
                params = [p.name for p in file.module.kernels[site.kernel].params]
                setattr(kernels, site.kernel, _Recorder(site.kernel, params, str(kernel_path),
                                                        record.launches, storages))
        with torch.device("meta"), torch.no_grad():
            model = kernels.ModelNew(*problem.get_init_inputs()).to(problem.dtype)
            model(*problem.get_inputs())
    except Exception as err:  # noqa: BLE001 (the user's host code on meta: reported, not fatal)
        record.launches.clear()
        record.error = f"{type(err).__name__}: {err}".strip().splitlines()[0]
    finally:  # the two files' modules are not kept (a later load makes fresh ones)
        for name in set(sys.modules) - before:
            if name.startswith(("axon_forge_problem_", "axon_forge_kernel_record_")):
                del sys.modules[name]
    return record


def _statement_lines(file: KernelFile, site: LaunchSite) -> int:
    """The last line of the launch statement that starts at `site`'s line."""
    for call in file.launch_calls(site.kernel):
        if call.lineno == site.loc[0]:
            return call.end_lineno or call.lineno
    return site.loc[0]
