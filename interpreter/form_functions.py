"""Ops of any other dialect that state their meaning as a generic form: the form, evaluated.

`ax` ops run through their kernels (`AxFunctions`); an op of another registered dialect with the
`HasGenericForm` trait (dialects/form/interface.py) needs no kernel of its own: its form is
evaluated by the same vectorized evaluator `ax.generic` uses, with the same rule of one rounding
to the result dtype. So a new dialect is interpretable the moment it is registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Operation

from axon.dialects.ax import ALL_OPS, TensorType
from axon.dialects.form.interface import form_op_classes, generic_form
from axon.interpreter.arithmetic import FAITHFUL, Arithmetic
from axon.interpreter.indexing import InterpreterError, eval_dims
from axon.interpreter.reference import evaluate_form_vectorized


@dataclass
class FormFunctions(InterpreterFunctions):
    """Evaluates the generic form of ops without a kernel (one instance per run, like ax's)."""

    arith: Arithmetic = FAITHFUL
    sizes: Mapping[str, int] = field(default_factory=dict)

    def run_form_op(self, interpreter: Interpreter, op: Operation,
                    args: PythonValues) -> PythonValues:
        """The op's form over its operands, rounded once to the result dtype."""
        result_type = op.results[0].type
        types = [v.type for v in op.operands if isinstance(v.type, TensorType)]
        if not isinstance(result_type, TensorType) or len(types) != len(op.operands):
            raise InterpreterError(f"'{op.name}': a form op's operands and result must be "
                                   "!ax.tensor values")
        widened = [self.arith.widen(x, t.dtype) for x, t in zip(args, types, strict=True)]
        value = evaluate_form_vectorized(generic_form(op), widened, self.sizes,
                                         result_type.dtype, exact=self.arith.exact,
                                         where=op.name)
        result = self.arith.store(value, result_type.dtype)
        shape = eval_dims(result_type.shape, self.sizes, f"result of '{op.name}'")
        if result.shape != shape:
            raise InterpreterError(f"'{op.name}' computed shape {result.shape}, but its result "
                                   f"type {result_type} gives {shape}")
        return (result,)


def form_functions(arith: Arithmetic, sizes: Mapping[str, int]) -> FormFunctions | None:
    """The functions for every registered form op that is not an ax op, or None if there is none."""
    others = frozenset(form_op_classes().values()) - frozenset(ALL_OPS)
    return _functions_class(others)(arith=arith, sizes=sizes) if others else None


@cache
def _functions_class(op_classes: frozenset[type[Operation]]) -> type[FormFunctions]:
    # xDSL dispatches on an op's exact class from a table built when the class is registered, and
    # which classes exist is known only once dialects are registered: one subclass per such set.
    # Entries are named by the op's name, unique across dialects (`tile.load` and `xt.load` are
    # both classes named LoadOp: keyed by class name, one would hide the other)
    table = {f"run_{cls.name.replace('.', '_')}": impl(cls)(FormFunctions.run_form_op)
             for cls in op_classes}
    return register_impls(type("RegisteredFormFunctions", (FormFunctions,), table))
