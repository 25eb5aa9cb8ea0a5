"""Running a bundle: the reference, the baselines, each case's candidates in a child process,
the check of every result, the timings and the selection.

For each case the parent draws the inputs from the bundle's seed and computes the reference (the
torch program on float32 copies) before any candidate is imported; no candidate is ever imported
here. It checks and times the baselines (eager, `torch.compile` on a GPU, and the attention
programs' `F.scaled_dot_product_attention`), then starts a child process (`child.py`) for the
case's candidates: the child sends each candidate's results back as raw tensors, the parent
compares them within the case's tolerance and only then lets the child time it. A candidate whose
child crashes, hangs past the timeout or sends a malformed frame is rejected with that reason and
a fresh child runs the candidates left. The fastest correct candidate is the case's winner; on a
GPU a winner slower than the best baseline is "rejected: slower than baseline". Without CUDA
the candidates run on Triton's CPU interpreter (float32 cases only: its bf16 `tl.dot` is wrong)
and the times are not performance figures.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from axon.targets.xe_triton.harness import programs, timing, wire
from axon.targets.xe_triton.harness.bundle import Bundle, BundleError, Case
from axon.targets.xe_triton.harness.device import DeviceNumbers, device_numbers
from axon.targets.xe_triton.harness.inputs import TORCH_DTYPES, make_inputs

#: the harness package, and the folder above its top-level package (the child's import root)
PACKAGE = __name__.rsplit(".", 1)[0]
IMPORT_ROOT = Path(os.path.abspath(__file__)).parents[len(PACKAGE.split("."))]
#: seconds a candidate may take (import, checked call and timing) before it counts as hung
TIMEOUT_S = 300.0
#: seconds a child may take to start (import torch and Triton) before its first candidate
STARTUP_S = 120.0
#: runs timed per callable unless `--repeats` says otherwise
REPEATS_GPU = 100
REPEATS_CPU = 3


#: the reason of a candidate of a skipped case
NOT_RUN = "not run: the case was skipped"


@dataclass(frozen=True)
class Options:
    """How to run: the device ("cuda" or "cpu"), runs per timing, the per-candidate timeout,
    and whether to time `torch.compile` (on a GPU)."""

    device: str
    repeats: int
    timeout_s: float = TIMEOUT_S
    compile: bool = True

    @classmethod
    def default(cls, repeats: int | None = None, timeout_s: float = TIMEOUT_S) -> Options:
        """CUDA when torch sees a GPU, else the CPU interpreter; its usual repeats."""
        cuda = torch.cuda.is_available()
        return cls("cuda" if cuda else "cpu",
                   repeats or (REPEATS_GPU if cuda else REPEATS_CPU), timeout_s, cuda)


@dataclass
class Measured:
    """One callable of a case (a candidate or a baseline): whether its results were within
    tolerance, why not, its largest error and its timing."""

    name: str
    correct: bool = False
    reason: str = ""
    max_abs_error: float | None = None
    timing: timing.Timing | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: which check rejected it (Forge: "correctness", "tamper", "crash"; "" if none did)
    step: str = ""


@dataclass
class CaseResult:
    """A case's outcome: its baselines and candidates, the timing method, the floor, the
    winner and the verdict."""

    case: Case
    baselines: list[Measured] = field(default_factory=list)
    candidates: list[Measured] = field(default_factory=list)
    method: str = "events"
    floor_ms: float | None = None
    winner: str | None = None
    verdict: str = ""
    seconds: float = 0.0

    def ms(self, measured: Measured | None) -> float | None:
        """The callable's figure under the case's method (None if it was not timed)."""
        return None if measured is None else timing.figure(measured.timing, self.method)

    def baseline(self, name: str) -> Measured | None:
        """The baseline called `name`, if it ran."""
        return next((b for b in self.baselines if b.name == name), None)

    @property
    def best_baseline(self) -> Measured | None:
        """The fastest correct baseline."""
        timed = [b for b in self.baselines if b.correct and self.ms(b) is not None]
        return min(timed, key=lambda b: self.ms(b) or 0.0) if timed else None

    @property
    def winning(self) -> Measured | None:
        """The winner's record."""
        return next((c for c in self.candidates if c.name == self.winner), None)

    @property
    def accepted(self) -> bool:
        """Whether the case has a winner that stands: timed on a GPU and not slower than the
        best baseline (a CPU interpreter's winner is only checked)."""
        return self.winner is not None and self.verdict == "accepted"

    @property
    def speedup(self) -> float | None:
        """Best baseline ms / winner ms (None on the CPU interpreter: not a performance
        figure)."""
        best, win = self.ms(self.best_baseline), self.ms(self.winning)
        return best / win if best and win and self.method != "cpu" else None

    @property
    def floor_ratio(self) -> float | None:
        """Winner ms / the roofline floor (None on the CPU interpreter)."""
        win = self.ms(self.winning)
        return win / self.floor_ms if win and self.floor_ms and self.method != "cpu" else None


