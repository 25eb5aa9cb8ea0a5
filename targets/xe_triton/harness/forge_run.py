"""Checking and timing KernelBench-format kernels against a problem (the Forge path, issue 14).

The parent loads the problem (the harness's trusted file) and, for each set of sizes and each
seed, draws the model, the inputs and the float32 reference (`forge_problem.draw_run`). Kernel
modules (`class ModelNew`) are never imported here: each is first read by the static check
(`static_check.py`), then run in a child process (`forge_child.py`) that sends its results raw;
the parent compares them within the dtype's tolerance (`forge_problem.TOLERANCES`, times the
case's `atol_scale`) against the reference and, when an original kernel is given, against the
original's results too. A candidate whose forward dispatched torch compute ops is rejected
("calls torch for compute"); the original (the user's kernel) is only reported for it.

    check_against_original(problem, original, candidate, sizes=[...])   -> ForgeVerdict
    run_forge_bundle(bundle, options)                                    -> ForgeResult

The first is the Forge cascade's correctness and performance step; the second is
`axon-bench --run` on a Forge bundle (`forge_report.py` prints it). Without CUDA the modules run
on Triton's CPU interpreter and the times are not performance figures (no performance verdict).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from axon.targets.xe_triton.harness import static_check, timing
from axon.targets.xe_triton.harness.bundle import MANIFEST, BundleError
from axon.targets.xe_triton.harness.forge_bundle import ForgeBundle, ForgeCase
from axon.targets.xe_triton.harness.forge_problem import (
    DTYPE_NAMES,
    TOLERANCES,
    ProblemFileError,
    Run,
    compare,
    draw_run,
    load_problem,
)
from axon.targets.xe_triton.harness.inputs import TORCH_DTYPES
from axon.targets.xe_triton.harness.run import (
    REPEATS_CPU,
    REPEATS_GPU,
    TIMEOUT_S,
    Measured,
    Options,
    check_and_time,
    cpu_skip,
    drive_children,
    flush_bytes,
)

#: the id the original (input) kernel runs under in a child
ORIGINAL = "<original>"
#: the seeds a bundle case is checked at, from the bundle's seed
BUNDLE_SEEDS = (0, 1)
CPU_NOTE = "cpu interpreter: not a performance figure"


@dataclass(frozen=True)
class ForgeVerdict:
    """A candidate against a problem (and the original kernel): whether it passed, the step
    that failed it ("correctness", "tamper", "performance", "crash"; "" when passed), why (one
    line naming the seed, the sizes and the element), the largest error against the float32
    reference and against the original, the times (when timed; under `method`), and notes (the
    original's torch compute ops, the interpreter's caveat)."""

    passed: bool
    step: str
    reason: str
    max_abs_error: float | None = None
    candidate_ms: float | None = None
    original_ms: float | None = None
    max_abs_error_vs_original: float | None = None
    method: str = ""
    notes: tuple[str, ...] = ()


@dataclass
class Checked:
    """One module's check: its verdict so far (`measured`), the torch compute ops its forward
    dispatched, its results per run (kept for the original), its largest error against the
    original, and how many runs the parent judged."""

    measured: Measured
    ops: set[str] = field(default_factory=set)
    outputs: list[list[torch.Tensor]] = field(default_factory=list)
    error_vs_original: float | None = None
    judged: int = 0


@dataclass(frozen=True)
class Check:
    """How modules are checked: the runs, the dtype name, (rtol, atol), the device, whether
    and how often to time, the per-module timeout, the profile (its L2 for the flush)."""

    runs: list[Run]
    dtype: str
    tolerance: tuple[float, float]
    device: str
    time: bool
    repeats: int
    timeout_s: float
    profile: str = "h200"


def _problem_runs(problem: Path, sizes: Sequence[Mapping[str, int]], seeds: Sequence[int],
                  dtype: str | None, device: str) -> tuple[list[Run], str]:
    """The runs (every sizes x every seed, in that order) and the run's dtype name."""
    runs, name = [], ""
    for size_set in sizes or [{}]:
        module = load_problem(problem, size_set, dtype)
        name = DTYPE_NAMES[module.dtype]
        runs += [draw_run(module, seed, device) for seed in seeds]
    return runs, name


