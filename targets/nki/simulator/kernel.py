"""`@nki.jit` kernels and their launch grids (`kernel[2, 2]`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from axon.targets.nki.simulator import state as _state
from axon.targets.nki.simulator.errors import SimulationError


class JitKernel:
    """A kernel function and the launch grid it is called with (`()` for a single program)."""

    def __init__(self, function: Callable[..., Any], grid: tuple[int, ...] = ()):
        self.function = function
        self.grid = grid
        self.__doc__ = function.__doc__
        self.__name__ = getattr(function, "__name__", "kernel")

    @property
    def file(self) -> str:
        """The source file the kernel was defined in: errors and the trace point into it."""
        return str(self.function.__code__.co_filename)

    def __getitem__(self, grid: object) -> JitKernel:
        dims = grid if isinstance(grid, tuple) else (grid,)
        if not dims or any(not isinstance(n, int) or n < 1 for n in dims):
            raise SimulationError(f"{self.__name__}[{grid!r}]: a launch grid is one or more "
                                  f"positive ints")
        return JitKernel(self.function, tuple(dims))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _state._current is not None:
            return self.function(*args, **kwargs)
        raise SimulationError(f"{self.__name__}: an NKI kernel runs through the simulator: "
                              f"simulate({self.__name__}, *inputs, limits=...)")


def jit(function: Callable[..., Any] | None = None, **options: Any) -> Any:
    """`@nki.jit` and `@nki.jit(...)`: mark a function as a kernel. Compiler options (`mode`,
    `platform_target`, ...) do not change what the simulator computes and are ignored."""
    if function is None:
        return lambda inner: JitKernel(inner)
    return JitKernel(function)
