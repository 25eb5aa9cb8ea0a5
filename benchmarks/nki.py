"""Axon's NKI kernels against a naive lowering and hand-written kernels, under one cost model.

    python -m axon.benchmarks.nki                                # every Tier 1 and 2 program
    python -m axon.benchmarks.nki --programs softmax,matmul --profile trn2 --max-candidates 4

For each suite program (`benchmarks/suite.py`), at the shape the table lists (the suite's first
default shape, or a smaller one `SHAPES` states with the reason), three kernels run on the NKI
simulator and are priced by the NeuronCore cost model (`targets/nki/cost/`):

- **axon**: the kernel `axon PROGRAM --target nki` prints (`targets/nki/select.py`'s
  `choose_kernel`: the cheapest right one, by this cost model on the simulator's trace, of the
  proved tilings that lower and the unfused chain, at most `--max-candidates` of them, checked
  on the benchmark's inputs);
- **naive**: one kernel per `ax` op of the program, no fusion of ops (a constant goes into the
  kernel of the op that reads it), each op's kernel `select.py`'s `first_kernel` of the op
  alone (the first proved tiling that lowers, at its best tile sizes by the tiled cost model,
  its lowering's own instructions: no instruction fusion, the issue's "no fusion, first
  proved sketch"; where none of the op's own tilings lowers, the first
  of the nu-graph's programs equal to it: gqa's `reshape(broadcast_to(k))` as the read
  `k[b, h floordiv G, ...]`). A size no tensor of the op gives (that broadcast's `G`) is
  printed into its kernel at the benchmark's value; a value of sizes its tensors lack
  (`scores / sqrt(D)`) is a rank-0 input, computed by the interpreter;
  the kernels run one after the other, each reading its operands from HBM and writing its
  result there, and the latency is the sum of theirs (no launch cost is added);
- **hand**: the kernel of `benchmarks/nki_baselines/<program>.py` where there is one.

Beside them, each program's **DMA floor** (`select.dma_floor_s`): its inputs read and its results
written once each, in their own dtypes, at the DMA engines' best rate under the same cost model,
with no engine work, no fixed DMA latency and no dependency. No kernel that moves every tensor
in its dtype is faster, so `naive/floor` bounds what `naive/axon` can reach for that program,
and its geomean bounds the table's.

Every kernel's output is checked against the reference before it is priced: axon's and hand's
against the suite's numpy reference, each naive kernel against the reference interpreter of its
one-op function and the naive chain's result against the interpreter of the whole program
(both round every intermediate to its dtype), all within the program's tolerance
(`Program.tolerance_at`). A wrong kernel is reported as wrong and not
priced; a program that does not lower is listed with the reason. The compile time of axon's
kernel is split into the symbolic phase (the `tile` search: tilings, their proofs and the
tiled cost model; then the lowerings and their proofs; `--target nki` runs no propagation) and
selection (emission, simulation, checks and pricing of every candidate). Axon's lowerings are
fused by `targets/nki/fuse.py` (each fusion proved) before they are emitted; the naive
kernels' are not. Progress goes to stderr (with a line per tiling saying what its fusion did); the
table, the geomeans and a summary line to stdout.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

from axon.benchmarks.suite import PROGRAMS, Program, make_inputs
from axon.interpreter import run_function
from axon.targets.nki.command import NKI_PROFILES
from axon.targets.nki.select import (
    DEFAULT_MAX_CANDIDATES,
    KernelRunner,
    NoKernel,
    OpKernel,
    check_close,
    choose_kernel,
    dma_floor_s,
    failure,
    first_kernel,
    op_functions,
    sizes_value,
    symbols,
)
from axon.targets.nki.simulator import SimulationWarning
from axon.targets.nki.simulator.errors import KernelError, SimulationError
from axon.tools.embed import parse_source

__all__ = ["KernelRunner", "OpKernel", "dma_floor_s", "op_functions"]

BASELINES = Path(__file__).resolve().parent / "nki_baselines"

#: shapes smaller than the suite's first default, each with the reason
SHAPES: dict[str, tuple[dict[str, int], str]] = {
    # the reference interpreter holds the [B, HKV*G, S, L] scores (several of them, in float64
    # for the exact run): at S = L = 4096 that is 4 GiB each, past this machine's memory
    name: ({"B": 1, "HKV": 8, "G": 4, "S": 1024, "L": 1024, "D": 128},
           "S = L = 1024: the interpreter's float64 scores at 4096 do not fit in memory")
    for name in ("gqa", "qknorm_gqa")}


@dataclass
class Priced:
    """One kernel (or the naive chain) at the program's shape: its latency in seconds when it
    ran and was right; otherwise `why` says what went wrong (`wrong` when it computed a wrong
    result)."""

    latency_s: float | None = None
    why: str = ""
    wrong: bool = False
    kernels: int = 1
    detail: str = ""


@dataclass
class Row:
    """One program's line of the table."""

    program: str
    tier: int
    sizes: dict[str, int]
    shape_note: str
    axon: Priced
    naive: Priced
    hand: Priced | None
    symbolic_s: float = 0.0
    selection_s: float = 0.0
    floor_s: float | None = None
    """The program's DMA floor (`dma_floor_s`)."""
    notes: list[str] = field(default_factory=list)


