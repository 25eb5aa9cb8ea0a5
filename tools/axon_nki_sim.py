"""`axon-nki-sim`: run an NKI kernel file on numpy inputs with Axon's simulator.

    axon-nki-sim kernel.py --inputs a.npy b.npy [--kernel NAME] [--grid 2,1] [--profile trn2]
                 [--output out.npz] [--trace trace.jsonl]

The kernel file is written against the current `nki` API (`import nki`, `@nki.jit`); its imports
of `nki`, `nki.language` and `nki.isa` get the simulator's surface, and only that file runs (see
`targets/nki/simulator/loader.py`). Each `.npy` input becomes an HBM tensor, in order. The
outputs are summarized on stdout and, with `--output`, saved as `output_0`, `output_1`, ... in an
`.npz`; `--trace` writes one JSON object per executed instruction (`simulator/trace.py`).
Warnings (`kernel.py:LINE: warning: ...`, e.g. an activation input outside the range the device's
approximation covers) go to stderr.

Exit status: 0 when the kernel ran, 1 for a user error (a bad command line or input, a kernel
that fails: `kernel.py:LINE: error: ...`), 2 for an internal error (`--debug` shows its
traceback), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import traceback
import warnings
from pathlib import Path
from typing import NoReturn

import numpy as np

from axon.targets.nki.simulator import (
    KernelError,
    SimulationError,
    SimulationWarning,
    load_kernel,
    simulate,
)
from axon.targets.nki.simulator.trace import Trace
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.profiles import ProfileError

TOOL = "axon-nki-sim"


class UserError(Exception):
    """A mistake in the command line or the inputs: one line on stderr, status 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A command-line mistake as a UserError (status 1, one line), not argparse's exit 2."""
        raise UserError(f"{message} ({TOOL} --help lists the options)")


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = _Parser(prog=TOOL, description="Run an NKI kernel file on numpy inputs with Axon's "
                                       "simulator.")
    p.add_argument("kernel", type=Path, help="the kernel file (current nki API)")
    p.add_argument("--inputs", nargs="*", type=Path, default=[], metavar="NPY",
                   help="the kernel's array arguments, in order, as .npy files")
    p.add_argument("--kernel-name", dest="kernel_name", metavar="NAME",
                   help="which @nki.jit function to run (needed when the file has several)")
    p.add_argument("--grid", metavar="G0[,G1...]", help="the SPMD launch grid, e.g. 2 or 2,2")
    p.add_argument("--profile", default="trn2",
                   help="the NeuronCore profile whose limits apply (default trn2)")
    p.add_argument("--output", type=Path, metavar="NPZ", help="save the outputs to this .npz")
    p.add_argument("--trace", type=Path, metavar="JSONL",
                   help="write the executed instructions, one JSON object a line")
    p.add_argument("--debug", action="store_true", help="a traceback for an internal error")
    return p


def _grid(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        dims = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UserError(f"--grid '{text}': expected positive ints separated by commas") from None
    if not dims or any(n < 1 for n in dims):
        raise UserError(f"--grid '{text}': expected positive ints separated by commas")
    return dims


def _load_input(path: Path) -> np.ndarray:
    try:
        value = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise UserError(f"input '{path}': cannot read it as a .npy array ({err})") from err
    if not isinstance(value, np.ndarray):
        raise UserError(f"input '{path}': expected one array (.npy), got an archive")
    return value


def _run(args: argparse.Namespace) -> int:
    grid = _grid(args.grid)
    try:
        limits = load_limits(args.profile)
    except (ValueError, ProfileError) as err:
        raise UserError(str(err)) from err
    inputs = [_load_input(path) for path in args.inputs]
    kernel = load_kernel(args.kernel, args.kernel_name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SimulationWarning)
        result, trace = simulate(kernel, *inputs, limits=limits, grid=grid, trace=True)
    for warning in caught:
        print(str(warning.message), file=sys.stderr)
    outputs = result if isinstance(result, tuple) else (result,)
    for n, out in enumerate(outputs):
        values = out.astype(np.float64)
        finite = values[np.isfinite(values)]
        span = f"min {finite.min():.6g} max {finite.max():.6g}" if finite.size else "no finite"
        nan = int(np.isnan(values).sum())
        print(f"output_{n}: {out.dtype.name}{list(out.shape)} {span}"
              + (f", {nan} NaN" if nan else ""))
    assert isinstance(trace, Trace)
    print(f"{len(trace)} instructions")
    if args.output is not None:
        np.savez(args.output, **{f"output_{n}": out for n, out in enumerate(outputs)})
    if args.trace is not None:
        with args.trace.open("w") as stream:
            for inst in trace.instructions:
                stream.write(json.dumps(dataclasses.asdict(inst)) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command; the exit status."""
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        return _run(parser().parse_args(argv))
    except KernelError as err:
        print(str(err), file=sys.stderr)
        return 1
    except (UserError, SimulationError) as err:
        print(f"{TOOL}: error: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"{TOOL}: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # noqa: BLE001 (an internal error is one line, unless --debug)
        if debug:
            traceback.print_exc()
        print(f"{TOOL}: internal error: {type(err).__name__}: {err} (run again with --debug "
              f"for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
