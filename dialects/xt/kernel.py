"""Kernels and loops of the `xt` dialect: a `@triton.jit` function and its `for` loops.

    %c = xt.kernel %a, %b {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"],
                           params = ["BM", "BN", "BK"], blocks = ["B_K = K"]}
        : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
    ^bb0(%x: !ax.tensor<[M, K], f32>, %y: !ax.tensor<[K, N], f32>):
      %acc = xt.for %zero {iv = "k", extent = "ceildiv(K, BK)"} ... { ... xt.yield %next }
      xt.store %acc {result = 0, offsets = ["BM*i", "BN*j"], extents = ["BM", "BN"]} : ...
      xt.yield
    }

A kernel runs its body once per program of its grid (`tl.program_id(axis)` bound to the names of
`program_ids`). Its `tl.constexpr` parameters are `params` (block sizes the launch chooses,
powers of two) and `blocks`, each `NAME = expr`: the power of two covering `expr`
(`triton.next_power_of_2`), the block of a dim a program holds whole. Its other scalar
parameters are the sizes of its inputs. `xt.for` is `for iv in range(extent)`, carrying values
from one iteration to the next (none for a loop that only stores). Offsets, extents and loop
extents use the sizes, the parameters, the program ids and the ivs of enclosing loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.loops import check_carried, check_iteration


def _strings(values: Sequence[Any]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(str(v)) for v in values])


def parse_block(text: str) -> tuple[str, IntExpr]:
    """`NAME = expr` of a kernel's `blocks`; ValueError when it is not one."""
    name, sep, expr = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise ValueError(f"block '{text}' is not 'NAME = expr'")
    return name.strip(), IntExpr.lift(expr.strip())


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The end of a kernel's body (no values) or of a loop's body (the carried values)."""

    name = "xt.yield"
    values = var_operand_def(TensorType)
    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = traits_def(IsTerminator())

    def __init__(self, *values: SSAValue) -> None:
        super().__init__(operands=[values])


@irdl_op_definition
class ForOp(IRDLOperation):
    """`for iv in range(extent)` carrying `inits` through the iterations (results: the last)."""

    name = "xt.for"
    inits = var_operand_def(TensorType)
    iv = prop_def(StringAttr)
    extent = prop_def(StringAttr)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inits attr-dict `:` functional-type($inits, $outputs) $body"

    def __init__(self, inits: Sequence[SSAValue], iv: str, extent: Any, body: Region) -> None:
        super().__init__(operands=[inits], result_types=[[v.type for v in inits]],
                         regions=[body], properties={
                             "iv": StringAttr(iv),
                             "extent": StringAttr(str(IntExpr.lift(extent)))})

    def extent_expr(self) -> IntExpr:
        return IntExpr.lift(self.extent.data)

    def verify_(self) -> None:
        check_iteration(self, self.iv.data, self.extent.data)
        check_carried(self, self.inits, YieldOp.name)


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A `@triton.jit` kernel over a launch grid (see the module docstring)."""

    name = "xt.kernel"
    inputs = var_operand_def(TensorType)
    program_ids = prop_def(ArrayAttr[StringAttr])
    grid = prop_def(ArrayAttr[StringAttr])
    params = prop_def(ArrayAttr[StringAttr])
    blocks = opt_prop_def(ArrayAttr[StringAttr])
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $outputs) $body"
    traits = traits_def(IsolatedFromAbove())

    def __init__(self, inputs: Sequence[SSAValue], output_types: Sequence[TensorType],
                 program_ids: Sequence[str], grid: Sequence[Any], params: Sequence[str],
                 blocks: Sequence[str], body: Region) -> None:
        props: dict[str, Attribute] = {
            "program_ids": _strings(program_ids),
            "grid": _strings([str(IntExpr.lift(g)) for g in grid]),
            "params": _strings(params)}
        if blocks:
            props["blocks"] = _strings(blocks)
        super().__init__(operands=[inputs], result_types=[output_types], regions=[body],
                         properties=props)

    def program_names(self) -> list[str]:
        return [s.data for s in self.program_ids.data]

    def grid_exprs(self) -> list[IntExpr]:
        return [IntExpr.lift(s.data) for s in self.grid.data]

    def param_names(self) -> list[str]:
        return [s.data for s in self.params.data]

    def block_defs(self) -> list[tuple[str, IntExpr]]:
        """Each padded block's name and the expression it covers."""
        return [] if self.blocks is None else [parse_block(s.data) for s in self.blocks.data]

    def input_types(self) -> list[TensorType]:
        return [v.type for v in self.inputs]  # type: ignore[misc]

    def output_types(self) -> list[TensorType]:
        return [r.type for r in self.outputs]  # type: ignore[misc]

    def sizes(self) -> list[str]:
        """The size symbols of the inputs, sorted (the kernel's scalar parameters)."""
        return sorted({s for t in self.input_types() for d in t.shape for s in d.symbols()})

    def verify_(self) -> None:
        try:
            blocks = self.block_defs()
            grid = self.grid_exprs()
        except ValueError as err:
            raise VerifyException(f"'xt.kernel': {err}") from None
        sizes = set(self.sizes())
        names = [*self.program_names(), *self.param_names(), *(n for n, _ in blocks)]
        for n in names:
            if not n.isidentifier():
                raise VerifyException(f"'xt.kernel': '{n}' is not a name")
        if len(set(names)) != len(names) or set(names) & sizes:
            raise VerifyException(f"'xt.kernel': program ids, params, blocks and sizes repeat "
                                  f"a name: {', '.join(names)}")
        if len(grid) != len(self.program_names()):
            raise VerifyException(f"'xt.kernel': {len(self.program_names())} program ids for a "
                                  f"grid of {len(grid)} dims")
        outer = sizes | set(self.param_names())
        for g in grid:
            stray = sorted(g.symbols() - outer)
            if stray:
                raise VerifyException(f"'xt.kernel': grid extent {g} uses {', '.join(stray)}, "
                                      "which is no size or param")
        for name, expr in blocks:
            stray = sorted(expr.symbols() - sizes)
            if stray:
                raise VerifyException(f"'xt.kernel': block {name} covers {expr}, which uses "
                                      f"{', '.join(stray)}: a block covers sizes only")
        block = self.body.block
        if [a.type for a in block.args] != [v.type for v in self.inputs]:
            raise VerifyException("'xt.kernel': the body takes one argument per input, of its "
                                  "type")
        end = block.last_op
        if not isinstance(end, YieldOp) or end.values:
            raise VerifyException("'xt.kernel': the body must end in xt.yield with no values")
