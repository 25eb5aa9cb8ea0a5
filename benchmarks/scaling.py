"""Programs of real size: time and peak memory of parsing, propagating and printing, as they grow.

    python -m axon.benchmarks.scaling                        # 100, 1,000 and 10,000 statements
    python -m axon.benchmarks.scaling --sizes 100,1000       # a quicker run
    python -m axon.benchmarks.scaling chain --sizes 10000

Two programs, NumPy-subset source grown to about the given number of statements:

- `chain`: `y<i> = y<i-1> * 1.0001 + i % 7` over `x: f32[N]`, nothing to optimize;
- `transformer`: blocks of 12 statements, each with its own weights: an rmsnorm, the q, k and v
  projections, softmax attention, the output projection with its residual, a second rmsnorm and
  a gated MLP with its residual.

One row per program and size: the statements (lines of the function's body) and the ops they
parse to; seconds to parse
(source to verified `ax` IR), to propagate (the `propagate` pass's work: build the nu-graph,
search within the budget, extract, float-check and export the best program) and to print the
result as MLIR text, and their total; seconds to read that text back (`axon-opt`'s MLIR path,
verification included); the process's peak resident memory; and what the search
did (e-nodes at the end, candidates, proved, which limit stopped it). Each row runs in a fresh
process, so its peak memory is its own. The node budget is the input program's e-nodes plus
`--growth` (the pass's fixed default of 2,000 e-nodes is smaller than a large program itself).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from io import StringIO
from typing import Any

from xdsl.printer import Printer
from xdsl.rewriter import Rewriter

from axon.benchmarks.propagation import add_budget_options, first_function
from axon.frontend.numpy_subset import parse_source
from axon.nugraph.runner import Budget
from axon.nugraph.session import Session
from axon.tools.embed import parse_mlir

DEFAULT_SIZES = (100, 1_000, 10_000)
BLOCK_STATEMENTS = 12

HEADER = (f"{'program':12} {'stmts':>6} {'ops':>6} {'parse s':>8} {'propagate s':>11} "
          f"{'print s':>8} {'total s':>8} {'reread s':>9} {'peak MB':>8} {'e-nodes':>8} "
          f"{'cands':>6} {'proved':>6}  stop")


def chain_source(statements: int) -> str:
    """`statements` assignments, each a multiply-add of the one before."""
    lines = ["def chain(x: f32[N]):", "    y0 = x"]
    lines += [f"    y{i} = y{i - 1} * 1.0001 + {i % 7}" for i in range(1, statements + 1)]
    return "\n".join([*lines, f"    return y{statements}", ""])


def transformer_source(statements: int) -> str:
    """Transformer blocks of `BLOCK_STATEMENTS` statements, as many as fit in `statements`."""
    blocks = max(1, statements // BLOCK_STATEMENTS)
    params = ["x: f32[T, D]"]
    body = ["    h0 = x"]
    for i in range(blocks):
        params += [f"g{i}: f32[D]", f"wq{i}: f32[D, D]", f"wk{i}: f32[D, D]", f"wv{i}: f32[D, D]",
                   f"wo{i}: f32[D, D]", f"f{i}: f32[D]", f"w1{i}: f32[D, F]", f"w3{i}: f32[D, F]",
                   f"w2{i}: f32[F, D]"]
        body += [
            f"    ms{i} = mean(h{i} * h{i}, axis=-1, keepdims=True)",
            f"    n{i} = h{i} * rsqrt(ms{i} + 1e-6) * g{i}",
            f"    q{i} = n{i} @ wq{i}",
            f"    k{i} = n{i} @ wk{i}",
            f"    v{i} = n{i} @ wv{i}",
            f"    s{i} = (q{i} @ transpose(k{i})) * 0.125",
            f"    p{i} = softmax(s{i}, axis=-1)",
            f"    r{i} = h{i} + (p{i} @ v{i}) @ wo{i}",
            f"    mr{i} = mean(r{i} * r{i}, axis=-1, keepdims=True)",
            f"    m{i} = r{i} * rsqrt(mr{i} + 1e-6) * f{i}",
            f"    u{i} = m{i} @ w1{i}",
            f"    h{i + 1} = r{i} + (silu(u{i}) * (m{i} @ w3{i})) @ w2{i}",
        ]
    return "\n".join([f"def transformer({', '.join(params)}):", *body,
                      f"    return h{blocks}", ""])


PROGRAMS: dict[str, Callable[[int], str]] = {
    "chain": chain_source,
    "transformer": transformer_source,
}


def measure(program: str, statements: int, device: str, budget: Budget, growth: int
            ) -> dict[str, Any]:
    """Parse, propagate and print one program in this process; the row's numbers."""
    source = PROGRAMS[program](statements)
    start = time.perf_counter()
    module = parse_source(source, f"{program}_{statements}.py")
    parsed = time.perf_counter()
    func_op = first_function(module)
    ops = sum(1 for _ in func_op.body.walk()) - 1  # less the return
    s = Session.with_sizes(func_op, device, {})
    limits = Budget(budget.max_iterations, s.graph.num_nodes + growth, budget.time_limit_s,
                    budget.proof_budget)
    report = s.run(limits)
    best = s.checked_best()
    Rewriter.replace_op(func_op, s.export(best.extraction))
    propagated = time.perf_counter()
    text = StringIO()
    Printer(stream=text).print_op(module)
    printed = time.perf_counter()
    parse_mlir(text.getvalue(), f"{program}_{statements}.mlir")
    reread = time.perf_counter() - printed
    stop = report.stop_reason + "".join(f", {stage} cut" for stage in report.cut_after)
    return {"program": program, "statements": len(source.splitlines()) - 1, "ops": ops,
            "parse": parsed - start, "propagate": propagated - parsed,
            "print": printed - propagated, "total": printed - start, "reread": reread,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "enodes": s.graph.num_nodes, "candidates": report.candidates,
            "proved": report.proved, "stop": stop}


