"""`axon`: the user-facing command. It shows what Axon does: a NumPy-subset program's proved,
cheaper equivalent (and, with other pipelines, any `axon-opt` pass on it).

    axon                       # the demo: rmsnorm_matmul through propagate, the search reported
    axon softmax               # a packaged benchmark program, by name: its ax IR
    axon path/to/prog.py       # any program file in the NumPy subset (docs/language.md)
    axon - < prog.py           # the program on stdin
    axon --list                # the packaged benchmark names
    axon gemm_sum_scale -p propagate -o out.mlir   # an axon-opt pipeline, the result to a file
    axon matmul --target xe_triton --profile h200 --sizes M=4096,K=4096 -o kernel.py
                               # a checked Triton kernel (targets/xe_triton/command.py)
    axon forge problem.py --from torch -o kernel.py
                               # a PyTorch problem or Triton kernel file made faster (forge/)

Benchmark programs are looked up at run time in the installed package
(`axon/benchmarks/programs/*.py`), so a new program file needs no change here. A step longer than
a couple of seconds (a propagation) shows progress on stderr unless `--quiet`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from xdsl.dialects.func import FuncOp

from axon.selection.executor import EXECUTORS
from axon.tools import progress
from axon.tools.embed import make_context, parse_pipeline, parse_source, print_ir
from axon.tools.pass_options import PassOptionError
from axon.tools.registry import PassNameError
from axon.tools.user_errors import ArgumentParser, UsageError, exit_on_user_error
from axon.tools.version import axon_version

#: what `axon` runs with no argument
DEFAULT_PROGRAM = "rmsnorm_matmul"
#: the demo's pipeline: the proved search, its report on stderr (without the report: --quiet)
DEMO_PIPELINE = "propagate{report=true}"
QUIET_DEMO_PIPELINE = "propagate"
#: the demo's last line, on stderr
NEXT_STEPS = ("axon: next: `axon --list` names the other programs, "
              "`axon softmax -p 'propagate{report=true}'` optimizes one, "
              "`axon softmax -p 'propagate,tile{profile=trn2}'` tiles it into a proved kernel, "
              "`axon-opt --help` lists the passes and their options")

DESCRIPTION = """\
Optimize a NumPy-subset tensor program. PROGRAM is a .py file in the NumPy subset
(docs/language.md), the name of a packaged benchmark program (axon --list), or - for
stdin. With -p, the axon-opt pass pipeline PIPELINE runs on it before it is printed.

