"""The NKI emitter: suite kernels tiled for Trn2, lowered to `nki` and proved, printed as
current-API modules and run unchanged on the NKI simulator (Trn2 limits) against the reference
interpreter of the untiled program, at three shapes: sizes that are no multiple of the tiles
(remainder tiles padded), sizes of 1, and several programs of full tiles with a remainder."""

from __future__ import annotations

import ast
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects.form.dtypes import DTYPES
from axon.interpreter import run_function
from axon.targets.nki.emit import EmittedKernel, emit_nki
from axon.targets.nki.lower import Refused, lower_and_prove
from axon.targets.nki.simulator import KernelError, load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits
from tests.targets.nki.lowering import COVERED, program, trn2_kernel

#: tile sizes: the NeuronCore's 128 partitions, and 128-deep contraction blocks
TILES = {"BM": 128, "BN": 128, "BK": 128}
#: three shapes per size symbol: remainders of every tile, all ones, several tiles
SHAPES = [{"M": 130, "N": 77, "K": 200}, {"M": 1, "N": 1, "K": 1},
          {"M": 300, "N": 512, "K": 300}]
#: a kernel holding the whole contraction on chip assumes K <= 128 (the partitions)
WHOLE_K = [{"M": 130, "N": 77, "K": 100}, {"M": 1, "N": 1, "K": 1},
           {"M": 300, "N": 512, "K": 128}]


def emitted(name: str, kind: str) -> EmittedKernel:
    """The module of the `kind` kernel of suite program `name`, lowered and proved."""
    return emit_nki(lower_and_prove(trn2_kernel(program(name), kind)).func, TILES)


def run(module: EmittedKernel, tmp_path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    path = tmp_path / f"{module.name}.py"
    path.write_text(module.text)
    return simulate(load_kernel(path), *inputs, limits=load_limits("trn2"))


@pytest.mark.parametrize(("name", "kind"), COVERED)
def test_the_module_runs_on_the_simulator_and_matches_the_reference(
        name: str, kind: str, tmp_path: Path) -> None:
    module = emitted(name, kind)
    func = program(name)
    rtol, atol = DTYPES["bf16"].tolerance
    for shape in WHOLE_K if (name, kind) == ("matmul", "rows") else SHAPES:
        sizes = {s: shape[s] for s in PROGRAMS[name].symbols}
        inputs = make_inputs(PROGRAMS[name], sizes)
        out = run(module, tmp_path, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert out.dtype == np.dtype(ml_dtypes.bfloat16) and out.shape == expected.shape
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{name} {kind} {sizes}")


def test_the_module_is_current_api_and_self_contained() -> None:
    text = emitted("matmul", "rows_k").text
    tree = ast.parse(text)
    imports = [node for node in tree.body if isinstance(node, ast.Import)]
    assert [(a.name, a.asname) for node in imports for a in node.names] == \
        [("nki", None), ("nki.isa", "nisa"), ("nki.language", "nl")]
    (jit,) = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [ast.unparse(d) for d in jit.decorator_list] == ["nki.jit"]
    assert [a.arg for a in jit.args.args] == ["in0", "in1"]
    assert "buffer=nl.shared_hbm" in text and "nl.sequential_range(" in text
    assert "nl.affine_range(" in text
    # the product accumulates into the PSUM tile itself, no add of two PSUM tiles
    assert "nisa.nc_matmul(dst=t0, " in text and "nisa.tensor_tensor" not in text


def test_a_wrong_module_is_told_apart(tmp_path: Path) -> None:
    module = emitted("softmax", "rows")
    wrong = EmittedKernel(module.name, module.text.replace("op=nl.exp", "op=nl.sigmoid"))
    assert wrong.text != module.text
    sizes = {"M": 130, "N": 77}
    inputs = make_inputs(PROGRAMS["softmax"], sizes)
    (expected,) = run_function(program("softmax"), inputs, sizes)
    out = run(wrong, tmp_path, inputs)
    assert not np.allclose(out.astype(np.float64), expected.astype(np.float64), rtol=1e-2,
                           atol=1e-2)


def test_sizes_past_the_kernels_assumptions_stop_at_an_assertion(tmp_path: Path) -> None:
    module = emitted("matmul", "rows_k")
    inputs = make_inputs(PROGRAMS["matmul"], {"M": 4, "N": 600, "K": 4})
    with pytest.raises(KernelError, match=r"matmul_rows_k.py:\d+: .*assumes 4\*N <= 2048"):
        run(module, tmp_path, inputs)


def test_missing_tile_sizes_are_refused() -> None:
    lowered = lower_and_prove(trn2_kernel(program("mul"), "rows"))
    with pytest.raises(Refused, match="no value for tile parameter.s. BM"):
        emit_nki(lowered.func, {})
