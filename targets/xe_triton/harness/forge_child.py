"""The child's side of a Forge check: KernelBench-format `ModelNew` modules, run and timed.

The job (`"kind": "forge"`) names the modules and the runs the parent drew (`forge_problem.Run`:
init inputs, the Model's state dict, the inputs; one file each, loaded with `weights_only`),
the dtype, and whether to time. For each module: `start`; import it (a `failed` on error, a
`rejected` when the import patched what `guard.py` watches); then for each run build
`ModelNew(*init_inputs)`, load the run's state dict strictly (a mismatch is `rejected` naming the
key), cast to the dtype, call forward on clones of the inputs and check, before sending a
byte: nothing watched was patched, no input changed, no new thread is running, the current CUDA
stream is the one before the call, every result is exactly a `torch.Tensor` (not a subclass,
not an object computing its values when read) that shares no memory with an input or a
parameter. The results go to the parent raw with the torch compute ops the call dispatched
(recorded by a `TorchDispatchMode`; allocation, copies and views are not compute), and the
parent answers. Every run uses the same process, and a run whose inputs have the shapes of an
earlier run's gets the earlier run's input tensors with its own values copied in, so a result
cached by shape or by data pointer on the first run is wrong on the second. After the last
run, `checked`; or, when timing, `timing` (of the first run's model and inputs) after one more
checked call of the timed model on the timed tensors (run index: the number of runs). A module
that crashed, patched something, left a thread running or changed the stream ends the process
(the parent starts a fresh one for the modules left); one whose results were refused leaves it
to the next module.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from axon.targets.xe_triton.harness import session as sessions
from axon.targets.xe_triton.harness import timing, wire
from axon.targets.xe_triton.harness.inputs import TORCH_DTYPES

#: aten ops (by their name without overload) that allocate, copy, fill or view: not compute
NOT_COMPUTE = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "full", "full_like", "new_full", "fill_", "zero_", "ones",
    "ones_like", "new_ones", "view", "_unsafe_view", "reshape", "_reshape_alias", "permute",
    "transpose", "t", "contiguous", "clone", "copy_", "to", "_to_copy", "detach", "alias",
    "as_strided", "expand", "expand_as", "squeeze", "unsqueeze", "flatten", "unflatten",
    "slice", "select", "split", "split_with_sizes", "chunk", "narrow", "unbind", "view_as",
    "movedim", "set_", "lift_fresh", "lift_fresh_copy", "resize_", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "is_contiguous", "stride", "size", "numel", "dim",
    "_local_scalar_dense", "is_same_size", "_has_compatible_shallow_copy_type"})


class ComputeOps(TorchDispatchMode):
    """Records the aten ops a call dispatched that compute (outside `NOT_COMPUTE`)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        if func.overloadpacket.__name__ not in NOT_COMPUTE:
            self.ops.add(str(func))
        return func(*args, **(kwargs or {}))


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def _aliased(result: torch.Tensor, owners: dict[str, torch.Tensor]) -> str | None:
    """The name of the first of `owners` whose memory `result`'s overlaps."""
    low, high = _span(result)
    if high <= low:
        return None
    for name, owner in owners.items():
        o_low, o_high = _span(owner)
        if o_low < high and low < o_high:
            return name
    return None


