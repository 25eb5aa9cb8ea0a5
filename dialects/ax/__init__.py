"""The `ax` dialect: Axon's tensor level. Every op states its meaning once, as a generic form."""

from xdsl.ir import Dialect

from axon.dialects.ax.contraction import (
    REDUCE_OPS,
    CumsumOp,
    MatmulOp,
    MeanOp,
    ProdOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReduceOp,
    SumOp,
)
from axon.dialects.ax.creation import ConstantOp, IotaOp
from axon.dialects.ax.elementwise import (
    BINARY_OPS,
    COMPARE_OPS,
    ELEMENTWISE_OPS,
    UNARY_OPS,
    AbsOp,
    AddOp,
    BinaryOp,
    CastOp,
    DivOp,
    EqOp,
    ErfOp,
    ExpOp,
    GeluOp,
    GeOp,
    GtOp,
    LeOp,
    LogOp,
    LtOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    NeOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    RsqrtOp,
    SelectOp,
    SigmoidOp,
    SiluOp,
    SqrtOp,
    SquareOp,
    SubOp,
    TanhOp,
    UnaryOp,
)
from axon.dialects.ax.generic import GenericOp
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.per_signature import per_signature
from axon.dialects.ax.structural import BroadcastToOp, ConcatOp, ReshapeOp, SliceOp, TransposeOp
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.interface import Semantics, register_dialect

STRUCTURAL_OPS: tuple[type[TensorOp], ...] = (
    TransposeOp, ReshapeOp, BroadcastToOp, SliceOp, ConcatOp)
ALL_OPS: tuple[type[TensorOp], ...] = (
    *ELEMENTWISE_OPS, ConstantOp, IotaOp, MatmulOp, *REDUCE_OPS, CumsumOp, *STRUCTURAL_OPS,
    GenericOp)

for _op in ALL_OPS:
    per_signature(_op)
Ax = Dialect("ax", list(ALL_OPS), [TensorType])
register_dialect(Ax)

__all__ = [
    "ALL_OPS", "BINARY_OPS", "COMPARE_OPS", "ELEMENTWISE_OPS", "REDUCE_OPS", "STRUCTURAL_OPS",
    "UNARY_OPS", "AbsOp", "AddOp", "Ax", "BinaryOp", "BroadcastToOp", "CastOp", "ConcatOp",
    "ConstantOp", "CumsumOp", "DivOp", "EqOp", "ErfOp", "ExpOp", "GeOp", "GeluOp", "GenericOp",
    "GtOp", "IotaOp", "LeOp", "LogOp", "LtOp", "MatmulOp", "MaxOp", "MeanOp", "MinOp", "MulOp",
    "NeOp", "NegOp", "PowOp", "ProdOp", "ReciprocalOp", "ReduceMaxOp", "ReduceMinOp", "ReduceOp",
    "ReluOp", "ReshapeOp", "RsqrtOp", "SelectOp", "Semantics", "SigmoidOp", "SiluOp", "SliceOp",
    "SqrtOp", "SquareOp", "SubOp", "SumOp", "TanhOp", "TensorOp", "TensorType", "TransposeOp",
    "UnaryOp",
]