@dataclass
class BenchResult:
    """A whole run."""

    bundle: Bundle
    options: Options
    device_name: str
    numbers: DeviceNumbers
    cases: list[CaseResult]
    seconds: float = 0.0

    @property
    def interpreter(self) -> bool:
        """Whether candidates ran on Triton's CPU interpreter (no performance figures)."""
        return self.options.device == "cpu"


def check_programs(bundle: Bundle) -> None:
    """BundleError, located, for a case whose program the harness does not know or whose
    inputs and outputs the program does not take and give (run on the meta device)."""
    for i, case in enumerate(bundle.cases):
        where = f"{bundle.root / 'manifest.json'}: error: cases[{i}]"
        if case.program not in programs.PROGRAMS:
            raise BundleError(f"{where}.program: unknown program '{case.program}'; known: "
                              f"{', '.join(sorted(programs.PROGRAMS))}")
        metas = [torch.empty(s.shape, dtype=TORCH_DTYPES[s.dtype], device="meta")
                 for s in case.inputs]
        try:
            out = programs.PROGRAMS[case.program](*metas)
        except (RuntimeError, TypeError, IndexError, ValueError) as e:
            shapes = ", ".join(str(list(s.shape)) for s in case.inputs)
            raise BundleError(f"{where}.inputs: {case.program} does not take inputs of shapes "
                              f"{shapes}: {str(e).splitlines()[0]}") from None
        outs = out if isinstance(out, tuple) else (out,)
        if [list(o.shape) for o in outs] != [list(s.shape) for s in case.outputs]:
            raise BundleError(f"{where}.outputs: {case.program} gives shapes "
                              f"{[list(o.shape) for o in outs]}, the manifest says "
                              f"{[list(s.shape) for s in case.outputs]}")


def compare(got: list[torch.Tensor], want: list[torch.Tensor], case: Case
            ) -> tuple[str, float | None]:
    """("", max |error|) when `got` matches the reference within the case's tolerance, else
    ("wrong: ...", ...)."""
    if len(got) != len(want):
        return f"wrong: {len(got)} results, expected {len(want)}", None
    rtol, atol = case.tolerance
    worst = 0.0
    for k, (g, w, spec) in enumerate(zip(got, want, case.outputs, strict=True)):
        if list(g.shape) != list(w.shape):
            return f"wrong: result {k} has shape {list(g.shape)}, expected {list(w.shape)}", None
        if g.dtype != TORCH_DTYPES[spec.dtype]:
            return f"wrong: result {k} is {g.dtype}, expected {spec.dtype}", None
        error = (g.to(w.device).float() - w).abs()
        bad = ~(error <= atol + rtol * w.abs())
        if error.numel():
            worst = max(worst, float(torch.nan_to_num(error, nan=float("inf")).max()))
        if bool(bad.any()):
            index = [int(i) for i in torch.nonzero(bad)[0]]
            return (f"wrong: result {k}{index}: got {float(g.to(w.device)[tuple(index)]):.6g}, "
                    f"expected {float(w[tuple(index)]):.6g} (max |error| {worst:.3g}; "
                    f"rtol {rtol:g}, atol {atol:g})"), worst
    return "", worst


def _baselines(case: Case, options: Options) -> dict[str, Callable[..., Any]]:
    eager = programs.PROGRAMS[case.program]
    found: dict[str, Callable[..., Any]] = {"eager": eager}
    if options.compile:
        # compiled afresh for each case, specialized to its shapes: a program seen at several
        # sizes would otherwise be recompiled with dynamic shapes (slower kernels) or, past
        # dynamo's recompile limit, silently run eagerly
        torch._dynamo.reset()
        found["compile"] = torch.compile(eager, dynamic=False)
    found.update(programs.EXTRA_BASELINES.get(case.program, {}))
    return found


def run_baselines(case: Case, inputs: list[torch.Tensor], want: list[torch.Tensor],
                  options: Options, flush: torch.Tensor | None) -> list[Measured]:
    """Check each baseline against the reference, then time the correct ones."""
    return check_and_time(_baselines(case, options), inputs,
                          lambda outs: compare(outs, want, case), options.repeats, flush)