def _state_mismatch(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> str:
    """Why `state` does not load strictly into `model` ("" when it does)."""
    own = model.state_dict()
    missing = [k for k in state if k not in own]
    extra = [k for k in own if k not in state]
    if missing:
        return f"it has no parameter or buffer '{missing[0]}' (the problem's Model has)"
    if extra:
        return f"its '{extra[0]}' is not in the problem's Model"
    for key, value in state.items():
        if tuple(own[key].shape) != tuple(value.shape):
            return (f"its '{key}' has shape {list(own[key].shape)}, the problem's Model's "
                    f"{list(value.shape)}")
    return ""


def _forward(model: torch.nn.Module, *inputs: Any) -> Any:
    with torch.no_grad():
        return model(*inputs)


#: a checked call's outcomes: the parent accepted the results, refused them (the process is fit
#: for the next module), or the process must end
ACCEPTED, REFUSED, TAINTED = "accepted", "refused", "tainted"


def _checked_call(session: sessions.Session, cid: str, model: torch.nn.Module,
                  pristine: list[Any], clones: list[Any], run: int) -> str:
    """Call `model` on `clones` (holding `pristine`'s values) with its compute ops recorded,
    check what the call did, send the results as run `run` and return the parent's verdict."""
    threads = threading.active_count()
    stream = torch.cuda.current_stream() if session.device == "cuda" else None
    recorder = ComputeOps()
    try:
        with recorder:
            out = _forward(model, *clones)
        session.sync()
    except BaseException as e:  # noqa: BLE001 (any failure of a candidate is its verdict)
        session.fail(cid, f"crashed: {sessions.short(e)}")
        return TAINTED
    if session.tampered(cid, "when called"):
        return TAINTED
    reason, taints = _dynamic_check(out, model, pristine, clones, threads, stream)
    if reason:
        session.send("rejected", cid, step="tamper", reason=reason)
        return TAINTED if taints else REFUSED
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    try:
        payloads = [wire.tensor_payload(r) for r in results]
    except wire.WireError as e:
        session.send("rejected", cid, step="correctness", reason=str(e))
        return REFUSED
    verdict = session.outputs(cid, payloads, run=run, ops=sorted(recorder.ops))
    return ACCEPTED if verdict.get("ok") else REFUSED


def _check_runs(session: sessions.Session, cid: str, model_new: Any, runs: list[Any],
                dtype: torch.dtype) -> tuple[str, torch.nn.Module | None]:
    """Every run's checked call in turn; the outcome and the first run's model."""
    buffers: dict[tuple[Any, ...], list[Any]] = {}
    first: torch.nn.Module | None = None
    for k, run in enumerate(runs):
        try:
            model = model_new(*run["init"])
        except BaseException as e:  # noqa: BLE001
            session.fail(cid, f"ModelNew(*get_init_inputs()) failed: {sessions.short(e)}")
            return TAINTED, None
        mismatch = _state_mismatch(model, run["state"])
        if mismatch:
            # the process is as it was: the next module may run in it
            session.send("rejected", cid, step="correctness",
                         reason=f"its state dict does not match the problem's: {mismatch}")
            return REFUSED, None
        model.load_state_dict(run["state"], strict=True)
        model = model.to(device=session.device, dtype=dtype)
        outcome = _checked_call(session, cid, model, run["inputs"],
                                _fill(buffers, run["inputs"]), k)
        if outcome != ACCEPTED:
            return outcome, None
        if first is None:
            first = model
    return ACCEPTED, first


def run_modules(job: dict[str, Any], session: sessions.Session) -> int:
    """Check (and time) each module of `job` (see the module doc); 0, or TAINTED when a module
    disqualified the process."""
    dtype = TORCH_DTYPES[job["dtype"]]
    runs = [torch.load(path, weights_only=True) for path in job["runs"]]
    for run in runs:
        run["inputs"] = [x.to(session.device) if isinstance(x, torch.Tensor) else x
                         for x in run["inputs"]]
    for candidate in job["candidates"]:
        cid = candidate["id"]
        model_new = session.load(cid, candidate["path"], "ModelNew")
        if model_new is None:
            return sessions.TAINTED
        outcome, model = _check_runs(session, cid, model_new, runs, dtype)
        if outcome == TAINTED:
            return sessions.TAINTED
        if outcome == REFUSED or model is None:
            continue
        if not job.get("time"):
            session.send("checked", cid)
            continue
        pristine = runs[0]["inputs"]
        inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in pristine]
        threads = threading.active_count()
        try:
            figures = timing.time_callable(functools.partial(_forward, model, *inputs),
                                           int(job["repeats"]), session.flush)
        except BaseException as e:  # noqa: BLE001
            return session.fail(cid, f"crashed while timed: {sessions.short(e)}")
        if session.tampered(cid, "while timed"):
            return sessions.TAINTED
        if threading.active_count() != threads:
            return session.reject(cid, "tamper", "a thread started while it was timed")
        changed = _changed_input(pristine, inputs)
        if changed is not None:
            return session.reject(cid, "tamper",
                                  f"modified its input: input {changed} changed while timed")
        # the model after all its timed calls, checked once more on the first run's inputs in
        # the tensors it was timed on: a kernel that stops working once warm is wrong here
        for buffer, x in zip(inputs, pristine, strict=True):
            if isinstance(x, torch.Tensor):
                buffer.copy_(x)
        outcome = _checked_call(session, cid, model, pristine, inputs, len(runs))
        if outcome == TAINTED:
            return sessions.TAINTED
        if outcome == ACCEPTED:
            session.send("timing", cid, timing=figures.as_json())
    return 0


def _fill(buffers: dict[tuple[Any, ...], list[Any]], inputs: list[Any]) -> list[Any]:
    """The inputs for a checked call: fresh clones the first time inputs of these shapes and
    dtypes come, after that the same tensors again with the new values copied in (a result
    cached by data pointer, or by shape, is then stale)."""
    key = tuple((tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else repr(x)
                for x in inputs)
    if key not in buffers:
        buffers[key] = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        return buffers[key]
    reused = buffers[key]
    for buffer, x in zip(reused, inputs, strict=True):
        if isinstance(x, torch.Tensor):
            buffer.copy_(x)
    return reused


def _changed_input(pristine: list[Any], clones: list[Any]) -> int | None:
    for n, (original, clone) in enumerate(zip(pristine, clones, strict=True)):
        if isinstance(original, torch.Tensor) and not torch.equal(original, clone):
            return n
    return None


def _dynamic_check(out: Any, model: torch.nn.Module, pristine: list[Any], clones: list[Any],
                   threads: int, stream: Any) -> tuple[str, bool]:
    """Why the checked call's results or effects are not to be trusted ("" when they are), and
    whether the process is left unfit for another module (a thread still runs, the stream
    changed)."""
    if threading.active_count() != threads:
        return (f"started a thread that outlives the call ({threads} threads before, "
                f"{threading.active_count()} after)"), True
    if stream is not None and torch.cuda.current_stream() != stream:
        return "changed the current CUDA stream", True
    return _result_check(out, model, pristine, clones), False


def _result_check(out: Any, model: torch.nn.Module, pristine: list[Any],
                  clones: list[Any]) -> str:
    """Why the results are not results: an input changed, a result is not exactly a tensor or
    shares memory with an input or a parameter ("" when none)."""
    changed = _changed_input(pristine, clones)
    if changed is not None:
        return f"modified its input: input {changed} changed in the checked call"
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    owners = {f"input {n}": x for n, x in enumerate(clones) if isinstance(x, torch.Tensor)}
    owners.update({f"parameter '{name}'": t for name, t in
                   (*model.named_parameters(), *model.named_buffers())})
    for k, r in enumerate(results):
        if type(r) is not torch.Tensor:
            kind = ("a torch.Tensor subclass (its values may be computed when read)"
                    if isinstance(r, torch.Tensor) else "not a torch.Tensor")
            return f"result {k} is a {type(r).__name__}, {kind}"
        owner = _aliased(r, owners)
        if owner is not None:
            return f"result {k} shares memory with {owner} (an alias, not a result)"
    return ""
