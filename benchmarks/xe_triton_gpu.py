"""A first bundle of the Triton target's kernels for `axon-bench` (issue 11, first slice).

    python -m axon.benchmarks.xe_triton_gpu --emit DIR     # here: emit, check on the CPU
    python -m axon.tools.axon_bench --run DIR              # on the GPU machine: check, time

`--emit` tiles a handful of suite programs (bf16, the tiling kind and tile sizes below), first
checks each kernel in float32 on Triton's CPU interpreter against the reference interpreter at
three small shapes (remainders and sizes of 1), and writes those that pass as a candidate bundle
(`targets/xe_triton/harness/bundle.py`) at the benchmark shapes: one case per program, one
candidate each. `axon-bench` then checks and times them against torch eager and `torch.compile`
(docs/xe_triton.md). The tile sizes are fixed here, not tuned: this measures the emitter's first
slice; selection (the tile search and the nu-graph's variants) writes the full bundles.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import NORMAL, PROGRAMS, Program
from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.targets.xe_triton.check import check_emitted
from axon.targets.xe_triton.emit import emit_triton
from axon.targets.xe_triton.harness.bundle import (
    Bundle,
    Candidate,
    Case,
    Init,
    TensorSpec,
    write_bundle,
)
from axon.tiling.kernels import tile_function, tilings
from axon.tools.embed import parse_source
from axon.tools.version import axon_version

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


def function(program: Program, dtype: str) -> FuncOp:
    """The program's function with its parameters retyped to `dtype`."""
    module = parse_source(program.retyped_source(dtype), f"{program.name}.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func


def tensor_specs(program: Program, func: FuncOp, sizes: dict[str, int]
                 ) -> tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]]:
    """The inputs (with the suite's inits, scales evaluated at `sizes`) and outputs."""
    inputs = []
    for param in program.params:
        init = program.inits.get(param.name, NORMAL)
        inputs.append(TensorSpec(param.shape(sizes), param.dtype, param.name,
                                 Init(init.dist, init.low, init.high,
                                      init.scale(sizes) if init.scale else 1.0)))
    outputs = tuple(TensorSpec(tuple(d.evaluate(sizes) for d in t.shape), t.dtype)
                    for t in func.function_type.outputs.data if isinstance(t, TensorType))
    return tuple(inputs), outputs


def roofline_counts(sizes: dict[str, int], inputs: tuple[TensorSpec, ...],
                    outputs: tuple[TensorSpec, ...]) -> tuple[int, int]:
    """(flops, bytes) of the program as written: each tensor moved once; 2 M N K for a program
    with a contraction over K, else one operation per result element (these programs' floors
    are then bandwidth-bound, so the count does not move them)."""
    nbytes = sum(s.numel * DTYPES[s.dtype].storage.itemsize for s in (*inputs, *outputs))
    if "K" in sizes:
        return 2 * sizes["M"] * sizes["N"] * sizes["K"], nbytes
    return sum(s.numel for s in outputs), nbytes


def emit(out: Path) -> int:
    """Check and write the bundle; 0 when every case was written."""
    cases, modules = [], {}
    for name, kind, sizes, tiles in CASES:
        program = PROGRAMS[name]
        kernels = []
        for dtype in ("f32", program.dtype):
            func = function(program, dtype)
            (tiling,) = [t for t in tilings(func) if t.kind == kind]
            kernels.append((func, tile_function(func, tiling, "registers", "registers")))
        (f32, f32_kernel), (func, kernel) = kernels
        small = [{s: max(1, n - k % 3) for k, s in enumerate(sorted(program.symbols))}
                 for n in (5, 1, 11)]
        report = check_emitted(f32, f32_kernel, small,
                               {p: 4 for p in tiles if p != "num_warps"})
        print(f"{name:16} {kind:10} CPU interpreter at {len(small)} shapes: "
              f"{'passed' if report.passed else 'FAILED'}", flush=True)
        if not report.passed:
            continue
        emitted = emit_triton(kernel, device="h200", tile_sizes=tiles)
        inputs, outputs = tensor_specs(program, func, sizes)
        flops, nbytes = roofline_counts(sizes, inputs, outputs)
        case_name = f"{name}_" + "x".join(str(sizes[s]) for s in program.symbols)
        cid = f"{kind}." + ".".join(f"{k}{v}" for k, v in tiles.items() if k != "num_warps") \
            + f".w{tiles['num_warps']}"
        module = f"{case_name}/{cid}.py"
        modules[module] = emitted.text
        cases.append(Case(case_name, name, program.tier, dict(sizes), program.dtype,
                          program.tolerance, flops, nbytes, inputs, outputs,
                          (Candidate(cid, module, emitted.name, dict(tiles), kind),)))
    write_bundle(Bundle(out, "h200", 0, axon_version(), tuple(cases)), modules)
    print(f"{len(cases)} of {len(CASES)} cases written to {out.name}/; time them with "
          f"python -m axon.tools.axon_bench --run {out.name}")
    return 0 if len(cases) == len(CASES) else 1


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--emit", type=Path, metavar="DIR", required=True,
                        help="emit, check and write the bundle")
    return emit(parser.parse_args(argv).emit)


if __name__ == "__main__":
    sys.exit(main())
