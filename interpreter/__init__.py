"""Running tensor-level programs: the dtype-faithful reference interpreter and the naive
loop evaluator of generic forms that cross-checks it."""

from axon.interpreter.driver import run_function, run_module
from axon.interpreter.indexing import (
    InterpreterError,
    StrayReadError,
    bind_sizes,
    reduction_identity,
)
from axon.interpreter.naive import evaluate_form, evaluate_op_naive
from axon.interpreter.reference import (
    KERNELS,
    evaluate_form_vectorized,
    find_kernel,
    kernel,
    run_op,
)

__all__ = [
    "KERNELS", "InterpreterError", "StrayReadError", "bind_sizes", "evaluate_form",
    "evaluate_form_vectorized", "evaluate_op_naive", "find_kernel", "kernel", "reduction_identity",
    "run_function", "run_module", "run_op",
]
