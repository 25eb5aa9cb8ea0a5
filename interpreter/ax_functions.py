"""The `ax` dialect's part of the region interpreter: every ax op runs through its kernel.

xDSL's `Interpreter` owns regions, blocks and the SSA environment; each dialect contributes one
`InterpreterFunctions` class. This is ax's: it runs an op through `compute_op` (the kernel registry,
one rounding to the result dtype), so a tensor op computes the same inside an `scf.for` body as in
a straight-line function.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from axon.dialects.ax import ALL_OPS, TensorOp
from axon.interpreter.arithmetic import FAITHFUL, Arithmetic
from axon.interpreter.reference import compute_op


@dataclass
class AxFunctions(InterpreterFunctions):
    """Runs `ax` ops on held numpy arrays.

    What an ax op needs besides its operands is fixed for a run, so it lives here, one instance
    per run, rather than in the interpreter's generic per-class data (`Interpreter.get_data`, a
    keyed look-up on every op): the arithmetic (faithful or exact) and the size bindings.
    """

    arith: Arithmetic = FAITHFUL
    sizes: Mapping[str, int] = field(default_factory=dict)

    def run_tensor_op(self, interpreter: Interpreter, op: TensorOp,
                      args: PythonValues) -> PythonValues:
        """One ax op: its kernel on the operands, the result rounded once to its dtype (the driver
        has silenced numpy's floating-point warnings for the whole run)."""
        return (compute_op(op, args, self.sizes, self.arith),)


# xDSL dispatches on an op's exact class, while kernels are registered on base classes (one for
# every unary op): give each concrete ax op an impl that forwards to the kernel registry.
for _op_class in ALL_OPS:
    setattr(AxFunctions, f"run_{_op_class.__name__}", impl(_op_class)(AxFunctions.run_tensor_op))
register_impls(AxFunctions)
