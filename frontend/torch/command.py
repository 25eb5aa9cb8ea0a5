"""The command line of the PyTorch frontend: print a problem's `ax` module and a summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from axon.frontend.torch.capture import (
    FLOAT_DTYPES,
    TorchFrontendError,
    capture_problem,
    load_problem_file,
)
from axon.tools.embed import print_ir


def _size(text: str) -> tuple[str, int]:
    name, _, value = text.partition("=")
    try:
        return name, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=INTEGER, not {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    """Capture PROBLEM.py, print (or write with -o) its `ax` module and a one-line summary on
    stderr; exit 1 with located diagnostics for what cannot be translated."""
    parser = argparse.ArgumentParser(
        prog="python -m axon.frontend.torch",
        description="Capture a KernelBench-format PyTorch problem (class Model, get_inputs, "
                    "get_init_inputs) with torch.export and print its forward as an ax module, "
                    "parameters as function inputs. WARNING: this RUNS THE FILE'S PYTHON "
                    "(imports it, builds Model, calls get_inputs and traces forward); use it "
                    "only on files you trust. The NumPy-subset frontend never runs its input.")
    parser.add_argument("problem", type=Path, help="the problem file (it is executed)")
    parser.add_argument("-o", "--output", type=Path, help="write the module here, not stdout")
    parser.add_argument("--size", type=_size, action="append", default=[], metavar="NAME=VALUE",
                        help="replace a size global of the problem before building it")
    parser.add_argument("--dtype", choices=sorted(FLOAT_DTYPES),
                        help="replace the problem's dtype global")
    args = parser.parse_args(argv)
    if not args.problem.is_file():
        print(f"{args.problem}: error: no such file", file=sys.stderr)
        return 1
    try:
        problem = load_problem_file(args.problem, dict(args.size),
                                    FLOAT_DTYPES[args.dtype] if args.dtype else None)
        captured = capture_problem(problem)
    except TorchFrontendError as err:
        print(err, file=sys.stderr)
        return 1
    text = print_ir(captured.module)
    if args.output is not None:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    print(captured.summary(), file=sys.stderr)
    return 0
