"""Forge's torch path: a KernelBench-format problem becomes a drop-in `ModelNew` whose forward is
Axon's selected, proved and checked Triton kernel.

    result = forge_problem(Path("01_gemm_bias_relu.py"), TorchForgeOptions(profile="h200"), say)
    Path("kernel_opt.py").write_text(result.text)

Loading a problem RUNS ITS PYTHON (as KernelBench does): the file is imported, its `Model` built
and `get_inputs()` called, then `torch.export` traces `forward` (`frontend/torch`). The captured
`ax` function (parameters as inputs) goes through the Triton target's selection unchanged:
propagation's proved variants, proved tilings, the KB's launches, cascade steps 1-3 on each
candidate (`targets/xe_triton/select.py`). Each kept candidate is written as a module holding the
problem's own source (so `Model`, its constructor and its parameters are the user's, and
`ModelNew(*get_init_inputs())` has the same state dict), the emitted Triton kernels and host
function, and `class ModelNew(Model)` whose `forward` passes the model's parameters and the
inputs to the host function. The harness then checks that module against the problem's `Model`
(`check_model_new`), in a child process, at sizes small enough for Triton's CPU interpreter.

Size symbols that the tiler names itself (`k`, `i`, `BM`) are renamed on capture
(`tiling.kernels.RESERVED_NAMES`); sizes `torch.export` baked into the graph are fixed at their
values and the module states it (`CapturedProblem.fixed`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch

from axon.forge.source import without_docstring
from axon.frontend.torch.capture import (
    FLOAT_DTYPES,
    CapturedProblem,
    LoadedProblem,
    TorchFrontendError,
    capture_problem,
    load_problem_file,
    size_globals,
)
from axon.selection.executor import Executor
from axon.targets.xe_triton.bundle import kept_candidates
from axon.targets.xe_triton.emit import EmittedModule
from axon.targets.xe_triton.select import (
    Selection,
    SelectionError,
    SelectOptions,
    select_kernel,
)
from axon.tiling.kernels import RESERVED_NAMES
from axon.tools.user_errors import UsageError
from axon.verifier.budget import SEARCH_BUDGET, ProofBudget

#: sizes the check tries first, in the order of the problem's size globals: small, and no
#: multiple of any block (a remainder in every tiled dim)
CHECK_SIZES = (33, 65, 130, 37, 71, 131)
#: a size at or below this is kept as it is for the check (heads, a batch of two)
SMALL_SIZE = 8
#: the largest value a size is divided down to in the check's second try (keeps ratios)
CHECK_MAX = 96

Say = Callable[[str], None]


class ForgeError(UsageError):
    """A user error of the Forge path: the message says where and what was expected."""


@dataclass(frozen=True)
class TorchForgeOptions:
    """What `axon forge PROBLEM --from torch` selects for: the device profile, size globals set
    before loading (the file's own otherwise), the dtype (the file's `dtype` global
    otherwise), candidates checked at most and candidates written per problem."""

    profile: str = "h200"
    sizes: Mapping[str, int] = field(default_factory=dict)
    dtype: str | None = None
    max_candidates: int = 12
    keep: int = 4
    time_on_gpu: bool = True
    programs: int = 3
    """The nu-graph's programs tiled (`SelectOptions.programs`; 1: the captured one alone)."""
    splits: int = 2
    """Cut points per program for two-launch candidates (`SelectOptions.splits`)."""
    proof_budget: ProofBudget = SEARCH_BUDGET
    """One kernel's proof budget in the tile search (a kernel it does not prove is left
    out, never counted)."""


@dataclass
class ForgedModule:
    """One candidate written as a drop-in module: its id, the module's text, the host function
    it calls, the selection's facts about it."""

    id: str
    text: str
    twin_text: str
    """The same module with every tensor in float32 (Triton's CPU interpreter checks this one:
    its bf16 `tl.dot` is wrong)."""
    host: str
    tiling: str
    modeled_ms: float
    launch: str


