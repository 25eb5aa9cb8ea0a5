"""The child process that imports a case's candidates, runs them and times them.

    python -m axon.targets.xe_triton.harness.child      (started by `run.py`, never by hand)

It reads one job (JSON) from stdin: the candidates, the device, and the result pipe's file
descriptor, and reports through a `session.Session`. A job of `"kind": "forge"` holds
KernelBench-format modules (`forge_child.py`); any other, the emitted kernels of an Axon bundle:
their modules, functions and launch keywords, and the file holding the inputs the parent drew.
For each such candidate it sends frames (`wire.py`) on that pipe: `start`; then `outputs` (the
results of one call on fresh clones of the inputs, as raw tensors) and waits for the parent's
verdict line on stdin; if the parent found them correct, `timing`. The child never judges a
result: the parent compares. A candidate whose import or call raises is reported as `failed`;
one that modified an input, or patched anything `guard.py` watches, as `rejected`; after either
the child stops, and the parent starts a fresh one for the candidates left.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any


def _run_functions(job: dict[str, Any], session: Any) -> int:
    """The emitted kernels of an Axon bundle: each host function on the parent's inputs."""
    import torch

    from axon.targets.xe_triton.harness import session as sessions
    from axon.targets.xe_triton.harness import timing, wire

    pristine = [t.to(session.device) for t in torch.load(job["inputs"], weights_only=True)]

    def modified(candidate: str, clones: list[Any], when: str) -> bool:
        for spec, clone, original in zip(job["input_names"], clones, pristine, strict=True):
            if not torch.equal(clone, original):
                session.reject(candidate, "tamper",
                               f"modified its input: {spec} changed {when}")
                return True
        return False

    for candidate in job["candidates"]:
        cid = candidate["id"]
        function = session.load(cid, candidate["path"], candidate["function"])
        if function is None:
            return sessions.TAINTED
        kwargs = candidate["kwargs"]
        clones = [t.clone() for t in pristine]
        try:
            result = function(*clones, **kwargs)
            session.sync()
            results = result if isinstance(result, (tuple, list)) else (result,)
            if not all(isinstance(r, torch.Tensor) for r in results):
                raise TypeError(f"returned {type(result).__name__}, expected tensors")
            payloads = [wire.tensor_payload(r) for r in results]
        except BaseException as e:  # noqa: BLE001
            return int(session.fail(cid, f"crashed: {sessions.short(e)}"))
        if session.tampered(cid, "when called") or modified(cid, clones, "in the checked call"):
            return sessions.TAINTED
        if not session.outputs(cid, payloads).get("time"):
            continue
        inputs = [t.clone() for t in pristine]
        try:
            figures = timing.time_callable(functools.partial(function, *inputs, **kwargs),
                                           int(job["repeats"]), session.flush)
        except BaseException as e:  # noqa: BLE001
            return int(session.fail(cid, f"crashed while timed: {sessions.short(e)}"))
        if session.tampered(cid, "while timed") or modified(cid, inputs, "while timed"):
            return sessions.TAINTED
        session.send("timing", cid, timing=figures.as_json())
    return 0


def main() -> int:
    """Import torch and Triton (the parent set `TRITON_INTERPRET` for a CPU child: the
    interpreter is chosen at Triton's import), then run the job on stdin, which may come
    later (`run._Spares` starts a child ahead of its job); the exit status is 0, or
    `session.TAINTED` when it stopped early."""
    import torch
    import torch._dynamo  # noqa: F401 (its import wraps torch.manual_seed; a dispatch mode's
    import triton  # noqa: F401 first use imports it; Triton's import changes torch's state too)

    from axon.targets.xe_triton.harness import forge_child, session, wire

    line = sys.stdin.readline()
    if not line:  # a spare the parent stopped before giving it a job
        return 0
    job: dict[str, Any] = json.loads(line)
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if interpreted != (job["device"] == "cpu"):
        print(f"a {job['device']} job given to a child started "
              f"{'with' if interpreted else 'without'} the interpreter", file=sys.stderr)
        return 1

    # the harness's own modules strictly; what they call (torch's timers and comparisons, the
    # standard library's) by their functions and classes
    current = session.Session.start(job, {"child": sys.modules[__name__],
                                          "forge_child": forge_child})
    run = forge_child.run_modules if job.get("kind") == "forge" else _run_functions
    status = run(job, current)
    if status == 0:
        wire.send(current.fd, {"event": "done"})
    return status


if __name__ == "__main__":
    sys.exit(main())
