"""Candidate bundles: the emitted candidates of benchmark cases, for the GPU machine to time.

    python -m axon.targets.xe_triton.bundle --suite --profile h200 -o BUNDLE
    axon-bench --run BUNDLE --json winners.json                 # on the GPU machine
    python -m axon.targets.xe_triton.bundle --record winners.json --bundle BUNDLE
    python -m axon.targets.xe_triton.bundle --merge BUNDLE_A BUNDLE_B -o BUNDLE

A bundle is a directory: `manifest.json` (the profile, the seed, Axon's version and the cases)
and `<case>/<candidate>.py`, one emitted Triton module per candidate; the harness's
`harness/bundle.py` defines the format, writes it for selection and reads it back. A case is
one program at one binding of its sizes: its tier, dtype, tolerance, the flops and bytes of the
program as written (the roofline floor), its inputs (shape, dtype and the suite's
distribution) and outputs, its candidates (module, host function, launch keywords, tiling,
proof id, modeled time) and `key`, the winner-cache key it records under. The GPU machine has
only torch, Triton and numpy: the harness there reads the manifest, generates the inputs from
the seed, checks and times each candidate.

`--suite` builds the bundle of every Tier 1 and Tier 2 program of `benchmarks/suite.py` at its
benchmark shapes (docs/benchmarks.md): each case's candidates are selected
(`select.select_kernel`) and passed through cascade steps 1-3 on the CPU (step 3 in float32 at
small shapes); the best few that pass, of different tilings and programs first, are written,
with at least one of the KB's autotune launches of the best tiling among them
(`kept_candidates`).
A program that does not tile or whose kernels do not lower yet is reported as skipped with the
reason. `--record` files the winners of a GPU run (`axon-bench --json`) in the winner cache,
where `axon PROGRAM --target xe_triton` finds them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import NORMAL, PROGRAMS, Init, Program
from axon.dialects.ax import TensorType
from axon.dialects.form.interface import form_op, has_form
from axon.nugraph.cost import RooflineCost
from axon.nugraph.stored import function_text
from axon.selection.cache import Winner, WinnerCache, winner_key
from axon.selection.executor import EXECUTORS, Executor, make_executor
from axon.selection.space import ranked_bounded
from axon.targets.xe_triton.harness import bundle as harness
from axon.targets.xe_triton.select import (
    ONE_BLOCK,
    Candidate,
    SelectionError,
    SelectOptions,
    select_kernel,
)
from axon.tools.embed import parse_source
from axon.tools.user_errors import ArgumentParser, UsageError, exit_on_user_error
from axon.tools.version import axon_version
from axon.verifier.cache import ProofCache

#: candidates written per case, and modules per bundle at most (a few MB)
PER_CASE = 4
MAX_MODULES = 200
#: a case keeps only candidates the cost model prices within this factor of its best: one
#: priced past it wins only where the model is wrong by more than that, and a GPU's time is
#: better spent on the launches near the best
KEPT_BAND = 3.0


@dataclass
class BundleCandidate:
    """One emitted candidate of a case."""

    id: str
    function: str
    kwargs: dict[str, Any]
    tiling: str
    proof_id: str
    modeled_ms: float
    text: str = field(repr=False)


@dataclass
class BundleCase:
    """One program at one binding of its sizes, and its candidates."""

    case: str
    program: str
    tier: int
    sizes: dict[str, int]
    dtype: str
    tolerance: tuple[float, float]
    flops: int
    bytes: int
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    key: str
    candidates: list[BundleCandidate] = field(default_factory=list)


def write_bundle(directory: Path, cases: Sequence[BundleCase], profile: str,
                 seed: int = 0) -> Path:
    """Write `cases` as a bundle under `directory` (created) through the harness's writer,
    which owns the format (`harness.bundle`); the manifest's path."""
    made, modules = [], {}
    for case in cases:
        candidates = []
        for c in case.candidates:
            module = f"{case.case}/{c.id}.py"
            modules[module] = c.text
            candidates.append(harness.Candidate(c.id, module, c.function, dict(c.kwargs),
                                                c.tiling, c.proof_id, round(c.modeled_ms, 6)))
        inputs = tuple(harness.TensorSpec(tuple(t["shape"]), t["dtype"], t["name"],
                                          harness.Init(**t["init"])) for t in case.inputs)
        outputs = tuple(harness.TensorSpec(tuple(t["shape"]), t["dtype"])
                        for t in case.outputs)
        made.append(harness.Case(case.case, case.program, case.tier, dict(case.sizes),
                                 case.dtype, case.tolerance, case.flops, case.bytes, inputs,
                                 outputs, tuple(candidates), case.key))
    return harness.write_bundle(harness.Bundle(directory, profile, seed, axon_version(),
                                               tuple(made)), modules)


