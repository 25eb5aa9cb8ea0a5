"""The `xt` kernel itself before the verifier (`embed_xt`): its structure in `tile`, its ops as
they are. A user's kernel as Axon reads it is proved equal to the raised `ax` function with none
of the raise's steps in between; a planted mistake in the `xt` kernel is refuted, and a raise
whose `tile` kernel was proved while the `xt` kernel is refuted is not raised."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

from axon.dialects.tile import ForOp, KernelOp, StoreOp
from axon.forge.source import KernelFile
from axon.forge.stages.analysis import analysable
from axon.frontend.triton import analyse_kernel
from axon.frontend.triton.embed_xt import NotEmbedded, embed_xt
from axon.frontend.triton.raise_tile import NotRaised, prove_xt, raise_to_ax
from axon.frontend.triton.raise_xt import raise_kernel
from axon.frontend.triton.report import launch_constexprs
from axon.tools.embed import parse_mlir
from axon.verifier import Proved, Refuted, Unknown, prove_equivalent

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "forge" / "kernels"


def xt_of(problem: str, kernel: str) -> FuncOp:
    """The `xt` function of one kernel of a Forge problem's kernel file, as the raise reads it."""
    module = analysable(KernelFile.read(KERNELS / f"{problem}.py"))
    jit = module.kernels[kernel]
    return raise_kernel(analyse_kernel(module, jit, launch_constexprs(module, jit)))


def _reparsed(text: str) -> FuncOp:
    (func,) = (op for op in parse_mlir(text, "<planted>").ops if isinstance(op, FuncOp))
    return func


def _planted(text: str, old: str, new: str) -> FuncOp:
    assert old in text
    return _reparsed(text.replace(old, new, 1))


def test_the_structure_changes_dialect_and_the_ops_stay_xt() -> None:
    func = xt_of("01_gemm_bias_relu", "linear_bias_relu_kernel")
    embedded = embed_xt(func, ["BLOCK_K >= 1"])
    names = [op.name for op in embedded.walk()]
    assert {"tile.kernel", "tile.for", "tile.store", "ax.matmul", "ax.add"} <= set(names)
    assert {"xt.load", "xt.map", "xt.full"} <= set(names)
    assert not {"xt.kernel", "xt.for", "xt.store", "xt.dot", "xt.yield"} & set(names)
    (kernel,) = (op for op in embedded.walk() if isinstance(op, KernelOp))
    assert kernel.assumptions() == ["BLOCK_K >= 1"]
    (loop,) = (op for op in embedded.walk() if isinstance(op, ForOp))
    assert loop.loop_kind == "sequential"
    assert "xt.kernel" in str(func)  # the input is left as it was


def test_a_loop_carrying_nothing_is_parallel() -> None:
    embedded = embed_xt(xt_of("15_l2_normalize", "l2_normalize_kernel"))
    kinds = [op.loop_kind for op in embedded.walk() if isinstance(op, ForOp)]
    assert kinds == ["sequential", "parallel"]
    assert any(isinstance(op.parent_op(), ForOp) for op in embedded.walk()
               if isinstance(op, StoreOp))


@pytest.mark.parametrize(("problem", "kernel"), [
    ("01_gemm_bias_relu", "linear_bias_relu_kernel"),
    ("12_rmsnorm", "rmsnorm_kernel"),
    ("11_layernorm", "layernorm_kernel"),
    ("24_scale_tanh_residual", "tanh_kernel"),
])
def test_the_users_kernel_itself_is_proved_equal_to_the_raised_function(
        problem: str, kernel: str) -> None:
    raised = raise_to_ax(xt_of(problem, kernel))
    verdict = prove_equivalent(embed_xt(raised.xt, raised.assumptions), raised.ax)
    assert isinstance(verdict, Proved) and raised.xt_proved


def test_a_row_held_whole_needs_the_block_to_cover_it() -> None:
    """The row's store at offset 0 with BLOCK_N lanes writes the row only where BLOCK_N >= N:
    without the raise's assumption the verifier does not read it (never a proof)."""
    raised = raise_to_ax(xt_of("12_rmsnorm", "rmsnorm_kernel"))
    assert raised.assumptions == ["BLOCK_N >= N"]
    verdict = prove_equivalent(embed_xt(raised.xt), raised.ax)
    assert isinstance(verdict, Unknown) and "tile extent of BLOCK_N" in verdict.reason


@pytest.mark.parametrize(("problem", "kernel", "old", "new"), [
    # a pad of 1.0 where the row's sum of squares reads the lanes past N
    ("12_rmsnorm", "rmsnorm_kernel", "other = 0.000000e+00 : f64} : (!ax.tensor<[G0, N], f32>)",
     "other = 1.000000e+00 : f64} : (!ax.tensor<[G0, N], f32>)"),
    # w's block read one row of K late
    ("01_gemm_bias_relu", "linear_bias_relu_kernel",
     'offsets = ["BLOCK_K*k0_iter", "BLOCK_N*pid1"]',
     'offsets = ["BLOCK_K*k0_iter + 1", "BLOCK_N*pid1"]'),
    # the dot accumulating into the loop's start, not its carried value
    ("01_gemm_bias_relu", "linear_bias_relu_kernel", "xt.dot %10, %11, %9",
     "xt.dot %10, %11, %7"),
    # the bias read at the row's program id
    ("01_gemm_bias_relu", "linear_bias_relu_kernel", 'offsets = ["BLOCK_N*pid1"]',
     'offsets = ["BLOCK_N*pid0"]'),
])
def test_a_planted_mistake_in_the_xt_kernel_is_refuted_and_not_raised(
        problem: str, kernel: str, old: str, new: str) -> None:
    raised = raise_to_ax(xt_of(problem, kernel))
    wrong = _planted(str(raised.xt), old, new)
    verdict = prove_equivalent(embed_xt(wrong, raised.assumptions), raised.ax)
    assert isinstance(verdict, Refuted)
    # prove_xt is the raise's check: a refuted xt kernel is a raise that misread it
    with pytest.raises(NotRaised, match="the xt kernel itself is refuted"):
        prove_xt(wrong, raised.ax, raised.assumptions)


def test_an_infinite_pad_is_unknown_never_an_internal_error() -> None:
    raised = raise_to_ax(xt_of("17_log_softmax", "log_softmax_kernel"))
    verdict = prove_xt(raised.xt, raised.ax, raised.assumptions)
    assert isinstance(verdict, Unknown)
    assert verdict.reason == "a constant -inf: the verifier reasons over the reals"


def test_a_store_masked_inside_its_block_is_not_embedded() -> None:
    func = xt_of("12_rmsnorm", "rmsnorm_kernel")
    masked = _planted(str(func), 'extents = ["1", "BLOCK_N"]} : !ax.tensor<[1, BLOCK_N], f32>',
                      'extents = ["1", "N"]} : !ax.tensor<[1, BLOCK_N], f32>')
    with pytest.raises(NotEmbedded, match=r"xt.store of result #0 is masked to extents"):
        embed_xt(masked, ["BLOCK_N >= N"])
    raised = raise_to_ax(func)
    verdict = prove_xt(masked, raised.ax, raised.assumptions)
    assert isinstance(verdict, Unknown) and verdict.reason.startswith("not embedded: ")