def parse_program(program: Program) -> FuncOp:
    """The suite program's function, parsed from its source."""
    (func,) = (op for op in parse_source(program.source, f"{program.name}.py").ops
               if isinstance(op, FuncOp))
    return func


def sizes_for(program: Program) -> tuple[dict[str, int], str]:
    """The shape the benchmark runs `program` at, and why when it is not the suite's first."""
    if program.name in SHAPES:
        return SHAPES[program.name]
    return dict(program.default_sizes[0]), ""


def _failure(err: Exception, tmp: Path) -> str:
    """The error's first line, its kernel file named without the temporary directory or the
    repository's root."""
    return failure(err, tmp, BASELINES.parents[1])


def run_axon(func: FuncOp, program: Program, sizes: Mapping[str, int],
             inputs: Sequence[np.ndarray], want: np.ndarray, runner: KernelRunner,
             profile: str, row: Row, say: Callable[[str], None],
             max_candidates: int = DEFAULT_MAX_CANDIDATES) -> None:
    """Select axon's kernel on the benchmark's inputs (each candidate checked against the
    interpreter, the program's tolerance), check the winner's output against numpy; fill
    `row.axon` and the compile times."""
    start = time.perf_counter()
    tolerance = program.tolerance_at(sizes)
    try:
        # of selection's progress, only what each tiling's fusion did (`fuse.py`)
        chosen = choose_kernel(func, profile, dict(sizes),
                               lambda line: say(line) if ": fusion: " in line else None,
                               max_candidates=max_candidates, inputs=inputs,
                               tolerance=tolerance)
    except NoKernel as err:
        row.symbolic_s = time.perf_counter() - start
        row.axon = Priced(why=str(err))
        return
    row.symbolic_s = chosen.symbolic_s
    row.selection_s = chosen.emit_s
    checked = len(chosen.candidates)
    rejected = sum(1 for c in chosen.candidates if c.latency_s is None)
    row.axon.detail = (f"{chosen.kind} {chosen.chosen} "
                       f"[{checked} of {chosen.space}, {rejected} rejected]")
    problem = check_close(chosen.output, want, tolerance)
    row.axon = (Priced(why=f"{chosen.kind}: wrong result: {problem}", wrong=True,
                       detail=row.axon.detail) if problem else
                Priced(chosen.latency_s, detail=row.axon.detail))
    say(f"nki-bench: {program.name}: axon {row.axon.detail}: "
        f"{_latency(row.axon)} ({row.symbolic_s:.1f} s symbolic, {row.selection_s:.1f} s "
        "selection)")


def run_naive(func: FuncOp, program: Program, sizes: Mapping[str, int],
              inputs: Sequence[np.ndarray], runner: KernelRunner, profile: str,
              say: Callable[[str], None]) -> Priced:
    """The naive lowering: each op's kernel chosen, run on the previous kernels' outputs,
    checked against the interpreter and priced; the latencies summed. Its result, every
    intermediate rounded to its dtype in HBM as the interpreter rounds it, is checked against
    the interpreter of the whole program (the numpy reference computes in float32 throughout:
    layernorm's interpreter is 5 elements past the tolerance from it at [1024, 512], where
    the centred row cancels near zero)."""
    values: dict[SSAValue, np.ndarray] = dict(zip(func.body.block.args, inputs, strict=True))
    chosen: dict[str, str] = {}  # a one-op function's text (without its name): its module
    tolerance = program.tolerance_at(sizes)
    total = 0.0
    kernels = op_functions(func)
    for k in kernels:
        what = f"%{kernels.index(k)} '{k.op.name}'"
        own = {s: v for s, v in sizes.items() if s in symbols(k.func)}
        key = str(k.func).replace(f"@{k.func.sym_name.data}(", "@op(", 1)
        if key not in chosen:
            try:
                chosen[key] = first_kernel(k.func, profile, own, lambda line: None,
                                           fuse=False).text
            except NoKernel as err:
                return Priced(why=f"{what} does not lower: {err}", kernels=len(kernels))
        args = [values[v] if v in values else sizes_value(v, sizes) for v in k.operands]
        try:
            out, latency = runner.run(chosen[key], args, k.func.sym_name.data)
        except (KernelError, SimulationError, SimulationWarning) as err:
            return Priced(why=f"{what}: the simulator stops: {_failure(err, runner.tmp)}",
                          kernels=len(kernels))
        (expected,) = run_function(k.func, args, own)
        problem = check_close(out, expected, tolerance)
        if problem:
            return Priced(why=f"{what}: wrong result: {problem}", wrong=True,
                          kernels=len(kernels))
        (result,) = k.op.results
        values[result] = out
        total += latency
    (ret,) = (op for op in func.body.block.ops if isinstance(op, ReturnOp))
    (interpreted,) = run_function(func, inputs, sizes)
    problem = check_close(values[ret.arguments[0]], interpreted, tolerance)
    if problem:
        return Priced(why=f"the chain's result is wrong: {problem}", wrong=True,
                      kernels=len(kernels))
    say(f"nki-bench: {program.name}: naive: {len(kernels)} kernel(s), {total * 1e6:.1f} us")
    return Priced(total, kernels=len(kernels))