def case_name(program: str, sizes: Mapping[str, int]) -> str:
    """`rmsnorm_matmul_4096x4096x4096`: the program and its sizes in the program's order."""
    return f"{program}_{'x'.join(str(v) for v in sizes.values())}"


def init_record(init: Init, sizes: Mapping[str, int]) -> dict[str, Any]:
    """The suite's `Init` as the manifest's dict, its scale evaluated at `sizes`."""
    record: dict[str, Any] = {"kind": init.dist,
                              "scale": 1.0 if init.scale is None else init.scale(sizes)}
    if init.dist == "uniform":
        record.update(low=init.low, high=init.high)
    return record


def flops_and_bytes(func: FuncOp, sizes: Mapping[str, int]) -> tuple[int, int]:
    """The program as written: the flops of its ops, and the bytes of its inputs and results."""
    counter = RooflineCost(sizes=sizes)
    flops = 0.0
    for op in func.walk():
        if has_form(op):
            meaning = form_op(op).meaning()
            result = meaning.result_type
            assert isinstance(result, TensorType)
            types = [v.type for v in op.operands]
            flops += counter.flops_and_bytes(meaning.form, types, result)[0]  # type: ignore[arg-type]
    return int(flops), counter.signature_bytes(func.function_type)


def program_function(program: Program) -> FuncOp:
    """The suite program's function, parsed."""
    (func,) = [op for op in parse_source(program.source, f"{program.name}.py").ops
               if isinstance(op, FuncOp)]
    return func


def bundle_case(program: Program, sizes: Mapping[str, int], profile: str, func: FuncOp
                ) -> BundleCase:
    """A case of `program` at `sizes`, without candidates."""
    flops, nbytes = flops_and_bytes(func, sizes)
    inputs = [{"name": p.name, "shape": list(p.shape(sizes)), "dtype": p.dtype,
               "init": init_record(program.inits.get(p.name, NORMAL), sizes)}
              for p in program.params]
    outputs = [{"shape": [d.evaluate(sizes) for d in t.shape], "dtype": t.dtype}
               for t in func.function_type.outputs.data if isinstance(t, TensorType)]
    dtypes = [t.dtype for t in func.function_type.inputs.data if isinstance(t, TensorType)]
    key = winner_key(function_text(func), sizes, dtypes, profile)
    return BundleCase(case_name(program.name, sizes), program.name, program.tier, dict(sizes),
                      program.dtype, program.tolerance_at(sizes), flops, nbytes, inputs, outputs,
                      key)


