"""The NKI lowering of the `ax.generic` forms tiled kernels contain: a multipass tiling's
masked partial row sums and its mean's count (`in0 / idx(N)`), and a product by a weight row
feeding a matmul (`(x * g) @ w`, the row applied to the transposed tile as a column). Each is
proved equal to its tiled kernel, emitted and run on the simulator against the reference
interpreter; wrong lowerings are refuted; what does not lower says what is missing."""

from __future__ import annotations

import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, SSAValue

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects import nki
from axon.dialects.ax import GenericOp
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.tile import ForOp, LoadOp
from axon.interpreter import run_function
from axon.targets.nki import lower
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.lower import Refused, kernel_of, lower_and_prove, lower_function
from axon.targets.nki.select import tiled_programs
from axon.targets.nki.simulator import SimulationWarning, load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.profiles import load_profile
from axon.tiling.kernels import tile_function, tilings
from axon.tiling.profiles import tile_spaces
from axon.tiling.search import profiled_kernel
from axon.tools.embed import parse_source

#: (program, tiling, tile sizes): each holds `ax.generic` ops, lowers and is proved
GENERIC = [("rmsnorm", "rows_multipass", {"BM": 128, "BK": 64}),
           ("rmsnorm_matmul", "blocks_k", {"BM": 128, "BN": 128, "BK": 64}),
           ("matmul_red_div", "blocks_k", {"BM": 128, "BN": 128, "BK": 64})]
#: three shapes: remainders of every tile (several K blocks), all ones, several full tiles
SHAPES = [{"M": 130, "N": 77, "K": 200}, {"M": 1, "N": 1, "K": 1},
          {"M": 300, "N": 512, "K": 256}]


def program(name: str) -> FuncOp:
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def trn2_kernel(name: str, kind: str) -> FuncOp:
    """The `kind` tiling of suite program `name` with Trn2's limits assumed."""
    func = program(name)
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    return profiled_kernel(func, tiling, load_profile("trn2"))


def generics(func: FuncOp) -> list[str]:
    return [str(op.generic_form()) for op in func.walk() if isinstance(op, GenericOp)]


def run(text: str, name: str, tmp_path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulationWarning)
        return simulate(load_kernel(path), *inputs, limits=load_limits("trn2"))


