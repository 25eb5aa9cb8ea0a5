"""The symbolic phase on every benchmark program: propagate, then tile, per device profile.

    python -m axon.benchmarks.tiling                        # all programs, h200 and trn2
    python -m axon.benchmarks.tiling rmsnorm_matmul --profile h200
    python -m axon.benchmarks.tiling gqa --all-shapes       # every default shape, a row each
    python -m axon.benchmarks.tiling gqa --proof-rlimit 2000000   # every proof a larger budget
    python -m axon.benchmarks.tiling gqa --time-limit 1200  # a safety net for a slower machine

For each profile and program, at the program's largest default shapes of
../shared/design/benchmarks.md: propagation keeps its top 4 programs (`propagate{emit="top-k"}`),
then every tiling of each is proposed, proved and priced (`axon.tiling.search`). One row per
program: tilings proposed, proved, fused (proved kernels holding more than one op), the time of
the whole phase with a cold proof cache and again with the cache it left (warm: the cache keeps
each step's result too, see `axon.verifier.cache`), the best
kernel's kind, tile sizes, modeled HBM traffic against the compulsory traffic (every input read
once, every output written once) and modeled time. The last lines give the median and the
largest cold and warm times per profile (targets: median <= 10 s, max <= 60 s cold; <= 1 s warm)
and a summary, which also counts the programs whose warm run did not give exactly what the cold
run gave (the propagated programs' text, and every proposal with its kernel's text).

Every proof, in propagation and in tiling, gets the same budget (`--proof-steps`,
`--proof-rlimit`: counts of work, so a proof they stop is stopped again and stored, and the
warm run does not retry it; `--proof-seconds`: the safety-net clock, whose verdicts are not
stored). The first line names it. Each search is bounded by counts too (the passes'
defaults: a function's propagation by its iterations, e-nodes and candidates taken to the
prover, a program's tiling by its kernel proofs), so a search they stop is stored and the warm
run does not search again; `--time-limit` is the searches' safety-net clock (600 s as in the
passes): a search it cuts is not stored.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.dialects.func import FuncOp

from axon.benchmarks import proof_budget
from axon.benchmarks.suite import PROGRAMS, Program
from axon.frontend.numpy_subset import parse_source
from axon.nugraph.stored import function_text
from axon.targets.profiles import load_profile, profile_names
from axon.tiling.search import TIME_LIMIT_S, Result, tile_program
from axon.tools.embed import print_ir, run_pipeline
from axon.verifier import ProofBudget
from axon.verifier.budget import SEARCH_BUDGET
from axon.verifier.cache import ProofCache

PROFILES = ("h200", "trn2")
#: the safety-net clock of each search (a function's propagation, a program's tiling), as in
#: the passes
TIME_LIMIT = TIME_LIMIT_S
HEADER = (f"{'profile':7} {'program':22} {'proposed':>8} {'proved':>6} {'fused':>5} "
          f"{'cold s':>7} {'warm s':>7} {'best':>9} {'tile sizes':>22} {'HBM MB':>9} "
          f"{'x compul':>8} {'model ms':>9}")


def symbolic_phase(program: Program, profile: str, cache_file: Path, shape: int = -1,
                   budget: ProofBudget = SEARCH_BUDGET, time_limit: float = TIME_LIMIT
                   ) -> tuple[Result, float, ModuleOp]:
    """Propagate then tile `program` at its default shapes #`shape` (the largest by default)
    under `profile`, every proof under `budget` and each search's safety net `time_limit` s,
    with the proof cache in `cache_file` (read, then written back); the result, the seconds
    taken and the propagated module."""
    sizes = program.default_sizes[shape]
    text = ",".join(f"{k}={v}" for k, v in sizes.items())
    start = time.perf_counter()
    module = parse_source(program.source, str(program.source_path))
    run_pipeline(module, f'propagate{{emit="top-k" top_k=4 device={profile} sizes="{text}" '
                         f'proof_steps={budget.steps} proof_rlimit={budget.rlimit} '
                         f'proof_seconds={budget.seconds!r} time_limit={time_limit!r} '
                         f'cache="{cache_file}"}}')
    cache = ProofCache(cache_file)
    result = tile_program(_program_functions(module, program.name), load_profile(profile),
                          sizes, budget=budget, time_limit_s=time_limit, cache=cache)
    cache.save()
    return result, time.perf_counter() - start, module


def outcome(result: Result, module: ModuleOp) -> list[object]:
    """What a run gave, as comparable data: the propagated module's text and every proposal
    (kernels as their text)."""
    return [print_ir(module), *((p.variant, p.tiling, p.verdict, p.reason, p.proof_id,
                                 p.candidates, p.source_ops,
                                 None if p.kernel is None else function_text(p.kernel))
                                for p in result.proposals)]


def _program_functions(module: ModuleOp, name: str) -> list[FuncOp]:
    funcs = [f for f in module.ops if isinstance(f, FuncOp)]
    main = [f for f in funcs if f.sym_name.data == name]
    return main + [f for f in funcs if f.attributes.get("axon.variant_of") == SymbolRefAttr(name)]


def row(profile: str, result: Result, cold: float, warm: float) -> str:
    proved = result.proved
    best = proved[0] if proved else None
    kind, sizes, hbm, ratio, model = "-", "-", "-", "-", "-"
    if best is not None:
        kind = best.tiling.kind
        if best.candidates:
            cost = best.candidates[0].cost
            sizes = " ".join(f"{k}={v}" for k, v in best.candidates[0].params.items())
            hbm = f"{cost.hbm_bytes / 1e6:.1f}"
            ratio = f"{cost.hbm_bytes / max(cost.compulsory_bytes, 1):.2f}"
            model = f"{cost.seconds * 1e3:.3f}"
        else:
            sizes = "none fits"
    fused = sum(p.fused for p in proved)
    return (f"{profile:7} {result.program:22} {len(result.proposals):>8} {len(proved):>6} "
            f"{fused:>5} {cold:>7.2f} {warm:>7.2f} {kind:>9} {sizes:>22} {hbm:>9} {ratio:>8} "
            f"{model:>9}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("programs", nargs="*", choices=[[], *PROGRAMS], default=[],
                        help="programs to run (default: all)")
    parser.add_argument("--profile", action="append", choices=profile_names(),
                        help="profiles to run (default: h200 and trn2)")
    parser.add_argument("--all-shapes", action="store_true",
                        help="run each program at every one of its default shapes (a row "
                             "each, `name[n]`), not only at the largest")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help="the safety-net clock of each search, a function's "
                             f"propagation and a program's tiling, in seconds (default "
                             f"{TIME_LIMIT:g}); a search it cuts is not stored")
    proof_budget.add_arguments(parser, SEARCH_BUDGET)
    args = parser.parse_args(argv)
    budget = proof_budget.from_arguments(args)
    names = args.programs or list(PROGRAMS)
    runs = [(name, shape) for name in names
            for shape in (range(len(PROGRAMS[name].default_sizes)) if args.all_shapes
                          else [-1])]
    print(f"proof budget: {budget.steps} normalization steps, {budget.rlimit} z3 resource "
          f"units, a safety net of {budget.seconds:g} s; a safety net of {args.time_limit:g} s "
          "a search")
    print(HEADER)
    failures = differing = 0
    for profile in args.profile or PROFILES:
        colds: list[float] = []
        warms: list[float] = []
        tiled = 0
        for name, shape in runs:
            with tempfile.TemporaryDirectory() as tmp:
                cache_file = Path(tmp) / "proofs.json"
                result, cold, module = symbolic_phase(PROGRAMS[name], profile, cache_file,
                                                      shape, budget, args.time_limit)
                again, warm, warm_module = symbolic_phase(PROGRAMS[name], profile, cache_file,
                                                          shape, budget, args.time_limit)
            colds.append(cold)
            warms.append(warm)
            tiled += bool(result.proved)
            label = f"{name}[{shape}]" if args.all_shapes else name
            print(row(profile, replace(result, program=label), cold, warm), flush=True)
            if outcome(again, warm_module) != outcome(result, module):
                print(f"{profile}: {label}: the warm run's result differs from the cold run's")
                differing += 1
        print(f"{profile}: {tiled} of {len(runs)} programs tiled; cold median "
              f"{statistics.median(colds):.2f} s, max {max(colds):.2f} s; warm median "
              f"{statistics.median(warms):.2f} s, max {max(warms):.2f} s")
        failures += len(runs) - tiled
    print(f"summary: {failures} program-profile pairs without a proved kernel, {differing} "
          "whose warm result differs from the cold one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
