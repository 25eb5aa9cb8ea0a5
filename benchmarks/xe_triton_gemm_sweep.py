"""A launch sweep of the GEMM family on the GPU (issue 11): what the KB's NVIDIA grids are
ordered by.

    python -m axon.benchmarks.xe_triton_gemm_sweep --emit DIR     # here: emit, check on the CPU
    python -m axon.benchmarks.xe_triton_gemm_sweep --run DIR      # on the GPU: check, time

`--emit` writes the modules the sweep times (bf16 matmul and transpose_matmul `blocks_k`, the
fused rmsnorm_matmul as propagation and the tile pass leave it at 4096^3 and at 16x4096x4096,
and the rmsnorm `rows` kernel), each checked first in float32 on Triton's CPU interpreter at
three small shapes (`xe_triton_gpu.emit`). `--run` needs torch, Triton and the harness's leaf
modules (`targets/xe_triton/harness`): it compiles every launch of `sweep_cases()` in a pool of
processes (filling Triton's cache), then, one at a time, checks each launch against the program
in float32 torch (the harness's `reference`; bf16 tolerance, relative to the largest output)
and times it as `axon-bench` does (`harness.timing.time_gpu`: the L2 flushed before each run,
CUDA events and a CUDA graph, median), beside eager and `torch.compile` of the same program in
the same run. Besides the emitted launches it times two plans built from them: split-K for the
few-row GEMMs (a measurement kernel of this file: fp32 partials over K slices, then their sum)
and the staged rmsnorm_matmul (the rows kernel, then the matmul at its best launch of the run).
It prints the best launches of each case and writes every figure to `OUT/sweep.json`.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the H200's shared memory a program may take (bytes; profiles/h200.yaml) and the most fp32
#: accumulator values a thread holds (kb/pattern.py, ACCUMULATOR_VALUES_MAX): launches past
#: them are left out of the grids
SHARED_BYTES = 232448
ACCUMULATOR_VALUES_MAX = 128
#: the H200's L2 (bytes; profiles/h200.yaml): the flush buffer is twice as large
L2_BYTES = 50 * 1024 * 1024
#: timed runs per launch (the harness's `--repeats`)
REPEATS = 25

#: the modules `--emit` writes: (case, program, tiling kind or pipeline, sizes, tile sizes)
_PIPELINE = ('propagate{emit="top-k" top_k=4},'
             'tile{profile=h200 sizes="%s" emit="top-k" top_k=2}')
_SMALL_TILES = {"BM": 64, "BN": 128, "BK": 64, "num_warps": 4}
MODULES = [
    ("matmul", "matmul", "blocks_k", {"M": 1024, "N": 1024, "K": 1024}, _SMALL_TILES),
    ("transpose_matmul", "transpose_matmul", "blocks_k", {"M": 1024, "N": 1024, "K": 1024},
     _SMALL_TILES),
    ("rmsnorm_matmul_big", "rmsnorm_matmul", _PIPELINE % "M=4096,N=4096,K=4096",
     {"M": 4096, "N": 4096, "K": 4096}, _SMALL_TILES),
    ("rmsnorm_matmul_skinny", "rmsnorm_matmul", _PIPELINE % "M=16,N=4096,K=4096",
     {"M": 16, "N": 4096, "K": 4096}, {"BM": 16, "BN": 32, "BK": 128, "num_warps": 4}),
    ("rmsnorm", "rmsnorm", "rows", {"M": 4096, "N": 4096}, {"BM": 1, "num_warps": 4}),
]

#: split-K, for measurement only: programs over column blocks and K slices write fp32
#: partials, a second kernel sums them (written here, not by the emitter: it tells whether a
#: split-K tiling would pay)
SPLIT_K_SOURCE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _partials_kernel(a_ptr, b_ptr, p_ptr, M, N, K, KS, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    pn = tl.program_id(0)
    s = tl.program_id(1)
    rm = tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in range(s * KS, s * KS + KS, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(p_ptr + s * M * N + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _sum_kernel(p_ptr, o_ptr, MN, S: tl.constexpr, B: tl.constexpr):
    r = tl.program_id(0) * B + tl.arange(0, B)
    acc = tl.zeros((B,), tl.float32)
    for s in range(S):
        acc += tl.load(p_ptr + s * MN + r, mask=r < MN, other=0.0)
    tl.store(o_ptr + r, acc.to(tl.bfloat16), mask=r < MN)


def split_k(a, b, *, S=4, BN=64, BK=128, num_warps=4, num_stages=4):
    M, K = a.shape
    N = b.shape[1]
    if M > 16 or K % (S * BK):
        raise ValueError(f"split_k takes M <= 16 and K a multiple of S*BK, got {M}, {K}")
    p = torch.empty((S, M, N), dtype=torch.float32, device=a.device)
    o = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    _partials_kernel[(triton.cdiv(N, BN), S)](a, b, p, M, N, K, K // S, BM=16, BN=BN, BK=BK,
                                               num_warps=num_warps, num_stages=num_stages)
    _sum_kernel[(triton.cdiv(M * N, 1024),)](p, o, M * N, S=S, B=1024, num_warps=4)
    return o
'''

Launch = dict[str, Any]
#: a part of a case: (label, "module:function" or SPLIT_K or STAGED, launches)
Part = tuple[str, str, list[Launch]]
SPLIT_K = "split_k"
STAGED = "staged"
#: the module and host function of the plain matmul (`--emit` names a module by its index)
MATMUL = "matmul_blocks_k_0:matmul_blocks_k"


def _fits(bm: int, bn: int, bk: int, warps: int, stages: int) -> bool:
    return (bm * bn // (32 * warps) <= ACCUMULATOR_VALUES_MAX
            and stages * (bm + bn) * bk * 2 <= SHARED_BYTES)


def gemm_grid(bms: list[int], bns: list[int], bks: list[int], warps: list[int],
              stages: list[int], group: int = 8, io: str = "host_descriptor") -> list[Launch]:
    """The product of the axes, less what the H200 cannot hold."""
    return [{"BM": bm, "BN": bn, "BK": bk, "num_warps": w, "num_stages": s,
             "GROUP_SIZE_M": group, "block_io": io}
            for bm, bn, bk, w, s in itertools.product(bms, bns, bks, warps, stages)
            if _fits(bm, bn, bk, w, s)]


def sweep_cases() -> list[tuple[str, str, dict[str, int], list[Part]]]:
    """(case, program, sizes, parts): the launches the sweep times."""
    small = gemm_grid([64, 128], [64, 128, 256], [32, 64, 128], [4, 8], [3, 4, 5])
    small += gemm_grid([32], [64, 128], [64, 128], [4], [3, 4])
    bases: list[Launch] = [
        {"BM": 64, "BN": 128, "BK": 64, "num_warps": 4, "num_stages": 4},
        {"BM": 128, "BN": 128, "BK": 64, "num_warps": 8, "num_stages": 3},
        {"BM": 64, "BN": 64, "BK": 64, "num_warps": 4, "num_stages": 4},
        {"BM": 128, "BN": 64, "BK": 64, "num_warps": 4, "num_stages": 4}]
    for base in bases:
        small += [{**base, "GROUP_SIZE_M": 8, "block_io": io}
                  for io in ("pointer", "tensor_descriptor", "block_ptr")]
        small.append({**base, "GROUP_SIZE_M": 1, "block_io": "host_descriptor"})
    small_t = (gemm_grid([64, 128], [64, 128, 256], [64], [4, 8], [3, 4])
               + gemm_grid([64, 128], [64, 128, 256], [64], [4, 8], [3, 4], io="pointer"))
    big = gemm_grid([128, 64], [256, 128], [64, 128], [8, 4], [3, 4, 5])
    big += gemm_grid([128, 64], [256, 128], [64, 128], [8, 4], [3, 4, 5], io="pointer")
    wide: Launch = {"BM": 128, "BN": 256, "BK": 64, "num_warps": 8, "num_stages": 3}
    big += [{**wide, "GROUP_SIZE_M": g, "block_io": "host_descriptor"} for g in (1, 4, 16)]
    big += [{**b, "GROUP_SIZE_M": 8, "block_io": "tensor_descriptor"}
            for b in (wide, {"BM": 128, "BN": 128, "BK": 64, "num_warps": 8, "num_stages": 4})]
    big_t = (gemm_grid([128, 64], [256, 128], [64], [8, 4], [3, 4])
             + gemm_grid([128, 64], [256, 128], [64], [8, 4], [3, 4], io="pointer"))
    skinny = gemm_grid([16], [16, 32, 64, 128], [128, 256, 512], [4], [3, 4, 6], group=1)
    for bn, bk in itertools.product([32, 64], [128, 256]):
        skinny += gemm_grid([16], [bn], [bk], [4], [4], group=1, io="pointer")
        skinny += gemm_grid([16], [bn], [bk], [2, 8], [4], group=1)
    split = [{"S": s, "BN": bn, "BK": bk, "num_warps": 4, "num_stages": 4}
             for s, bn, bk in itertools.product([2, 4, 8], [32, 64, 128], [128, 256])]
    # unfiltered: the fused kernel's A tile passes through registers (16x128x256 at 4 stages
    # ran, past the shared-memory bound of a plain GEMM's stages)
    fused_skinny: list[Launch] = [
        {"BM": 16, "BN": bn, "BK": bk, "num_warps": 4, "num_stages": s, "GROUP_SIZE_M": 1,
         "block_io": "host_descriptor"}
        for bn, bk, s in itertools.product([32, 64, 128], [128, 256], [3, 4])]
    fused_small = [{**b, "GROUP_SIZE_M": 8, "block_io": io} for b in bases[:3]
                   for io in ("host_descriptor", "tensor_descriptor")]
    fused_big = [{**b, "GROUP_SIZE_M": 8, "block_io": io}
                 for b in (wide, {**wide, "BN": 128}, {**wide, "BN": 128, "num_stages": 4},
                           {**wide, "BM": 64, "num_warps": 4})
                 for io in ("host_descriptor", "tensor_descriptor")]
    rows = [{"BM": bm, "num_warps": w} for bm in (1, 2, 4) for w in (4, 8)]
    mm, tr = MATMUL, "transpose_matmul_blocks_k_1:transpose_matmul_blocks_k"
    fused, fused_k = "rmsnorm_matmul_2:rmsnorm_matmul", "rmsnorm_matmul_3:rmsnorm_matmul"
    norm = "rmsnorm_rows_4:rmsnorm_rows"
    cases: list[tuple[str, str, dict[str, int], list[Part]]] = []
    for n, grid, grid_t in ((1024, small, small_t), (4096, big, big_t)):
        cube = {"M": n, "N": n, "K": n}
        cases.append((f"matmul_{n}^3", "matmul", cube, [("mm", mm, grid)]))
        cases.append((f"transpose_matmul_{n}^3", "transpose_matmul", cube, [("mm", tr, grid_t)]))
    for m, n in ((2, 6144), (16, 4096)):
        sizes = {"M": m, "K": 4096, "N": n}
        cases.append((f"matmul_{m}x4096x{n}", "matmul", sizes,
                      [("mm", mm, skinny), ("split_k", SPLIT_K, split)]))
        cases.append((f"rmsnorm_matmul_{m}x4096x{n}", "rmsnorm_matmul", sizes,
                      [("fused", fused_k, fused_skinny), ("rows", norm, rows),
                       ("staged", STAGED, [])]))
    for n, grid in ((1024, fused_small), (4096, fused_big)):
        cube = {"M": n, "N": n, "K": n}
        cases.append((f"rmsnorm_matmul_{n}^3", "rmsnorm_matmul", cube,
                      [("fused", fused, grid), ("rows", norm, rows), ("staged", STAGED, [])]))
    return cases


# ---- here: emit and check on the CPU ------------------------------------------------------------
def emit(out: Path) -> int:
    """The modules of `MODULES`, each checked on the CPU interpreter first."""
    from axon.benchmarks.xe_triton_gpu import emit as emit_cases

    return emit_cases(out, cases=MODULES)


# ---- on the GPU: compile, check, time -----------------------------------------------------------
def _module(folder: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(program: str, sizes: dict[str, int]) -> list[Any]:
    """bf16 inputs on the GPU from a fixed seed: x normal, the gain in [0.5, 1.5), w normal
    with std 1/sqrt(K) (the suite's distributions)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    w = torch.randn(k, n, generator=gen) / math.sqrt(k)
    x = torch.randn((k, m) if program == "transpose_matmul" else (m, k), generator=gen)
    found = [x, w] if program != "rmsnorm_matmul" else [x, torch.rand(k, generator=gen) + 0.5, w]
    return [t.to(torch.bfloat16).cuda() for t in found]


def _function(folder: Path, where: str) -> Callable[..., Any]:
    if where == SPLIT_K:  # written by `run` before any worker starts
        return _module(folder, "split_k").split_k  # type: ignore[no-any-return]
    name, function = where.split(":")
    return getattr(_module(folder, name), function)  # type: ignore[no-any-return]


def _bound(fn: Callable[..., Any], args: list[Any], kwargs: Launch) -> Callable[[], Any]:
    return lambda: fn(*args, **kwargs)


def _staged(rows: Callable[..., Any], rows_kw: Launch, gemm: Callable[..., Any],
            gemm_kw: Launch, args: list[Any]) -> Callable[[], Any]:
    """The staged rmsnorm_matmul: the normalized rows, then their product with w."""
    return lambda: gemm(rows(args[0], args[1], **rows_kw), args[2], **gemm_kw)


def _compile(job: tuple[str, str, str, dict[str, int], Launch]) -> str | None:
    """One call at the benchmark shapes (a pool worker): Triton's cache then holds the
    kernel; the failure, if any."""
    import torch

    folder, program, where, sizes, launch = job
    try:
        args = _inputs(program, sizes)
        fn = _function(Path(folder), where)
        fn(*(args[:2] if where.endswith("rows") else args), **launch)
        torch.cuda.synchronize()
    except Exception as failure:  # noqa: BLE001 (a launch past the device's resources)
        return f"{where} {launch}: {type(failure).__name__}: {str(failure)[:100]}"
    return None


def run(folder: Path, out: Path, budget_s: float) -> int:
    """Compile, check and time every launch of `sweep_cases()`; stop timing past `budget_s`."""
    import multiprocessing

    import torch

    from axon.targets.xe_triton.harness.programs import PROGRAMS, reference
    from axon.targets.xe_triton.harness.timing import flush_buffer, time_gpu

    start = time.time()

    def say(text: str) -> None:
        print(f"[{time.time() - start:6.1f}s] {text}", flush=True)

    cases = sweep_cases()
    (folder / "split_k.py").write_text(SPLIT_K_SOURCE)
    jobs = [(str(folder), program, where, sizes, launch) for _, program, sizes, parts in cases
            for _, where, launches in parts if where != STAGED for launch in launches]
    say(f"{len(jobs)} launches to compile")
    pool = multiprocessing.get_context("spawn").Pool(max(1, (os.cpu_count() or 2) - 2))
    pending = pool.map_async(_compile, jobs, chunksize=1)
    compiled = {}
    for case, program, sizes, _ in cases:  # the baselines compile meanwhile
        compiled[case] = torch.compile(PROGRAMS[program], dynamic=False)
        compiled[case](*_inputs(program, sizes))
    for failure in filter(None, pending.get()):
        say(f"did not compile: {failure}")
    pool.close()
    flush = flush_buffer(L2_BYTES)
    results: dict[str, Any] = {}
    for case, program, sizes, parts in cases:
        args = _inputs(program, sizes)
        want = reference(program, args)
        scale = want.abs().max().item()
        baselines = {"eager": PROGRAMS[program], "compile": compiled[case]}
        found: dict[str, Any] = {name: time_gpu(_bound(f, args, {}), REPEATS, flush).as_json()
                                 for name, f in baselines.items()}
        found["launches"] = []
        say(f"{case}: eager {found['eager']['graph_ms']} ms, compile "
            f"{found['compile']['graph_ms']} ms (CUDA graphs)")
        best: dict[str, tuple[float, Callable[..., Any], Launch]] = {}
        for label, where, launches in parts:
            runs: list[tuple[Launch, Callable[[], Any]]]
            if where == STAGED:
                gemm = results.get(case.removeprefix("rmsnorm_"), {}).get("launches", [])
                if "rows" not in best or not gemm:
                    continue
                _, rows_fn, rows_kw = best["rows"]
                mm_kw = min((g for g in gemm if g["label"] == "mm"),
                            key=lambda g: g["graph_ms"])["launch"]
                mm_fn = _function(folder, MATMUL)
                runs = [({"rows": rows_kw, "mm": mm_kw},
                         _staged(rows_fn, rows_kw, mm_fn, mm_kw, args))]
            else:
                fn = _function(folder, where)
                given = args[:2] if label == "rows" else args
                runs = [(kw, _bound(fn, given, kw)) for kw in launches]
            for launch, call in runs:
                if time.time() - start > budget_s:
                    say("time budget reached")
                    break
                try:
                    got = call()
                    error = 0.0 if label == "rows" else (
                        (got.float() - want).abs().max().item() / scale)
                    if not error < 2e-2:
                        say(f"  {case} {label} {launch}: WRONG (error {error:.2e}), not timed")
                        continue
                    timing = time_gpu(call, REPEATS, flush)
                except Exception as failure:  # noqa: BLE001 (a launch that does not run)
                    say(f"  {case} {label} {launch}: {type(failure).__name__}")
                    continue
                graph_ms = timing.graph_ms if timing.graph_ms is not None else timing.events_ms
                found["launches"].append({"label": label, "launch": launch, "error": error,
                                          "events_ms": timing.events_ms, "graph_ms": graph_ms})
                if label not in best or graph_ms < best[label][0]:
                    best[label] = (graph_ms, fn if label == "rows" else call, launch)
        results[case] = found
        for label, _, _ in parts:
            ranked = sorted((g for g in found["launches"] if g["label"] == label),
                            key=lambda g: g["graph_ms"])
            for g in ranked[:5]:
                say(f"  {case} {label} {g['graph_ms']:.4f} ms {g['launch']}")
        (out / "sweep.json").write_text(json.dumps(results, indent=0))
    say("done")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--emit", type=Path, metavar="DIR", help="emit and check the modules")
    mode.add_argument("--run", type=Path, metavar="DIR", help="compile, check and time them")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")),
                        help="where sweep.json goes (default $OUT, else here)")
    parser.add_argument("--budget", type=float, default=400.0, metavar="S",
                        help="stop timing after S seconds (default 400)")
    args = parser.parse_args(argv)
    if args.emit:
        return emit(args.emit)
    return run(args.run, args.out, args.budget)


if __name__ == "__main__":
    sys.exit(main())
