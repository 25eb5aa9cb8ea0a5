"""A Forge bundle's run as a table and as JSON (`axon-bench --run` on a Forge bundle).

One row per case: eager's ms, torch.compile's, the input kernel's (the user's), the best Axon
candidate's, and that candidate's speedups over each of the three; then a geomean line for each
speedup over the cases that have it, and one line with the three geomeans with every callable
timed under a CUDA graph (device time only: the host's launch overhead, which moves with the
machine's load and weighs most on a `torch.compile` graph of several launches, is out of it;
the table itself keeps the harness's method, CUDA graphs below 50 us). The JSON holds every
case with each callable's verdict (the step that rejected it and why) and timing.
`run_command` is the command's body, so that `tools/axon_bench.py` stays a thin front.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from axon.targets.xe_triton.harness.forge_bundle import ForgeBundle
from axon.targets.xe_triton.harness.forge_run import ForgeCaseResult, ForgeResult, run_forge_bundle
from axon.targets.xe_triton.harness.report import (
    CPU_NOTE,
    columns,
    geomean,
    measured_json,
    ms_text,
    ratio_text,
)
from axon.targets.xe_triton.harness.run import Options

FORMAT = "axon-bench-forge"
VERSION = 1
#: the three speedups of the best candidate: (key, the row's callable, its label)
OVER = (("eager", "eager"), ("compile", "torch.compile"), ("input", "the input kernel"))


def _over(r: ForgeCaseResult, key: str, how: str | None = None) -> float | None:
    return r.speedup(r.input_kernel if key == "input" else r.baseline(key), how)


def table(result: ForgeResult) -> str:
    """The table and the three geomean lines."""
    header = ("case", "eager ms", "compile ms", "input ms", "axon ms", "x eager", "x compile",
              "x input", "best")
    rows = []
    for r in result.cases:
        best = r.best
        rows.append((r.case.case, ms_text(r.ms(r.baseline("eager"))),
                     ms_text(r.ms(r.baseline("compile"))), ms_text(r.ms(r.input_kernel)),
                     ms_text(r.ms(best)), *(ratio_text(_over(r, key)) for key, _ in OVER),
                     best.name if best is not None else r.verdict))
    lines = columns(header, rows, left=(0, 8))
    lines += geomean_lines(result)
    if result.interpreter:
        lines.append(f"timings: {CPU_NOTE}")
    return "\n".join(lines)


def geomeans(result: ForgeResult, how: str | None = None) -> dict[str, float | None]:
    """The geomean speedup of the best candidates over eager, compile and the input kernel
    (every callable's CUDA-graph figure with `how="graph"`)."""
    return {key: geomean([s for r in result.cases if (s := _over(r, key, how))])
            for key, _ in OVER}


def geomean_lines(result: ForgeResult) -> list[str]:
    """One line a speedup: its geomean and over how many cases."""
    if result.interpreter:
        return [f"geomean speedup: - ({CPU_NOTE})"]
    lines = []
    for key, label in OVER:
        values = [s for r in result.cases if (s := _over(r, key))]
        mean = geomean(values)
        lines.append(f"geomean speedup over {label}: " + (
            f"{mean:.2f}x over {len(values)} of {len(result.cases)} cases" if mean is not None
            else "- (no case has both timed)"))
    graphs = geomeans(result, "graph")
    if any(v is not None for v in graphs.values()):
        lines.append("under CUDA graphs for every callable (device time, no host launch "
                     "overhead): " + ", ".join(
                         f"{graphs[key]:.2f}x over {label}" if graphs[key] is not None
                         else f"- over {label}" for key, label in OVER))
    return lines


def summary(result: ForgeResult) -> dict[str, Any]:
    """Counts: cases, candidates, correct, rejections by step, seconds."""
    candidates = [c for r in result.cases for c in r.candidates]
    return {"cases": len(result.cases),
            "skipped": sum(r.verdict.startswith("skipped") for r in result.cases),
            "candidates": len(candidates), "correct": sum(c.correct for c in candidates),
            "rejected": dict(sorted(Counter(c.step or "other" for c in candidates
                                            if not c.correct).items())),
            "seconds": round(result.seconds, 2)}


def summary_line(result: ForgeResult) -> str:
    """The summary as one line for stderr."""
    s = summary(result)
    rejected = ", ".join(f"{n} {why}" for why, n in s["rejected"].items()) or "none"
    return (f"{s['cases']} forge cases ({s['skipped']} skipped); {s['correct']} of "
            f"{s['candidates']} candidates correct; rejected: {rejected}; {s['seconds']:.1f}s")


def _case_json(r: ForgeCaseResult) -> dict[str, Any]:
    best = r.best
    return {"case": r.case.case, "problem": r.case.problem, "sizes": r.case.sizes,
            "dtype": r.case.dtype, "atol_scale": r.case.atol_scale, "method": r.method,
            "verdict": r.verdict, "best": best.name if best else None,
            "eager_ms": r.ms(r.baseline("eager")), "compile_ms": r.ms(r.baseline("compile")),
            "input_ms": r.ms(r.input_kernel), "axon_ms": r.ms(best),
            **{f"speedup_over_{key}": _over(r, key) for key, _ in OVER},
            "notes": r.notes, "seconds": round(r.seconds, 3),
            "baselines": [measured_json(b, r.ms(b)) for b in r.baselines],
            "input_kernel": (measured_json(r.input_kernel, r.ms(r.input_kernel))
                             if r.input_kernel else None),
            "candidates": [measured_json(c, r.ms(c)) for c in r.candidates]}


def to_json(result: ForgeResult) -> dict[str, Any]:
    """The whole run as JSON."""
    bundle = result.bundle
    return {"format": FORMAT, "version": VERSION, "profile": bundle.profile,
            "axon_version": bundle.axon_version, "seed": bundle.seed,
            "device": result.device_name, "interpreter": result.interpreter,
            "note": CPU_NOTE if result.interpreter else "",
            "cases": [_case_json(r) for r in result.cases],
            "geomean_speedup": geomeans(result),
            "geomean_speedup_graphs": geomeans(result, "graph"), "summary": summary(result)}


def run_command(bundle: ForgeBundle, options: Options, json_path: Path | None,
                say: Callable[[str], None]) -> int:
    """`axon-bench --run` on a Forge bundle: progress to `say`, the table to stdout, the JSON
    (after each case) to `json_path`; the exit status."""
    say(f"{len(bundle.cases)} forge cases, {sum(len(c.candidates) for c in bundle.cases)} "
        "candidates on " + ("the GPU" if options.device == "cuda" else
                            "the CPU interpreter (float32 cases; timings are not performance "
                            "figures)"))

    def checkpoint(partial: ForgeResult) -> None:
        if json_path is not None:
            json_path.write_text(json.dumps(to_json(partial), indent=1) + "\n")

    result = run_forge_bundle(bundle, options, say, checkpoint)
    print(table(result))
    if json_path is not None:
        checkpoint(result)
        say(f"wrote {json_path}")
    say(summary_line(result))
    return 0
