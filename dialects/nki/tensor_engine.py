"""TensorE instructions: `nc_matmul` and `nc_transpose` (reference/nki.md 3.2).

    %p = nki.nc_matmul %st, %mv {buffer = "psum"}
        : (!ax.tensor<[128, 64], bf16>, !ax.tensor<[128, 512], bf16>) -> !ax.tensor<[64, 512], f32>
    %q = nki.nc_matmul %st2, %mv2, %p {buffer = "psum"} : (..., !ax.tensor<[64, 512], f32>) -> ...
    %t = nki.nc_transpose %x {buffer = "psum"}
        : (!ax.tensor<[64, 128], f32>) -> !ax.tensor<[128, 64], f32>

`nc_matmul` contracts over the partition dim of both operands: `dst[M, N] = stationary[K, M].T @
moving[K, N]`, accumulated in fp32 in PSUM. With a third operand it accumulates onto that PSUM
tile (`accumulate=True`); without, it overwrites (the first write of an accumulation group).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import TypeAttribute
from xdsl.irdl import (
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import ShapeError, product
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Index, Read, ScalarExpr, call
from axon.dialects.nki.base import NkiOp, at_most
from axon.dialects.nki.limits import generic_limits

#: what the PE array multiplies (fp8 has no dtype in Axon yet); fp32 only with fp32
MATMUL_DTYPES = ("bf16", "f16", "f32")


@irdl_op_definition
class NcMatmulOp(NkiOp):
    """`nisa.nc_matmul(dst, stationary, moving, accumulate)`: the contraction over the
    partition dim K <= 128, stationary free size M <= 128, moving free size N <= 512; operands
    in SBUF, dst fp32 in PSUM.

        out[i < M, j < N] = add over k in [0, K) of
                            in0[k, i] * in1[k, j] + select(k < 1, in2[i, j], 0.0)
    """

    name = "nki.nc_matmul"
    ROLES: ClassVar[tuple[str, ...]] = ("stationary", "moving", "[acc]")
    DST_BUFFERS: ClassVar[tuple[str, ...]] = ("psum",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("tensor",)
    OPERAND_BUFFERS: ClassVar[dict[str, tuple[str, ...]]] = {
        "stationary": ("sbuf",), "moving": ("sbuf",), "acc": ("psum",)}
    ATTRS: ClassVar[dict[str, str]] = {"buffer": "text"}
    inputs = var_operand_def(TensorType)
    buffer = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        stationary, moving, *acc = operand_types
        if stationary.rank != 2 or moving.rank != 2:
            raise ShapeError("stationary and moving are 2-D tiles [K, M] and [K, N]")
        if stationary.shape[0] != moving.shape[0]:
            raise ShapeError(f"the contraction (partition) dims differ: {stationary.shape[0]} "
                             f"and {moving.shape[0]}")
        for role, t in (("stationary", stationary), ("moving", moving)):
            if t.dtype not in MATMUL_DTYPES:
                raise ShapeError(f"{role} has dtype {t.dtype}; the PE array multiplies "
                                 f"{', '.join(MATMUL_DTYPES)}")
        if (stationary.dtype == "f32") != (moving.dtype == "f32"):
            raise ShapeError(f"stationary is {stationary.dtype} and moving {moving.dtype}: "
                             "fp32 operands must both be fp32")
        limits = generic_limits()
        k, m, n = stationary.shape[0], stationary.shape[1], moving.shape[1]
        at_most("the contraction (partition) dim K", k, limits.partitions)
        at_most("the stationary free size M", m, limits.matmul_stationary_free_max)
        at_most("the moving free size N", n, limits.matmul_moving_free_max)
        if acc:
            (total,) = acc
            if total.shape != (m, n) or total.dtype != "f32":
                raise ShapeError(f"acc is {total}; the product accumulates onto f32[{m}, {n}]")
        avoid = {s for e in (*stationary.shape, *moving.shape) for s in e.symbols()}
        i, j = fresh_names("d", 2, avoid)
        (r,) = fresh_names("r", 1, avoid)
        si, sj, sr = IntExpr.sym(i), IntExpr.sym(j), IntExpr.sym(r)
        body: ScalarExpr = call("mul", Read(0, (sr, si)), Read(1, (sr, sj)))
        if acc:
            # `k < 1` rather than `k == 0`: the verifier splits a sum's range at a bound
            body = call("add", body, call("select", call("lt", Index(sr), Const(1)),
                                          Read(2, (si, sj)), Const(0.0)))
        form = GenericForm((LoopDim(i, IntExpr.const(0), m), LoopDim(j, IntExpr.const(0), n)),
                           body, len(operand_types), "add", (LoopDim(r, IntExpr.const(0), k),))
        return Semantics(form, TensorType(form.output_shape, "f32"))

    def check_operands(self, buffers: Sequence[str | None]) -> None:
        if len(self.operands) < 3:
            return
        owner = self.operands[2].owner
        if isinstance(owner, NkiOp) and not isinstance(owner, NcMatmulOp):
            raise VerifyException(f"'{self.name}': operand #2 (acc) was written by "
                                  f"'{owner.name}'; accumulating onto PSUM a non-matmul "
                                  "instruction wrote is undefined on NeuronCore-v2/v3")


@irdl_op_definition
class NcTransposeOp(NkiOp):
    """`nisa.nc_transpose(dst, data, engine)`: a 2-D partition <-> free swap, the free dims of
    `data` flattened (row-major) first. On the Tensor engine (a matmul against the identity)
    `data` <= [128, 128] in SBUF, dst in PSUM, f32 or `data`'s dtype; on the Vector engine
    `data` <= [32, 32] in SBUF or PSUM and dst of `data`'s dtype.

        out[d0 < F, d1 < P] = in0[d1, d0]
        out[d0 < F*G, d1 < P] = in0[d1, d0 floordiv G, d0 mod G]      (data [P, F, G])
    """

    name = "nki.nc_transpose"
    ROLES: ClassVar[tuple[str, ...]] = ("data",)
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ("tensor", "vector")
    ATTRS: ClassVar[dict[str, str]] = {"buffer": "text", "dtype": "dtype", "engine": "text"}
    inputs = var_operand_def(TensorType)
    buffer = prop_def(StringAttr)
    dtype = opt_prop_def(TypeAttribute)
    engine = opt_prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        (data,) = operand_types
        if data.rank < 2:
            raise ShapeError(f"data has rank {data.rank}; nc_transpose swaps the partition "
                             "dim and the free dims")
        engine = cls.engine_of(attrs)
        dtype = str(attrs.get("dtype") or data.dtype)
        limits = generic_limits()
        if engine == "tensor":
            if attrs.get("buffer") != "psum":
                raise ShapeError("the Tensor engine writes its transpose to PSUM")
            if dtype not in ("f32", data.dtype):
                raise ShapeError(f"dst dtype {dtype}: the Tensor engine's transpose writes f32 "
                                 f"or the data's dtype {data.dtype}")
            bound = limits.partitions
        else:
            if dtype != data.dtype:
                raise ShapeError(f"dst dtype {dtype}: the Vector engine's transpose keeps the "
                                 f"data's dtype {data.dtype}")
            bound = limits.vector_transpose_max
        free = product(data.shape[1:])
        at_most(f"the partition dim of data on the {engine} engine", data.shape[0], bound)
        at_most(f"the free size of data on the {engine} engine", free, bound)
        avoid = {s for d in data.shape for s in d.symbols()}
        column, row = fresh_names("d", 2, avoid)
        # the flattened free index, split back into data's free dims (row-major)
        index = [IntExpr.sym(row)]
        rest = IntExpr.sym(column)
        for k in range(1, data.rank):
            inner = product(data.shape[k + 1:])
            part = rest.floordiv(inner) if k < data.rank - 1 else rest
            index.append(part if k == 1 else part.mod(data.shape[k]))
        form = GenericForm((LoopDim(column, IntExpr.const(0), free),
                            LoopDim(row, IntExpr.const(0), data.shape[0])),
                           Read(0, tuple(index)), 1)
        return Semantics(form, TensorType(form.output_shape, dtype))

    def check_operands(self, buffers: Sequence[str | None]) -> None:
        if self.engine_name() == "tensor" and buffers[0] not in (None, "sbuf"):
            raise VerifyException(f"'{self.name}': operand #0 (data) is in {buffers[0]}; the "
                                  "Tensor engine reads it from sbuf")