def row(m: dict[str, Any]) -> str:
    return (f"{m['program']:12} {m['statements']:>6} {m['ops']:>6} {m['parse']:>8.2f} "
            f"{m['propagate']:>11.2f} {m['print']:>8.2f} {m['total']:>8.2f} {m['reread']:>9.2f} "
            f"{m['peak_mb']:>8.0f} {m['enodes']:>8} {m['candidates']:>6} {m['proved']:>6}  "
            f"{m['stop']}")


def run_row(program: str, statements: int, args: argparse.Namespace) -> str:
    """One row, measured in a fresh process (its peak memory is then the row's own)."""
    command = [sys.executable, "-m", "axon.benchmarks.scaling", program, "--sizes",
               str(statements), "--device", args.device, "--time-limit", str(args.time_limit),
               "--iterations", str(args.iterations), "--growth", str(args.growth), "--here"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{program:12} {statements:>6}  failed (exit {done.returncode}): {last}"
    return row(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="*", help=f"of {', '.join(PROGRAMS)} (default: all)")
    parser.add_argument("--sizes", default=",".join(str(n) for n in DEFAULT_SIZES),
                        help="statements per program, comma-separated")
    add_budget_options(parser)
    parser.add_argument("--growth", type=int, default=Budget().max_nodes,
                        help="e-nodes the search may add to the input program's")
    parser.add_argument("--here", action="store_true",
                        help="measure in this process and print the row as JSON")
    args = parser.parse_args(argv)
    names = args.programs or list(PROGRAMS)
    unknown = [n for n in names if n not in PROGRAMS]
    try:
        sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    except ValueError:
        sizes = []
    if unknown or not sizes or min(sizes) < 1:
        print(f"unknown program(s): {', '.join(unknown)}" if unknown else
              f"--sizes wants positive integers, not {args.sizes!r}", file=sys.stderr)
        return 1
    budget = Budget(args.iterations, args.growth, args.time_limit)
    if args.here:
        for name in names:
            for n in sizes:
                print(json.dumps(measure(name, n, args.device, budget, args.growth)))
        return 0
    print(f"device {args.device}; budget: {budget.max_iterations} iterations, the program's "
          f"e-nodes + {args.growth}, {budget.time_limit_s:.0f} s; one process per row")
    print(HEADER)
    for name in names:
        for n in sizes:
            print(run_row(name, n, args), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