@dataclass
class TorchForgeResult:
    """What the torch path made of one problem: the capture, the selection, the modules written
    (best first) and the sizes the problem was selected at."""

    problem: Path
    captured: CapturedProblem
    selection: Selection
    modules: list[ForgedModule]
    sizes: dict[str, int]
    dtype: str

    @property
    def best(self) -> ForgedModule:
        """The module of the candidate selection chose (or ranked first)."""
        return self.modules[0]


def load(path: Path, options: TorchForgeOptions) -> LoadedProblem:
    """The problem at `path` loaded (RUNS ITS PYTHON) with `options`' sizes and dtype;
    ForgeError for a missing file, an unknown dtype, or the frontend's located errors."""
    if not path.is_file():
        raise ForgeError(f"cannot open '{path}': no such file")
    if options.dtype is not None and options.dtype not in FLOAT_DTYPES:
        raise ForgeError(f"--dtype {options.dtype}: expected one of "
                         f"{', '.join(FLOAT_DTYPES)}")
    dtype = FLOAT_DTYPES[options.dtype] if options.dtype else None
    try:
        return load_problem_file(path, options.sizes, dtype)
    except TorchFrontendError as err:
        raise ForgeError(str(err)) from None


def capture(problem: LoadedProblem) -> CapturedProblem:
    """`problem`'s forward in `ax`, its size symbols clear of the tiler's names."""
    try:
        captured = capture_problem(problem, reserved=RESERVED_NAMES, distinct=True)
    except TorchFrontendError as err:
        raise ForgeError(str(err)) from None
    constants = [name for kind, name in captured.sources if kind == "constant"]
    if constants:
        raise ForgeError(f"{problem.path}: forward makes the constant tensor(s) "
                         f"{', '.join(constants)} from data; the torch path passes only "
                         "parameters, buffers and inputs to the kernel")
    return captured


def _argument(kind: str, name: str) -> str:
    """How `ModelNew.forward` reads one input of the kernel's host function."""
    if kind == "parameter":
        return f"self.get_parameter({name!r})"
    if kind == "buffer":
        return f"self.get_buffer({name!r})"
    return f"{name}.contiguous()"


def model_new_source(problem_source: str, captured: CapturedProblem, emitted: EmittedModule,
                     kwargs: Mapping[str, object], note: str) -> str:
    """The drop-in module: the problem's source, the emitted Triton module, and `ModelNew`."""
    taken = set(re.findall(r"^(?:def|class)\s+(\w+)|^(\w+)\s*=", problem_source, re.M))
    names = {n for pair in taken for n in pair if n}
    emitted_names = set(re.findall(r"^def\s+(\w+)", emitted.text, re.M))
    clash = sorted((names - {"ModelNew"}) & emitted_names)
    if clash:
        raise ForgeError(f"the problem defines {', '.join(clash)}, which the emitted kernel "
                         "module defines too")
    inputs = [name for kind, name in captured.sources if kind == "input"]
    arguments = [_argument(kind, name) for kind, name in captured.sources]
    keywords = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    call = f"{emitted.name}({', '.join(arguments)}{keywords})"
    doc = (f'    """`Model` with its forward computed by Axon\'s Triton kernel: {note}."""')
    body = [
        "", "",
        "# ---- Axon: Model.forward as Triton kernels (axon forge --from torch) ----",
        without_docstring(emitted.text).rstrip(), "", "",
        "class ModelNew(Model):", doc, "",
        f"    def forward(self, {', '.join(inputs)}):",
        f"        return {call}", ""]
    return problem_source.rstrip() + "\n" + "\n".join(body)


