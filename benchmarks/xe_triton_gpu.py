"""First GPU measurement of the Triton target's emitted kernels (issue 11, first slice).

    python -m axon.benchmarks.xe_triton_gpu --emit DIR      # here: emit, check on the CPU
    python benchmarks/xe_triton_gpu.py --run DIR            # on the GPU machine: check, time

`--emit` tiles a handful of suite programs (bf16, the tiling kind and tile sizes below), emits
each kernel as a Triton module into DIR, and first checks the same kernel in float32 on
Triton's CPU interpreter against the reference interpreter at three small shapes (remainders
and sizes of 1): a case that fails there is not written. `--run` needs only torch and Triton
(the GPU machine has no Axon dependencies): for each module it generates the inputs from a
seed at the benchmark shape, checks the kernel against the program written in torch (float32
math, bf16 tolerance), and only then times it, torch eager and `torch.compile` with
`triton.testing.do_bench` (which flushes L2), printing a table (median ms, speedup over the
faster baseline) and the geomean. The tile sizes are fixed here, not tuned: this measures the
emitter's first slice (plain pointer arithmetic, no block I/O, no swizzle, no autotuning).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

#: (program, tiling kind, benchmark sizes, tile sizes with num_warps)
CASES: list[tuple[str, str, dict[str, int], dict[str, int]]] = [
    ("mul", "blocks", {"M": 4096, "N": 4096}, {"BM": 32, "BN": 128, "num_warps": 4}),
    ("softmax", "rows", {"M": 4096, "N": 4096}, {"BM": 2, "num_warps": 8}),
    ("rmsnorm", "rows", {"M": 4096, "N": 4096}, {"BM": 2, "num_warps": 8}),
    ("matmul", "blocks_k", {"M": 4096, "N": 4096, "K": 4096},
     {"BM": 128, "BN": 128, "BK": 64, "num_warps": 8}),
    ("silu_matmul", "blocks_k", {"M": 4096, "N": 4096, "K": 4096},
     {"BM": 128, "BN": 128, "BK": 64, "num_warps": 8}),
    ("rmsnorm_matmul", "blocks_k", {"M": 4096, "N": 4096, "K": 4096},
     {"BM": 128, "BN": 128, "BK": 64, "num_warps": 8}),
]


# ---- here: emit and check on the CPU ------------------------------------------------------------
def emit(out: Path) -> int:
    from xdsl.dialects.func import FuncOp

    from axon.benchmarks.suite import PROGRAMS
    from axon.dialects.ax import TensorType
    from axon.targets.xe_triton.check import check_emitted
    from axon.targets.xe_triton.emit import emit_triton
    from axon.tiling.kernels import tile_function, tilings
    from axon.tools.embed import parse_source

    def function(name: str, dtype: str) -> FuncOp:
        source = PROGRAMS[name].source.replace("bf16[", f"{dtype}[")
        (func,) = (op for op in parse_source(source, f"{name}.py").ops
                   if isinstance(op, FuncOp))
        return func

    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for name, kind, sizes, tiles in CASES:
        kernels = []
        for dtype in ("f32", "bf16"):
            func = function(name, dtype)
            (tiling,) = [t for t in tilings(func) if t.kind == kind]
            kernels.append((func, tile_function(func, tiling, "registers", "registers")))
        (f32, f32_kernel), (_, kernel) = kernels
        symbols = sorted({s for t in f32.function_type.inputs.data if isinstance(t, TensorType)
                          for d in t.shape for s in d.symbols()})
        small = [{s: max(1, n - k % 3) for k, s in enumerate(symbols)} for n in (5, 1, 11)]
        blocks = {p: 4 for p in tiles if p != "num_warps"}
        report = check_emitted(f32, f32_kernel, small, blocks)
        print(f"{name:16} {kind:10} CPU interpreter at {len(small)} shapes: "
              f"{'passed' if report.passed else 'FAILED'}", flush=True)
        if not report.passed:
            continue
        emitted = emit_triton(kernel, device="h200", tile_sizes=tiles)
        (out / f"{emitted.name}.py").write_text(emitted.text)
        manifest.append({"program": name, "module": emitted.name, "sizes": sizes,
                         "tiles": tiles,
                         "inputs": [[str(d) for d in t.shape]
                                    for t in kernel.function_type.inputs.data
                                    if isinstance(t, TensorType)]})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{len(manifest)} of {len(CASES)} modules written to {out.name}/")
    return 0 if len(manifest) == len(CASES) else 1


# ---- on the GPU: check, then time ---------------------------------------------------------------
def reference(name: str, args: list[Any]) -> Any:
    """The program in torch with float32 math (`eager`'s on float32 copies), rounded to bf16."""
    import torch

    return eager(name)(*[a.float() for a in args]).to(torch.bfloat16)


def eager(name: str) -> Any:
    """The program written in torch (what eager and torch.compile run, in bf16)."""
    import torch

    def run(*a: Any) -> Any:
        if name == "mul":
            return a[0] * a[1]
        if name == "softmax":
            return torch.softmax(a[0], dim=-1)
        if name == "rmsnorm":
            return a[0] * torch.rsqrt((a[0] * a[0]).mean(-1, keepdim=True) + 1e-6) * a[1]
        if name == "matmul":
            return a[0] @ a[1]
        if name == "silu_matmul":
            return torch.nn.functional.silu(a[0]) @ a[1]
        if name == "rmsnorm_matmul":
            return (a[0] * torch.rsqrt((a[0] * a[0]).mean(-1, keepdim=True) + 1e-6)
                    * a[1]) @ a[2]
        raise ValueError(f"no torch form of {name}")
    return run


def run(folder: Path) -> int:
    import importlib.util

    import torch
    import triton

    torch.manual_seed(0)
    print(f"{'program':16} {'kernel':26} {'max err':>8} {'axon ms':>8} {'eager ms':>9} "
          f"{'compile ms':>10} {'speedup':>8}")
    speedups = []
    for case in json.loads((folder / "manifest.json").read_text()):
        spec = importlib.util.spec_from_file_location(case["module"],
                                                      folder / f"{case['module']}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernel = getattr(module, case["module"])
        sizes = case["sizes"]
        args = [torch.randn([eval_dim(d, sizes) for d in shape], device="cuda",
                            dtype=torch.bfloat16) for shape in case["inputs"]]
        params = {k: v for k, v in case["tiles"].items()}
        got = kernel(*args, **params)
        want = reference(case["program"], args)
        err = ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()
        if not err < 2e-2:
            print(f"{case['program']:16} {case['module']:26} {err:8.2e}  WRONG: not timed")
            continue
        base = eager(case["program"])
        compiled = torch.compile(base)
        ms = timed(triton, kernel, args, params)
        eager_ms = timed(triton, base, args, {})
        compile_ms = timed(triton, compiled, args, {})
        speedup = min(eager_ms, compile_ms) / ms
        speedups.append(speedup)
        print(f"{case['program']:16} {case['module']:26} {err:8.2e} {ms:8.4f} {eager_ms:9.4f} "
              f"{compile_ms:10.4f} {speedup:7.2f}x", flush=True)
    if speedups:
        geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        print(f"geomean speedup over the faster of eager and torch.compile: {geomean:.2f}x "
              f"({len(speedups)} kernels)")
    return 0


def timed(triton: Any, fn: Any, args: list[Any], params: dict[str, int]) -> float:
    """Median milliseconds of `fn(*args, **params)` under `do_bench` (L2 flushed each run)."""
    return float(triton.testing.do_bench(lambda: fn(*args, **params)))


def eval_dim(text: str, sizes: dict[str, int]) -> int:
    """A dim's extent: a size symbol or an integer (the programs here have no other dims)."""
    return int(text) if text.isdigit() else sizes[text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--emit", type=Path, metavar="DIR", help="emit and check the modules")
    mode.add_argument("--run", type=Path, metavar="DIR", help="check and time them on a GPU")
    args = parser.parse_args(argv)
    return emit(args.emit) if args.emit else run(args.run)


if __name__ == "__main__":
    sys.exit(main())
