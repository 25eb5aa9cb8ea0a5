"""The hand-written NKI baselines (`benchmarks/nki_baselines/`) compute their suite programs:
each runs on the NKI simulator with Trn2's limits against the suite's numpy reference at shapes
that are no multiple of the tiles (a partial last tile in every tiled dim), of size 1, and of
several full tiles; a size a kernel cannot take stops at its assertion with the reason."""

from __future__ import annotations

import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.targets.nki.simulator import KernelError, SimulationWarning, load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits

BASELINES = Path(__file__).resolve().parents[2] / "benchmarks" / "nki_baselines"

#: per baseline: shapes with remainders (rows past 128, columns past a chunk or a 512 block,
#: a contraction past 128), all ones, and several whole tiles
SHAPES = {
    "rmsnorm": [{"M": 130, "N": 77}, {"M": 1, "N": 1}, {"M": 384, "N": 1024}],
    "softmax": [{"M": 130, "N": 77}, {"M": 1, "N": 1}, {"M": 384, "N": 1024}],
    "cumsum": [{"M": 130, "N": 2100}, {"M": 1, "N": 1}, {"M": 256, "N": 4096}],
    "rope": [{"T": 130, "H": 3, "D2": 5}, {"T": 1, "H": 1, "D2": 1},
             {"T": 256, "H": 8, "D2": 64}],
    "matmul": [{"M": 130, "K": 200, "N": 600}, {"M": 1, "K": 1, "N": 1},
               {"M": 256, "K": 384, "N": 1024}],
    "rmsnorm_matmul": [{"M": 130, "K": 200, "N": 600}, {"M": 1, "K": 1, "N": 1},
                       {"M": 256, "K": 384, "N": 1024}, {"M": 2, "K": 1000, "N": 700},
                       # 49 K blocks: 3 row blocks per group (GROUP_BYTES), the last group 1
                       {"M": 400, "K": 6200, "N": 100}],
}


def run(name: str, inputs: list[np.ndarray]) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulationWarning)
        return simulate(load_kernel(BASELINES / f"{name}.py"), *inputs,
                        limits=load_limits("trn2"))


def test_every_baseline_is_tested() -> None:
    assert sorted(p.stem for p in BASELINES.glob("*.py")) == sorted(SHAPES)


@pytest.mark.parametrize(("name", "sizes"),
                         [(n, s) for n, shapes in SHAPES.items() for s in shapes])
def test_the_baseline_computes_its_program(name: str, sizes: dict[str, int]) -> None:
    program = PROGRAMS[name]
    inputs = make_inputs(program, sizes, seed=3)
    out = run(name, inputs)
    want = program.reference(*inputs)
    assert out.dtype == np.dtype(ml_dtypes.bfloat16) and out.shape == want.shape
    rtol, atol = program.tolerance_at(sizes)
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=rtol, atol=atol,
                               err_msg=f"{name} {sizes}")


def test_a_wrong_baseline_is_told_apart() -> None:
    # the check above is not vacuous: softmax's output against the reference of its transpose
    program = PROGRAMS["softmax"]
    (x,) = make_inputs(program, {"M": 64, "N": 64})
    out = run("softmax", [x])
    rtol, atol = program.tolerance
    assert not np.allclose(out.astype(np.float64), program.reference(x.T), rtol=rtol, atol=atol)


@pytest.mark.parametrize(("name", "inputs", "message"), [
    ("matmul", [np.zeros((4, 5), np.float32), np.zeros((5, 6), np.float32)],
     "x and w must share a 2-byte dtype"),
    ("matmul", [np.zeros((4, 5), ml_dtypes.bfloat16), np.zeros((6, 6), ml_dtypes.bfloat16)],
     "their contracted dims differ"),
    ("rmsnorm", [np.zeros((4, 60000), ml_dtypes.bfloat16), np.zeros(60000, ml_dtypes.bfloat16)],
     "more than SBUF's"),
    ("rope", [np.zeros((4, 2, 6), ml_dtypes.bfloat16), np.zeros((4, 2), ml_dtypes.bfloat16),
              np.zeros((4, 3), ml_dtypes.bfloat16)], "expected (4, 3)"),
])
def test_a_size_the_kernel_cannot_take_stops_at_its_assertion(
        name: str, inputs: list[np.ndarray], message: str) -> None:
    with pytest.raises(KernelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(name, inputs)
