"""The Forge problem set (issue 14): PyTorch problems and the Triton kernels a user wrote first.

Each problem is a file `problems/NN_short_name.py` in KernelBench format: `class Model(nn.Module)`
built as `Model(*get_init_inputs())` and called as `Model(...)(*get_inputs())`. Its sizes are
module globals (`batch_size = 2048`, ...) that `get_inputs` and `get_init_inputs` read when they
are called, so assigning a loaded module's globals changes the shapes; the global `dtype` is the
element type the problem runs in: `get_inputs` returns tensors of it, and a runner casts the
module to it (`model.to(dtype)`, as a user running it in bf16 would). The file of the same name
in `kernels/` holds the user's Triton kernel for it: `class ModelNew(nn.Module)`, taking the same
init inputs, building the same parameters in the same order (so one seed gives both the same
weights), and computing `forward` with Triton kernels.

    PROBLEMS                     # name -> Problem (category, small sizes, the two files)
    load_problem("01_gemm_bias_relu", sizes={"batch_size": 33}, dtype=torch.float32)
    load_kernel("01_gemm_bias_relu")
    check("01_gemm_bias_relu", sizes=PROBLEMS[...].small_sizes, dtype=torch.float32)

Loading a problem or a kernel imports its file: it runs that file's Python (and a kernel file
imports Triton). `check` compares ModelNew with the problem's Model run in float32 on the same
weights and inputs, within the dtype's tolerance of `dialects/form/dtypes.py`. On the CPU the
kernels run on Triton's interpreter, which Triton reads from `TRITON_INTERPRET` when it is first
imported: set it before (the command below does so for `--device cpu`); the interpreter computes
a bf16 `tl.dot` wrongly, so check on the CPU in float32 (`--small` does).

    python -m axon.benchmarks.forge --list
    python -m axon.benchmarks.forge --check NAME|all [--small] [--device cpu|cuda]

(The module is not `forge/problems.py`: beside the folder `problems/`, a module of that name
would be shadowed for mypy, which takes the folder for it.)
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

# one loader and one comparison for the problem set and the harness (a leaf package that runs
# on a GPU machine without the rest of Axon)
from axon.targets.xe_triton.harness.forge_problem import (
    compare,
    load_file,
    results,
    size_names,
)

FORGE_DIR = Path(__file__).resolve().parent
PROBLEM_DIR = FORGE_DIR / "problems"
KERNEL_DIR = FORGE_DIR / "kernels"

#: the kinds of problem issue 14 names
CATEGORIES = ("gemm_epilogue", "gemm_reduction", "norm", "softmax", "attention", "elementwise",
              "scan")

#: torch dtypes -> the dtype names of `dialects/form/dtypes.py`
DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


@dataclass(frozen=True)
class Problem:
    """One problem: its name (the file name without `.py`), its category, the small sizes tests
    run it at (every size global of the file, none a multiple of the kernel's blocks), and how
    many times its dtype's absolute tolerance a result may be off (`atol_scale`: above 1 only for
    a result whose rounding error grows with terms larger than the result, said where set)."""

    name: str
    category: str
    small_sizes: Mapping[str, int] = field(default_factory=dict)
    atol_scale: float = 1.0

    @property
    def problem_path(self) -> Path:
        """The problem's file (`Model`, `get_inputs`, `get_init_inputs`)."""
        return PROBLEM_DIR / f"{self.name}.py"

    @property
    def kernel_path(self) -> Path:
        """The kernel's file (`ModelNew` and its Triton kernels)."""
        return KERNEL_DIR / f"{self.name}.py"


_GEMM = {"batch_size": 33, "in_features": 130, "out_features": 65}
#: past one block of the kernels that loop over a row in blocks of 1024
_GEMM_LONG_ROWS = {"batch_size": 33, "in_features": 130, "out_features": 1100}
_ROWS = {"batch_size": 33, "dim": 1100}
_ATTENTION = {"batch_size": 2, "num_heads": 3, "seq_len": 65, "head_dim": 16}

