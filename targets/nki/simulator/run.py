"""`simulate`: run a kernel on numpy inputs and return its outputs (and the trace)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from types import TracebackType
from typing import Any

import numpy as np

from axon.targets.nki.simulator.errors import KernelError, SimulationError
from axon.targets.nki.simulator.kernel import JitKernel
from axon.targets.nki.simulator.limits import HardwareLimits
from axon.targets.nki.simulator.state import RunState, running
from axon.targets.nki.simulator.tensor import Tensor, hbm_input
from axon.targets.nki.simulator.trace import Trace


def kernel_line(err: BaseException, file: str, default: int) -> int:
    """The line of `file` closest to where `err` was raised (its innermost frame in `file`)."""
    line = default
    tb: TracebackType | None = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def locate(err: BaseException, file: str, default: int) -> KernelError:
    """`err` as a KernelError at the kernel's line."""
    message = str(err) if isinstance(err, SimulationError) else f"{type(err).__name__}: {err}"
    return KernelError(file, kernel_line(err, file, default), message)


def _output(state: RunState, value: object, position: str, line: int) -> np.ndarray:
    if not isinstance(value, Tensor):
        raise SimulationError(f"kernel output {position} is {type(value).__name__}; a kernel "
                              f"returns the HBM tensors it wrote (nl.ndarray(..., "
                              f"buffer=nl.shared_hbm))")
    if value.buffer != "hbm":
        raise SimulationError(f"kernel output {position} is a {value.describe()}; outputs must "
                              f"be nl.shared_hbm tensors")
    unwritten = value.unwritten()
    if unwritten:
        state.warn("output", f"kernel output {position} has {unwritten} of {value.array.size} "
                             f"elements the kernel never wrote (they hold the uninitialized "
                             f"pattern)", line)
    return value.array.copy()


def simulate(kernel: JitKernel | Callable[..., Any], *inputs: Any, limits: HardwareLimits,
             grid: tuple[int, ...] | None = None, trace: bool = False) -> Any:
    """Run `kernel` (an `@nki.jit` function, or `kernel[grid]`) on `inputs` and return its
    outputs as numpy arrays (one array, or a tuple when the kernel returns several), or
    `(outputs, trace)` with `trace=True`.

    numpy arrays become HBM tensors (copies, in their dtype, which must be an NKI dtype); other
    arguments (ints, floats, strings) are passed as they are. A grid runs its programs one after
    another, in row-major order of their ids. `limits` are the hardware limits to enforce
    (`axon.targets.nki.simulator_limits.load_limits("trn2")` reads them from a profile).

    Any failure inside the kernel, a broken NKI rule (`SimulationError`) or an exception of the
    kernel's own code, is raised as a `KernelError` at the kernel's file and line."""
    jk = kernel if isinstance(kernel, JitKernel) else JitKernel(kernel)
    launch = jk.grid if grid is None else tuple(grid)
    state = RunState(limits=limits, kernel_file=jk.file, grid=launch,
                     trace=Trace() if trace else None)
    first_line = jk.function.__code__.co_firstlineno
    with running(state):
        args = [hbm_input(state, value, n) if isinstance(value, np.ndarray) else value
                for n, value in enumerate(inputs)]
        result: object = None
        try:
            for program in itertools.product(*(range(n) for n in launch)):
                state.program_id = program
                state.shared_hbm_seen = 0
                result = jk.function(*args)
            if isinstance(result, tuple | list):
                outputs: Any = tuple(_output(state, v, str(n), first_line)
                                     for n, v in enumerate(result))
            else:
                outputs = _output(state, result, "0", first_line)
        except KernelError:
            raise
        except Exception as err:
            raise locate(err, jk.file, first_line) from err
    if state.trace is not None:
        return outputs, state.trace
    return outputs
