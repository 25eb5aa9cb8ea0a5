"""Reads that leave their operand: `ax.generic`'s verifier refuses those that do at every size."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import GenericOp, TensorType
from axon.dialects.form.dtypes import dtype_attr
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.read_bounds import stray_read
from axon.dialects.form.syntax import parse_form


def generic_function(form: str, operands: Sequence[TensorType], result: TensorType) -> FuncOp:
    """A function of one `ax.generic` over its parameters (not verified yet)."""
    block = Block(arg_types=list(operands))
    op = GenericOp.create(operands=list(block.args), result_types=[result],
                          properties={"form": StringAttr(form), "dtype": dtype_attr("f32")})
    block.add_ops([op, ReturnOp(op.results[0])])
    return FuncOp("f", (list(operands), [result]), Region(block))


def t(*dims: str | int) -> TensorType:
    return TensorType(list(dims), "f32")


def shapes(*dims: Sequence[str | int]) -> list[list[IntExpr]]:
    return [[IntExpr.lift(d) for d in shape] for shape in dims]


def test_a_read_past_a_concrete_dim_is_refused_naming_the_read_and_the_dim() -> None:
    func = generic_function("out[d0 < 4] = in0[d0, d0 + 5]", [t(4, 3)], t(4))
    with pytest.raises(VerifyException, match=re.escape(
            "'ax.generic': read in0[d0, d0 + 5] leaves operand #0: its index d0 + 5 in dim 1 "
            "reaches 5, outside [0, 3) (at d0 = 0)")):
        func.verify()
    # a symbolic output extent does not save it: d0 = 0 already reads column 5
    with pytest.raises(VerifyException, match=re.escape(
            "leaves operand #0 for every size: its index d0 + 5 in dim 1 reaches 5, outside "
            "[0, 3) (at M = 1, d0 = 0)")):
        generic_function("out[d0 < M] = in0[d0, d0 + 5]", [t(4, 3)], t("M")).verify()


@pytest.mark.parametrize(("form", "operands", "result", "message"), [
    ("out[d0 < N] = in0[d0 + 1]", [t("N")], t("N"),
     "read in0[d0 + 1] leaves operand #0 for every size: its index d0 + 1 in dim 0 reaches 1, "
     "outside [0, N) (at N = 1, d0 = 0)"),
    ("out[d0 < M, d1 < K] = add over r0 in [0, d1 + 2) of in0[d0, r0]", [t("M", "K")],
     t("M", "K"), "read in0[d0, r0] leaves operand #0 for every size: its index r0 in dim 1"),
    ("out[d0 < M, d1 < K + N] = select(idx(d1) < idx(K), in0[d0, d1], in1[d0, d1 - K + 1])",
     [t("M", "K"), t("M", "N")], t("M", "K + N"), "read in1[d0, d1 - K + 1] leaves operand #1"),
])
def test_a_read_past_a_symbolic_dim_at_every_size_is_refused(
        form: str, operands: list[TensorType], result: TensorType, message: str) -> None:
    with pytest.raises(VerifyException, match=re.escape(message)):
        generic_function(form, operands, result).verify()


@pytest.mark.parametrize(("form", "operands", "result"), [
    # a concat: in1 is read at d1 - K everywhere but used only where d1 >= K
    ("out[d0 < M, d1 < K + N] = select(idx(d1) < idx(K), in0[d0, d1], in1[d0, d1 - K])",
     [t("M", "K"), t("M", "N")], t("M", "K + N")),
    ("out[d0 < M, d1 < K] = add over r0 in [0, d1 + 1) of in0[d0, r0]", [t("M", "K")],
     t("M", "K")),
    ("out[d0 < M, d1 < K floordiv 2] = in0[d0, 2*d1 + 1]", [t("M", "K")],
     t("M", "K floordiv 2")),
    ("out[d0 < K*M] = in0[d0 floordiv K, d0 mod K]", [t("M", "K")], t("K*M")),
    ("out[d0 < N - 1] = in0[d0 + 1] - in0[d0]", [t("N")], t("N - 1")),
    # fine for some sizes only (M >= 2, K odd), as `ax.slice` is: checked when it runs
    ("out[d0 < 2] = in0[d0]", [t("M")], t(2)),
    ("out[d0 < M, d1 < K floordiv 2] = in0[d0, 2*d1 + 2]", [t("M", "K")],
     t("M", "K floordiv 2")),
])
def test_symbolic_reads_that_stay_inside_verify(form: str, operands: list[TensorType],
                                                result: TensorType) -> None:
    generic_function(form, operands, result).verify()


def test_a_read_under_a_condition_on_data_is_left_to_the_interpreter() -> None:
    # whether in0[d0 + 1] is used depends on the input values: no verdict before running
    form = parse_form("out[d0 < N] = select(in0[d0] > 0.0, in0[d0], in0[d0 + 1])", 1)
    assert stray_read(form, shapes(["N"])) is None
    # its condition's own read is always used, and checked
    form = parse_form("out[d0 < N] = select(in0[d0 + 2] > 0.0, in0[d0], 0.0)", 1)
    found = stray_read(form, shapes(["N"]))
    assert found is not None and str(found.read) == "in0[d0 + 2]"
