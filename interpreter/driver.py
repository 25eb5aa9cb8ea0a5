"""Running functions: the reference interpreter's entry points, on xDSL's region interpreter.

xDSL's `Interpreter` walks regions and blocks and holds the SSA environment; each dialect
contributes one `InterpreterFunctions` class: `AxFunctions` runs tensor ops through the kernels
(`reference.py`), `FormFunctions` evaluates the generic form of any other registered dialect's
form ops, xDSL's own `scf` and `func` functions run loops (loop-carried values included),
branches, calls and returns, and `ControlArithFunctions` the index and i1 scalars that steer them.
A dialect with loops of its own adds one more class here: `TileFunctions` runs tiled kernels
(binding program ids and loop ivs in the run's sizes while they run).

Size symbols are bound once per run, for every function the run calls: `func.call`'s verifier
demands that a call's operand and result types equal the callee's, so a symbol names the same size
in caller and callee, and a module's functions share one namespace of sizes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.interpreter import Interpreter, InterpreterFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from axon.dialects.ax import TensorType
from axon.interpreter.arith_functions import ControlArithFunctions
from axon.interpreter.arithmetic import arithmetic
from axon.interpreter.ax_functions import AxFunctions
from axon.interpreter.form_functions import form_functions
from axon.interpreter.indexing import InterpreterError, bind_sizes
from axon.interpreter.tile_functions import TileFunctions

#: where a function outside any module looks its callees up: nowhere (built once, as building a
#: module costs more than a small run; the interpreter only reads it)
_NO_MODULE = ModuleOp([])

#: the stateless dialects' functions, shared by every run
_STATELESS: tuple[InterpreterFunctions, ...] = (
    FuncFunctions(), ScfFunctions(), ControlArithFunctions())


def run_module(module: ModuleOp, name: str, inputs: Sequence[np.ndarray],
               sizes: Mapping[str, int] | None = None, *, exact: bool = False
               ) -> list[np.ndarray]:
    """Run the `func.func` called `name` in `module`; see run_function."""
    for op in module.walk():
        if isinstance(op, FuncOp) and op.sym_name.data == name:
            return run_function(op, inputs, sizes, exact=exact)
    names = [op.sym_name.data for op in module.walk() if isinstance(op, FuncOp)]
    raise InterpreterError(f"no function '{name}' in the module (functions: "
                           f"{', '.join(names) or 'none'})")


def run_function(func_op: FuncOp, inputs: Sequence[np.ndarray],
                 sizes: Mapping[str, int] | None = None, *, exact: bool = False
                 ) -> list[np.ndarray]:
    """Run a function of `ax` ops on numpy inputs; returns one array per returned value.

    Size symbols bind by unifying the input shapes with the parameter types (`sizes` supplies any
    the shapes cannot determine). Inputs are converted to their parameter's storage dtype; every
    result comes back in its storage dtype (e.g. ml_dtypes.bfloat16).

    The body may hold `scf.for` loops (index bounds from `arith.constant`, `!ax.tensor` values
    carried from one iteration to the next), `scf.if`, and `func.call`s of functions of the same
    module, which run under the same size bindings.

    `exact=True` evaluates the program's real-arithmetic meaning instead: inputs are taken as given
    (float64 for float parameters, int64 for i32; not rounded to the parameter's dtype, so pass
    values of that dtype to evaluate the program on representable inputs), every op computes in
    float64 / int64 and nothing is rounded to an op's dtype; results come back as float64, int64
    or bool.
    """
    arith = arithmetic(exact)
    name = func_op.sym_name.data
    param_types = _param_types(func_op)
    if len(inputs) != len(param_types):
        raise InterpreterError(f"function '{name}' takes {len(param_types)} input(s), "
                               f"got {len(inputs)}")
    arrays = [np.asarray(x) for x in inputs]
    env = bind_sizes([t.shape for t in param_types], [a.shape for a in arrays], sizes)
    block = func_op.body.blocks.first
    if block is None:
        raise InterpreterError(f"function '{name}' has no body")
    if not isinstance(block.last_op, ReturnOp):
        raise InterpreterError(f"function '{name}' ends without func.return")
    args = tuple(arith.store(a, t.dtype) for a, t in zip(arrays, param_types, strict=True))
    interpreter = Interpreter(_symbol_table(func_op))
    interpreter.register_implementations(AxFunctions(arith=arith, sizes=env))
    interpreter.register_implementations(TileFunctions(arith=arith, sizes=env))
    others = form_functions(arith, env)
    if others is not None:
        interpreter.register_implementations(others)
    for functions in _STATELESS:
        interpreter.register_implementations(functions)
    try:
        # domain errors (log of a negative, 0/0) give nan/inf as in an eager framework, not
        # warnings; silenced once here rather than around every op (see compute_op)
        with np.errstate(all="ignore"):
            return list(interpreter.run_ssacfg_region(func_op.body, args, name))
    except InterpretationError as err:
        # xDSL's own complaints (an op without an impl, a call of an unknown symbol) are this
        # interpreter's errors to its callers
        raise InterpreterError(str(err)) from None


def _symbol_table(func_op: FuncOp) -> ModuleOp:
    """The module `func.call`s in `func_op` resolve in: its nearest enclosing one, or none for a
    function outside any module (which then can call nothing)."""
    op: Operation | None = func_op
    while op is not None and not isinstance(op, ModuleOp):
        op = op.parent_op()
    return op if op is not None else _NO_MODULE


def _param_types(func_op: FuncOp) -> list[TensorType]:
    types = list(func_op.function_type.inputs.data)
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise InterpreterError(f"function '{func_op.sym_name.data}' argument #{i} has type "
                                   f"{t}, expected !ax.tensor")
    return types  # type: ignore[return-value]