def static_rejection(path: Path) -> str:
    """The static check's verdict on a module ("" when it finds nothing)."""
    found = static_check.findings(path)
    if not found:
        return ""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"static check: {found[0]}{more}"


def check_modules(modules: Sequence[tuple[str, Path]], check: Check, scratch: Path,
                  against: Checked | None = None,
                  reject_torch: Callable[[str], bool] = lambda cid: cid != ORIGINAL
                  ) -> dict[str, Checked]:
    """Run each (id, path) through the static check, then in child processes at every run of
    `check`, judging each result against the reference and, with `against`, the original's
    results of the same run."""
    found = {cid: Checked(Measured(cid)) for cid, _ in modules}
    for cid, path in modules:
        reason = static_rejection(path)
        if reason:
            found[cid].measured.reason, found[cid].measured.step = reason, "tamper"
    to_run = [(cid, path) for cid, path in modules if not found[cid].measured.reason]
    if not to_run:
        return found
    run_paths = []
    for k, run in enumerate(check.runs):
        run_paths.append(str(scratch / f"run{k}.pt"))
        torch.save(run.job(), run_paths[-1])
    rtol, atol = check.tolerance
    torch_dtype = TORCH_DTYPES[check.dtype]
    # every run, and with timing the call after it
    due = len(check.runs) + int(check.time)

    def judge(measured: Measured, header: dict[str, Any], got: list[torch.Tensor]
              ) -> dict[str, Any]:
        record = found[measured.name]
        k = header.get("run")
        measured.correct = False
        if not isinstance(k, int) or isinstance(k, bool) or k != record.judged or k >= due:
            measured.reason = f"bad result: run {k} sent where run {record.judged} was due"
            measured.step = "crash"
            return {"ok": False}
        record.judged += 1
        # the call after the timing is judged as the first run's
        run = check.runs[k % len(check.runs)]
        label = run.label if k < len(check.runs) else f"{run.label}, after timing"
        ops = [str(op) for op in header.get("ops", [])]
        record.ops.update(ops)
        if ops and reject_torch(measured.name):
            measured.step = "tamper"
            measured.reason = (f"calls torch for compute: {', '.join(ops[:4])}"
                               + (f" and {len(ops) - 4} more" if len(ops) > 4 else "")
                               + f" (at {label})")
            return {"ok": False}
        worst, message = compare(got, run.want, torch_dtype, rtol, atol)
        if not math.isnan(worst):
            measured.max_abs_error = max(measured.max_abs_error or 0.0, worst)
        if message:
            measured.step = "correctness"
            measured.reason = f"wrong against the float32 reference at {label}: {message}"
            return {"ok": False}
        if against is not None:
            theirs = [o.float() for o in against.outputs[k % len(check.runs)]]
            worst, message = compare(got, theirs, torch_dtype, rtol, atol)
            record.error_vs_original = max(record.error_vs_original or 0.0, worst)
            if message:
                measured.step = "correctness"
                measured.reason = (f"wrong against the original kernel at {label}: "
                                   f"{message}")
                return {"ok": False}
        if k < len(check.runs):
            record.outputs.append(got)
        measured.correct = True
        return {"ok": True}

    job = {"kind": "forge", "device": check.device, "dtype": check.dtype, "runs": run_paths,
           "time": check.time, "repeats": check.repeats,
           "flush_bytes": flush_bytes(check.profile) if check.device == "cuda" else 0}
    # each run's results (in the run's dtype, at most 4 bytes an element), with room for a
    # wrong shape; anything more is a flood
    limit = 4 * max(sum(w.numel() * 4 for w in run.want) for run in check.runs) + (1 << 20)
    drive_children(job, [(cid, {"id": cid, "path": str(path)}) for cid, path in to_run],
                   {cid: found[cid].measured for cid, _ in to_run}, limit, check.timeout_s,
                   judge)
    for cid, _ in to_run:
        record = found[cid]
        if record.measured.correct and record.judged != due:
            record.measured.correct = False
            record.measured.step = "crash"
            record.measured.reason = f"bad result: {record.judged} of {due} calls judged"
    return found


