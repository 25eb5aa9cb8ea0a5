"""The Forge problems as one bundle for `axon-bench`: each problem's Model, the user's Triton
kernel and Axon's candidates from the Forge paths, for a GPU machine to check and time.

    python -m axon.forge.bundle --problems all --profile h200 -o BUNDLE
    python -m axon.forge.bundle --merge BUNDLE_A BUNDLE_B -o BUNDLE
    axon-bench --run BUNDLE --json forge.json           # on the GPU machine

The torch path (`torch_path.forge_problem`: capture, proved tilings, the KB's launches, cascade
steps 1-3 on every candidate) forges each problem of `benchmarks/forge/` at its benchmark sizes;
the kept candidates' float32 twins are checked against the problem's Model by the frozen harness
on Triton's CPU interpreter at the problem's small sizes (`harness.forge_run.
check_against_original`, in a child process, every tamper check on), and one that fails is left
out with the reason. The Triton path (`triton_path.forge_kernel`) rewrites the user's kernel
through the stages, each proposal through the cascade on the CPU (so untimed: its first passing
proposal is kept). The raised path (`raised_path.forge_raised`) replaces the user's kernels that
raise to `ax` with proof by Axon's selected kernels, through the same cascade. A problem with no
candidate left is reported as skipped. The bundle holds per case `problem.py`, `input.py` (the
user's kernel), `axon_<n>.py` (the torch path, in the problem's dtype), `stages.py` (the Triton
path after every stage it applied), `stages_<n>.py` (after its first n), `no_<stage>.py` (the
path without a stage a GPU may roll back, `ROLLBACKS`) and `raised.py` (Axon's kernels in the
launches' dtypes, selected at the benchmark sizes; their float32 twins checked).
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from axon.benchmarks.forge.problem_set import DTYPE_NAMES, PROBLEMS, load_problem
from axon.forge.driver import ForgeResult
from axon.forge.raised_path import forge_raised
from axon.forge.stages.facts import ForgeOptions
from axon.forge.torch_path import (
    ForgeError,
    TorchForgeOptions,
    check_sizes,
    forge_problem,
    load,
)
from axon.forge.triton_path import forge_kernel
from axon.selection.executor import EXECUTORS, Executor, make_executor
from axon.targets.xe_triton.harness import forge_bundle as harness
from axon.targets.xe_triton.harness.forge_run import check_against_original
from axon.targets.xe_triton.kb import load_device
from axon.targets.xe_triton.select import Selection
from axon.tools.user_errors import ArgumentParser, UsageError, exit_on_user_error
from axon.tools.version import axon_version

#: candidates written per problem
KEEP = 3
#: the Forge paths a bundle's candidates come from
PATHS = ("torch", "triton", "raised")
#: configurations of the autotune stage's grid (each checked alone on the CPU)
AUTOTUNE_CONFIGS = 4
#: stages whose rollback twins the triton path writes (each left out alone, then all together):
#: the persistent loop and the KB's tiles, which the GPU found slower on causal attention
#: (stop 37: 20's cut kernel 0.189 ms, with the loop 0.211, with the loop and 128x64 0.266)
ROLLBACKS = ("persistent", "xe_tuning")
#: seconds one CPU check may take
CHECK_TIMEOUT_S = 600.0


@dataclass
class BundleReport:
    """What building the bundle did: cases written, candidates left out (and why), problems
    skipped (and why)."""

    cases: list[harness.ForgeCase] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def forge_case(name: str, profile: str, executor: Executor, keep: int, max_candidates: int,
               report: BundleReport, log: Callable[[str], None] = print,
               paths: Sequence[str] = PATHS) -> None:
    """Forge problem `name` on `paths`, check the candidates on the CPU, add the case."""
    problem = PROBLEMS[name]
    candidates: list[harness.ForgeCandidate] = []
    if "torch" in paths:
        candidates += _torch_candidates(name, profile, executor, keep, max_candidates, report,
                                        log)
    if "triton" in paths:
        candidates += _triton_candidates(name, profile, report, log)
    if "raised" in paths:
        candidates += _raised_candidates(name, profile, executor, keep, report, log)
    if not candidates:
        report.skipped.append((name, "no candidate on " + " or ".join(paths)))
        return
    report.files[f"{name}/problem.py"] = problem.problem_path.read_text()
    report.files[f"{name}/input.py"] = problem.kernel_path.read_text()
    dtype = DTYPE_NAMES[load_problem(name).dtype]
    report.cases.append(harness.ForgeCase(
        name, f"{name}/problem.py", {}, dtype, problem.atol_scale, f"{name}/input.py",
        tuple(candidates)))
    log(f"{name}: {len(candidates)} candidate(s) written")


def _forge_on_cpu(name: str, profile: str, without: frozenset[str] = frozenset()
                  ) -> tuple[ForgeResult, int]:
    problem = PROBLEMS[name]
    dtype = DTYPE_NAMES[load_problem(name).dtype]
    with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
        return forge_kernel(problem.kernel_path, problem.problem_path, load_device(profile),
                            [problem.small_sizes], gpu=False, scratch=Path(scratch),
                            atol_scale=problem.atol_scale, gpu_later=True,
                            options=ForgeOptions(max_configs=AUTOTUNE_CONFIGS), without=without,
                            smoke_dtype=None if dtype == "f32" else dtype)


def _triton_candidates(name: str, profile: str, report: BundleReport,
                       log: Callable[[str], None],
                       rollbacks: Sequence[str] = ROLLBACKS) -> list[harness.ForgeCandidate]:
    """The user's kernel through the Triton-level stages (CPU cascade), when any applied: the
    text after the last applied stage (`stages`) and after each earlier one (`stages_<n>`, the
    first n applied). Each passed the cascade against the original when its stage applied; on
    the CPU no stage is timed (a proposal also runs once in the problem's dtype there, failing
    on a crash only), so the GPU's timing of the prefixes is where a stage that made
    the kernel slower is rolled back (what `axon forge` does on a GPU stage by stage). A stage
    of `rollbacks` that applied before the last one also gets its rollback twin
    (`no_<stage>`, and `no_<a>_<b>` for all of them together): the plan run again without
    it, the stages after it tuning the text before it, as they would on a GPU that rolled it
    back."""
    result, checked = _forge_on_cpu(name, profile)
    applied = result.applied()
    log(f"{name}: triton path: {', '.join(applied) or 'no stage'} applied, {checked} "
        "proposal(s) checked")
    if not result.changed:
        report.dropped.append((f"{name}/stages", "no stage applied: "
                                                 + "; ".join(result.report_lines())))
        return []
    candidates: list[harness.ForgeCandidate] = []
    for n, (_, text) in enumerate(result.snapshots, start=1):
        ident = "stages" if n == len(result.snapshots) else f"stages_{n}"
        relative = f"{name}/{ident}.py"
        report.files[relative] = text
        candidates.append(harness.ForgeCandidate(
            ident, relative, "the user's kernel after " + ", ".join(applied[:n])))
    candidates = candidates[-1:] + candidates[:-1]
    texts = {text for _, text in result.snapshots}
    rolled = [s for s in rollbacks if s in applied[:-1]]
    for left_out in [(s,) for s in rolled] + ([tuple(rolled)] if len(rolled) > 1 else []):
        twin, more = _forge_on_cpu(name, profile, frozenset(left_out))
        if not twin.changed or twin.source in texts:
            continue
        texts.add(twin.source)
        ident = "no_" + "_".join(left_out)
        relative = f"{name}/{ident}.py"
        report.files[relative] = twin.source
        candidates.append(harness.ForgeCandidate(
            ident, relative, "the user's kernel after " + ", ".join(twin.applied())
            + f" (the plan without {', '.join(left_out)})"))
        log(f"{name}: triton path without {', '.join(left_out)}: "
            f"{', '.join(twin.applied()) or 'no stage'} applied, {more} proposal(s) checked")
    return candidates


def _raised_candidates(name: str, profile: str, executor: Executor, keep: int,
                       report: BundleReport, log: Callable[[str], None]
                       ) -> list[harness.ForgeCandidate]:
    """The raised path alone (`raised_path.forge_raised`): the user's kernels that raise to `ax`
    with proof replaced by Axon's selected kernels (priced at the launches' sizes at the
    problem's benchmark sizes, in their dtypes), the module through the cascade against the
    original on the CPU (with the kernels' float32 twins); the candidate is the module with
    the kernels themselves (`device_source`), as the torch path writes its kernels and checks
    their twins. Up to `keep` modules: `raised` with each selection's chosen kernel, then
    `raised_<r>` with its launch of rank r among those that passed (the GPU picks the
    launch, as among the torch path's `axon_<n>`); a module the same as an earlier one ends
    the list (no selection has a candidate of that rank)."""
    problem = PROBLEMS[name]
    candidates: list[harness.ForgeCandidate] = []
    written: set[str] = set()
    selections: dict[str, Selection] = {}  # each function selected once for every rank
    for rank in range(max(keep, 1)):
        cid = "raised" if rank == 0 else f"raised_{rank}"
        with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
            result = forge_raised(problem.kernel_path, problem.problem_path,
                                  load_device(profile), [problem.small_sizes], executor,
                                  gpu=False, scratch=Path(scratch),
                                  atol_scale=problem.atol_scale, rank=rank,
                                  selections=selections)
        passed = result.outcome is not None and result.outcome.passed
        log(f"{name}: {cid}: {', '.join(result.replaced) or 'nothing'} replaced"
            + ("" if result.outcome is None else f", cascade: {result.outcome.step}"))
        for line in result.selected:
            log(f"{name}: {cid}: {line}")
        if not result.replaced or not passed:
            why = "; ".join(result.report_lines())
            if result.outcome is not None and not result.outcome.passed:
                why = f"{result.outcome.step}: {result.outcome.reason}; {why}"
            report.dropped.append((f"{name}/{cid}", why))
            if rank == 0:
                return []
            continue
        if result.device_source in written:
            log(f"{name}: {cid}: the same module as an earlier rank's: no selection has a "
                f"candidate of rank {rank}")
            break
        written.add(result.device_source)
        relative = f"{name}/{cid}.py"
        report.files[relative] = result.device_source
        candidates.append(harness.ForgeCandidate(
            cid, relative, "the user's kernels " + ", ".join(result.replaced)
            + " replaced by Axon's (raised to ax with proof): " + "; ".join(result.selected)))
    return candidates


def _torch_candidates(name: str, profile: str, executor: Executor, keep: int,
                      max_candidates: int, report: BundleReport,
                      log: Callable[[str], None]) -> list[harness.ForgeCandidate]:
    """The problem through Axon's pipeline, each kept candidate's twin checked on the CPU."""
    problem = PROBLEMS[name]
    options = TorchForgeOptions(profile=profile, keep=keep, max_candidates=max_candidates,
                                time_on_gpu=False)
    try:
        forged = forge_problem(problem.problem_path, options, executor, say=lambda line: None)
    except ForgeError as err:
        report.dropped.append((f"{name}/torch", str(err)))
        log(f"{name}: torch path: {err}")
        return []
    small = twin_sizes(name, forged.captured.fixed, options)
    candidates: list[harness.ForgeCandidate] = []
    with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
        for n, module in enumerate(forged.modules):
            twin = Path(scratch) / f"twin_{n}.py"
            twin.write_text(module.twin_text)
            verdict = check_against_original(problem.problem_path, None, twin, sizes=[small],
                                             dtype="f32", atol_scale=problem.atol_scale,
                                             device="cpu", timeout_s=CHECK_TIMEOUT_S)
            if not verdict.passed:
                report.dropped.append((f"{name}/{module.id}", f"{verdict.step}: "
                                                              f"{verdict.reason}"))
                log(f"{name}: {module.id}: left out: {verdict.step}: {verdict.reason}")
                continue
            relative = f"{name}/axon_{len(candidates)}.py"
            report.files[relative] = module.text
            candidates.append(harness.ForgeCandidate(
                f"axon_{len(candidates)}", relative,
                f"{module.tiling} ({module.launch}), modeled {module.modeled_ms:.4f} ms"))
    return candidates


def merge_bundles(sources: Sequence[Path], target: Path, *, drop: Sequence[str] = (),
                  replace: bool = False) -> Path:
    """One bundle under `target` of the cases of `sources` (a torch-path and a triton-path
    bundle of the same problems): a case in several keeps its first problem and input kernel
    and gets every source's candidates. Candidates whose id matches a glob of `drop` are left
    out (a case left with none too; none left at all is a UsageError). Ids must differ
    (UsageError for a clash), unless `replace`: then a later source's candidate takes the
    place of an earlier one of its id (a path rebuilt after a change)."""
    read = [harness.read_forge_bundle(s) for s in sources]
    if not read:
        raise UsageError("--merge: no bundle given")
    cases: dict[str, harness.ForgeCase] = {}
    files: dict[str, str] = {}
    for bundle in read:
        if bundle.profile != read[0].profile:
            raise UsageError(f"{bundle.root}: profile {bundle.profile}, but {read[0].root} "
                             f"has {read[0].profile}")
        for case in bundle.cases:
            kept = tuple(c for c in case.candidates
                         if not any(fnmatch.fnmatchcase(c.id, g) for g in drop))
            for c in kept:
                files[c.module] = bundle.path(c.module).read_text()
            first = cases.get(case.case)
            if first is None:
                cases[case.case] = dataclasses.replace(case, candidates=kept)
                for relative in (case.problem, case.input_kernel):
                    if relative is not None:
                        files[relative] = bundle.path(relative).read_text()
                continue
            clash = {c.id for c in first.candidates} & {c.id for c in kept}
            if clash and not replace:
                raise UsageError(f"{bundle.root}: case {case.case} repeats candidate(s) "
                                 f"{', '.join(sorted(clash))} (--replace takes the later)")
            later = {c.id: c for c in kept}
            merged = [later.pop(c.id, c) for c in first.candidates]
            cases[case.case] = dataclasses.replace(first, candidates=(*merged, *later.values()))
    cases = {name: case for name, case in cases.items() if case.candidates}
    if not cases:
        raise UsageError("--merge: no candidate is left (--drop matched them all)")
    written = {c.module for case in cases.values() for c in case.candidates} | {
        r for case in cases.values() for r in (case.problem, case.input_kernel) if r}
    merged_bundle = harness.ForgeBundle(target, read[0].profile, read[0].seed, axon_version(),
                                        tuple(cases[name] for name in sorted(cases)))
    return harness.write_forge_bundle(merged_bundle,
                                      {k: v for k, v in files.items() if k in written})


def _parser() -> ArgumentParser:
    p = ArgumentParser(prog="python -m axon.forge.bundle",
                       description="Forge the problems of benchmarks/forge into a bundle for "
                                   "axon-bench (runs each problem's Python).")
    p.add_argument("--problems", default="all",
                   help="problem names, comma-separated, or 'all' (default)")
    p.add_argument("--profile", default="h200", help="the KB device (default h200)")
    p.add_argument("--merge", type=Path, nargs="+", metavar="BUNDLE",
                   help="merge these bundles into -o instead of forging")
    p.add_argument("--drop", default="", metavar="GLOBS",
                   help="with --merge: leave out the candidates whose id matches one of these "
                        "comma-separated globs (e.g. 'no_persistent,exp_*')")
    p.add_argument("--replace", action="store_true",
                   help="with --merge: a later bundle's candidate replaces an earlier one of "
                        "the same id (else a repeated id is an error)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                   help="the bundle directory (must not hold a bundle)")
    p.add_argument("--keep", type=int, default=KEEP,
                   help="modules per problem and path: the torch path's best candidates, "
                        "the raised path's chosen launches and their next passed ones")
    p.add_argument("--max-candidates", type=int, default=8,
                   help="candidates checked per problem by the selection's cascade")
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--debug", action="store_true", help="a traceback for an internal error")
    p.add_argument("--paths", default=",".join(PATHS),
                   help="the Forge paths whose candidates are written: torch (Axon's pipeline "
                        "on the captured problem), triton (the user's kernel through the "
                        "Triton-level stages), raised (the user's kernels raised to ax with "
                        "proof, replaced by Axon's); all three by default")
    return p


def twin_sizes(name: str, fixed: Mapping[str, int], options: TorchForgeOptions
                ) -> dict[str, int]:
    """The sizes a torch-path twin is checked at: the problem's small sizes, or, where
    `torch.export` fixed one of them (21's kv heads at 8 beside 4 small query heads would not
    run), `check_sizes`'s, which keep the fixed values and sizes that run with them."""
    problem = PROBLEMS[name]
    if not fixed.keys() & problem.small_sizes.keys():
        return dict(problem.small_sizes)
    return check_sizes(load(problem.problem_path, options), fixed)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the bundle; a summary on stderr. Exit status 1 for a user error."""
    args = list(sys.argv[1:] if argv is None else argv)
    exit_on_user_error("forge-bundle", lambda: _run(_parser().parse_args(args)),
                       debug="--debug" in args)
    return 0


def _run(args: argparse.Namespace) -> None:
    names = list(PROBLEMS) if args.problems == "all" else args.problems.split(",")
    unknown = [n for n in names if n not in PROBLEMS]
    if unknown:
        raise UsageError(f"--problems: unknown {', '.join(unknown)}; known: "
                         f"{', '.join(PROBLEMS)}")
    paths = [p for p in args.paths.split(",") if p]
    if not paths or set(paths) - set(PATHS):
        raise UsageError(f"--paths '{args.paths}': expected some of torch, triton, raised")
    if (args.output / harness.MANIFEST).exists():
        raise UsageError(f"{args.output}: holds a bundle already")
    if (args.drop or args.replace) and not args.merge:
        raise UsageError("--drop and --replace go with --merge")
    if args.merge:
        path = merge_bundles(args.merge, args.output,
                             drop=[g for g in args.drop.split(",") if g],
                             replace=args.replace)
        print(f"forge-bundle: wrote {path}", file=sys.stderr)
        return
    start = time.perf_counter()
    report = BundleReport()

    def say(line: str) -> None:
        print(f"forge-bundle: {line}", file=sys.stderr, flush=True)

    executor = make_executor(args.executor)
    try:
        for name in names:
            try:
                forge_case(name, args.profile, executor, args.keep, args.max_candidates,
                           report, say, paths)
            except Exception as err:  # noqa: BLE001 (one case's bug must not lose the others)
                if args.debug:
                    raise
                why = f"internal error: {type(err).__name__}: {err} (a bug in Axon)"
                report.skipped.append((name, why))
                say(f"{name}: skipped: {why}")
    finally:
        executor.close()
    if not report.cases:
        raise UsageError("no problem gave a candidate, nothing written: " + "; ".join(
            f"{name}: {why}" for name, why in report.skipped))
    bundle = harness.ForgeBundle(args.output, args.profile, 0, axon_version(),
                                 tuple(report.cases))
    path = harness.write_forge_bundle(bundle, report.files)
    print(f"forge-bundle: wrote {path}: {len(report.cases)} cases, "
          f"{sum(len(c.candidates) for c in report.cases)} candidates, "
          f"{len(report.dropped)} left out, {len(report.skipped)} problems skipped "
          f"({', '.join(n for n, _ in report.skipped) or 'none'}); "
          f"{time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
