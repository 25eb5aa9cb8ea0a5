"""How long the NKI simulator takes on the tutorial-algorithm kernels (`benchmarks/nki_kernels/`).

    python -m axon.benchmarks.nki_simulator                  # rmsnorm 1024x1024, trn2 limits
    python -m axon.benchmarks.nki_simulator --all --repeats 5

One row per kernel: its input shapes, the instructions it executed, and the median wall time of
`--repeats` runs of `simulate` (loading the kernel file excluded), with and without the trace.
Issue 12 asks for rmsnorm at 1024 x 1024 in under 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from axon.targets.nki.simulator import HardwareLimits, JitKernel, load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits

KERNELS = Path(__file__).resolve().parent / "nki_kernels"


def _cases(rng: np.random.Generator) -> dict[str, list[np.ndarray]]:
    """Inputs of each kernel, float32, at sizes a tutorial would use."""
    def normal(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    return {
        "rmsnorm": [normal(1024, 1024), normal(1024)],
        "softmax": [normal(1024, 1024)],
        "tensor_add": [normal(1024, 1024), normal(1024, 1024)],
        "transpose2d": [normal(1024, 1024)],
        "matmul_tiled": [normal(512, 512), normal(512, 1024)],
        "cumsum": [normal(512, 1024)],
    }


def _median_seconds(kernel: JitKernel, inputs: list[np.ndarray], limits: HardwareLimits,
                    trace: bool, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        simulate(kernel, *inputs, limits=limits, trace=trace)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    """Print one row per kernel."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--all", action="store_true", help="every kernel, not only rmsnorm")
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing (3)")
    parser.add_argument("--profile", default="trn2", help="the limits' profile (trn2)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    limits = load_limits(args.profile)
    cases = _cases(np.random.default_rng(0))
    names = sorted(cases) if args.all else ["rmsnorm"]
    print(f"{'kernel':<14}{'inputs':<28}{'instructions':>13}{'seconds':>10}{'traced s':>10}")
    for name in names:
        kernel = load_kernel(KERNELS / f"{name}.py")
        inputs = cases[name]
        _, trace = simulate(kernel, *inputs, limits=limits, trace=True)
        plain = _median_seconds(kernel, inputs, limits, False, args.repeats)
        traced = _median_seconds(kernel, inputs, limits, True, args.repeats)
        shapes = " ".join("x".join(str(n) for n in x.shape) for x in inputs)
        print(f"{name:<14}{shapes:<28}{len(trace):>13}{plain:>10.3f}{traced:>10.3f}")


if __name__ == "__main__":
    main()