def check_and_time(callables: dict[str, Callable[..., Any]], inputs: list[Any],
                   check: Callable[[list[Any]], tuple[str, float | None]], repeats: int,
                   flush: torch.Tensor | None) -> list[Measured]:
    """Call each of `callables` (trusted: the parent's baselines) on clones of `inputs`,
    `check` its results ("" or why not, max |error|), and time the correct ones."""
    results = []
    for name, fn in callables.items():
        measured = Measured(name)
        try:
            out = fn(*(t.clone() if isinstance(t, torch.Tensor) else t for t in inputs))
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            measured.reason, measured.max_abs_error = check(outs)
            measured.correct = not measured.reason
            if measured.correct:
                measured.timing = timing.time_callable(functools.partial(fn, *inputs),
                                                       repeats, flush)
        except Exception as e:  # noqa: BLE001 (a baseline that fails is reported, not fatal)
            measured.reason = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        results.append(measured)
    return results


class _Child:
    """One child process running some of a case's candidates. Started for a device (it
    imports torch and Triton at once, the interpreter for the CPU), given its job later
    (`start`), so that its imports can overlap the parent's work (`_Spares`)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.read_fd, self.write_fd = os.pipe()
        env = dict(os.environ)
        # the interpreter for a CPU run only: it must be set before the child imports Triton
        env.pop("TRITON_INTERPRET", None)
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(IMPORT_ROOT), env.get("PYTHONPATH", "")) if p)
        handle, name = tempfile.mkstemp(prefix="axon-child-", suffix=".log")
        self.log = Path(name)
        with os.fdopen(handle, "wb") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", f"{PACKAGE}.child"], stdin=subprocess.PIPE,
                stdout=sink, stderr=sink, pass_fds=(self.write_fd,), env=env)
        os.close(self.write_fd)
        self.reader: wire.FrameReader | None = None

    def start(self, job: dict[str, Any], limit: int) -> wire.FrameReader:
        """Give the child its job; the reader of its result pipe (frames up to `limit`)."""
        self.reader = wire.FrameReader(self.read_fd, limit)
        self.tell({**job, "fd": self.write_fd})
        return self.reader

    def tell(self, message: dict[str, Any]) -> None:
        """One JSON line to the child's stdin (a closed pipe is seen as the child's exit)."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def last_words(self) -> str:
        """The last line the child wrote to its stderr or stdout."""
        lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[-1].strip()[:300] if lines else "no output"

    def close(self) -> int:
        """Stop the child (killed if still running); its exit status. Closing twice is
        closing once."""
        if self.process.poll() is None:
            self.process.kill()
        status = self.process.wait()
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1
        return status

    def discard(self) -> None:
        """Stop the child and remove its log (after `last_words`, if wanted)."""
        self.close()
        self.log.unlink(missing_ok=True)


class _Spares:
    """One child started ahead per device: `take` gives the waiting one (or starts one) and
    starts the next, whose imports (seconds: torch, its compiler, Triton) then overlap the
    parent's work on this case (baselines, `torch.compile`, judging) rather than adding to it.
    A spare holds no job, no candidate and no device memory until it is taken; the ones left
    are stopped when the process exits. Only the process that started them uses or stops them:
    a forked one (an executor's worker) starts its own."""

    def __init__(self) -> None:
        self.waiting: dict[str, _Child] = {}
        self.owner = os.getpid()

    def take(self, device: str) -> _Child:
        if os.getpid() != self.owner:  # forked: the parent's spares and pipes are not ours
            self.waiting, self.owner = {}, os.getpid()
        child = self.waiting.pop(device, None)
        if child is None or child.process.poll() is not None:
            if child is not None:
                child.discard()
            child = _Child(device)
        self.waiting[device] = _Child(device)
        return child

    def close(self) -> None:
        if os.getpid() == self.owner:
            for child in self.waiting.values():
                child.discard()
        self.waiting.clear()


_SPARES = _Spares()
atexit.register(_SPARES.close)


def run_candidates(bundle: Bundle, case: Case, inputs_path: Path, want: list[torch.Tensor],
                   options: Options) -> list[Measured]:
    """Check and time each candidate of `case` in child processes (see the module doc)."""
    results = {c.id: Measured(c.id, kwargs=dict(c.kwargs)) for c in case.candidates}
    job = {"device": options.device, "inputs": str(inputs_path), "repeats": options.repeats,
           "flush_bytes": flush_bytes(bundle.profile) if options.device == "cuda" else 0,
           "input_names": [s.name for s in case.inputs]}
    entries = [(c.id, {"id": c.id, "path": str(bundle.module_path(c)), "function": c.function,
                       "kwargs": c.kwargs}) for c in case.candidates]

    def judge(measured: Measured, header: dict[str, Any], got: list[torch.Tensor]
              ) -> dict[str, Any]:
        measured.reason, measured.max_abs_error = compare(got, want, case)
        measured.correct = not measured.reason
        return {"time": measured.correct}

    # outputs of the case's shapes, with room for a wrong shape; anything more is a flood
    limit = 4 * sum(spec.numel * 4 for spec in case.outputs) + (1 << 20)
    drive_children(job, entries, results, limit, options.timeout_s, judge)
    return [results[c.id] for c in case.candidates]


