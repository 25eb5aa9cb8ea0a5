"""`axon forge`: a user's PyTorch problem or Triton kernel file in, a faster drop-in module out.

    axon forge problem.py --from torch --profile h200 -o kernel_opt.py
    axon forge kernel.py --problem problem.py --profile b70 -o kernel_opt.py

`--from torch` RUNS THE PROBLEM'S PYTHON (KernelBench's format: `Model`, `get_inputs`,
`get_init_inputs`): it is captured with torch.export into `ax` and goes through Axon's proved
pipeline (`torch_path.py`). `--from triton` (the default for a file without a `Model`) reads a
file whose `ModelNew` launches Triton kernels: kernels that raise to `ax` with proof are replaced
by Axon's selected kernels, a host function's raised launches fused into one program
(`raised_path.py`, `fuse_raised.py`; `--no-raise` skips this); then its text is rewritten stage
by stage (`forge/stages/`, `forge/driver.py`), each stage's proposals admitted only through the
cascade (`forge/cascade.py`); the inputs and the reference come from `--problem` (or the kernel
file's own `get_inputs`/`get_init_inputs`/`Model`). Every written module is checked against the
problem's `Model` (and, on the Triton path, against the ORIGINAL kernel's outputs) by the frozen
harness in a child process; on the CPU with Triton's interpreter in float32, on a GPU in the
problem's dtype. The output is never the input file.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from axon.targets.xe_triton.kb import device_names
from axon.tools.user_errors import ArgumentParser, UsageError, exit_on_user_error

TOOL = "axon forge"

DESCRIPTION = """\
Optimize an existing kernel for Intel Xe GPUs (and NVIDIA): a KernelBench-format PyTorch problem
(--from torch: captured with torch.export, which RUNS THE FILE'S PYTHON; only give files you
would run yourself) or a module whose ModelNew launches Triton kernels (--from triton). The
result is a drop-in module with the same entry points, checked against the original by the
frozen harness (in a child process)."""


def _parser() -> ArgumentParser:
    p = ArgumentParser(prog=TOOL, description=DESCRIPTION)
    p.add_argument("file", metavar="FILE", help="the problem (--from torch) or kernel file")
    p.add_argument("--from", dest="source", choices=("torch", "triton"),
                   help="what FILE is (default: torch when it defines `class Model` and no "
                        "`class ModelNew`, else triton)")
    p.add_argument("--problem", type=Path, metavar="PROBLEM",
                   help="--from triton: the problem giving Model, get_inputs, get_init_inputs "
                        "(default: FILE itself)")
    p.add_argument("--profile", default="h200", help="the KB device (h200, b70, b580, ...)")
    p.add_argument("-o", "--output", type=Path, metavar="OUT",
                   help="write the module to OUT (default: stdout); never FILE")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="--from torch: set a size global of the problem (repeatable)")
    p.add_argument("--check-sizes", default="", metavar="NAME=VALUE,...",
                   help="the sizes the CPU check runs at (default: small sizes found by "
                        "trying the problem's Model)")
    p.add_argument("--dtype", choices=("f32", "bf16", "f16"),
                   help="--from torch: the dtype the problem runs in (default: its `dtype` "
                        "global)")
    p.add_argument("--max-candidates", type=int, default=12, metavar="N",
                   help="candidates the selection checks at most (--from torch)")
    p.add_argument("--executor", default="local", choices=("local", "ray"))
    p.add_argument("--no-raise", action="store_true",
                   help="--from triton: skip the raised path (kernels raised to ax with proof "
                        "and replaced by Axon's selected kernels); only Triton-level stages")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--debug", action="store_true", help="a traceback for an internal error")
    return p


def _pairs(items: Sequence[str], what: str) -> dict[str, int]:
    found = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip().isidentifier() or not value.strip().lstrip("-").isdigit():
            raise UsageError(f"{what} '{item}': expected NAME=INTEGER")
        found[name.strip()] = int(value)
    return found


def _source_kind(path: Path) -> str:
    """torch for a file defining `Model` and no `ModelNew`, else triton (read, never run)."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except SyntaxError as err:
        raise UsageError(f"{path}:{err.lineno}:{err.offset}: error: {err.msg}") from None
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    return "torch" if "Model" in classes and "ModelNew" not in classes else "triton"


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def main(argv: Sequence[str] | None = None) -> int:
    """`axon forge ...`; the exit status (1 for a user error, 2 for an internal one)."""
    args = list(sys.argv[1:] if argv is None else argv)
    exit_on_user_error(TOOL, lambda: run(_parser().parse_args(args)), debug="--debug" in args)
    return 0


