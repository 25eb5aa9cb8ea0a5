"""The simulator's errors: a kernel's mistake, located at the kernel's source line."""

from __future__ import annotations


class SimulationError(Exception):
    """A rule of the NKI programming model broken by the kernel: the message names the
    instruction (`nisa.nc_matmul`) or API (`nl.ndarray`) and what was expected or the limit."""


class KernelError(Exception):
    """A kernel failed: a `SimulationError` or any exception the kernel's own code raised,
    located at the kernel source line that caused it.

    `str(err)` reads `file:line: error: message`; the original exception is `__cause__`."""

    def __init__(self, file: str, line: int, message: str):
        super().__init__(f"{file}:{line}: error: {message}")
        self.file = file
        self.line = line
        self.message = message


class SimulationWarning(UserWarning):
    """Something the kernel does that the device would compute differently from the simulator
    (an activation input outside the range its ScalarE approximation covers). The message starts
    with `file:line: warning:`."""