#: the parent's answer to a child's `outputs` frame: it sets the measured's verdict (`correct`,
#: `reason`, ...) and returns the line the child reads next
Judge = Callable[[Measured, dict[str, Any], list[torch.Tensor]], dict[str, Any]]


def drive_children(job: dict[str, Any], entries: list[tuple[str, dict[str, Any]]],
                   results: dict[str, Measured], limit: int, timeout_s: float,
                   judge: Judge) -> None:
    """Run `entries` (id, the child's description of it) in child processes started with
    `job`, filling `results` by id: the child sends `start`, then one or more `outputs` frames
    (each answered with `judge`'s line), then `timing` or `checked`, or `failed` / `rejected`
    (with the `step` that rejected it); a child that crashes, hangs past `timeout_s` or breaks
    the protocol costs the entry in flight its verdict and a fresh child runs the rest."""
    remaining = list(entries)
    while remaining:
        child = _SPARES.take(job["device"])
        reader = child.start({**job, "candidates": [e for _, e in remaining]}, limit)
        in_flight: str | None = None
        started = 0
        # the child's start (importing torch and Triton) is not the first candidate's time
        deadline = time.monotonic() + timeout_s + STARTUP_S
        try:
            while True:
                try:
                    frame = reader.read(deadline)
                except TimeoutError:
                    if in_flight:
                        results[in_flight].reason = (f"timed out: no verdict within "
                                                     f"{timeout_s:g} s")
                    break
                except wire.WireError as e:
                    if in_flight:
                        results[in_flight].reason = f"bad result: {e}"
                    break
                if frame is None:
                    status = child.process.wait()
                    if in_flight and not results[in_flight].reason:
                        results[in_flight].reason = (f"crashed: the process exited with status "
                                                     f"{status}: {child.last_words()}")
                    break
                header, payloads = frame
                event, cid = header.get("event"), header.get("candidate")
                if event == "done":
                    break
                if (event == "start" and cid in results and remaining
                        and remaining[0][0] == cid):
                    in_flight, started = cid, started + 1
                    remaining.pop(0)
                    deadline = time.monotonic() + timeout_s
                    continue
                if cid != in_flight or in_flight is None:
                    if in_flight:
                        results[in_flight].reason = f"bad result: an unexpected frame {event}"
                    break
                measured = results[in_flight]
                if event == "outputs":
                    try:
                        got = [wire.tensor_from(s, p) for s, p in
                               zip(header.get("tensors", []), payloads, strict=True)]
                    except (wire.WireError, ValueError) as e:
                        measured.reason = f"bad result: {e}"
                        break
                    child.tell(judge(measured, header, got))
                    if not measured.correct:
                        in_flight = None
                elif event == "timing":
                    measured.timing = _timing_from(header.get("timing"))
                    in_flight = None
                elif event == "checked":
                    in_flight = None
                elif event in ("failed", "rejected"):
                    measured.correct = False
                    measured.reason = str(header.get("reason", event))[:500]
                    measured.step = str(header.get("step", ""))
                    in_flight = None
                else:
                    measured.reason = f"bad result: an unknown frame {event!r}"
                    break
        finally:
            child.close()
        if in_flight is not None and not results[in_flight].reason:
            results[in_flight].reason = "crashed: the process stopped before its verdict"
        if in_flight is not None:
            results[in_flight].correct = False
            results[in_flight].step = results[in_flight].step or "crash"
        if started == 0 and remaining:
            # the child died before a candidate began: the harness's failure, not theirs
            words = child.last_words()
            child.discard()
            for cid, _ in remaining:
                results[cid].reason = f"not run: the harness's child failed: {words}"
                results[cid].step = "crash"
            break
        child.discard()


def _timing_from(data: Any) -> timing.Timing:
    if not isinstance(data, dict):
        raise wire.WireError("a malformed timing")
    graph = data.get("graph_ms")
    return timing.Timing(float(data["events_ms"]), None if graph is None else float(graph),
                         int(data.get("runs", 0)), str(data.get("note", "")))


