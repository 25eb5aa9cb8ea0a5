"""`axon`: the user-facing command. Today it parses a NumPy-subset program and prints its `ax` IR.

    axon                       # the built-in default benchmark, rmsnorm_matmul
    axon softmax               # a packaged benchmark program, by name
    axon path/to/prog.py       # any program file in the NumPy subset (docs/language.md)
    axon --list                # the packaged benchmark names
    axon gemm_sum_scale -p propagate   # run an axon-opt pipeline on it first

Benchmark programs are looked up at run time in the installed package
(`axon/benchmarks/programs/*.py`), so a new program file needs no change here.
"""

from __future__ import annotations

import argparse
import difflib
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from axon.tools.embed import parse_source, print_ir, run_pipeline
from axon.tools.user_errors import UsageError, exit_on_user_error

#: what `axon` runs with no argument
DEFAULT_PROGRAM = "rmsnorm_matmul"

DESCRIPTION = """\
Parse a NumPy-subset tensor program and print its tensor-level (ax) IR.
PROGRAM is a path to a .py file or the name of a packaged benchmark program
(default: %(default)s). This version stops at the IR; emitting optimized NKI and
Triton kernels from it is planned for later versions of this command."""


def benchmark_programs() -> dict[str, Traversable]:
    """The packaged benchmark programs, by name (file name without `.py`)."""
    folder = files("axon.benchmarks") / "programs"
    return {p.name.removesuffix(".py"): p for p in folder.iterdir()
            if p.name.endswith(".py") and p.is_file()}


def load_program(spec: str) -> tuple[str, str]:
    """(source text, file name for diagnostics) of a program given as a path or benchmark name."""
    path = Path(spec)
    if path.is_file():
        return path.read_text(), spec
    programs = benchmark_programs()
    if spec in programs:
        return programs[spec].read_text(), str(programs[spec])
    if spec.endswith(".py") or "/" in spec:
        raise UsageError(f"cannot open '{spec}': no such file")
    close = difflib.get_close_matches(spec, programs, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `axon --list` shows them"
    raise UsageError(f"'{spec}' is neither a file nor a benchmark program{hint}")


def run(argv: list[str] | None = None) -> None:
    """Parse the command line and do what it asks (user errors propagate as exceptions)."""
    parser = argparse.ArgumentParser(prog="axon", description=DESCRIPTION % {
        "default": DEFAULT_PROGRAM}, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", nargs="?", default=DEFAULT_PROGRAM, metavar="PROGRAM",
                        help="a .py program file or a benchmark name")
    parser.add_argument("--list", action="store_true", help="list the benchmark programs")
    parser.add_argument("--generic", action="store_true", help="print the IR in generic form")
    parser.add_argument("-p", "--passes", default="", metavar="PIPELINE",
                        help="an axon-opt pass pipeline to run before printing "
                             "(e.g. propagate, or 'propagate{emit=graph}')")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(sorted(benchmark_programs())))
        return
    text, filename = load_program(args.program)
    module = parse_source(text, filename)
    if args.passes:
        try:
            module = run_pipeline(module, args.passes)
        except ValueError as err:  # bad pipeline syntax or an unknown pass
            raise UsageError(f"invalid pass pipeline '{args.passes}': {err}") from None
    print(print_ir(module, generic=args.generic), end="")


def main(argv: list[str] | None = None) -> None:
    """Console entry point (`axon`)."""
    exit_on_user_error("axon", lambda: run(argv))


if __name__ == "__main__":
    main()
