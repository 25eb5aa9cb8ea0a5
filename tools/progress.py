"""Progress lines on stderr for the steps of a command that take a while.

The commands turn it on (`axon`, `axon-opt`; `--quiet` leaves it off); the embedding API leaves it
off, so a library caller's stderr stays its own. A step that ends within `DELAY_S` prints nothing.
A longer one prints a line once it passes the delay and then every `INTERVAL_S`, with its latest
detail (from a timer thread, so a step that reports nothing itself, such as parsing a large file,
shows too), and a last line with its time. Only the innermost open step prints: a pass's step is
quiet while one of its functions' steps runs.

    with progress.step("propagate @f") as step:
        ...
        step.update("iteration 3: 40 classes, 12 proved")

    axon: propagate @f: iteration 3: 40 classes, 12 proved (2s)
    axon: propagate @f: done in 7.4s
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: seconds a step runs before its first progress line
DELAY_S = 2.0
#: seconds between two progress lines of one step
INTERVAL_S = 5.0

#: the command's name while progress lines are on, else None
_tool: str | None = None
#: the open steps, innermost last (only it prints)
_open: list[Step] = []
_lock = threading.Lock()


def enable(tool: str) -> None:
    """Print progress lines, prefixed `tool: `, for the steps that follow."""
    global _tool
    _tool = tool


def disable() -> None:
    """Print no progress lines (the default)."""
    global _tool
    _tool = None


class Step:
    """One open step: `update` records its latest detail, which the next progress line shows."""

    def __init__(self, what: str, tool: str | None) -> None:
        self.what = what
        self.tool = tool
        self.start = time.monotonic()
        self.detail = ""
        self.shown = False
        self.closed = False
        self._timer: threading.Timer | None = None
        if tool is not None:
            self._arm(DELAY_S)

    def _arm(self, seconds: float) -> None:
        self._timer = threading.Timer(seconds, self._tick)
        self._timer.daemon = True
        self._timer.start()

    def update(self, detail: str) -> None:
        """Record the step's latest state (`"iteration 3: 40 classes"`)."""
        self.detail = detail

    def _tick(self) -> None:
        with _lock:
            if self.closed:
                return
            if _open and _open[-1] is self:
                _write(f"{self.tool}: {self.what}: {self.detail or 'running'} "
                       f"({time.monotonic() - self.start:.0f}s)")
                self.shown = True
            self._arm(INTERVAL_S)

    def close(self) -> None:
        """End the step; if it printed a line, print how long it took."""
        with _lock:
            self.closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self.shown:
                _write(f"{self.tool}: {self.what}: done in {time.monotonic() - self.start:.1f}s")


def _write(line: str) -> None:
    # one write per line, so a line never interleaves with the command's own stderr lines
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@contextmanager
def step(what: str, shown: bool = True) -> Iterator[Step]:
    """A step named `what` (`"parsing big.mlir"`, `"propagate @f"`) for the `with` body; with
    `shown=False` it prints nothing (a step that reports its progress itself), and neither do
    the steps around it."""
    current = Step(what, _tool if shown else None)
    with _lock:
        _open.append(current)
    try:
        yield current
    finally:
        with _lock:
            _open.remove(current)
        current.close()
