"""Running tiled kernels: `tile.kernel` over its launch grid, `tile.for`, `tile.store`.

Tile parameters (`BM`) are sizes like any other: the caller binds them (`run_function(...,
sizes={"BM": 64})`) and the kernel checks its assumptions hold for them. While a kernel runs a
program, its program ids are bound in the run's size environment, and while a loop runs an
iteration, its iv is: the form ops inside (`tile.load` at `i*BM`) and the tensor ops on tiles
read them from there, as they read any size.

A kernel's results start unwritten; each `tile.store` writes the part of its tile that falls
inside the result and counts the writes. When the grid is done every element must have been
written exactly once: an element never written, or written by two programs, is an error naming
it (a tiling whose programs overlap or leave a gap is wrong, whatever the values say).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)

from axon.dialects.ax import TensorType
from axon.dialects.tile import ForOp, KernelOp, StoreOp, YieldOp, parse_assumption
from axon.interpreter.arithmetic import FAITHFUL, Arithmetic
from axon.interpreter.indexing import InterpreterError, eval_dims

#: the most programs times iterations one kernel may run (a tile parameter of 1 on a large
#: size would otherwise run for hours): beyond it the run stops with an error
MAX_STEPS = 1 << 20

_HOLDS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
          ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}


@dataclass
class _Writes:
    """The results of the kernel running now, and how often each element was written."""

    kernel: KernelOp
    outputs: list[np.ndarray]
    counts: list[np.ndarray]


@register_impls
@dataclass
class TileFunctions(InterpreterFunctions):
    """Runs the `tile` dialect's kernels and loops (one instance per run: `sizes` is the run's
    size environment, shared with the functions that run tensor ops)."""

    arith: Arithmetic = FAITHFUL
    sizes: MutableMapping[str, int] = field(default_factory=dict)
    _running: list[_Writes] = field(default_factory=list)
    _steps: int = 0

    @contextmanager
    def _bound(self, names: dict[str, int]) -> Iterator[None]:
        """`names` bound in the size environment for the duration."""
        self.sizes.update(names)
        try:
            yield
        finally:
            for n in names:
                del self.sizes[n]

    def _step(self, what: str) -> None:
        self._steps += 1
        if self._steps > MAX_STEPS:
            raise InterpreterError(f"{what}: over {MAX_STEPS} programs and iterations in one "
                                   "run; choose larger tile parameters or smaller sizes")

    @impl(KernelOp)
    def run_kernel(self, interpreter: Interpreter, op: KernelOp,
                   args: PythonValues) -> PythonValues:
        where = "'tile.kernel'"
        missing = [p for p in op.param_names() if p not in self.sizes]
        if missing:
            raise InterpreterError(f"{where}: no value for tile parameter(s) "
                                   f"{', '.join(missing)}; bind them with the sizes")
        for text in op.assumptions():
            lhs, cmp, rhs = parse_assumption(text)
            a, b = lhs.evaluate(self.sizes), rhs.evaluate(self.sizes)
            if not _HOLDS[cmp](a, b):
                raise InterpreterError(f"{where}: assumption '{text}' does not hold ({a} {cmp} "
                                       f"{b} is false)")
        types: list[TensorType] = op.output_types()
        shapes = [eval_dims(t.shape, self.sizes, f"{where} result #{k}")
                  for k, t in enumerate(types)]
        writes = _Writes(op, [self.arith.store(np.zeros(s), t.dtype)
                              for s, t in zip(shapes, types, strict=True)],
                         [np.zeros(s, dtype=np.int64) for s in shapes])
        grid = [g.evaluate(self.sizes) for g in op.grid_exprs()]
        names = op.program_names()
        self._running.append(writes)
        try:
            for point in itertools.product(*(range(max(n, 0)) for n in grid)):
                self._step(where)
                with self._bound(dict(zip(names, point, strict=True))):
                    interpreter.run_ssacfg_region(op.body, args, "tile.kernel")
        finally:
            self._running.pop()
        for k, count in enumerate(writes.counts):
            bad = np.argwhere(count != 1)
            if bad.size:
                at = tuple(int(i) for i in bad[0])
                times = int(count[at])
                raise InterpreterError(
                    f"{where}: result #{k}{list(at)} is written {times} time(s) over the grid "
                    f"{grid} (every element must be written once)")
        return tuple(writes.outputs)

    @impl(ForOp)
    def run_for(self, interpreter: Interpreter, op: ForOp, args: PythonValues) -> PythonValues:
        extent = op.extent_expr().evaluate(self.sizes)
        values: tuple[Any, ...] = tuple(args)
        for k in range(max(extent, 0)):
            self._step("'tile.for'")
            with self._bound({op.iv.data: k}):
                values = interpreter.run_ssacfg_region(op.body, values, "tile.for")
        return values

    @impl_terminator(YieldOp)
    def run_yield(self, _interpreter: Interpreter, op: YieldOp,
                  args: PythonValues) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl(StoreOp)
    def run_store(self, _interpreter: Interpreter, op: StoreOp,
                  args: PythonValues) -> PythonValues:
        if not self._running:
            raise InterpreterError("'tile.store' outside a running tile.kernel")
        writes = self._running[-1]
        k = op.result.value.data
        out, count = writes.outputs[k], writes.counts[k]
        tile = np.asarray(args[0])
        offsets = [o.evaluate(self.sizes) for o in op.offset_exprs()]
        inside: list[slice] = []
        part: list[slice] = []
        for off, n, extent in zip(offsets, tile.shape, out.shape, strict=True):
            if off < 0:
                raise InterpreterError(f"'tile.store': offset {off} is before the start of "
                                       f"result #{k}")
            stop = min(off + n, extent)
            inside.append(slice(off, max(stop, off)))
            part.append(slice(0, max(stop - off, 0)))
        out[tuple(inside)] = tile[tuple(part)]
        count[tuple(inside)] += 1
        return ()
