"""An optional PNG of the timeline: one row per engine, a bar per instruction.

matplotlib is not one of Axon's dependencies: without it `plot_timeline` raises
`PlotUnavailable`, whose message says what to install.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from axon.targets.nki.cost.estimate import ENGINES, Estimate

_COLOURS = {"PE": "tab:red", "ACT": "tab:green", "DVE": "tab:blue", "POOL": "tab:purple",
            "DMA": "tab:orange"}


class PlotUnavailable(RuntimeError):
    """The timeline cannot be drawn because matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError as err:
        raise PlotUnavailable("the timeline plot needs matplotlib, which is not installed "
                              "(pip install matplotlib); the summary does not") from err
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def plot_timeline(result: Estimate, path: str | Path, title: str = "") -> Path:
    """Draw `result`'s timeline to the PNG file `path` (microseconds on x, engines on y, the
    critical path outlined in black) and return the path."""
    plt = _pyplot()
    critical = set(result.critical_path)
    fig, ax = plt.subplots(figsize=(14, 3.5))
    for row, engine in enumerate(ENGINES):
        bars = [(e.busy_start * 1e6, e.busy_s * 1e6, e.index in critical)
                for e in result.events if e.engine == engine]
        if not bars:
            continue
        ax.broken_barh([(s, w) for s, w, _ in bars], (row - 0.4, 0.8),
                       facecolors=_COLOURS[engine])
        path_bars = [(s, w) for s, w, on in bars if on]
        if path_bars:
            ax.broken_barh(path_bars, (row - 0.4, 0.8), facecolors="none", edgecolors="black",
                           linewidth=0.6)
    ax.set_yticks(range(len(ENGINES)), list(ENGINES))
    ax.set_xlabel("us")
    ax.set_title(title or f"{result.profile}: {result.total_s * 1e6:.1f} us, bound by "
                          f"{result.bound_by()}")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
