"""`ax.generic`: an op whose generic form is written out in its `form` attribute.

Fusion and propagation build computations that are no named op; they become `ax.generic`.

    %r = ax.generic %a, %b {form = "out[d0 < M] = add over r0 in [0, K) of in0[d0, r0] * in1[r0]",
                            dtype = f32} : (...) -> !ax.tensor<[M], f32>
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import TypeAttribute
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def, var_operand_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import FormError
from axon.dialects.form.interface import HasGenericForm, Semantics
from axon.dialects.form.read_bounds import stray_read
from axon.dialects.form.syntax import parse_form


@irdl_op_definition
class GenericOp(TensorOp):
    """A tensor op defined by an explicit generic form."""

    name = "ax.generic"
    ATTRS: ClassVar[dict[str, str]] = {"form": "text", "dtype": "dtype"}
    inputs = var_operand_def(TensorType)
    form = prop_def(StringAttr)
    dtype = prop_def(TypeAttribute)
    result = result_def(TensorType)
    traits = traits_def(Pure(), HasGenericForm())

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        dtype = attrs.get("dtype")
        if dtype not in DTYPES:
            raise ShapeError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        try:
            form = parse_form(str(attrs.get("form", "")), len(operand_types))
        except FormError as err:
            raise ShapeError(str(err)) from None
        for r in form.reads():
            rank = operand_types[r.operand].rank
            if len(r.index) != rank:
                raise ShapeError(f"form reads in{r.operand} with {len(r.index)} indices, but "
                                 f"operand #{r.operand} has rank {rank}")
        return Semantics(form, TensorType(form.output_shape, dtype))

    def verify_(self) -> None:
        """The form fits the operand types (`TensorOp.verify_`), and no read can leave its
        operand (`read_bounds.stray_read`: whenever z3 finds sizes and a used point of the
        domain that put an index outside its dim; reads it cannot decide are left to the
        interpreter's check when it runs)."""
        super().verify_()
        stray = stray_read(self.generic_form(), [t.shape for t in self.tensor_types()])
        if stray is not None:
            raise VerifyException(f"'{self.name}': {stray}")