def flush_bytes(profile_name: str) -> int:
    """The profile's L2 size, or the running GPU's if it reports a larger one."""
    profile = device_numbers(profile_name).l2_bytes or 0
    running = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))
    return max(profile, running, 1 << 20)


def decide(result: CaseResult, options: Options) -> None:
    """The case's timing method, winner and verdict from its measured callables."""
    result.method = timing.method([m.timing for m in (*result.baselines, *result.candidates)
                                   if m.correct], options.device)
    correct = [c for c in result.candidates if c.correct and c.timing]
    if not correct:
        result.verdict = "no correct candidate"
        return
    winner = min(correct, key=lambda c: result.ms(c) or 0.0)
    result.winner = winner.name
    best = result.ms(result.best_baseline)
    if options.device == "cpu":
        result.verdict = "checked (cpu interpreter: not a performance figure)"
    elif best is not None and (result.ms(winner) or 0.0) > best:
        result.verdict = "rejected: slower than baseline"
    else:
        result.verdict = "accepted"


def cpu_skip(dtype: str) -> str:
    """The verdict of a case of `dtype` (not f32) on the CPU interpreter."""
    return (f"skipped: a {dtype} case needs a GPU (Triton's CPU interpreter computes bf16 "
            "tl.dot wrongly); write the bundle in f32 to check it on the CPU")


def run_case(bundle: Bundle, case: Case, options: Options, numbers: DeviceNumbers,
             scratch: Path) -> CaseResult:
    """Check and time one case (see the module doc)."""
    start = time.monotonic()
    result = CaseResult(case, floor_ms=numbers.floor_ms(case.flops, case.bytes))
    if options.device == "cpu" and case.dtype != "f32":
        result.verdict = cpu_skip(case.dtype)
        result.candidates = [Measured(c.id, reason=NOT_RUN, kwargs=dict(c.kwargs))
                             for c in case.candidates]
        return result
    cpu_inputs = make_inputs(case, bundle.seed)
    inputs = [t.to(options.device) for t in cpu_inputs]
    out = programs.reference(case.program, inputs)
    want = [w.float() for w in (out if isinstance(out, tuple) else (out,))]
    inputs_path = scratch / "inputs.pt"
    torch.save(cpu_inputs, inputs_path)
    flush = (timing.flush_buffer(flush_bytes(bundle.profile)) if options.device == "cuda"
             else None)
    result.baselines = run_baselines(case, inputs, want, options, flush)
    del flush
    result.candidates = run_candidates(bundle, case, inputs_path, want, options)
    decide(result, options)
    result.seconds = time.monotonic() - start
    return result


def run_bundle(bundle: Bundle, options: Options,
               progress: Callable[[str], None] = lambda line: None,
               checkpoint: Callable[[BenchResult], None] | None = None) -> BenchResult:
    """Run every case of `bundle`; `progress` gets a line as each case starts and ends, and
    `checkpoint` the result so far after each case (a run cut short keeps what it measured)."""
    start = time.monotonic()
    numbers = device_numbers(bundle.profile)
    check_programs(bundle)
    torch.set_float32_matmul_precision("highest")
    device_name = (torch.cuda.get_device_name(0) if options.device == "cuda"
                   else "cpu (Triton interpreter)")
    results = []
    with tempfile.TemporaryDirectory(prefix="axon-bench-") as scratch:
        for n, case in enumerate(bundle.cases, 1):
            progress(f"[{n}/{len(bundle.cases)}] {case.case}: {len(case.candidates)} "
                     "candidates")
            result = run_case(bundle, case, options, numbers, Path(scratch))
            results.append(result)
            progress(f"[{n}/{len(bundle.cases)}] {case.case}: {_case_line(result)} "
                     f"({result.seconds:.1f}s)")
            if checkpoint is not None:
                checkpoint(BenchResult(bundle, options, device_name, numbers, list(results),
                                       time.monotonic() - start))
    return BenchResult(bundle, options, device_name, numbers, results,
                       time.monotonic() - start)


def _case_line(result: CaseResult) -> str:
    correct = sum(c.correct for c in result.candidates)
    parts = [f"{correct} of {len(result.candidates)} correct"]
    if result.winner:
        parts.append(f"winner {result.winner} {result.ms(result.winning):.4g} ms")
    best = result.best_baseline
    if result.speedup and result.method != "cpu" and best is not None:
        parts.append(f"{result.speedup:.2f}x over {best.name} {result.ms(best):.4g} ms")
    return "; ".join(parts) + f": {result.verdict}"