def _device(device: str | None) -> str:
    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def problem_check(problem: Path, *, sizes: Sequence[Mapping[str, int]],
                  seeds: Sequence[int] = (0, 1), dtype: str | None = None,
                  atol_scale: float = 1.0, device: str | None = None, time: bool = False,
                  repeats: int | None = None, timeout_s: float = TIMEOUT_S) -> Check:
    """The `Check` of modules against `problem` (the arguments as `check_against_original`'s):
    its runs drawn, its reference computed."""
    if len(set(seeds)) < 2:
        raise ValueError(f"correctness is checked at two seeds or more, got {list(seeds)}")
    if dtype is not None and dtype not in TOLERANCES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(TOLERANCES)}")
    where = _device(device)
    torch.set_float32_matmul_precision("highest")
    runs, name = _problem_runs(problem, sizes, seeds, dtype, where)
    rtol, atol = TOLERANCES[name]
    return Check(runs, name, (rtol, atol * atol_scale), where, time,
                 repeats or (REPEATS_GPU if where == "cuda" else REPEATS_CPU), timeout_s)


def check_against_original(problem: Path, original: Path | None, candidate: Path, *,
                           sizes: Sequence[Mapping[str, int]], seeds: Sequence[int] = (0, 1),
                           dtype: str | None = None, atol_scale: float = 1.0,
                           device: str | None = None, time: bool = False,
                           repeats: int | None = None,
                           timeout_s: float = TIMEOUT_S) -> ForgeVerdict:
    """Check `candidate` (a ModelNew file) against the problem's float32 reference and, when
    given, the `original` kernel's results, at every size set of `sizes` (`{}`: the file's) and
    every seed (two at least), in `dtype` (the problem's own when None) within the dtype's
    tolerance with the atol times `atol_scale`; with `time`, time both (the first size set and
    seed) and fail a candidate slower than the original (on a GPU). The original and the
    candidate each run in a child process; neither is imported here."""
    check = problem_check(problem, sizes=sizes, seeds=seeds, dtype=dtype,
                          atol_scale=atol_scale, device=device, time=time, repeats=repeats,
                          timeout_s=timeout_s)
    return candidate_verdict(check, original_checked(check, original), candidate)


@dataclass(frozen=True)
class OriginalChecked:
    """The original kernel's check under a `Check` (`reference` None without an original): its
    results, the notes every verdict against it carries, and the verdict every candidate gets
    when the original itself fails."""

    reference: Checked | None
    notes: tuple[str, ...] = ()
    failed: ForgeVerdict | None = None


def original_checked(check: Check, original: Path | None) -> OriginalChecked:
    """Run `original` (a ModelNew file, or None) under `check` in a child process. A caller that
    checks several candidates against one original under one `Check` (the Forge cascade on the
    CPU) runs it once: its results are those of the same runs each time."""
    if original is None:
        return OriginalChecked(None)
    with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
        reference = check_modules([(ORIGINAL, original)], check, Path(scratch))[ORIGINAL]
    notes: tuple[str, ...] = ()
    if reference.ops:
        notes = (f"the original calls torch for compute: {', '.join(sorted(reference.ops))}",)
    if not reference.measured.correct:
        m = reference.measured
        return OriginalChecked(reference, notes,
                               ForgeVerdict(False, m.step or "correctness",
                                            f"the original kernel failed: {m.reason}",
                                            notes=notes))
    return OriginalChecked(reference, notes)