def forge_problem(path: Path, options: TorchForgeOptions, executor: Executor,
                  say: Say) -> TorchForgeResult:
    """Capture the problem at `path`, select its kernel and write the kept candidates as
    drop-in modules (best first). ForgeError when it does not capture, tile or lower."""
    problem = load(path, options)
    captured = capture(problem)
    func = captured.function
    sizes = dict(captured.sizes)
    runs_in = problem.dtype or getattr(problem.module, "dtype", torch.float32)
    dtype = next((k for k, v in FLOAT_DTYPES.items() if v == runs_in), "f32")
    fixed = ", ".join(f"{k}={v}" for k, v in captured.fixed.items())
    say(f"{path.name}: captured {captured.summary()}")
    if fixed:
        say(f"{path.name}: sizes fixed at their values by torch.export: {fixed}")
    select = SelectOptions(profile=options.profile, sizes=sizes,
                           max_candidates=options.max_candidates,
                           time_on_gpu=options.time_on_gpu, programs=options.programs,
                           splits=options.splits, proof_budget=options.proof_budget)
    try:
        selection = select_kernel(func, select, executor, program=path.stem,
                                  report=lambda line: say(f"{path.name}: {line}"))
    except SelectionError as err:
        raise ForgeError(f"{path}: {err}") from None
    passed = selection.passed()
    if not passed:
        reasons = "; ".join(f"{k}: {v}" for k, v in selection.tally().first_reasons.items())
        raise ForgeError(f"{path}: no candidate passed the cascade ({reasons})")
    # the selection's choice first (on a GPU: the fastest measured), then the runners-up
    chosen = [c for c in [selection.chosen] if c is not None]
    kept = [*chosen, *(c for c in kept_candidates(passed, options.keep)
                       if c not in chosen)][:max(options.keep, 1)]
    source = path.read_text()
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
    modules = []
    for candidate in kept:
        emitted = selection.emitted[candidate.id]
        note = (f"{candidate.tiling} of @{candidate.variant} ({candidate.launch()}), selected "
                f"for {options.profile} at {shown}")
        text = model_new_source(source, captured, emitted, candidate.kwargs, note)
        twin = model_new_source(source, captured, dataclasses.replace(
            emitted, text=selection.twins[candidate.id]), candidate.kwargs,
            note + "; every tensor in float32")
        modules.append(ForgedModule(candidate.id, text, twin, emitted.name, candidate.tiling,
                                    candidate.modeled_ms, candidate.launch()))
    return TorchForgeResult(path, captured, selection, modules, sizes, dtype)


def check_sizes(problem: LoadedProblem, fixed: Mapping[str, int],
                accepts: Callable[[dict[str, int]], bool] | None = None,
                what: str = "Model runs") -> dict[str, int]:
    """Size globals small enough for Triton's CPU interpreter at which `problem`'s Model runs
    (and `accepts` holds, where given: the user's kernel runs and agrees, `what` says so):
    first each size above `SMALL_SIZE` set to one of `CHECK_SIZES` (remainders everywhere),
    then each halved until at most `CHECK_MAX` (keeps ratios such as query heads over kv
    heads); the sizes in `fixed` keep their values, and so do sizes up to `SMALL_SIZE`. Every
    size global is in the result. ForgeError when neither does."""
    globals_ = size_globals(problem.module)
    names = [n for n, v in globals_.items() if n not in fixed and v > SMALL_SIZE]
    odd = {n: CHECK_SIZES[k % len(CHECK_SIZES)] for k, n in enumerate(names)}
    halved = {}
    for n in names:
        v = globals_[n]
        while v > CHECK_MAX and v % 2 == 0:
            v //= 2
        halved[n] = v
    for sizes in (odd, halved):
        chosen = {**globals_, **sizes, **{k: v for k, v in fixed.items() if k in globals_}}
        if _model_runs(problem, chosen) and (accepts is None or accepts(chosen)):
            return chosen
    raise ForgeError(f"{problem.path}: no small sizes found at which {what} (tried "
                     f"{odd} and {halved}); give them with --check-sizes")


def _model_runs(problem: LoadedProblem, sizes: Mapping[str, int]) -> bool:
    try:
        small = load_problem_file(problem.path, sizes, torch.float32)
        with torch.no_grad():
            small.model(*small.inputs)
    except Exception:  # noqa: BLE001 (sizes the problem does not take: try the next)
        return False
    return True
