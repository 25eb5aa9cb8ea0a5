"""`axon PROGRAM --target nki`: a program's NKI kernel, tiled, lowered, proved and printed.

    axon rmsnorm --target nki --profile trn2 --sizes M=4096,N=1024 -o kernel.py

Selection is empirical (`select.py`): the proved tilings that lower, each at its best tile
sizes by the tiled cost model, and the unfused chain (one kernel per op, through HBM) are
emitted, run on the simulator, checked against the reference interpreter and priced by the
calibrated NeuronCore cost model; the cheapest right one is printed (the chain as one module
of several `@nki.jit` kernels and a host function calling them in order). At most
`--max-candidates` are simulated, on the `--executor` (a local process pool, or Ray); stderr
shows each and a summary line. The winner goes into the winner cache the Triton target uses
(`selection/cache.py`, keyed by the program's text, sizes, dtypes, `nki:<profile>` and Axon's
version), so the same program at the same sizes is printed again without a selection
(`--no-cache` selects anew). The driver (`tools/axon_main.py`) parses the command line and
calls `emit_kernel`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.nugraph.stored import function_text
from axon.passes.sizes import parse_sizes, sizes_problem
from axon.selection.cache import Winner, WinnerCache, winner_key
from axon.selection.executor import ExecutorError, make_executor
from axon.targets.nki.select import (
    DEFAULT_MAX_CANDIDATES,
    ChosenKernel,
    NoKernel,
    choose_kernel,
)
from axon.tiling.search import all_sizes

__all__ = ["DEFAULT_PROFILE", "NKI_PROFILES", "ChosenKernel", "NkiTargetError", "NoKernel",
           "choose_kernel", "emit_kernel"]

#: the NeuronCore profiles (`targets/nki/profiles/<name>.yaml`)
NKI_PROFILES = tuple(sorted(p.stem for p in
                            (Path(__file__).resolve().parent / "profiles").glob("*.yaml")))
#: the profile `--target nki` uses unless told
DEFAULT_PROFILE = "trn2"


class NkiTargetError(ValueError):
    """A user error of `--target nki`: the message says where and what was expected."""


def emit_kernel(module: ModuleOp, filename: str, profile: str, sizes_text: str,
                say: Callable[[str], None],
                max_candidates: int = DEFAULT_MAX_CANDIDATES, executor: str | None = None,
                cache: str | None = None, use_cache: bool = False) -> str:
    """The NKI module of the program in `module` (see the module docstring): selected on the
    executor named `executor` (here, one candidate after another, where None); with
    `use_cache`, the winner cache at `cache` (the default path where None) read first and
    the winner filed in it."""
    start = time.perf_counter()
    if profile not in NKI_PROFILES:
        raise NkiTargetError(f"--profile: '{profile}' is not a NeuronCore profile; known: "
                             f"{', '.join(NKI_PROFILES)}")
    if max_candidates < 1:
        raise NkiTargetError(f"--max-candidates {max_candidates}: expected at least 1")
    problem = sizes_problem(sizes_text)
    if problem is not None:
        raise NkiTargetError(f"--sizes '{sizes_text}': {problem}")
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        names = ", ".join(f"@{f.sym_name.data}" for f in funcs)
        raise NkiTargetError(f"{filename}: --target emits the kernel of one function; this "
                             f"file defines {len(funcs)} ({names})")
    (func,) = funcs
    name = func.sym_name.data
    sizes = parse_sizes(sizes_text)
    symbols = sorted({s for t in func.function_type.inputs.data if isinstance(t, TensorType)
                      for d in t.shape for s in d.symbols()})
    unknown = sorted(set(sizes) - set(symbols))
    if unknown:
        raise NkiTargetError(f"--sizes: {', '.join(unknown)} is not a size of @{name} in "
                             f"{filename} (its sizes: {', '.join(symbols) or 'none'})")
    bound = all_sizes(func, sizes)
    dtypes = [t.dtype for t in func.function_type.inputs.data if isinstance(t, TensorType)]
    key = winner_key(function_text(func), bound, dtypes, f"nki:{profile}")
    winners = None
    if use_cache:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            winners = WinnerCache(cache)
        for warning in caught:
            say(f"warning: {warning.message}")
        winner = winners.get(key)
        if winner is not None:
            predicted = ("" if winner.axon_ms is None
                         else f", predicted {winner.axon_ms * 1e3:.1f} us")
            say(f"nki: @{name}: the cached winner {winner.candidate} ({profile}{predicted}; "
                f"{winners.path}); {time.perf_counter() - start:.1f} s")
            return winner.module_text
    say(f"nki: @{name} at {', '.join(f'{k}={v}' for k, v in bound.items())} on {profile}"
        + (f", {executor} executor" if executor else ""))
    try:
        pool = make_executor(executor) if executor else None
    except ExecutorError as err:
        raise NkiTargetError(str(err)) from None
    try:
        chosen = choose_kernel(func, profile, bound, say, max_candidates=max_candidates,
                               executor=pool)
    except NoKernel as err:
        raise NkiTargetError(f"{filename}: @{name}: {err}") from None
    finally:
        if pool is not None:
            pool.close()
    if winners is not None:
        winners.put(key, Winner(name, dict(bound), ",".join(dtypes), profile,
                                f"{chosen.kind} {chosen.chosen}", {}, name, chosen.module_text,
                                axon_ms=chosen.latency_s * 1e3))
        winners.save()
    say(f"nki: @{name}: {chosen.kind} ({chosen.chosen}), tiling proof "
        f"{chosen.tiling_proof or 'none'}, "
        f"lowering proof {chosen.lowering_proof or 'none (one per kernel of the chain)'}; "
        f"{time.perf_counter() - start:.1f} s")
    return chosen.module_text