def kept_candidates(passed: Sequence[Candidate], limit: int) -> list[Candidate]:
    """At most `limit` of a case's candidates that passed, best first, among those priced
    within `KEPT_BAND` of the best: the best of each tiling, over the programs, before
    runners-up (`ranked_bounded`: two variants of a program often tile to kernels that differ
    only in the order of their ops), with, where places allow, these in place of the last
    ranked ones (`_required`): a KB autotune launch of the best tiling, the best candidate of
    the other plan (the best staged plan where one kernel ranks first, the best single kernel
    where a staged plan does) and that kernel's KB launch. The cost model prices the KB's
    configurations like its own tile sizes where they differ only in what it does not see
    (stages, block I/O), and a staged plan against a fused kernel by traffic it estimates;
    the KB's launches come from GPU measurements (its small-GEMM grid: 64x128x128, 4 warps,
    4 stages, host descriptors), so the GPU should time one of each."""
    finite = [c for c in passed if math.isfinite(c.modeled_ms)]
    if finite:  # a tiling priced far above the best is not worth a GPU's time
        band = min(c.modeled_ms for c in finite) * KEPT_BAND
        finite = [c for c in finite if c.modeled_ms <= band]
    ranked = ranked_bounded(finite, cost=lambda c: c.modeled_ms, group=lambda c: c.tiling,
                            limit=len(finite)).chosen
    # a launch another variant of the program already holds (the same tiling and keywords:
    # most often the same kernel with its ops in another order) after every new launch
    seen: set[tuple[str, str]] = set()
    first: list[Candidate] = []
    again: list[Candidate] = []
    for c in ranked:
        launch = (c.tiling, c.id.split(".", 1)[-1] if c.stages else repr(sorted(c.kwargs.items())))
        (again if launch in seen else first).append(c)
        seen.add(launch)
    ranked = first + again
    kept = ranked[:max(limit, 0)]
    if limit < 2 or not kept:
        return kept
    required: list[Candidate] = [kept[0]]
    for extra in _required(finite, kept[0]):
        if extra in required or len(required) == limit:
            continue
        required.append(extra)
        if extra not in kept:  # in place of the last ranked one not required
            drop = max(n for n, c in enumerate(kept) if c not in required)
            kept = [*kept[:drop], *kept[drop + 1:], extra]
    return kept


def _required(passed: Sequence[Candidate], best: Candidate) -> list[Candidate]:
    """What a case should time besides its best (see `kept_candidates`), most needed first."""
    def cheapest(pool: Sequence[Candidate]) -> list[Candidate]:
        # among equal prices the KB's order (`passed` keeps the enumeration's)
        return [min(pool, key=lambda c: c.modeled_ms)] if pool else []

    def kb_launch(tiling: str) -> list[Candidate]:
        return cheapest([c for c in passed if c.origin == "autotune" and c.tiling == tiling])

    staged = best.origin == "staged"
    other = cheapest([c for c in passed if (c.origin == "staged") != staged])
    single = best if not staged else next(iter(other), None)
    if single is None:
        return []
    own = [] if single.origin == "autotune" else kb_launch(single.tiling)
    # a split loop at one block a stretch (`select.ONE_BLOCK`): the model prices it coarsely
    first = single.stages[0].kwargs if single.stages else single.kwargs
    one = [] if first.get("NB", 1) == 1 else cheapest(
        [c for c in passed if c.tiling == single.tiling and c.origin == ONE_BLOCK])
    return [*one, *own, *other] if not staged else [*other, *one, *own]


def suite_bundle(profile: str, executor: Executor, per_case: int = PER_CASE,
                 max_modules: int = MAX_MODULES, names: Sequence[str] | None = None,
                 max_candidates: int = 12, say: Any = print) -> tuple[list[BundleCase],
                                                                      list[tuple[str, str]]]:
    """The suite's cases with their checked candidates, and the (case, reason) skipped."""
    cases: list[BundleCase] = []
    skipped: list[tuple[str, str]] = []
    proofs = ProofCache()  # a program's proofs serve all its sizes
    written = 0
    chosen = [p for p in PROGRAMS.values() if p.tier in (1, 2)
              and (names is None or p.name in names)]
    for program in chosen:
        func = program_function(program)
        for sizes in program.default_sizes:
            name = case_name(program.name, sizes)
            if written >= max_modules:
                skipped.append((name, f"the bundle holds {max_modules} modules already"))
                continue
            start = time.perf_counter()
            options = SelectOptions(profile=profile, sizes=sizes, time_on_gpu=False,
                                    max_candidates=max_candidates)
            try:
                selection = select_kernel(func, options, executor, program=program.name,
                                          proofs=proofs)
            except SelectionError as err:
                skipped.append((name, str(err)))
                say(f"{name}: skipped: {err}")
                continue
            kept = kept_candidates(selection.passed(), min(per_case, max_modules - written))
            case = bundle_case(program, sizes, profile, func)
            for c in kept:
                emitted = selection.emitted[c.id]
                case.candidates.append(BundleCandidate(c.id, emitted.name, c.kwargs, c.tiling,
                                                       c.proof_id, c.modeled_ms, emitted.text))
            written += len(kept)
            tally = selection.tally()
            say(f"{name}: {tally.line()}; {len(kept)} written "
                f"({time.perf_counter() - start:.1f} s)")
            if kept:
                cases.append(case)
            else:
                skipped.append((name, "no candidate passed steps 1-3: "
                                + "; ".join(tally.first_reasons.values())))
    return cases, skipped