def run(args: argparse.Namespace) -> None:
    """Run the parsed command line."""
    start = time.perf_counter()
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"cannot open '{path}': no such file")
    output: Path | None = args.output
    if output is not None and output.resolve() == path.resolve():
        raise UsageError(f"-o {output}: is the input file; Forge never overwrites its input")
    quiet = bool(args.quiet)

    def say(line: str) -> None:
        if not quiet:
            print(f"{TOOL}: {line}", file=sys.stderr, flush=True)

    kind = args.source or _source_kind(path)
    if args.profile not in device_names():
        raise UsageError(f"--profile: unknown profile '{args.profile}'; known: "
                         f"{', '.join(device_names())}")
    if kind == "triton" and (args.size or args.dtype):
        raise UsageError("--size and --dtype apply to --from torch; the Triton path runs the "
                         "problem as written (--check-sizes sets the check's sizes)")
    if not _cuda():
        # Triton reads this when first imported: the checks run on its CPU interpreter
        os.environ.setdefault("TRITON_INTERPRET", "1")
    text = (_forge_torch if kind == "torch" else _forge_triton)(path, args, say)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
        say(f"wrote {output}")
    say(f"done in {time.perf_counter() - start:.1f} s")


def _forge_torch(path: Path, args: argparse.Namespace, say: Callable[[str], None]) -> str:
    from axon.forge.torch_path import (
        TorchForgeOptions,
        check_sizes,
        forge_problem,
        load,
    )
    from axon.selection.executor import ExecutorError, make_executor
    from axon.targets.xe_triton.harness.forge_run import check_against_original

    cuda = _cuda()
    options = TorchForgeOptions(profile=args.profile,
                                sizes=_pairs(args.size, "--size"),
                                dtype=args.dtype,
                                max_candidates=args.max_candidates,
                                keep=1, time_on_gpu=cuda)
    say(f"{path}: --from torch: importing the problem (runs its Python)")
    try:
        executor = make_executor(args.executor)
    except ExecutorError as err:
        raise UsageError(str(err)) from None
    try:
        forged = forge_problem(path, options, executor, say)
    finally:
        executor.close()
    best = forged.best
    say(f"chosen: {best.tiling} ({best.launch}), modeled {best.modeled_ms:.4f} ms")
    # the cascade on the written module: syntax, then the harness against Model
    ast.parse(best.text)
    given = _pairs([s for s in args.check_sizes.split(",") if s],
                   "--check-sizes")
    problem = load(path, options)
    sizes = given or check_sizes(problem, forged.captured.fixed)
    with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
        module = Path(scratch) / "candidate.py"
        module.write_text(best.text if cuda else best.twin_text)
        verdict = check_against_original(path, None, module, sizes=[sizes],
                                         dtype=None if cuda else "f32",
                                         device="cuda" if cuda else "cpu")
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
    where = "on the GPU" if cuda else "on the CPU interpreter in float32"
    if not verdict.passed:
        raise UsageError(f"{path}: the forged module failed the check against Model at {shown} "
                         f"{where}: {verdict.step}: {verdict.reason}")
    say(f"checked against Model at {shown} {where}, seeds 0 and 1: passed (max |error| "
        f"{verdict.max_abs_error:.3g})")
    if not cuda:
        say("timing skipped: no GPU (axon-bench times the module against eager and "
            "torch.compile on one)")
    return best.text


def _forge_triton(path: Path, args: argparse.Namespace, say: Callable[[str], None]) -> str:
    from axon.forge.torch_path import TorchForgeOptions, check_sizes, load
    from axon.forge.triton_path import forge_kernel
    from axon.targets.xe_triton.harness.forge_run import check_against_original
    from axon.targets.xe_triton.kb import load_device

    problem_path = args.problem or path
    if not problem_path.is_file():
        raise UsageError(f"--problem: cannot open '{problem_path}': no such file")
    if "def get_inputs" not in problem_path.read_text():
        raise UsageError(f"{problem_path}: no get_inputs(); give the problem the kernel solves "
                         "with --problem PROBLEM (Model, get_inputs, get_init_inputs)")
    device = load_device(args.profile)
    given = _pairs([s for s in args.check_sizes.split(",") if s], "--check-sizes")
    say(f"{path}: --from triton on {args.profile}; inputs and reference from {problem_path} "
        "(imports it: runs its Python)")
    cuda = _cuda()

    def kernel_agrees(sizes: dict[str, int]) -> bool:
        """The user's kernel runs at `sizes` and agrees with Model there (a kernel that takes
        only some sizes, a power-of-two head dim, is checked where it works)."""
        verdict = check_against_original(problem_path, None, path, sizes=[sizes],
                                         dtype=None if cuda else "f32",
                                         device="cuda" if cuda else "cpu")
        return verdict.passed

    sizes = given or check_sizes(load(problem_path, TorchForgeOptions()), {}, kernel_agrees,
                                 f"Model runs and {path.name} agrees with it")
    with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
        result, checked = forge_kernel(path, problem_path, device, [sizes], gpu=cuda,
                                       scratch=Path(scratch), say=say,
                                       raised=not args.no_raise)
    applied = result.applied()
    say(f"{len(result.records)} stages: {len(applied)} applied "
        f"({', '.join(applied) or 'none'}); {checked} proposals through the cascade "
        f"(at {', '.join(f'{k}={v}' for k, v in sizes.items())}, "
        + ("on the GPU)" if cuda else "on the CPU interpreter in float32; timing skipped: no "
                                      "GPU)"))
    return result.source