PROBLEMS: dict[str, Problem] = {p.name: p for p in [
    Problem("01_gemm_bias_relu", "gemm_epilogue", _GEMM),
    Problem("02_gemm_gelu", "gemm_epilogue", _GEMM),
    Problem("03_gemm_swish_scale", "gemm_epilogue", _GEMM),
    Problem("04_gemm_residual_add", "gemm_epilogue", _GEMM),
    Problem("05_gemm_swiglu", "gemm_epilogue",
            {"num_tokens": 33, "hidden_size": 130, "intermediate_size": 65}),
    Problem("06_bmm_scale", "gemm_epilogue", {"batch_size": 3, "m": 33, "k": 130, "n": 65}),
    Problem("07_gemm_row_max", "gemm_reduction", _GEMM_LONG_ROWS),
    # torch in bf16 rounds each of the row's out_features GEMM outputs (|v| ~ 0.6 at the
    # benchmark's 4096) before summing them: the sum is off by a random walk of 4096 roundings
    # of 2^-9 |v|, about 0.07 per row and 0.21 at worst over 2048 rows (seen on the GPU), where
    # the result is as small as 0.6; 64x bf16's atol (0.5) keeps eager itself within tolerance
    Problem("08_gemm_sum_scale", "gemm_reduction", _GEMM_LONG_ROWS, atol_scale=64.0),
    Problem("09_gemm_logsumexp", "gemm_reduction", _GEMM_LONG_ROWS),
    Problem("10_gemm_softmax", "gemm_reduction", _GEMM),
    Problem("11_layernorm", "norm", _ROWS),
    Problem("12_rmsnorm", "norm", _ROWS),
    Problem("13_add_layernorm", "norm", _ROWS),
    Problem("14_rmsnorm_gemm", "norm", _GEMM),
    Problem("15_l2_normalize", "norm", _ROWS),
    Problem("16_softmax", "softmax", _ROWS),
    Problem("17_log_softmax", "softmax", _ROWS),
    Problem("18_causal_masked_softmax", "softmax",
            {"batch_size": 2, "num_heads": 3, "seq_len": 65}),
    Problem("19_attention", "attention", _ATTENTION),
    Problem("20_causal_attention", "attention", _ATTENTION),
    Problem("21_gqa_attention", "attention",
            {"batch_size": 2, "num_q_heads": 4, "num_kv_heads": 2, "seq_len": 65,
             "head_dim": 16}),
    Problem("22_bias_gelu_mul", "elementwise", _ROWS),
    # a running sum is rounded at the size of the sums of |x| before it, far larger than the
    # result where the partial sums cancel, and the kernel's block scan adds in another order
    # than torch: float32 over 1100 terms is off by 6.5e-5 where the result is -0.0053 (float32's
    # atol is 2e-6; 1.3e-4 allowed); in bf16 the 0.5 allowed is 2 ulps of a partial sum of 64
    Problem("23_cumsum", "scan", _ROWS, atol_scale=64.0),
    Problem("24_scale_tanh_residual", "elementwise", _ROWS),
]}

_loaded = itertools.count()


class ProblemError(ValueError):
    """A problem name, size or dtype that the problem set does not have."""


def problem(name: str) -> Problem:
    """The registry entry `name`; ProblemError naming the problems for an unknown one."""
    if name not in PROBLEMS:
        raise ProblemError(f"no problem named {name!r}; the problems are {', '.join(PROBLEMS)}")
    return PROBLEMS[name]


def load_problem(name: str, sizes: Mapping[str, int] | None = None,
                 dtype: torch.dtype | None = None) -> ModuleType:
    """A fresh module of problem `name` (its file runs), with the size globals in `sizes` and the
    `dtype` global replaced; ProblemError for a size the problem does not have."""
    module = load_file(problem(name).problem_path, f"axon_forge_problem_{next(_loaded)}")
    known = size_names(module)
    for key, value in (sizes or {}).items():
        if key not in known:
            raise ProblemError(f"{name}: no size {key!r}; its sizes are {', '.join(known)}")
        setattr(module, key, int(value))
    if dtype is not None:
        vars(module)["dtype"] = dtype
    return module


