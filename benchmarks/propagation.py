"""Propagation on every benchmark program: graph size, candidates, proofs, time, cost.

    python -m axon.benchmarks.propagation                 # all Tier 1 and Tier 2 programs
    python -m axon.benchmarks.propagation lora gqa --device trn1

One row per program: e-classes, e-nodes, candidates generated, proved, rejected (refuted, of them
by the numeric pre-test, and unknown), the time to saturate (or the limit that cut the search),
and the roofline cost of the best extracted program against the input program's, at the
program's first default shapes of ../shared/design/benchmarks.md. The last lines give the median
and the largest time (the target: all within 60 s, median under 10 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.frontend.numpy_subset import parse_source
from axon.nugraph.cost import DEFAULT_DEVICE
from axon.nugraph.runner import Budget
from axon.nugraph.session import Session
from axon.targets.profiles import profile_names

HEADER = (f"{'program':22} {'tier':>4} {'classes':>7} {'e-nodes':>7} {'cands':>6} {'proved':>6} "
          f"{'rejected':>14} {'time s':>7} {'stop':>16} {'input us':>9} {'best us':>9} "
          f"{'ratio':>6}")


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    """The options every propagation benchmark takes: the device and the search's limits."""
    parser.add_argument("--device", default=DEFAULT_DEVICE, choices=profile_names())
    parser.add_argument("--time-limit", type=float, default=Budget().time_limit_s)
    parser.add_argument("--iterations", type=int, default=Budget().max_iterations)


def first_function(module: ModuleOp) -> FuncOp:
    """The first `func.func` of a parsed program."""
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def run(name: str, device: str, budget: Budget) -> tuple[str, float]:
    """Propagate one program; returns its table row and its time."""
    program = PROGRAMS[name]
    func_op = first_function(parse_source(program.source, str(program.source_path)))
    s = Session.with_sizes(func_op, device, program.default_sizes[0])
    report = s.run(budget)
    before, after = s.input_cost(), s.best().cost
    rejected = f"{report.refuted}({report.tested_out}t)+{report.unknown}u"
    row = (f"{name:22} {program.tier:>4} {s.graph.num_classes:>7} {s.graph.num_nodes:>7} "
           f"{report.candidates:>6} {report.proved:>6} {rejected:>14} {report.seconds:>7.2f} "
           f"{report.stop_reason:>16} {before * 1e6:>9.2f} {after * 1e6:>9.2f} "
           f"{after / before:>6.2f}")
    return row, report.seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="*", help="program names (default: all)")
    add_budget_options(parser)
    parser.add_argument("--max-nodes", type=int, default=Budget().max_nodes)
    args = parser.parse_args(argv)
    names = args.programs or list(PROGRAMS)
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        print(f"unknown program(s): {', '.join(unknown)}", file=sys.stderr)
        return 1
    budget = Budget(args.iterations, args.max_nodes, args.time_limit)
    print(f"device {args.device}; budget: {budget.max_iterations} iterations, "
          f"{budget.max_nodes} e-nodes, {budget.time_limit_s:.0f} s; rejected = "
          "refuted(by numeric test)+unknown")
    print(HEADER)
    times = []
    for name in names:
        row, seconds = run(name, args.device, budget)
        print(row, flush=True)
        times.append(seconds)
    print(f"median time {statistics.median(times):.2f} s, max {max(times):.2f} s "
          f"over {len(times)} programs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
