"""`axon-bench`: check and time a bundle of Triton candidates against torch (docs/xe_triton.md).

    axon-bench --run BUNDLE [--json F] [--plot F] [--cases PATTERN] [--repeats N] [--timeout S]
    python -m axon.tools.axon_bench --run BUNDLE          # where only torch/Triton/numpy exist

A Forge bundle (`"format": "axon-forge-bundle"`: KernelBench problems, the user's kernel and
Axon's candidates) is told apart by its manifest's format and run by `harness/forge_report.py`.

Only the harness (`targets/xe_triton/harness/`, a leaf package) is imported, so the command runs on
a GPU machine without Axon's other dependencies. Progress per case and a summary go to stderr, the
table to stdout. Exit status: 0 when the run finished (rejections are results), 1 for a bad bundle
or command line, 2 for an internal error (`--debug` shows its traceback), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from axon.targets.xe_triton.harness.bundle import BundleError, read_bundle
from axon.targets.xe_triton.harness.device import DeviceError
from axon.targets.xe_triton.harness.forge_bundle import FORMAT as FORGE_FORMAT
from axon.targets.xe_triton.harness.forge_bundle import bundle_format, read_forge_bundle

TOOL = "axon-bench"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{TOOL}: error: {message}\n")
        sys.exit(1)


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = _Parser(prog=TOOL, description="Check and time the candidates of an Axon bundle against "
                                        "torch eager and torch.compile.")
    p.add_argument("--run", type=Path, required=True, metavar="BUNDLE",
                   help="the bundle directory (manifest.json and the candidates' modules)")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="write the winners and every timing and rejection as JSON")
    p.add_argument("--plot", type=Path, metavar="FILE",
                   help="write a bar chart of the speedups (needs the `plot` extra)")
    p.add_argument("--cases", metavar="PATTERN",
                   help="only the cases whose name matches this glob (e.g. 'rmsnorm*')")
    p.add_argument("--repeats", type=int, metavar="N",
                   help="runs per timing (default 100 on a GPU, 3 on the CPU interpreter)")
    p.add_argument("--timeout", type=float, default=300.0, metavar="S",
                   help="seconds a candidate may take before it counts as hung (default 300)")
    p.add_argument("--debug", action="store_true", help="a traceback for an internal error")
    return p


def _say(line: str) -> None:
    sys.stderr.write(f"{TOOL}: {line}\n")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    """Run the command; the exit status."""
    args = parser().parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser().error(f"--repeats must be at least 1, got {args.repeats}")
    if args.timeout <= 0:
        parser().error(f"--timeout must be positive, got {args.timeout:g}")
    try:
        return _run(args)
    except (BundleError, DeviceError) as e:
        _say(str(e) if ": error:" in str(e) else f"error: {e}")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 (an internal error is one line, unless --debug)
        if args.debug:
            traceback.print_exc()
        _say(f"internal error: {type(e).__name__}: {e} (run again with --debug for the "
             "traceback)")
        return 2


def _run(args: argparse.Namespace) -> int:
    forge = bundle_format(args.run) == FORGE_FORMAT
    if forge and args.plot is not None:
        parser().error("--plot draws an Axon bundle's speedups; a Forge bundle has a table and "
                       "--json")
    bundle: Any = read_forge_bundle(args.run) if forge else read_bundle(args.run)
    if args.cases:
        cases = tuple(c for c in bundle.cases if fnmatch.fnmatchcase(c.case, args.cases))
        if not cases:
            raise BundleError(f"{args.run}: no case matches --cases '{args.cases}'; the bundle "
                              f"has {', '.join(c.case for c in bundle.cases[:8])}"
                              + (" ..." if len(bundle.cases) > 8 else ""))
        bundle = replace(bundle, cases=cases)
    # torch is imported here, after the command line and the manifest are checked
    from axon.targets.xe_triton.harness import report
    from axon.targets.xe_triton.harness.run import Options, run_bundle

    options = Options.default(args.repeats, args.timeout)
    if forge:
        from axon.targets.xe_triton.harness import forge_report

        return forge_report.run_command(bundle, options, args.json, _say)
    problem = report.plot_unavailable() if args.plot is not None else None
    if problem:
        _say(f"error: {problem}")
        return 1
    _say(f"{len(bundle.cases)} cases, "
         f"{sum(len(c.candidates) for c in bundle.cases)} candidates on "
         + ("the GPU" if options.device == "cuda" else
            "the CPU interpreter (float32 cases; timings are not performance figures)"))
    json_path = args.json

    def checkpoint(partial: report.BenchResult) -> None:
        if json_path is not None:
            json_path.write_text(json.dumps(report.to_json(partial), indent=1) + "\n")

    result = run_bundle(bundle, options, _say, checkpoint)
    print(report.table(result))
    if args.json is not None:
        checkpoint(result)
        _say(f"wrote {args.json}")
    if args.plot is not None:
        report.plot(result, args.plot)
        _say(f"wrote {args.plot}")
    _say(report.summary_line(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