def load_kernel(name: str) -> ModuleType:
    """A fresh module of the kernel file of problem `name` (its file runs and imports Triton)."""
    return load_file(problem(name).kernel_path, f"axon_forge_kernel_{next(_loaded)}")


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for a result of `dtype` against a float32 reference (dialects/form/dtypes.py;
    imported here so that listing and loading problems need only torch)."""
    from axon.dialects.form.dtypes import DTYPES

    if dtype not in DTYPE_NAMES:
        raise ProblemError(f"no tolerance for {dtype}; the problems run in "
                           f"{', '.join(str(d) for d in DTYPE_NAMES)}")
    return DTYPES[DTYPE_NAMES[dtype]].tolerance


@dataclass(frozen=True)
class CheckResult:
    """ModelNew against Model on one problem at one set of sizes: the largest absolute error
    over the results, whether every element is within (rtol, atol), and why not if not."""

    name: str
    dtype: torch.dtype
    sizes: dict[str, int]
    max_abs_error: float
    tolerance: tuple[float, float]
    passed: bool
    message: str = ""


def _float_inputs(inputs: Sequence[Any], device: str, dtype: torch.dtype | None) -> list[Any]:
    """The inputs moved to `device` and, when `dtype` is given, floating ones cast to it."""
    moved = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            x = x.to(device)
            if dtype is not None and x.is_floating_point():
                x = x.to(dtype)
        moved.append(x)
    return moved


def _require_interpreter(device: str) -> None:
    if device != "cpu":
        return
    if os.environ.get("TRITON_INTERPRET") != "1":
        if "triton" in sys.modules:
            raise RuntimeError("Triton kernels on the CPU need TRITON_INTERPRET=1 set before "
                               "Triton is imported; this process imported it without")
        os.environ["TRITON_INTERPRET"] = "1"


def check(name: str, sizes: Mapping[str, int] | None = None, seed: int = 0,
          device: str = "cpu", dtype: torch.dtype | None = None,
          kernel: ModuleType | None = None) -> CheckResult:
    """Build Model and ModelNew of problem `name` from the same seed, cast both to the problem's
    dtype (`dtype` replaces it), run ModelNew on the problem's inputs and Model in float32 on the
    same weights and inputs, and compare within the dtype's tolerance (the atol times the
    problem's `atol_scale`). `sizes` replaces size globals (the file's benchmark sizes
    otherwise); on the CPU the kernels run on Triton's interpreter (see the module docstring).
    `kernel` is a loaded kernel module to check instead of the problem's own (`load_file`)."""
    _require_interpreter(device)
    module = load_problem(name, sizes, dtype)
    if kernel is None:
        kernel = load_kernel(name)
    run_dtype: torch.dtype = module.dtype
    rtol, atol = tolerance(run_dtype)
    atol *= problem(name).atol_scale
    torch.manual_seed(seed)
    init_inputs = module.get_init_inputs()
    torch.manual_seed(seed)
    model = module.Model(*init_inputs).to(device=device, dtype=run_dtype)
    torch.manual_seed(seed)
    model_new = kernel.ModelNew(*init_inputs).to(device=device, dtype=run_dtype)
    # the reference holds the weights the run has, rounded to its dtype, widened exactly
    reference = copy.deepcopy(model).to(torch.float32)
    torch.manual_seed(seed + 1)
    inputs = _float_inputs(module.get_inputs(), device, None)
    with torch.no_grad():
        want = results(reference(*_float_inputs(inputs, device, torch.float32)))
        got = results(model_new(*inputs))
    worst, message = compare(got, want, run_dtype, rtol, atol)
    used = {k: getattr(module, k) for k in size_names(module)}
    return CheckResult(name, run_dtype, used, worst, (rtol, atol), not message, message)


# ---- the command line ----------------------------------------------------------------------------
def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def _dtype_of(name: str) -> str:
    """The `dtype` global of problem `name`, as written (loads the problem file)."""
    return DTYPE_NAMES.get(load_problem(name).dtype, "?")


def main(argv: list[str] | None = None) -> int:
    """`--list` prints the problems; `--check NAME|all` checks ModelNew against Model and prints
    a table (exit 1 if any failed or a name is unknown)."""
    p = argparse.ArgumentParser(prog="python -m axon.benchmarks.forge",
                                description="The Forge problem set: list and check problems.")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="list the problems")
    what.add_argument("--check", metavar="NAME", help="check one problem, or 'all'")
    p.add_argument("--small", action="store_true",
                   help="check at the registry's small sizes, in float32")
    p.add_argument("--device", default="cpu",
                   help="where to run (cpu: Triton's interpreter; default cpu)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.list:
        rows = [["name", "category", "dtype", "problem", "kernel"]]
        for prob in PROBLEMS.values():
            rows.append([prob.name, prob.category, _dtype_of(prob.name),
                         prob.problem_path.relative_to(FORGE_DIR).as_posix(),
                         prob.kernel_path.relative_to(FORGE_DIR).as_posix()])
        print(_table(rows))
        return 0
    names = list(PROBLEMS) if args.check == "all" else [args.check]
    unknown = [n for n in names if n not in PROBLEMS]
    if unknown:
        sys.stderr.write(f"axon.benchmarks.forge: error: no problem named {unknown[0]!r}; the "
                         f"problems are {', '.join(PROBLEMS)}\n")
        return 1
    rows = [["name", "category", "dtype", "sizes", "passed", "max |error|"]]
    failed = []
    for name in names:
        prob = PROBLEMS[name]
        try:
            result = check(name, prob.small_sizes if args.small else None, args.seed,
                           args.device, torch.float32 if args.small else None)
        except Exception as e:  # noqa: BLE001 (a kernel that does not run is a failed check)
            rows.append([name, prob.category, "?", "?", "NO", "-"])
            failed.append(f"{name}: {type(e).__name__}: {str(e).strip().splitlines()[0]}")
            continue
        rows.append([name, prob.category, DTYPE_NAMES[result.dtype],
                     "x".join(str(v) for v in result.sizes.values()),
                     "yes" if result.passed else "NO", f"{result.max_abs_error:.3g}"])
        if not result.passed:
            failed.append(f"{name}: {result.message}")
    print(_table(rows))
    for line in failed:
        sys.stderr.write(f"axon.benchmarks.forge: {line}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