With no PROGRAM and no -p, axon runs the demo: the built-in program %(default)s
through propagate (candidate reorderings, each admitted only on an SMT proof, then the
cheapest under a roofline cost), the search reported on stderr, the cheaper program
printed. `-p 'propagate,tile'` goes on to tiled kernels (the tile dialect, each kernel
proved); `--target xe_triton` selects, checks and writes the program's Triton kernel
(docs/xe_triton.md). MLIR input goes to axon-opt."""


def benchmark_programs() -> dict[str, Traversable]:
    """The packaged benchmark programs, by name (file name without `.py`)."""
    folder = files("axon.benchmarks") / "programs"
    return {p.name.removesuffix(".py"): p for p in folder.iterdir()
            if p.name.endswith(".py") and p.is_file()}


def load_program(spec: str) -> tuple[str | bytes, str]:
    """(source text, file name for diagnostics) of a program given as a path, a benchmark name,
    or `-` (stdin)."""
    if spec == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    path = Path(spec)
    if path.is_dir():
        raise UsageError(f"'{spec}' is a directory; axon reads one program: a .py file or a "
                         "benchmark name")
    if path.suffix == ".mlir":
        raise UsageError(f"'{spec}' is MLIR; axon reads NumPy-subset programs (.py files and "
                         f"benchmark names): run MLIR through `axon-opt {spec} -p PIPELINE`")
    if path.is_file():
        return path.read_bytes(), spec
    programs = benchmark_programs()
    if spec in programs:
        return programs[spec].read_text(), str(programs[spec])
    if spec.endswith(".py") or "/" in spec:
        raise UsageError(f"cannot open '{spec}': no such file")
    close = difflib.get_close_matches(spec, programs, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `axon --list` shows them"
    raise UsageError(f"'{spec}' is neither a file nor a benchmark program{hint}")


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="axon", description=DESCRIPTION % {"default": DEFAULT_PROGRAM},
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", nargs="?", metavar="PROGRAM",
                        help="a .py program file, a benchmark name, or - for stdin")
    parser.add_argument("--list", action="store_true", help="list the benchmark programs")
    parser.add_argument("--generic", action="store_true", help="print the IR in generic form")
    parser.add_argument("-p", "--passes", default="", metavar="PIPELINE",
                        help="an axon-opt pass pipeline to run before printing "
                             "(e.g. propagate, or 'propagate{emit=graph}'; axon-opt --help "
                             "lists the passes and their options)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the IR to FILE instead of stdout (never the input file)")
    target = parser.add_argument_group("kernels (--target)")
    target.add_argument("--target", choices=("xe_triton", "nki"),
                        help="write the program's selected and checked kernel for this target")
    target.add_argument("--profile", default=None,
                        help="the target's device (xe_triton: a KB device, default h200; nki: "
                             "a NeuronCore profile, default trn2)")
    target.add_argument("--sizes", default="", metavar="NAME=INT,...",
                        help="the sizes the kernel is selected for (the others are 1024)")
    target.add_argument("--executor", choices=EXECUTORS, default="local",
                        help="where candidates are checked: a local process pool (default) "
                             "or Ray")
    target.add_argument("--max-candidates", type=int, default=None, metavar="N",
                        help="candidates checked at most (default 24 for xe_triton, 8 for "
                             "nki)")
    target.add_argument("--cache", metavar="FILE",
                        help="the winner cache (default $AXON_WINNER_CACHE, else the user's "
                             "cache folder)")
    target.add_argument("--no-cache", action="store_true",
                        help="select anew even where the cache holds a winner")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress lines on stderr (and, in the demo, no report)")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an internal error")
    parser.add_argument("--version", action="version", version=f"axon {axon_version()}")
    return parser


def run(argv: list[str] | None = None) -> None:
    """Parse the command line and do what it asks (user errors propagate as exceptions)."""
    args = _parser().parse_args(argv)
    if args.list:
        print("\n".join(sorted(benchmark_programs())))
        return
    if args.target is not None:
        run_target(args)
        return
    demo = args.program is None and not args.passes
    pipeline = (QUIET_DEMO_PIPELINE if args.quiet else DEMO_PIPELINE) if demo else args.passes
    try:  # the pipeline is checked (pass names, options) before any work
        passes = parse_pipeline(pipeline) if pipeline else None
    except (PassNameError, PassOptionError) as err:
        raise UsageError(str(err)) from None
    except ValueError as err:  # bad pipeline syntax
        raise UsageError(f"invalid pass pipeline '{pipeline}': {err}") from None
    program = args.program or DEFAULT_PROGRAM
    _check_output(args.output, program)
    text, filename = load_program(program)
    module = parse_source(text, filename)
    if not any(isinstance(op, FuncOp) for op in module.ops):
        raise UsageError(f"{filename} defines no function: there is nothing to optimize")
    if not args.quiet:
        progress.enable("axon")
    try:
        if passes is not None:
            with progress.step(f"-p {pipeline}"):
                passes.apply(make_context(), module)
    finally:
        progress.disable()
    text = print_ir(module, generic=args.generic)
    if args.output is None:
        print(text, end="", flush=True)
    else:
        with open(args.output, "w") as out:
            out.write(text)
    if demo and not args.quiet:
        print(NEXT_STEPS, file=sys.stderr)


def run_target(args: argparse.Namespace) -> None:
    """`axon PROGRAM --target T ...`: the kernel module to -o or stdout."""
    # imported here: selection pulls in the tiler, the emitter and torch's neighbours, which
    # the other uses of `axon` do not need
    from axon.targets.xe_triton.command import TargetError, TargetOptions, emit_kernel

    if args.passes:
        raise UsageError("--target selects from the program itself; leave out -p")
    if args.program is None:
        raise UsageError("--target needs a PROGRAM")
    if args.target == "nki":
        run_nki_target(args)
        return
    options = TargetOptions(args.profile or "h200", args.sizes, args.executor,
                            24 if args.max_candidates is None else args.max_candidates,
                            args.cache, not args.no_cache)
    _check_output(args.output, args.program)
    text, filename = load_program(args.program)
    module = parse_source(text, filename)

    def say(line: str) -> None:
        if not args.quiet:
            print(f"axon: {line}", file=sys.stderr, flush=True)

    try:
        kernel = emit_kernel(module, filename, options, say)
    except TargetError as err:
        raise UsageError(str(err)) from None
    if args.output is None:
        print(kernel, end="", flush=True)
    else:
        with open(args.output, "w") as out:
            out.write(kernel)


def run_nki_target(args: argparse.Namespace) -> None:
    """`axon PROGRAM --target nki ...`: the NKI kernel module to -o or stdout."""
    from axon.targets.nki.command import DEFAULT_PROFILE, NkiTargetError, emit_kernel
    from axon.targets.nki.select import DEFAULT_MAX_CANDIDATES

    _check_output(args.output, args.program)
    text, filename = load_program(args.program)
    module = parse_source(text, filename)

    def say(line: str) -> None:
        if not args.quiet:
            print(f"axon: {line}", file=sys.stderr, flush=True)

    try:
        kernel = emit_kernel(module, filename, args.profile or DEFAULT_PROFILE, args.sizes, say,
                             DEFAULT_MAX_CANDIDATES if args.max_candidates is None
                             else args.max_candidates, args.executor, args.cache,
                             not args.no_cache)
    except NkiTargetError as err:
        raise UsageError(str(err)) from None
    if args.output is None:
        print(kernel, end="", flush=True)
    else:
        with open(args.output, "w") as out:
            out.write(kernel)


def _check_output(output: str | None, program: str) -> None:
    """`-o` must not name the input file: a failed run would otherwise lose the program."""
    if output is not None and os.path.exists(output) and os.path.exists(program) and (
            os.path.samefile(output, program)):
        raise UsageError(f"refusing to overwrite the input file '{program}' with -o")


def main(argv: list[str] | None = None) -> None:
    """Console entry point (`axon`); `axon forge ...` is Forge's command (`forge/command.py`)."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["forge"]:
        from axon.forge.command import main as forge_main

        forge_main(args[1:])
        return
    exit_on_user_error("axon", lambda: run(args), debug="--debug" in args)


if __name__ == "__main__":
    main()
