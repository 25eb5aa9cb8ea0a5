"""Generic forms are an interface, not a property of the `ax` dialect: a throw-away dialect with two
ops of its own, registered and nothing else changed, is proved by the verifier, run by the
reference interpreter and propagated in the nu-graph."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Dialect, Region, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def

from axon.dialects.ax import AddOp, SumOp, TensorType
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import (
    HasGenericForm,
    Semantics,
    form_op_classes,
    generic_form,
    has_form,
    register_dialect,
)
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Read, call
from axon.interpreter import run_function
from axon.nugraph.runner import Budget
from axon.nugraph.session import Session
from axon.verifier import Proved, Refuted, prove_equivalent


class _ToyOp(IRDLOperation):
    """The `FormOp` protocol, written out without any `ax` base class."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[Any], attrs: Mapping[str, Any]) -> Semantics:
        raise NotImplementedError

    def attrs(self) -> dict[str, Any]:
        return {}

    def meaning(self) -> Semantics:
        return type(self).semantics([v.type for v in self.operands], self.attrs())

    @classmethod
    def make(cls, operands: Sequence[SSAValue], **attrs: Any) -> _ToyOp:
        sem = cls.semantics([v.type for v in operands], attrs)
        return cls.create(operands=list(operands), result_types=[sem.result_type])


def _dims(t: TensorType) -> tuple[LoopDim, ...]:
    names = fresh_names("d", t.rank, {s for d in t.shape for s in d.symbols()})
    return tuple(LoopDim(n, IntExpr.const(0), e) for n, e in zip(names, t.shape, strict=True))


@irdl_op_definition
class TwiceOp(_ToyOp):
    """out[i...] = 2 * x[i...]."""

    name = "toy.twice"

    @classmethod
    def semantics(cls, operand_types: Sequence[Any], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        par = _dims(x)
        body = call("mul", Const(2.0), Read(0, tuple(IntExpr.sym(d.name) for d in par)))
        form = GenericForm(par, body, 1)
        return Semantics(form, TensorType(form.output_shape, x.dtype))


@irdl_op_definition
class RowSumOp(_ToyOp):
    """out[i] = sum over j of x[i, j] (a rank-2 operand)."""

    name = "toy.row_sum"

    @classmethod
    def semantics(cls, operand_types: Sequence[Any], attrs: Mapping[str, Any]) -> Semantics:
        (x,) = operand_types
        rows, cols = _dims(x)
        (red,) = fresh_names("r", 1, {rows.name, cols.name} | {s for d in x.shape
                                                                   for s in d.symbols()})
        body = Read(0, (IntExpr.sym(rows.name), IntExpr.sym(red)))
        form = GenericForm((rows,), body, 1, "add", (LoopDim(red, IntExpr.const(0), cols.upper),))
        return Semantics(form, TensorType(form.output_shape, x.dtype))


Toy = Dialect("toy", [TwiceOp, RowSumOp])
register_dialect(Toy)

X = TensorType(["M", "N"], "f32")


def function(name: str, build: Any) -> FuncOp:
    block = Block(arg_types=[X])
    ops: list[Any] = []

    def add(op: Any) -> SSAValue:
        ops.append(op)
        return op.results[0]

    result = build(block.args[0], add)
    block.add_ops([*ops, ReturnOp(result)])
    return FuncOp(name, FunctionType.from_lists([X], [result.type]), Region(block))


def toy_program(name: str = "toy") -> FuncOp:
    """row_sum(twice(x)): the sum of each row, doubled."""
    return function(name, lambda x, add: add(RowSumOp.make([add(TwiceOp.make([x]))])))


def ax_program(name: str = "ax") -> FuncOp:
    """sum(x + x, axis=1) in `ax` ops."""
    return function(name, lambda x, add: add(SumOp.make([add(AddOp.make([x, x]))], axes=(1,))))


def test_the_toy_ops_are_form_ops_in_the_op_table() -> None:
    op = TwiceOp.make([toy_program().body.block.args[0]])
    assert has_form(op) and str(generic_form(op)).startswith("out[d0 < M, d1 < N] = ")
    assert form_op_classes()["toy.row_sum"] is RowSumOp


def test_the_verifier_proves_and_refutes_over_the_toy_dialect() -> None:
    assert isinstance(prove_equivalent(toy_program(), ax_program()), Proved)
    wrong = function("wrong", lambda x, add: add(RowSumOp.make([x])))
    assert isinstance(prove_equivalent(toy_program(), wrong), Refuted)


def test_the_interpreter_runs_the_toy_dialect() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (out,) = run_function(toy_program(), [x])
    np.testing.assert_array_equal(out, 2 * x.sum(axis=1))


def test_propagation_admits_over_the_toy_dialect() -> None:
    session = Session.from_function(toy_program())
    report = session.run(Budget(max_iterations=3, time_limit_s=30.0))
    assert report.proved > 0
    best = session.export(session.best())
    x = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    (want,) = run_function(toy_program(), [x])
    (got,) = run_function(best, [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