def run_hand(program: Program, sizes: Mapping[str, int], inputs: Sequence[np.ndarray],
             want: np.ndarray, runner: KernelRunner, say: Callable[[str], None]) -> Priced | None:
    """The hand-written baseline's latency, or None when the program has none."""
    path = BASELINES / f"{program.name}.py"
    if not path.exists():
        return None
    try:
        out, latency = runner.run(path, inputs)
    except (KernelError, SimulationError, SimulationWarning) as err:
        return Priced(why=f"the simulator stops: {_failure(err, runner.tmp)}")
    problem = check_close(out, want, program.tolerance_at(sizes))
    if problem:
        return Priced(why=f"wrong result: {problem}", wrong=True)
    say(f"nki-bench: {program.name}: hand: {latency * 1e6:.1f} us")
    return Priced(latency)


def bench_program(program: Program, profile: str, runner: KernelRunner,
                  say: Callable[[str], None], sizes: Mapping[str, int] | None = None,
                  max_candidates: int = DEFAULT_MAX_CANDIDATES) -> Row:
    """The table's row of `program` at `sizes` (default: `sizes_for`), axon's kernel chosen of
    at most `max_candidates` (`choose_kernel`'s bound)."""
    if sizes is None:
        chosen_sizes, note = sizes_for(program)
    else:
        chosen_sizes, note = dict(sizes), "given"
    func = parse_program(program)
    inputs = make_inputs(program, chosen_sizes)
    want = np.asarray(program.reference(*inputs))
    row = Row(program.name, program.tier, chosen_sizes, note, Priced(), Priced(), None,
              floor_s=dma_floor_s(func, chosen_sizes, profile))
    say(f"nki-bench: {program.name} at "
        f"{', '.join(f'{k}={v}' for k, v in chosen_sizes.items())}")
    run_axon(func, program, chosen_sizes, inputs, want, runner, profile, row, say,
             max_candidates)
    row.naive = run_naive(func, program, chosen_sizes, inputs, runner, profile, say)
    row.hand = run_hand(program, chosen_sizes, inputs, want, runner, say)
    return row


def _latency(p: Priced | None) -> str:
    if p is None:
        return "-"
    if p.latency_s is None:
        return "WRONG" if p.wrong else "n/a"
    return f"{p.latency_s * 1e6:.1f}"


