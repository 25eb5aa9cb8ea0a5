"""`axon PROGRAM --target xe_triton`: a program's Triton kernel, selected, checked and written.

    axon matmul --target xe_triton --profile h200 --sizes M=4096,K=4096 -o kernel.py

The driver (`tools/axon_main.py`) parses the command line and calls `emit_kernel`. A winner of
an earlier GPU run for the same program text, sizes, dtypes, profile and Axon build
(`selection.cache`) is used as it is; otherwise the candidates are selected (`select.py`) on the
executor asked for, every one through the cascade (`cascade.py`): without a GPU the chosen one
is the cheapest by the cost model among those that pass steps 1-3, and the summary says that
timing was skipped. Progress goes to `say` per stage, and a summary at the end: candidates, the
rejections per cascade step, the chosen configuration and the time.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.nugraph.stored import function_text
from axon.passes.sizes import parse_sizes, sizes_problem
from axon.selection.cache import WinnerCache, winner_key
from axon.selection.executor import ExecutorError, make_executor
from axon.targets.xe_triton.kb import device_names
from axon.targets.xe_triton.select import SelectionError, SelectOptions, select_kernel
from axon.tiling.search import all_sizes


class TargetError(ValueError):
    """A user error of `--target`: the message says where and what was expected."""


@dataclass(frozen=True)
class TargetOptions:
    """The command line's `--target` options."""

    profile: str = "h200"
    sizes: str = ""
    executor: str = "local"
    max_candidates: int = 24
    cache: str | None = None
    """The winner cache file (None: `selection.cache.default_cache_path()`)."""
    use_cache: bool = True


def check_options(options: TargetOptions) -> None:
    """TargetError for an unknown profile, malformed sizes or a bad bound, before any work."""
    if options.profile not in device_names():
        raise TargetError(f"--profile: unknown profile '{options.profile}'; known: "
                          f"{', '.join(device_names())}")
    problem = sizes_problem(options.sizes)
    if problem is not None:
        raise TargetError(f"--sizes '{options.sizes}': {problem}")
    if options.max_candidates < 1:
        raise TargetError(f"--max-candidates {options.max_candidates}: expected at least 1")


def the_function(module: ModuleOp, filename: str) -> FuncOp:
    """The program's one function (TargetError naming the file otherwise)."""
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        names = ", ".join(f"@{f.sym_name.data}" for f in funcs)
        raise TargetError(f"{filename}: --target emits the kernel of one function; this file "
                          f"defines {len(funcs)} ({names})")
    return funcs[0]


def emit_kernel(module: ModuleOp, filename: str, options: TargetOptions,
                say: Callable[[str], None]) -> str:
    """The Triton module of the program in `module` (see the module docstring)."""
    start = time.perf_counter()
    check_options(options)
    func = the_function(module, filename)
    name = func.sym_name.data
    sizes = parse_sizes(options.sizes)
    symbols = sorted({s for t in func.function_type.inputs.data if isinstance(t, TensorType)
                      for d in t.shape for s in d.symbols()})
    unknown = sorted(set(sizes) - set(symbols))
    if unknown:
        raise TargetError(f"--sizes: {', '.join(unknown)} is not a size of @{name} in "
                          f"{filename} (its sizes: {', '.join(symbols) or 'none'})")
    bound = all_sizes(func, sizes)
    dtypes = [t.dtype for t in func.function_type.inputs.data if isinstance(t, TensorType)]
    key = winner_key(function_text(func), bound, dtypes, options.profile)
    cache = None
    if options.use_cache:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cache = WinnerCache(options.cache)
        for warning in caught:
            say(f"warning: {warning.message}")
        winner = cache.get(key)
        if winner is not None:
            timing = (f"{winner.axon_ms:.4f} ms on the GPU" if winner.axon_ms is not None
                      else "untimed")
            if winner.baseline_ms is not None:
                timing += f", {winner.baseline} {winner.baseline_ms:.4f} ms"
            say(f"xe_triton: @{name}: the cached winner {winner.candidate} ({timing}; "
                f"{cache.path}); {time.perf_counter() - start:.1f} s")
            return winner.module_text
    say(f"xe_triton: @{name} at {', '.join(f'{k}={v}' for k, v in bound.items())} on "
        f"{options.profile}, {options.executor} executor")
    try:
        executor = make_executor(options.executor)
    except ExecutorError as err:
        raise TargetError(str(err)) from None
    select = SelectOptions(profile=options.profile, sizes=bound,
                           max_candidates=options.max_candidates)
    try:
        selection = select_kernel(func, select, executor, report=lambda line: say(
            f"xe_triton: @{name}: {line}"), program=name)
    except SelectionError as err:
        raise TargetError(f"{filename}: {err}") from None
    finally:
        executor.close()
    tally = selection.tally()
    chosen, verdict = selection.chosen, selection.verdict
    seconds = time.perf_counter() - start
    summary = (f"xe_triton: @{name}: {selection.space} candidates in the space, "
               f"{selection.pruned} pruned, {len(selection.skipped)} not emitted; {tally.line()}")
    if chosen is None or verdict is None or selection.module is None:
        say(summary)
        reasons = "; ".join(f"{step}: {why}" for step, why in tally.first_reasons.items())
        raise TargetError(f"{filename}: @{name}: no candidate passed the cascade ({reasons})")
    launch = chosen.launch()
    if verdict.measured_ms is not None:
        timed = f"{verdict.measured_ms:.4f} ms measured"
        if verdict.baseline_ms is not None:
            timed += f" ({verdict.baseline} {verdict.baseline_ms:.4f} ms)"
    else:
        timed = f"modeled {chosen.modeled_ms:.4f} ms; {verdict.timing}"
    say(summary)
    say(f"xe_triton: @{name}: chosen {chosen.tiling} of @{chosen.variant} ({launch}), "
        f"{timed}; {seconds:.1f} s")
    return selection.module.text
