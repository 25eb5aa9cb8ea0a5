"""Every proved kernel of every suite program computes what the program does: at three shapes
or more, with sizes that are not multiples of the tiles and dims of size 1 (item 6 of the tiled
level). The kernels are those the `tile` search proves for the program as the frontend gives it,
under the h200 profile (no symbolic limits, so every tiling that is right is proved)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.interpreter import run_function
from axon.targets.profiles import load_profile
from axon.tiling.search import tile_program
from axon.tools.embed import parse_source
from axon.verifier import ProofBudget

#: programs with no proved kernel yet
NOT_YET: set[str] = set()
#: sizes for every symbol, and tile sizes for every parameter: remainders, then ones, then a mix
SHAPES = [(5, 2), (1, 3), (7, 4)]


def shapes_for(func: FuncOp, params: list[str]) -> list[tuple[dict[str, int], dict[str, int]]]:
    symbols = sorted({s for t in func.function_type.inputs.data if isinstance(t, TensorType)
                      for d in t.shape for s in d.symbols()})
    found = []
    for n, (size, block) in enumerate(SHAPES):
        # neighbouring symbols get different sizes, so a swapped dim shows
        sizes = {s: max(1, size - (k + n) % 3) if size > 1 else 1
                 for k, s in enumerate(symbols)}
        found.append((sizes, {p: block + k % 2 for k, p in enumerate(params)}))
    return found


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_proved_kernel_of_the_program_computes_what_it_does(name: str) -> None:
    module = parse_source(PROGRAMS[name].source, f"{name}.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    result = tile_program([func], load_profile("h200"), {}, budget=ProofBudget.nominal(3.0),
                          time_limit_s=30)
    assert bool(result.proved) == (name not in NOT_YET), [p.reason for p in result.proposals]
    rng = np.random.default_rng(0)
    for proposal in result.proved:
        assert proposal.kernel is not None and proposal.proof_id
        kernel_op = next(op for op in proposal.kernel.walk() if op.name == "tile.kernel")
        params = [str(p.data) for p in kernel_op.params.data]  # type: ignore[attr-defined]
        for sizes, blocks in shapes_for(func, params):
            inputs = [rng.uniform(0.5, 1.5, tuple(d.evaluate(sizes) for d in t.shape))
                      for t in func.function_type.inputs.data if isinstance(t, TensorType)]
            want = run_function(func, inputs, sizes, exact=True)
            got = run_function(proposal.kernel, inputs, {**sizes, **blocks}, exact=True)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12,
                                           err_msg=f"{proposal.tiling.kind} at {sizes} "
                                                   f"{blocks}")