def _ratio(num: Priced | None, den: Priced | float | None) -> float | None:
    below = den.latency_s if isinstance(den, Priced) else den
    if num is None or num.latency_s is None or below is None:
        return None
    return num.latency_s / below


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive values (nan for none)."""
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def table(rows: Sequence[Row], profile: str) -> str:
    """The printed table: one line per program, the failures and the geomeans."""
    lines = [f"NKI kernels on {profile}: cost-model latency in us (simulator trace); "
             "naive = one kernel per op; hand = benchmarks/nki_baselines",
             f"{'program':<22}{'T':>2}  {'sizes':<34}{'axon':>9}{'naive':>10}{'hand':>9}"
             f"{'floor':>8}{'naive/axon':>11}{'hand/axon':>10}{'naive/floor':>12}"
             f"{'axon/floor':>11}{'symb s':>8}{'sel s':>7}  axon kernel"]
    for r in rows:
        sizes = ",".join(f"{k}={v}" for k, v in r.sizes.items()) + ("*" if r.shape_note else "")
        chain = _latency(r.naive) + (f"/{r.naive.kernels}" if r.naive.latency_s else "")
        nr, hr = _ratio(r.naive, r.axon), _ratio(r.hand, r.axon)
        nf, af = _ratio(r.naive, r.floor_s), _ratio(r.axon, r.floor_s)
        floor = "-" if r.floor_s is None else f"{r.floor_s * 1e6:.1f}"
        lines.append(f"{r.program:<22}{r.tier:>2}  {sizes:<34}{_latency(r.axon):>9}{chain:>10}"
                     f"{_latency(r.hand):>9}{floor:>8}{_fmt(nr):>11}{_fmt(hr):>10}"
                     f"{_fmt(nf):>12}{_fmt(af):>11}"
                     f"{r.symbolic_s:>8.1f}{r.selection_s:>7.1f}  {r.axon.detail}")
    lines.append("floor: the DMA floor (inputs and results moved once at the best DMA rate, no "
                 "engine work): no kernel is faster, so naive/floor bounds naive/axon")
    lines.append("naive's '/n': its n kernels; *: a shape smaller than the suite's default:")
    lines.extend(f"  {r.program}: {r.shape_note}" for r in rows if r.shape_note)
    failures = [(r.program, who, p.why) for r in rows
                for who, p in (("axon", r.axon), ("naive", r.naive), ("hand", r.hand))
                if p is not None and p.latency_s is None]
    if failures:
        lines.append("not priced:")
        lines.extend(f"  {name} ({who}): {why}" for name, who, why in failures)
    naive = [x for r in rows if (x := _ratio(r.naive, r.axon)) is not None]
    fused = [x for r in rows if (x := _ratio(r.naive, r.axon)) is not None
             and r.naive.kernels > 1]
    hand = [x for r in rows if (x := _ratio(r.hand, r.axon)) is not None]
    lines.append(f"geomean naive/axon {_fmt(geomean(naive), 3)} over {len(naive)} programs "
                 f"({_fmt(geomean(fused), 3)} over the {len(fused)} of more than one op); "
                 f"geomean hand/axon {_fmt(geomean(hand), 3)} over {len(hand)} programs "
                 "(> 1: axon's kernel is faster)")
    # over the programs both kernels were priced for, so the bound compares with naive/axon
    both = [r for r in rows if _ratio(r.naive, r.axon) is not None and r.floor_s]
    naive_floor = geomean([x for r in both if (x := _ratio(r.naive, r.floor_s))])
    axon_floor = geomean([x for r in both if (x := _ratio(r.axon, r.floor_s))])
    lines.append(f"geomean naive/floor {_fmt(naive_floor, 3)} over the same {len(both)} programs "
                 "(what naive/axon would be with every kernel at its DMA floor); geomean "
                 f"axon/floor {_fmt(axon_floor, 3)}")
    return "\n".join(lines)


def _fmt(x: float | None, places: int = 2) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.{places}f}"


def summary(rows: Sequence[Row], seconds: float) -> str:
    """The last line: how many programs got each kernel priced, and the wrong ones."""
    def count(pick: Callable[[Row], Priced | None]) -> int:
        return sum(1 for r in rows if (p := pick(r)) is not None and p.latency_s is not None)
    wrong = sum(1 for r in rows for p in (r.axon, r.naive, r.hand) if p is not None and p.wrong)
    hands = sum(1 for r in rows if r.hand is not None)
    return (f"nki-bench: {len(rows)} programs: axon priced {count(lambda r: r.axon)}, naive "
            f"{count(lambda r: r.naive)}, hand {count(lambda r: r.hand)} of {hands}; {wrong} "
            f"wrong; {seconds:.0f} s")


def main(argv: list[str] | None = None) -> None:
    """Print the table for the chosen programs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--programs", default="",
                        help="comma-separated suite programs (default: every Tier 1 and 2)")
    parser.add_argument("--profile", default="trn2",
                        help=f"the NeuronCore profile ({', '.join(NKI_PROFILES)}; trn2)")
    parser.add_argument("--max-candidates", type=int, default=DEFAULT_MAX_CANDIDATES,
                        metavar="N", help="the candidates axon's selection simulates per "
                        f"program, at most (default {DEFAULT_MAX_CANDIDATES})")
    args = parser.parse_args(argv)
    if args.max_candidates < 1:
        parser.error(f"--max-candidates: must be at least 1, not {args.max_candidates}")
    if args.profile not in NKI_PROFILES:
        parser.error(f"--profile: '{args.profile}' is not a NeuronCore profile; known: "
                     f"{', '.join(NKI_PROFILES)}")
    names = [n.strip() for n in args.programs.split(",") if n.strip()] or \
        [p.name for p in PROGRAMS.values() if p.tier in (1, 2)]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        parser.error(f"--programs: {', '.join(unknown)} is not a suite program; known: "
                     f"{', '.join(PROGRAMS)}")
    start = time.perf_counter()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runner = KernelRunner(args.profile, Path(tmp))
        for name in names:
            rows.append(bench_program(PROGRAMS[name], args.profile, runner, say,
                                      max_candidates=args.max_candidates))
    print(table(rows, args.profile))
    print(summary(rows, time.perf_counter() - start))


if __name__ == "__main__":
    main()