def candidate_verdict(check: Check, original: OriginalChecked, candidate: Path) -> ForgeVerdict:
    """`candidate`'s verdict under `check` against the original's results (see
    `check_against_original`), the candidate run in a child process."""
    if original.failed is not None:
        return original.failed
    reference, where, runs = original.reference, check.device, check.runs
    notes = list(original.notes)
    with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
        got = check_modules([("candidate", candidate)], check, Path(scratch),
                            against=reference)["candidate"]
    m = got.measured
    if not m.correct:
        return ForgeVerdict(False, m.step or "crash", m.reason, m.max_abs_error,
                            max_abs_error_vs_original=got.error_vs_original, notes=tuple(notes))
    if not check.time:
        return ForgeVerdict(True, "", "", m.max_abs_error,
                            max_abs_error_vs_original=got.error_vs_original, notes=tuple(notes))
    original_timing = reference.measured.timing if reference is not None else None
    how, slower = performance_verdict(m.timing, original_timing, where, runs[0].label)
    if how == "cpu":
        notes.append(CPU_NOTE)
    return ForgeVerdict(not slower, "performance" if slower else "", slower, m.max_abs_error,
                        timing.figure(m.timing, how), timing.figure(original_timing, how),
                        got.error_vs_original, how, tuple(notes))


def performance_verdict(candidate: timing.Timing | None, original: timing.Timing | None,
                        device: str, label: str) -> tuple[str, str]:
    """(the method both are compared under, "" or why the candidate fails): on a GPU a
    candidate slower than the original fails; the CPU interpreter's times are not judged."""
    how = timing.method([candidate, original], device)
    ours, theirs = timing.figure(candidate, how), timing.figure(original, how)
    if how == "cpu" or ours is None or theirs is None or ours <= theirs:
        return how, ""
    return how, (f"slower than the original: {ours:.4g} ms against {theirs:.4g} ms ({how}, "
                 f"{label})")


# ---- a Forge bundle -------------------------------------------------------------------------
@dataclass
class ForgeCaseResult:
    """A Forge case's outcome: the baselines (eager, compile), the input kernel, Axon's
    candidates, the timing method, the verdict and notes."""

    case: ForgeCase
    baselines: list[Measured] = field(default_factory=list)
    input_kernel: Measured | None = None
    candidates: list[Measured] = field(default_factory=list)
    method: str = "events"
    verdict: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def ms(self, measured: Measured | None, how: str | None = None) -> float | None:
        """A correct callable's figure under the case's method, or under `how` ("graph":
        its CUDA-graph figure) where given (None if not timed)."""
        if measured is None or not measured.correct:
            return None
        return timing.figure(measured.timing, how or self.method)

    def baseline(self, name: str) -> Measured | None:
        """The baseline called `name`, if it ran."""
        return next((b for b in self.baselines if b.name == name), None)

    @property
    def best(self) -> Measured | None:
        """Axon's fastest correct, timed candidate."""
        return self.fastest()

    def fastest(self, how: str | None = None) -> Measured | None:
        """Axon's fastest correct, timed candidate under `how` (the case's method if None)."""
        timed = [c for c in self.candidates if self.ms(c, how) is not None]
        return min(timed, key=lambda c: self.ms(c, how) or 0.0) if timed else None

    def speedup(self, over: Measured | None, how: str | None = None) -> float | None:
        """`over`'s ms / the best candidate's, under `how` where given (None on the CPU
        interpreter or when either is missing)."""
        theirs, ours = self.ms(over, how), self.ms(self.fastest(how), how)
        return theirs / ours if theirs and ours and self.method != "cpu" else None


@dataclass
class ForgeResult:
    """A whole Forge bundle's run."""

    bundle: ForgeBundle
    options: Options
    device_name: str
    cases: list[ForgeCaseResult]
    seconds: float = 0.0

    @property
    def interpreter(self) -> bool:
        """Whether the modules ran on Triton's CPU interpreter (no performance figures)."""
        return self.options.device == "cpu"


