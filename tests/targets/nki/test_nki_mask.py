"""The column mask built on chip: a k-loop tiling's masked row reductions (`max` / `min over r0
in [0, BK) of select(idx(BK*k + r0) < idx(N), in0[d0, r0], in0[d0, 0])`, and the sum of a tile
that is not zero past the row's end, `exp(x - max)` or `(x - mean)^2`) lower to `affine_select`
with the bound `N - BK*k` as its offset (`size_offset`), are proved equal to the tiled kernel,
emitted and run on the simulator against the reference interpreter at rows that are not a
multiple of the block; a mask off by one or a wrong fill is refuted."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, SSAValue

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects import nki
from axon.dialects.ax import GenericOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Const, Index, ScalarExpr
from axon.dialects.tile import KernelOp
from axon.interpreter import run_function
from axon.targets.nki import lower
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.lower import Refused, lower_and_prove
from axon.targets.nki.select import KernelRunner
from axon.targets.profiles import load_profile
from axon.tiling.kernels import tilings
from axon.tiling.search import profiled_kernel
from axon.tools.embed import parse_source

#: a row min of a k loop (handwritten): the masked columns take column 0's value
ROW_MIN = "def f(x: bf16[M, N]):\n    return min(x, axis=-1, keepdims=True)\n"
#: (program, tiling, tiles): suite kernels whose masked reductions need the mask; the
#: multipass softmax holds a masked max and a masked sum of exp(x - max), layernorm a masked
#: sum of (x - mean)^2, softmax_matmul's K loop the softmax's max and sum
SUITE = [("softmax", "rows_multipass", {"BM": 128, "BK": 64}),
         ("layernorm", "rows_multipass", {"BM": 128, "BK": 64}),
         ("softmax_matmul", "rows_k", {"BM": 128, "BK": 64})]
#: rows of 130 (two full blocks of 64 and one column), a single column, one full block
SHAPES = [{"M": 130, "N": 130, "K": 130}, {"M": 1, "N": 1, "K": 1},
          {"M": 3, "N": 64, "K": 64}]


def parsed(source: str, name: str) -> FuncOp:
    (func,) = (op for op in parse_source(source, f"{name}.py").ops if isinstance(op, FuncOp))
    return func


def trn2_kernel(func: FuncOp, kind: str) -> FuncOp:
    """The `kind` tiling of `func` with Trn2's limits assumed."""
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    return profiled_kernel(func, tiling, load_profile("trn2"))


def masked_forms(func: FuncOp) -> list[str]:
    return [str(op.generic_form()) for op in func.walk()
            if isinstance(op, GenericOp) and "select((idx(BK*k" in str(op.generic_form())]