def merge_bundles(sources: Sequence[Path], target: Path) -> tuple[Path, list[str]]:
    """Write the cases of `sources` as one bundle under `target` (its manifest's path), and
    the names of the cases a later source replaced. The sources must share a profile and a
    seed; `target` must not hold a bundle already. BundleError naming the source otherwise.
    Bundles made side by side (`--programs` subsets) become one run this way."""
    if (target / harness.MANIFEST).exists():
        raise harness.BundleError(f"{target}: holds a bundle already (merge into a new folder)")
    read = [harness.read_bundle(s) for s in sources]
    if not read:
        raise harness.BundleError("nothing to merge: no bundle given")
    first = read[0]
    cases: dict[str, harness.Case] = {}
    modules: dict[str, str] = {}
    replaced: list[str] = []
    for bundle in read:
        if (bundle.profile, bundle.seed) != (first.profile, first.seed):
            raise harness.BundleError(
                f"{bundle.root}: profile {bundle.profile} and seed {bundle.seed}, but "
                f"{first.root} has profile {first.profile} and seed {first.seed}")
        for case in bundle.cases:
            if case.case in cases:
                replaced.append(case.case)
            cases[case.case] = case
            for c in case.candidates:
                modules[c.module] = bundle.module_path(c).read_text()
    merged = harness.Bundle(target, first.profile, first.seed, axon_version(),
                            tuple(cases.values()))
    return harness.write_bundle(merged, modules), replaced


