"""What a child process's runners share: loading a module, the result pipe, the guard, verdicts.

`child.py` starts a `Session` after importing torch and Triton: it takes the guard's snapshot
(`guard.py`) of the harness's modules and of what they call, and holds the result pipe. Its
runners (`child.py`'s functions, `forge_child.py`'s modules) report through it: `start`,
`outputs`, `timing` / `checked`, or `failed` / `rejected` with the step that rejected it.
"""

from __future__ import annotations

import builtins
import functools
import importlib.util
import json
import os
import sys
import threading
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from axon.targets.xe_triton.harness import guard, timing, wire

#: exit status after a candidate disqualified the process (the parent starts a fresh one)
TAINTED = 3


def load_module(path: str, name: str) -> ModuleType:
    """Import the file `path` as the module `name` (runs a candidate's code)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def short(error: BaseException) -> str:
    """The exception's type and first line, and where in the candidate's module it arose."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename.endswith(".py") and "/harness/" not in f.filename]
    where = f" (line {frames[-1].lineno})" if frames else ""
    first = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
    return f"{type(error).__name__}{where}: {first}" if first else type(error).__name__


@dataclass
class Session:
    """The child's pipe to the parent, the guard's snapshot, the device and the L2 flush."""

    fd: int
    device: str
    snapshot: guard.Snapshot
    flush: torch.Tensor | None

    @classmethod
    def start(cls, job: dict[str, Any], harness: dict[str, ModuleType]) -> Session:
        """The session of `job`, its snapshot covering the `harness` modules (strictly) and
        torch's timers and comparisons, the standard library's clocks and threads."""
        device = "cuda" if job["device"] == "cuda" else "cpu"
        flush = timing.flush_buffer(int(job["flush_bytes"])) if device == "cuda" else None
        snapshot = guard.Snapshot.take(
            {**harness, "guard": guard, "timing": timing, "wire": wire,
             "session": sys.modules[__name__], "timing.Timing": timing.Timing},
            {"builtins": builtins, "torch": torch, "torch.Tensor": torch.Tensor,
             "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
             "torch.cuda.CUDAGraph": torch.cuda.CUDAGraph, "torch.nn.Module": torch.nn.Module,
             "json": json, "os": os, "sys": sys, "statistics": timing.statistics,
             "time": timing.time, "struct": wire.struct, "functools": functools,
             "select": wire.select, "threading": threading})
        return cls(int(job["fd"]), device, snapshot, flush)

    def send(self, event: str, candidate: str, **fields: Any) -> None:
        """One frame without payloads."""
        wire.send(self.fd, {"event": event, "candidate": candidate, **fields})

    def load(self, candidate: str, path: str, attribute: str) -> Any:
        """Send `start`, import the module at `path` and return its `attribute`; None (after a
        `failed` or `rejected` frame) when the import fails or patches what the guard
        watches."""
        self.send("start", candidate)
        try:
            module = load_module(path, f"axon_candidate_{len(sys.modules)}")
            found = getattr(module, attribute)
            if found is None:
                raise TypeError(f"{attribute} is None")
        except BaseException as e:  # noqa: BLE001 (any failure of a candidate is its verdict)
            self.fail(candidate, f"import failed: {short(e)}")
            return None
        return None if self.tampered(candidate, "on import") else found

    def reject(self, candidate: str, step: str, reason: str) -> int:
        """Report a rejection; TAINTED (the child stops)."""
        self.send("rejected", candidate, step=step, reason=reason)
        return TAINTED

    def fail(self, candidate: str, reason: str) -> int:
        """Report a crash; TAINTED (the child stops)."""
        self.send("failed", candidate, step="crash", reason=reason)
        return TAINTED

    def tampered(self, candidate: str, when: str) -> bool:
        """Whether anything the snapshot watches changed (reported as a rejection)."""
        changed = self.snapshot.changed()
        if changed:
            shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more"
                                              if len(changed) > 4 else "")
            self.reject(candidate, "tamper", f"tampered: {when} it patched {shown}")
        return bool(changed)

    def outputs(self, candidate: str, payloads: list[tuple[dict[str, Any], bytes]],
                **fields: Any) -> dict[str, Any]:
        """Send the results (`wire.tensor_payload`s) and return the parent's verdict line."""
        wire.send(self.fd, {"event": "outputs", "candidate": candidate,
                            "tensors": [spec for spec, _ in payloads], **fields},
                  tuple(data for _, data in payloads))
        verdict: dict[str, Any] = json.loads(sys.stdin.readline())
        return verdict

    def sync(self) -> None:
        """Wait for the GPU (nothing on the CPU)."""
        if self.device == "cuda":
            torch.cuda.synchronize()