def simulated(text: str, name: str, tmp_path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    """The module's output on the simulator (Trn2's limits, a warning an error)."""
    return KernelRunner("trn2", tmp_path).run(text, inputs, name)[0]


def check_runs(func: FuncOp, kernel: FuncOp, tiles: dict[str, int], shapes: list[dict[str, int]],
               inputs_at: object, tolerance_at: object, tmp_path: Path) -> str:
    """Lower, prove, emit and simulate `kernel` at each shape against the interpreter running
    `func`; the emitted text."""
    lowered = lower_and_prove(kernel)
    assert len(lowered.proof_id) == 16
    assert not any(isinstance(op, GenericOp) for op in lowered.func.walk())
    masks = [op for op in lowered.func.walk() if isinstance(op, nki.AffineSelectOp)]
    assert masks and all(op.attrs().get("size_offset") for op in masks)
    module = emit_nki(lowered.func, tiles)
    for sizes in shapes:
        inputs = inputs_at(sizes)  # type: ignore[operator]
        out = simulated(module.text, module.name, tmp_path, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert out.dtype == np.dtype(ml_dtypes.bfloat16) and out.shape == expected.shape
        rtol, atol = tolerance_at(sizes)  # type: ignore[operator]
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{func.sym_name.data} {sizes}")
    return module.text


@pytest.mark.parametrize(("name", "kind", "tiles"), SUITE)
def test_a_suite_kernel_with_masked_reductions_lowers_and_runs(
        name: str, kind: str, tiles: dict[str, int], tmp_path: Path) -> None:
    func = parsed(PROGRAMS[name].source, name)
    kernel = trn2_kernel(func, kind)
    assert masked_forms(kernel)
    text = check_runs(
        func, kernel, tiles, SHAPES,
        lambda shape: make_inputs(PROGRAMS[name], {s: shape[s] for s in PROGRAMS[name].symbols}),
        lambda shape: PROGRAMS[name].tolerance_at({s: shape[s] for s in PROGRAMS[name].symbols}),
        tmp_path)
    # the bound inside the K loop is the traced integer N - BK*k (K for softmax_matmul)
    bound = "K" if name == "softmax_matmul" else "N"
    assert f"cmp_op=nl.greater, offset={bound} - BK*k" in text


def test_a_masked_row_min_takes_column_zero_past_the_end(tmp_path: Path) -> None:
    func = parsed(ROW_MIN, "f")
    kernel = trn2_kernel(func, "rows_k")
    (form,) = masked_forms(kernel)
    assert form.startswith("out[d0 < BM, d1 < 1] = min over") and "in0[d0, 0])" in form
    rng = np.random.default_rng(0)

    def inputs(shape: dict[str, int]) -> list[np.ndarray]:
        # positive values: a zero fill past the end would win the min, and be caught
        x = rng.uniform(1.0, 4.0, (shape["M"], shape["N"]))
        return [x.astype(ml_dtypes.bfloat16)]

    shapes = [{"M": 130, "N": 130}, {"M": 1, "N": 1}, {"M": 5, "N": 65}]
    text = check_runs(func, kernel, {"BM": 128, "BK": 64}, shapes, inputs,
                      lambda shape: (1e-2, 1e-2), tmp_path)
    assert "nisa.tensor_reduce(dst=" in text and "op=nl.minimum" in text


def test_the_bound_is_read_off_the_mask() -> None:
    k, r0, n = IntExpr.sym("k"), IntExpr.sym("r0"), IntExpr.sym("N")
    inside = Call("lt", (Index(k * 64 + r0), Index(n)))
    assert lower._column_bound(inside, "d0", "r0") == (n - k * 64, -1, True)
    flipped = Call("ge", (Index(n), Index(k * 64 + r0)))
    assert lower._column_bound(flipped, "d0", "r0") == (n - k * 64, -1, False)
    # a bound on the row, or one not linear in the column, is not a column mask
    assert isinstance(lower._column_bound(Call("lt", (Index(IntExpr.sym("d0") + r0), Index(n))),
                                          "d0", "r0"), str)
    assert isinstance(lower._column_bound(Call("lt", (Index(r0 * r0), Index(n))), "d0", "r0"),
                      str)
    assert isinstance(lower._column_bound(Const(True), "d0", "r0"), str)


def test_an_affine_select_offset_names_no_dim_of_its_tile() -> None:
    x = nki.MemsetOp.make([], value=1.0, shape=[4, 8], dtype="f32", buffer="sbuf")
    made = nki.AffineSelectOp.make([x.results[0]], pattern=[-1], channel_multiplier=0,
                                   offset=1, size_offset=["N - 8*k"], cmp_op="greater",
                                   on_false_value=0.0, buffer="sbuf")
    assert "(idx(N - 8*k - p1 + 1) > " in str(made.generic_form()), made.generic_form()
    with pytest.raises(ShapeError, match="size_offset p1 names the tile's own dims"):
        nki.AffineSelectOp.make([x.results[0]], pattern=[-1], channel_multiplier=0, offset=0,
                                size_offset=["p1"], cmp_op="greater", on_false_value=0.0,
                                buffer="sbuf")


def _off_by_one(condition: ScalarExpr, row: str, column: str
                ) -> tuple[IntExpr, int, bool] | str:
    """A planted wrong mask: the bound one column further (the padded column kept)."""
    bound = RIGHT_BOUND(condition, row, column)
    if isinstance(bound, str):
        return bound
    offset, step, strict = bound
    return offset + 1, step, strict


def _zero_fill(self: lower._Lowering, x: SSAValue, bound: tuple[IntExpr, int, bool],
               reduce: str, target: Block) -> SSAValue:
    """A planted wrong fill: the max's masked columns take 0.0, not column 0."""
    return RIGHT_MASK(self, x, bound, "add", target)


RIGHT_BOUND = lower._column_bound
RIGHT_MASK = lower._Lowering.column_masked


@pytest.mark.parametrize(("kind", "source", "tiling"), [
    ("off_by_one", PROGRAMS["softmax"].source, "rows_multipass"),
    ("off_by_one", ROW_MIN, "rows_k"),
    ("zero_fill", ROW_MIN, "rows_k")])
def test_a_wrong_mask_is_refuted(kind: str, source: str, tiling: str,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # (softmax's max taking 0.0 past the end is right: softmax does not change when every
    # score of a row is shifted by one amount, and the proof is of the whole kernel)
    kernel = trn2_kernel(parsed(source, "f"), tiling)
    if kind == "off_by_one":
        monkeypatch.setattr(lower, "_column_bound", _off_by_one)
    else:
        monkeypatch.setattr(lower._Lowering, "column_masked", _zero_fill)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(kernel)
    monkeypatch.undo()
    assert lower_and_prove(kernel).proof_id


def test_a_masked_reduction_with_another_fill_says_what_is_missing() -> None:
    # a min whose masked columns read 0.0 is no k-loop tiling's: its refusal names the fills
    kernel = trn2_kernel(parsed(ROW_MIN, "f"), "rows_k")
    (kernel_op,) = [o for o in kernel.walk() if isinstance(o, KernelOp)]
    op = next(o for o in kernel.walk() if isinstance(o, GenericOp))
    form = op.generic_form()
    assert isinstance(form.body, Call)
    wrong = replace(form, body=Call("select", (*form.body.args[:2], Const(0.0))))
    reason = lower._Lowering(kernel_op).generic_row_reduce(op, wrong, Block())
    assert isinstance(reason, str) and "a sum's take 0.0, a max's or min's column 0" in reason