def record_winners(results: Path, bundle: Path, cache: WinnerCache) -> int:
    """File the winners of `results` (`axon-bench --json`) for the cases of `bundle` in
    `cache` (saved); the number filed. ValueError naming the file for a malformed one."""
    document = _json(results)
    try:
        read = harness.read_bundle(bundle)
    except harness.BundleError as err:
        raise ValueError(str(err)) from None
    winners = document.get("winners")
    if not isinstance(winners, list):
        raise ValueError(f"{results}: expected a 'winners' list")
    cases = {c.case: c for c in read.cases}
    filed = 0
    for n, entry in enumerate(winners):
        where = f"{results}: winners[{n}]"
        if not isinstance(entry, dict) or not {"case", "candidate"} <= set(entry):
            raise ValueError(f"{where}: expected an object with 'case' and 'candidate'")
        case = cases.get(entry["case"])
        if case is None:
            raise ValueError(f"{where}: case '{entry['case']}' is not in {bundle}")
        found = [c for c in case.candidates if c.id == entry["candidate"]]
        if not found:
            raise ValueError(f"{where}: candidate '{entry['candidate']}' is not one of case "
                             f"'{entry['case']}'")
        if not case.key:
            raise ValueError(f"{bundle}: case '{case.case}' has no winner-cache key")
        (candidate,) = found
        cache.put(case.key, Winner(
            program=case.program, sizes=case.sizes, dtype=case.dtype,
            profile=read.profile, candidate=candidate.id,
            kwargs=dict(entry.get("kwargs") or candidate.kwargs),
            function=candidate.function,
            module_text=read.module_path(candidate).read_text(),
            axon_ms=_number(entry.get("axon_ms")), baseline_ms=_number(entry.get("baseline_ms")),
            baseline=str(entry.get("baseline") or ""), axon_version=read.axon_version))
        filed += 1
    cache.save()
    return filed


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except OSError as err:
        raise ValueError(f"{path}: cannot read: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}:{err.colno}: not JSON: {err.msg}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return document


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m axon.targets.xe_triton.bundle",
                            description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--suite", action="store_true",
                      help="bundle the Tier 1 and 2 suite programs at their benchmark shapes")
    what.add_argument("--record", metavar="RESULTS",
                      help="file the winners of a GPU run (axon-bench --json) in the cache")
    what.add_argument("--merge", nargs="+", metavar="BUNDLE",
                      help="write these bundles' cases as one bundle to -o DIR (a case of a "
                      "later bundle replaces the same case of an earlier one)")
    parser.add_argument("--profile", default="h200", help="the KB device (default h200)")
    parser.add_argument("-o", "--output", metavar="DIR", help="the bundle folder (--suite)")
    parser.add_argument("--bundle", metavar="DIR", help="the bundle RESULTS timed (--record)")
    parser.add_argument("--cache", metavar="FILE", help="the winner cache (default: "
                        "$AXON_WINNER_CACHE, else the user's cache folder)")
    parser.add_argument("--programs", metavar="NAMES", help="only these programs, a,b,...")
    parser.add_argument("--per-case", type=int, default=PER_CASE, metavar="N",
                        help=f"candidates per case (default {PER_CASE})")
    parser.add_argument("--executor", choices=EXECUTORS, default="local",
                        help="where candidates are checked (default local)")
    parser.add_argument("--debug", action="store_true", help="show an internal error's traceback")
    return parser


def run(argv: Sequence[str]) -> None:
    """The command (see the module docstring)."""
    from axon.targets.xe_triton.kb import device_names

    args = _parser().parse_args(list(argv))
    if args.record:
        if not args.bundle:
            raise UsageError("--record needs --bundle DIR, the bundle that was timed")
        try:
            filed = record_winners(Path(args.record), Path(args.bundle), WinnerCache(args.cache))
        except ValueError as err:
            raise UsageError(str(err)) from None
        print(f"recorded {filed} winner(s)", file=sys.stderr)
        return
    if args.merge:
        if not args.output:
            raise UsageError("--merge needs -o DIR, the bundle folder to write")
        try:
            path, replaced = merge_bundles([Path(p) for p in args.merge], Path(args.output))
        except harness.BundleError as err:
            raise UsageError(str(err)) from None
        print(f"wrote {path}" + (f"; replaced {', '.join(replaced)}" if replaced else ""),
              file=sys.stderr)
        return
    if not args.output:
        raise UsageError("--suite needs -o DIR, the bundle folder to write")
    if args.profile not in device_names():
        raise UsageError(f"unknown profile '{args.profile}'; known: {', '.join(device_names())}")
    names = args.programs.split(",") if args.programs else None
    unknown = [n for n in names or () if n not in PROGRAMS]
    if unknown:
        raise UsageError(f"unknown program(s) {', '.join(unknown)}")
    executor = make_executor(args.executor)
    try:
        cases, skipped = suite_bundle(args.profile, executor, args.per_case, names=names,
                                      say=lambda line: print(line, file=sys.stderr, flush=True))
    finally:
        executor.close()
    path = write_bundle(Path(args.output), cases, args.profile)
    modules = sum(len(c.candidates) for c in cases)
    print(f"wrote {path}: {len(cases)} cases, {modules} modules; {len(skipped)} skipped",
          file=sys.stderr)
    for name, why in skipped:
        print(f"  skipped {name}: {why}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point."""
    args = sys.argv[1:] if argv is None else list(argv)
    exit_on_user_error("bundle", lambda: run(args), debug="--debug" in args)


if __name__ == "__main__":
    main()
