"""The `arith` dialect's part of the region interpreter: the scalars that steer control flow."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, i1
from xdsl.interpreter import Interpreter, PythonValues, impl, register_impls
from xdsl.interpreters.arith import ArithFunctions

from axon.interpreter.indexing import InterpreterError


@register_impls
class ControlArithFunctions(ArithFunctions):
    """xDSL's `arith`, with constants limited to index and i1: the scalars of control flow
    (`scf.for` bounds and steps, loop-index maths, `scf.if` conditions).

    Data lives in `!ax.tensor` values, whose dtypes and rounding are the kernels' business; a float
    or i32 constant would be data computed outside them, so it is refused as unsupported.
    """

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp,
                     args: PythonValues) -> PythonValues:
        """An index or i1 constant as a Python int."""
        value, result_type = op.value, op.result.type
        if not (isinstance(value, IntegerAttr) and (isinstance(result_type, IndexType)
                                                    or result_type == i1)):
            raise InterpreterError(f"unsupported op 'arith.constant' of type {result_type}: only "
                                   f"index and i1 scalars (loop bounds, conditions) run")
        return (value.value.data,)