@pytest.mark.parametrize(("name", "kind", "tiles"), GENERIC)
def test_a_generic_kernel_lowers_is_proved_and_runs_like_the_reference(
        name: str, kind: str, tiles: dict[str, int], tmp_path: Path) -> None:
    kernel = trn2_kernel(name, kind)
    forms = generics(kernel)
    assert any(" of select(" in f for f in forms)  # a masked partial row sum
    lowered = lower_and_prove(kernel)
    assert len(lowered.proof_id) == 16
    assert not generics(lowered.func)
    module = emit_nki(lowered.func, tiles)
    func = program(name)
    for shape in SHAPES:
        sizes = {s: shape[s] for s in PROGRAMS[name].symbols}
        inputs = make_inputs(PROGRAMS[name], sizes)
        out = run(module.text, module.name, tmp_path, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert out.dtype == np.dtype(ml_dtypes.bfloat16) and out.shape == expected.shape
        rtol, atol = PROGRAMS[name].tolerance_at(sizes)
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{name} {kind} {sizes}")


def test_the_instructions_of_the_generic_forms() -> None:
    kernel = trn2_kernel("rmsnorm", "rows_multipass")
    assert any("/ idx(N)" in f for f in generics(kernel))
    names = [op.name for op in lower_function(kernel).walk() if isinstance(op, nki.NkiOp)]
    # the masked sum: one tensor_reduce of x * x; the count: the row sum of a ones tile
    assert names[:3] == ["nki.tensor_tensor", "nki.tensor_reduce", "nki.tensor_tensor"]
    assert names[3:6] == ["nki.memset", "nki.tensor_reduce", "nki.tensor_tensor"]
    module = emit_nki(lower_function(kernel), {"BM": 128, "BK": 64})
    assert "nl.affine_range(" in module.text.split("sequential_range")[-1]  # the write pass
    # (x * rstd * g) @ w: g scales the transposed tile as a column, no broadcast matmul
    matmul = lower_function(trn2_kernel("rmsnorm_matmul", "blocks_k"))
    assert sum(isinstance(op, nki.NcMatmulOp) for op in matmul.walk()) == 1
    assert sum(isinstance(op, nki.NcTransposeOp) for op in matmul.walk()) == 2
    # ... and rsqrt(ms + eps) scales the K loop's sum once, on its way out of PSUM
    (scale,) = [op for op in matmul.walk() if isinstance(op, nki.TensorScalarOp)
                and isinstance(op.operands[0].owner, ForOp)]
    assert isinstance(scale.operands[1].owner, nki.ActivationOp)
    assert scale.attrs()["op0"] == "multiply"
    # (x / sum(y)) @ w: the quotient by the row sums, once after the K loop
    quotient = lower_function(trn2_kernel("matmul_red_div", "blocks_k"))
    (scale,) = [op for op in quotient.walk() if isinstance(op, nki.TensorScalarOp)
                and isinstance(op.operands[0].owner, ForOp)]
    assert scale.attrs()["op0"] == "divide"


def _wrong_reduce(self: lower._Lowering, op: GenericOp, form: GenericForm,
                  target: Block) -> SSAValue:
    """A planted wrong lowering: the masked row sum taken as a row max."""
    return self.add(target, nki.TensorReduceOp.make(
        [self.tile(op.operands[0])], op="maximum", axes=(1,), keepdims=True, buffer="sbuf",
        dtype="f32"))


def _missing_count(self: lower._Lowering, op: GenericOp, form: GenericForm,
                   target: Block) -> SSAValue:
    """A planted wrong lowering: the mean's division by the count left out."""
    return self.tile(op.operands[0])


@pytest.mark.parametrize("planted", [_wrong_reduce, _missing_count])
def test_a_wrong_lowering_of_a_generic_is_refuted(planted: object,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    method = "generic_row_reduce" if planted is _wrong_reduce else "generic_elementwise"
    kernel = trn2_kernel("rmsnorm", "rows_multipass")
    monkeypatch.setattr(lower._Lowering, method, planted)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(kernel)
    monkeypatch.undo()
    assert lower_and_prove(kernel).proof_id


def test_the_masked_reductions_past_a_rows_end_use_a_column_mask() -> None:
    # softmax's max over masked blocks and layernorm's sum of (x - mean)^2 (not zero past the
    # row's end) once were refused; the mask is now built on chip (tests/.../test_nki_mask.py)
    for name in ("softmax", "layernorm"):
        lowered = lower_function(trn2_kernel(name, "rows_multipass"))
        assert any(isinstance(op, nki.AffineSelectOp) for op in lowered.walk())


def test_a_rank_one_partial_sum_is_carried_as_a_column() -> None:
    # `sum(y, axis=-1)` without keepdims: the K loop carries a rank-1 tile [BM] of one value
    # per row, held on chip as the column [BM, 1] (gemm_sum_scale's naive chain once stopped
    # here on a ShapeError, then on a refusal)
    (func,) = (op for op in parse_source("def f(y: bf16[M, N]):\n    return sum(y, axis=-1)\n",
                                         "f.py").ops if isinstance(op, FuncOp))
    (tiling,) = [t for t in tilings(func) if t.kind == "rows_k"]
    kernel = tile_function(func, tiling, *tile_spaces(load_profile("trn2")))
    lowered = lower_and_prove(kernel)
    (loop,) = [op for op in lowered.func.walk() if isinstance(op, ForOp)]
    assert str(loop.results[0].type) == "f32[BM, 1]"


def test_a_row_factor_applied_wrongly_after_the_loop_is_refuted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (x / s) @ w scaled by s after the loop instead of divided by it
    right = lower._row_factors

    def wrong(loop: ForOp) -> dict[int, tuple[SSAValue, SSAValue, SSAValue, str]]:
        return {k: (*v[:3], "multiply") for k, v in right(loop).items()}

    kernel = trn2_kernel("matmul_red_div", "blocks_k")
    monkeypatch.setattr(lower, "_row_factors", wrong)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(kernel)


def test_a_contraction_writing_its_transpose_swaps_the_operands(tmp_path: Path) -> None:
    # `(x @ w).T` as the nu-graph composes it, `out[d0 < N, d1 < M] = add over r0 of
    # in0[d1, r0] * in1[r0, d0]`: w's tile as loaded is the stationary operand and x's the
    # moving one transposed, so the product comes out of PSUM as the result's tile, with no
    # transpose of it (the program as written: the product, then a TensorE transpose of it)
    func = program("matmul_transpose")
    (variant,) = tiled_programs(func, "trn2", SHAPES[0], 2)[1:]
    assert "in0[d1, r0] * in1[r0, d0]" in "".join(
        str(op.generic_form()) for op in variant.walk() if isinstance(op, GenericOp))
    (tiling,) = [t for t in tilings(variant) if t.kind == "blocks_k"]
    kernel = profiled_kernel(variant, tiling, load_profile("trn2"))
    lowered = lower_and_prove(kernel)
    (matmul,) = [op for op in lowered.func.walk() if isinstance(op, nki.NcMatmulOp)]
    (transpose,) = [op for op in lowered.func.walk() if isinstance(op, nki.NcTransposeOp)]
    stationary, moving = (v.owner for v in matmul.operands)
    w_tile, x_tile = kernel_of(lowered.func).body.block.args[1], \
        kernel_of(lowered.func).body.block.args[0]
    assert isinstance(stationary, LoadOp) and stationary.source is w_tile
    assert isinstance(moving, nki.TensorCopyOp) and moving.operands[0].owner is transpose
    x_load = transpose.operands[0].owner
    assert isinstance(x_load, LoadOp) and x_load.source is x_tile
    module = emit_nki(lowered.func, {"BM": 128, "BN": 128, "BK": 64})
    for shape in SHAPES:
        sizes = {s: shape[s] for s in PROGRAMS["matmul_transpose"].symbols}
        inputs = make_inputs(PROGRAMS["matmul_transpose"], sizes)
        out = run(module.text, module.name, tmp_path, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert out.shape == expected.shape == (sizes["N"], sizes["M"])
        rtol, atol = PROGRAMS["matmul_transpose"].tolerance_at(sizes)
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{sizes}")