def run_forge_case(bundle: ForgeBundle, case: ForgeCase, options: Options,
                   scratch: Path) -> ForgeCaseResult:
    """Check and time one Forge case: baselines in this process, the input kernel, then the
    candidates (against the reference and the input kernel's results) in children."""
    start = time.monotonic()
    result = ForgeCaseResult(case)
    if options.device == "cpu" and case.dtype != "f32":
        result.verdict = cpu_skip(case.dtype)
        return result
    seeds = [bundle.seed + s for s in BUNDLE_SEEDS]
    try:
        runs, name = _problem_runs(bundle.path(case.problem), [case.sizes], seeds, case.dtype,
                                   options.device)
    except Exception as e:  # noqa: BLE001 (a problem file that does not run is the bundle's)
        detail = str(e) if isinstance(e, ProblemFileError) else f"{type(e).__name__}: {e}"
        raise BundleError(f"{bundle.path(MANIFEST)}: error: case '{case.case}': its problem "
                          f"{case.problem} does not run: {detail}") from None
    rtol, atol = TOLERANCES[name]
    check = Check(runs, name, (rtol, atol * case.atol_scale), options.device, True,
                  options.repeats, options.timeout_s, bundle.profile)
    first = runs[0]
    inputs = [x.to(options.device) if isinstance(x, torch.Tensor) else x for x in first.inputs]
    model = first.model
    baselines: dict[str, Callable[..., Any]] = {"eager": _no_grad(model)}
    if options.compile:
        torch._dynamo.reset()  # see run._baselines: compiled afresh for each case's shapes
        baselines["compile"] = _no_grad(torch.compile(model, dynamic=False))
    flush = (timing.flush_buffer(flush_bytes(bundle.profile)) if options.device == "cuda"
             else None)

    def against_reference(outs: list[Any]) -> tuple[str, float | None]:
        worst, message = compare(outs, first.want, TORCH_DTYPES[name], *check.tolerance)
        return message, None if math.isnan(worst) else worst

    result.baselines = check_and_time(baselines, inputs, against_reference, options.repeats,
                                      flush)
    del flush
    original: Checked | None = None
    if case.input_kernel is not None:
        original = check_modules([(ORIGINAL, bundle.path(case.input_kernel))], check,
                                 scratch)[ORIGINAL]
        result.input_kernel = original.measured
        result.input_kernel.name = "input"
        if original.ops:
            result.notes.append(f"the input kernel calls torch for compute: "
                                f"{', '.join(sorted(original.ops))}")
        if not original.measured.correct:
            original = None
    checked = check_modules([(c.id, bundle.path(c.module)) for c in case.candidates], check,
                            scratch, against=original)
    result.candidates = [checked[c.id].measured for c in case.candidates]
    result.method = timing.method(
        [m.timing for m in (*result.baselines, *result.candidates,
                            *([result.input_kernel] if result.input_kernel else []))
         if m.correct], options.device)
    best = result.best
    if best is None:
        result.verdict = "no correct candidate"
    elif options.device == "cpu":
        result.verdict = "checked (cpu interpreter: not a performance figure)"
    else:
        result.verdict = "accepted"
    result.seconds = time.monotonic() - start
    return result


def _no_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        with torch.no_grad():
            return fn(*args)
    return call


def run_forge_bundle(bundle: ForgeBundle, options: Options,
                     progress: Callable[[str], None] = lambda line: None,
                     checkpoint: Callable[[ForgeResult], None] | None = None) -> ForgeResult:
    """Run every case of a Forge bundle (`progress` and `checkpoint` as `run.run_bundle`)."""
    start = time.monotonic()
    torch.set_float32_matmul_precision("highest")
    device_name = (torch.cuda.get_device_name(0) if options.device == "cuda"
                   else "cpu (Triton interpreter)")
    results: list[ForgeCaseResult] = []
    with tempfile.TemporaryDirectory(prefix="axon-forge-") as scratch:
        for n, case in enumerate(bundle.cases, 1):
            progress(f"[{n}/{len(bundle.cases)}] {case.case}: {len(case.candidates)} "
                     "candidates")
            result = run_forge_case(bundle, case, options, Path(scratch))
            results.append(result)
            correct = sum(c.correct for c in result.candidates)
            progress(f"[{n}/{len(bundle.cases)}] {case.case}: {correct} of "
                     f"{len(result.candidates)} correct: {result.verdict} "
                     f"({result.seconds:.1f}s)")
            if checkpoint is not None:
                checkpoint(ForgeResult(bundle, options, device_name, list(results),
                                       time.monotonic() - start))
    return ForgeResult(bundle, options, device_name, results, time.monotonic() - start)
