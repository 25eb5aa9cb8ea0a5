"""Generic forms: structural rules, text syntax round trips, and each op's form."""

from __future__ import annotations

import pytest

from axon.dialects.ax import ALL_OPS, MatmulOp, TensorType
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.form.generic_form import FormError, GenericForm, loop
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Read, Reduced, call
from axon.dialects.form.syntax import parse_form
from axon.tools.op_table import sample


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_op_form_round_trips_through_text(op: type[TensorOp]) -> None:
    types, attrs = sample(op)
    form = op.semantics(types, attrs).form
    assert parse_form(str(form), form.num_operands) == form


def test_matmul_form_reads_through_the_contracted_dim() -> None:
    form = MatmulOp.semantics([TensorType(["M", "K"], "f32"), TensorType(["K", "N"], "f32")],
                              {}).form
    assert str(form) == "out[d0 < M, d1 < N] = add over r0 in [0, K) of in0[d0, r0] * in1[r0, d1]"
    assert form.size_symbols() == {"M", "N", "K"}


def test_loop_names_avoid_size_symbols() -> None:
    form = MatmulOp.semantics([TensorType(["d0", "r0"], "f32"), TensorType(["r0", "d1"], "f32")],
                              {}).form
    assert not set(form.loop_names) & {"d0", "d1", "r0"}
    assert form.output_shape == (IntExpr.sym("d0"), IntExpr.sym("d1"))


def test_parallel_dims_start_at_zero() -> None:
    with pytest.raises(FormError, match="must start at 0"):
        GenericForm((loop("i", "N", 1),), Read(0, (IntExpr.sym("i"),)), 1)


def test_reduced_bounds_may_not_use_inner_dims() -> None:
    with pytest.raises(FormError, match="inner dim"):
        GenericForm((loop("i", "N"),), Read(0, (IntExpr.sym("k"),)), 1, "add",
                    (loop("k", IntExpr.sym("j")), loop("j", "N")))


def test_acc_only_in_finalizer_and_reads_in_range() -> None:
    with pytest.raises(FormError, match="'acc'"):
        GenericForm((loop("i", "N"),), call("add", Reduced(), 1.0), 1, "add", (loop("k", "N"),))
    with pytest.raises(FormError, match="reads in1"):
        GenericForm((loop("i", "N"),), Read(1, (IntExpr.sym("i"),)), 1)


@pytest.mark.parametrize(("text", "column", "what"), [
    ("out[d0 < M] = ", 15, "expected a scalar expression, found end of form"),
    ("out[d0 < M] = in0[d0", 21, "expected ',' or ']', found end of form"),
    ("out[d0 < M] = frobnicate(in0[d0])", 15, "bad call of 'frobnicate': unknown scalar function"),
    ("out[d0 < M] = add(in0[d0], bf16)", 15, "a dtype is only cast's last argument"),
    ("out[d0 < M] = add over r0 in [0, K of in0[r0]", 36, "expected ')', found 'of'"),
    ("out[d0 < M] = in0[d0] $ 1", 23, "unexpected character '$'"),
    ("out[d0 < M] = in0[d0] in0[d0]", 23, "unexpected text after the form"),
])
def test_malformed_form_text_names_the_column(text: str, column: int, what: str) -> None:
    with pytest.raises(FormError) as error:
        parse_form(text, 1)
    message = str(error.value)
    assert message.startswith(f"malformed generic form at column {column}: "), message
    assert what in message


def test_deep_nesting_is_a_form_error_not_a_recursion_error() -> None:
    depth = 5000
    scalar = "(" * depth + "in0[d0]" + ")" * depth
    with pytest.raises(FormError, match="nesting deeper than 64"):
        parse_form(f"out[d0 < M] = {scalar}", 1)
    index = "(" * depth + "d0" + ")" * depth
    with pytest.raises(FormError, match="nested deeper than 64"):
        parse_form(f"out[d0 < M] = in0[{index}]", 1)
    calls = "exp(" * depth + "in0[d0]" + ")" * depth
    with pytest.raises(FormError, match="nesting deeper than 64"):
        parse_form(f"out[d0 < M] = {calls}", 1)


def test_long_sums_are_bounded_by_tree_depth() -> None:
    form = parse_form("out[d0 < M] = " + " + ".join(["in0[d0]"] * 60), 1)
    assert str(form).count("in0[d0]") == 60
    assert parse_form(str(form), 1) == form
    with pytest.raises(FormError, match="nesting deeper than 64"):
        parse_form("out[d0 < M] = " + " * ".join(["in0[d0]"] * 5000), 1)


def test_moderate_nesting_round_trips() -> None:
    text = "out[d0 < M] = " + "exp(" * 60 + "in0[((d0))]" + ")" * 60
    form = parse_form(text, 1)
    assert parse_form(str(form), 1) == form
