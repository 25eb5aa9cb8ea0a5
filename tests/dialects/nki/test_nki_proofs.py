"""The verifier reads `nki` instructions through their generic forms, for all sizes: the
identities a lowering from the tiled level relies on are proved, and a wrong one refuted."""

from __future__ import annotations

from axon.dialects.ax import (
    AddOp,
    ConstantOp,
    ExpOp,
    GeOp,
    MatmulOp,
    MulOp,
    NegOp,
    ReduceMaxOp,
    SubOp,
    SumOp,
    TensorType,
    TransposeOp,
)
from axon.dialects.ax import CumsumOp as AxCumsumOp
from axon.dialects.ax import IotaOp as AxIotaOp
from axon.dialects.ax import SelectOp as AxSelectOp
from axon.dialects.nki import (
    ActivationOp,
    ActivationReduceOp,
    AffineSelectOp,
    MemsetOp,
    NcMatmulOp,
    NcTransposeOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorScanOp,
)
from axon.verifier import Proved, Refuted, prove_equivalent
from tests.dialects.nki.helpers import function, to_sbuf

X = TensorType(["P", "F"], "f32")
ROW = TensorType(["P", "1"], "f32")


def test_matmul_against_a_ones_vector_is_a_sum_over_the_partition_dim() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        ones = add(MemsetOp.make([], value=1.0, shape=["P", "1"], dtype="f32", buffer="sbuf"))
        return add(NcMatmulOp.make([ones, to_sbuf(add, args[0])], buffer="psum"))

    ax = function("ax", [X], lambda args, add: add(SumOp.make([args[0]], axes=(0,),
                                                                keepdims=True)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)


def test_accumulated_matmuls_are_the_sum_of_the_products() -> None:
    a0, a1 = TensorType(["K", "M"], "f32"), TensorType(["K", "M"], "f32")
    b = TensorType(["K", "N"], "f32")

    def nki(args, add):  # type: ignore[no-untyped-def]
        s0, s1, m = (to_sbuf(add, v) for v in args)
        first = add(NcMatmulOp.make([s0, m], buffer="psum"))
        return add(NcMatmulOp.make([s1, m, first], buffer="psum"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        x0, x1, m = args
        p0 = add(MatmulOp.make([add(TransposeOp.make([x0], perm=(1, 0))), m]))
        p1 = add(MatmulOp.make([add(TransposeOp.make([x1], perm=(1, 0))), m]))
        return add(AddOp.make([p0, p1]))

    params = [a0, a1, b]
    assert isinstance(prove_equivalent(function("nki", params, nki),
                                       function("ax", params, ax)), Proved)


def test_tensor_reduce_is_the_row_reduction_it_implements() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        return add(TensorReduceOp.make([to_sbuf(add, args[0])], op="add", axes=(1,),
                                       keepdims=True, buffer="sbuf"))

    ax = function("ax", [X], lambda args, add: add(SumOp.make([args[0]], axes=(1,),
                                                                keepdims=True)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)
    wrong = function("max", [X], lambda args, add: add(ReduceMaxOp.make([args[0]], axes=(1,),
                                                                         keepdims=True)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), wrong), Refuted)


def test_a_negated_max_reduction_is_minus_the_max() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        return add(TensorReduceOp.make([to_sbuf(add, args[0])], op="maximum", axes=(1,),
                                       negate=True, keepdims=True, buffer="sbuf"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        return add(NegOp.make([add(ReduceMaxOp.make([args[0]], axes=(1,), keepdims=True))]))

    assert isinstance(prove_equivalent(function("nki", [X], nki), function("ax", [X], ax)),
                      Proved)


def test_a_scan_of_add_over_zeros_is_cumsum() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        zeros = add(MemsetOp.make([], value=0.0, shape=["P", "F"], dtype="f32", buffer="sbuf"))
        return add(TensorTensorScanOp.make([zeros, to_sbuf(add, args[0])], op0="add",
                                           op1="add", initial=0.0, buffer="sbuf"))

    ax = function("ax", [X], lambda args, add: add(AxCumsumOp.make([args[0]], axis=1)))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)


def test_a_scan_started_at_a_carried_column_is_cumsum_plus_the_carry() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        zeros = add(MemsetOp.make([], value=0.0, shape=["P", "F"], dtype="f32", buffer="sbuf"))
        x, carry = (to_sbuf(add, v) for v in args)
        return add(TensorTensorScanOp.make([zeros, x, carry], op0="add", op1="add",
                                           buffer="sbuf"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        return add(AddOp.make([add(AxCumsumOp.make([args[0]], axis=1)), args[1]]))

    assert isinstance(prove_equivalent(function("nki", [X, ROW], nki),
                                       function("ax", [X, ROW], ax)), Proved)


def test_tensor_scalar_with_a_reversed_vector_operand() -> None:
    def nki(reverse: bool):  # type: ignore[no-untyped-def]
        def build(args, add):  # type: ignore[no-untyped-def]
            x, v = (to_sbuf(add, a) for a in args)
            return add(TensorScalarOp.make([x, v], op0="subtract", reverse0=reverse,
                                           op1="multiply", scalar1=2.0, buffer="sbuf"))
        return function("nki", [X, ROW], build)

    def ax(args, add):  # type: ignore[no-untyped-def]
        two = add(ConstantOp.make([], value=2.0, shape=[], dtype="f32"))
        return add(MulOp.make([add(SubOp.make([args[1], args[0]])), two]))

    assert isinstance(prove_equivalent(nki(True), function("ax", [X, ROW], ax)), Proved)
    assert isinstance(prove_equivalent(nki(False), function("ax", [X, ROW], ax)), Refuted)


def test_affine_select_is_a_causal_mask() -> None:
    def nki(cmp: str):  # type: ignore[no-untyped-def]
        def build(args, add):  # type: ignore[no-untyped-def]
            return add(AffineSelectOp.make([to_sbuf(add, args[0])], pattern=(-1,),
                                           channel_multiplier=1, cmp_op=cmp,
                                           on_false_value=-30000.0, buffer="sbuf"))
        return function("nki", [X], build)

    def ax(args, add):  # type: ignore[no-untyped-def]
        rows, cols = (add(AxIotaOp.make([], shape=["P", "F"], axis=a, dtype="i32"))
                      for a in (0, 1))
        fill = add(ConstantOp.make([], value=-30000.0, shape=[], dtype="f32"))
        return add(AxSelectOp.make([add(GeOp.make([rows, cols])), args[0], fill]))

    assert isinstance(prove_equivalent(nki("greater_equal"), function("ax", [X], ax)), Proved)
    assert isinstance(prove_equivalent(nki("greater"), function("ax", [X], ax)), Refuted)


def test_the_tensor_engine_transpose_is_a_transpose() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        return add(NcTransposeOp.make([to_sbuf(add, args[0])], buffer="psum"))

    ax = function("ax", [X], lambda args, add: add(TransposeOp.make([args[0]], perm=(1, 0))))
    assert isinstance(prove_equivalent(function("nki", [X], nki), ax), Proved)


def test_activation_with_a_bias_and_its_reduction() -> None:
    def nki(args, add):  # type: ignore[no-untyped-def]
        x, bias = (to_sbuf(add, v) for v in args)
        return add(ActivationOp.make([x, bias], func="exp", buffer="sbuf"))

    def ax(args, add):  # type: ignore[no-untyped-def]
        return add(ExpOp.make([add(AddOp.make(list(args)))]))

    assert isinstance(prove_equivalent(function("nki", [X, ROW], nki),
                                       function("ax", [X, ROW], ax)), Proved)

    def nki_sum(args, add):  # type: ignore[no-untyped-def]
        x, bias = (to_sbuf(add, v) for v in args)
        return add(ActivationReduceOp.make([x, bias], func="exp", buffer="sbuf"))

    def ax_sum(args, add):  # type: ignore[no-untyped-def]
        return add(SumOp.make([add(ExpOp.make([add(AddOp.make(list(args)))]))], axes=(1,),
                              keepdims=True))

    assert isinstance(prove_equivalent(function("nki", [X, ROW], nki_sum),
                                       function("ax", [X, ROW], ax_sum)), Proved)
