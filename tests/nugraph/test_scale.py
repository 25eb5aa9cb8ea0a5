"""Programs of real size: thousands of statements propagate, extract, export, print and read back
without recursion, and every limit of a run is honoured and reported."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.frontend import api as ax
from axon.interpreter import run_function
from axon.nugraph.nu_ir import read_graph
from axon.nugraph.runner import SATURATED, Budget
from axon.nugraph.session import Session


def chain(statements: int) -> FuncOp:
    """`y<i> = y<i-1> * 1.0001 + i % 7`, `statements` times, over `x: f32[N]`."""

    def f(x: ax.Tensor) -> ax.Tensor:
        y = x
        for i in range(1, statements + 1):
            y = y * 1.0001 + (i % 7)
        return y

    return ax.Function(f, [ax.f32["N"]], name="f").to_func()


def test_a_chain_of_1200_statements_propagates_and_exports_the_same_program() -> None:
    func_op = chain(1200)
    s = Session.from_function(func_op)
    report = s.run(Budget())
    assert report.stop_reason == SATURATED
    checked = s.checked_best()
    assert checked.float_error.ok
    out = s.export(checked.extraction)
    x = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    (want,), (got,) = run_function(func_op, [x]), run_function(out, [x])
    np.testing.assert_array_equal(got, want)
    # the graph prints as nu IR and reads back
    g, imported = read_graph(s.graph_ir())
    assert (g.num_classes, g.num_nodes) == (s.graph.num_classes, s.graph.num_nodes)
    assert len(imported.results) == 1
