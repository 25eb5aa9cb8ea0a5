"""The results of a run as a table, as JSON (`--json`) and as a bar chart (`--plot`).

The table has one row per case: the winner's ms, eager's, torch.compile's, the best baseline (its
name), the speedup over it, the roofline floor, the winner's ratio to the floor and the winner's
id; a geomean line follows. The JSON holds the winners (what the winner cache records) and every
case with all its timings and rejections.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from axon.targets.xe_triton.harness.run import BenchResult, CaseResult, Measured

FORMAT = "axon-bench"
VERSION = 1
CPU_NOTE = "cpu interpreter: not a performance figure"


#: what `--plot` without matplotlib says
NO_MATPLOTLIB = ("--plot needs matplotlib, which is not installed; install the `plot` extra "
                 "(pip install 'axon[plot]') or leave --plot out")


def ms_text(value: float | None) -> str:
    if value is None:
        return "-"
    # a launch-bound floor is far below a microsecond: keep its digits
    return f"{value:.4f}" if value >= 1e-3 or value == 0 else f"{value:.2e}"


def ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def geomean(values: list[float]) -> float | None:
    """The geometric mean (None for no values)."""
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def table(result: BenchResult) -> str:
    """The table and the geomean line."""
    header = ("case", "axon ms", "eager ms", "compile ms", "best baseline", "speedup",
              "floor ms", "/floor", "winner")
    rows = []
    for r in result.cases:
        best = r.best_baseline
        rows.append((r.case.case, ms_text(r.ms(r.winning)), ms_text(r.ms(r.baseline("eager"))),
                     ms_text(r.ms(r.baseline("compile"))),
                     f"{best.name} {ms_text(r.ms(best))}" if best else "-", ratio_text(r.speedup),
                     ms_text(r.floor_ms), ratio_text(r.floor_ratio), _winner_cell(r)))
    lines = columns(header, rows, left=(0, 4, 8))
    lines.append(geomean_line(result))
    if result.interpreter:
        lines.append(f"timings: {CPU_NOTE}")
    return "\n".join(lines)


def columns(header: tuple[str, ...], rows: Sequence[tuple[str, ...]],
            left: tuple[int, ...]) -> list[str]:
    """The header, a rule and the rows, in columns (those in `left` left-aligned, the others
    right-aligned)."""
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(w) if i in left else str(cell).rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
             for row in (header, *rows)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _winner_cell(r: CaseResult) -> str:
    if r.winner is None:
        return r.verdict
    return r.winner if r.accepted or r.verdict.startswith("checked") else (
        f"{r.winner} ({r.verdict})")


def geomean_line(result: BenchResult) -> str:
    """The geomean speedup over the best baseline, over the cases with a timed winner."""
    speedups = [r.speedup for r in result.cases if r.speedup]
    mean = geomean([s for s in speedups if s])
    if result.interpreter:
        return f"geomean speedup: - ({CPU_NOTE})"
    if mean is None:
        return "geomean speedup: - (no case has a correct, timed winner)"
    return (f"geomean speedup over the best baseline: {mean:.2f}x over {len(speedups)} of "
            f"{len(result.cases)} cases")


def _reason_kind(reason: str) -> str:
    return reason.split(":", 1)[0]


def summary(result: BenchResult) -> dict[str, Any]:
    """Counts of the run: cases, candidates checked, correct, rejected by reason, verdicts."""
    candidates = [c for r in result.cases for c in r.candidates]
    checked = [c for c in candidates if not c.reason.startswith("not run")]
    rejected = Counter(_reason_kind(c.reason) for c in checked if not c.correct)
    rejected.update(r.verdict.split(": ", 1)[1] for r in result.cases
                    if r.verdict.startswith("rejected: "))
    return {"cases": len(result.cases),
            "skipped": sum(r.verdict.startswith("skipped") for r in result.cases),
            "winners": sum(r.accepted for r in result.cases),
            "candidates": len(candidates), "checked": len(checked),
            "correct": sum(c.correct for c in candidates), "rejected": dict(sorted(
                rejected.items())), "seconds": round(result.seconds, 2)}


def summary_line(result: BenchResult) -> str:
    """The summary as one line for stderr."""
    s = summary(result)
    rejected = ", ".join(f"{n} {why}" for why, n in s["rejected"].items()) or "none"
    return (f"{s['cases']} cases ({s['skipped']} skipped, {s['winners']} with a winner); "
            f"{s['checked']} of {s['candidates']} candidates checked, {s['correct']} correct; "
            f"rejected: {rejected}; {s['seconds']:.1f}s")


def measured_json(m: Measured, ms: float | None) -> dict[str, Any]:
    """One callable's verdict and timing as JSON (`ms`: its figure under the case's method)."""
    data: dict[str, Any] = {"name": m.name, "correct": m.correct, "reason": m.reason,
                            "max_abs_error": m.max_abs_error, "ms": ms,
                            **(m.timing.as_json() if m.timing else {})}
    if m.kwargs:
        data["kwargs"] = m.kwargs
    if m.step:
        data["step"] = m.step
    return data


def _case_json(r: CaseResult) -> dict[str, Any]:
    best = r.best_baseline
    return {"case": r.case.case, "program": r.case.program, "tier": r.case.tier,
            "sizes": r.case.sizes, "dtype": r.case.dtype, "tolerance": list(r.case.tolerance),
            "method": r.method, "floor_ms": r.floor_ms, "winner": r.winner,
            "verdict": r.verdict, "axon_ms": r.ms(r.winning),
            "baseline": best.name if best else None, "baseline_ms": r.ms(best),
            "speedup": r.speedup, "floor_ratio": r.floor_ratio, "seconds": round(r.seconds, 3),
            "baselines": [measured_json(b, r.ms(b)) for b in r.baselines],
            "candidates": [measured_json(c, r.ms(c)) for c in r.candidates]}


def to_json(result: BenchResult) -> dict[str, Any]:
    """The whole run as JSON: `winners` lists the cases whose winner stands (their candidate
    id, launch keywords and ms), `cases` every case in full."""
    winners = []
    for r in result.cases:
        win, best = r.winning, r.best_baseline
        if r.accepted and win is not None:
            winners.append({"case": r.case.case, "program": r.case.program,
                            "sizes": r.case.sizes, "dtype": r.case.dtype, "candidate": win.name,
                            "kwargs": win.kwargs, "axon_ms": r.ms(win),
                            "baseline_ms": r.ms(best), "baseline": best.name if best else None})
    return {"format": FORMAT, "version": VERSION, "profile": result.bundle.profile,
            "axon_version": result.bundle.axon_version, "seed": result.bundle.seed,
            "device": result.device_name, "interpreter": result.interpreter,
            "note": CPU_NOTE if result.interpreter else "",
            "peaks": {"matrix_flops": result.numbers.matrix_flops,
                      "bytes_per_s": result.numbers.bytes_per_s,
                      "l2_bytes": result.numbers.l2_bytes, "source": result.numbers.source},
            "winners": winners, "cases": [_case_json(r) for r in result.cases],
            "geomean_speedup": geomean([r.speedup for r in result.cases if r.speedup]),
            "summary": summary(result)}


def speedup_bars(result: BenchResult) -> list[tuple[str, float]]:
    """(case, speedup over the best baseline) for each case with a timed winner."""
    return [(r.case.case, r.speedup) for r in result.cases if r.speedup]


def plot_unavailable() -> str | None:
    """Why `--plot` cannot be drawn here (matplotlib missing), or None."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return NO_MATPLOTLIB
    return None


def plot(result: BenchResult, path: Path) -> None:
    """A bar chart of the speedups, written to `path` (see `plot_unavailable` first)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = speedup_bars(result)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(bars) + 2), 4.5))
    names = [name for name, _ in bars]
    values = [value for _, value in bars]
    ax.bar(range(len(bars)), values,
           color=["tab:green" if v >= 1 else "tab:red" for v in values])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bars)), names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("speedup over the best baseline")
    mean = geomean(values)
    title = f"Axon vs the best of eager / torch.compile on {result.device_name}"
    if mean is not None:
        title += f" (geomean {mean:.2f}x)"
    if result.interpreter:
        title += f"\n{CPU_NOTE}"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
