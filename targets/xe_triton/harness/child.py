"""The child process that imports a case's candidates, runs them and times them.

    python -m axon.targets.xe_triton.harness.child      (started by `run.py`, never by hand)

It reads one job (JSON) from stdin: the candidates' modules, functions and launch keywords, the
file holding the inputs the parent drew, the device, and the result pipe's file descriptor. For
each candidate it sends frames (`wire.py`) on that pipe: `start`; then `outputs` (the results of
one call on fresh clones of the inputs, as raw tensors) and waits for the parent's verdict line on
stdin; if the parent found them correct, `timing`. The child never judges a result: the parent
compares. A candidate whose import or call raises is reported as `failed`; one that modified an
input, or patched anything `guard.py` watches, as `rejected`; after either the child stops, and
the parent starts a fresh one for the candidates left.
"""

from __future__ import annotations

import builtins
import functools
import importlib.util
import json
import os
import sys
import traceback
from types import ModuleType
from typing import Any

#: exit status after a candidate disqualified the process (the parent starts a fresh one)
TAINTED = 3


def _load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _short(error: BaseException) -> str:
    """The exception's type and first line, and where in the candidate's module it arose."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename.endswith(".py") and "/harness/" not in f.filename]
    where = f" (line {frames[-1].lineno})" if frames else ""
    first = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
    return f"{type(error).__name__}{where}: {first}" if first else type(error).__name__


def main() -> int:
    """Run the job on stdin; the exit status is 0, or TAINTED when it stopped early."""
    job: dict[str, Any] = json.loads(sys.stdin.readline())
    if job["device"] == "cpu":
        # before Triton is imported: the interpreter is chosen at import
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton  # noqa: F401 (imported before the snapshot: its import changes torch's state)

    from axon.targets.xe_triton.harness import guard, timing, wire

    fd = int(job["fd"])
    device = "cuda" if job["device"] == "cuda" else "cpu"
    pristine = [t.to(device) for t in torch.load(job["inputs"], weights_only=True)]
    flush = timing.flush_buffer(int(job["flush_bytes"])) if device == "cuda" else None
    # the harness's own modules strictly; what they call (torch's timers and comparisons, the
    # standard library's) by their functions and classes
    snapshot = guard.Snapshot.take(
        {"child": sys.modules[__name__], "guard": guard, "timing": timing, "wire": wire,
         "timing.Timing": timing.Timing},
        {"builtins": builtins, "torch": torch, "torch.Tensor": torch.Tensor,
         "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
         "torch.cuda.CUDAGraph": torch.cuda.CUDAGraph, "json": json, "os": os, "sys": sys,
         "statistics": timing.statistics, "time": timing.time, "struct": wire.struct,
         "functools": functools,
         "select": wire.select})

    def tampered(candidate: str, when: str) -> bool:
        changed = snapshot.changed()
        if changed:
            shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more"
                                              if len(changed) > 4 else "")
            wire.send(fd, {"event": "rejected", "candidate": candidate,
                           "reason": f"tampered: {when} it patched {shown}"})
        return bool(changed)

    def modified(candidate: str, clones: list[Any], when: str) -> bool:
        for spec, clone, original in zip(job["input_names"], clones, pristine, strict=True):
            if not torch.equal(clone, original):
                wire.send(fd, {"event": "rejected", "candidate": candidate,
                               "reason": f"modified its input: {spec} changed {when}"})
                return True
        return False

    for candidate in job["candidates"]:
        cid = candidate["id"]
        wire.send(fd, {"event": "start", "candidate": cid})
        try:
            module = _load(candidate["path"], f"axon_candidate_{len(sys.modules)}")
            function = getattr(module, candidate["function"])
        except BaseException as e:  # noqa: BLE001 (any failure of a candidate is its verdict)
            wire.send(fd, {"event": "failed", "candidate": cid,
                           "reason": f"import failed: {_short(e)}"})
            return TAINTED
        if tampered(cid, "on import"):
            return TAINTED
        kwargs = candidate["kwargs"]
        clones = [t.clone() for t in pristine]
        try:
            result = function(*clones, **kwargs)
            if device == "cuda":
                torch.cuda.synchronize()
            results = result if isinstance(result, (tuple, list)) else (result,)
            if not all(isinstance(r, torch.Tensor) for r in results):
                raise TypeError(f"returned {type(result).__name__}, expected tensors")
            payloads = [wire.tensor_payload(r) for r in results]
        except BaseException as e:  # noqa: BLE001
            wire.send(fd, {"event": "failed", "candidate": cid, "reason": f"crashed: {_short(e)}"})
            return TAINTED
        if tampered(cid, "when called") or modified(cid, clones, "in the checked call"):
            return TAINTED
        wire.send(fd, {"event": "outputs", "candidate": cid,
                       "tensors": [spec for spec, _ in payloads]},
                  tuple(data for _, data in payloads))
        verdict = json.loads(sys.stdin.readline())
        if not verdict.get("time"):
            continue
        inputs = [t.clone() for t in pristine]
        try:
            figures = timing.time_callable(functools.partial(function, *inputs, **kwargs),
                                           int(job["repeats"]), flush)
        except BaseException as e:  # noqa: BLE001
            wire.send(fd, {"event": "failed", "candidate": cid,
                           "reason": f"crashed while timed: {_short(e)}"})
            return TAINTED
        if tampered(cid, "while timed") or modified(cid, inputs, "while timed"):
            return TAINTED
        wire.send(fd, {"event": "timing", "candidate": cid, "timing": figures.as_json()})
    wire.send(fd, {"event": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
