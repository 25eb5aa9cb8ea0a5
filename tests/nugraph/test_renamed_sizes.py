"""Propagation is blind to how sizes are named: every suite program, with its sizes renamed after
the verifier's old internal variables (`_o0_0`, `_t1`, `_b0`, ...), emits a program equal to the
original in exact arithmetic, at the same cost as under its own names (when the search is not cut by
the clock).

Before the verifier kept its variables in a namespace of their own, rmsnorm with its row size
named `_o0_0` was "optimized" into mean(x)^2 instead of mean(x^2) on a false proof.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS, Program, make_inputs, small_sizes
from axon.frontend.numpy_subset import parse_source
from axon.interpreter import run_function
from axon.nugraph.cost import RooflineCost
from axon.nugraph.runner import TIME_LIMIT, Budget
from axon.nugraph.session import Session

#: names a user may choose that the verifier once used for itself
INTERNAL_LOOKING = ("_o0_0", "_t1", "_b0", "_o0_1", "_b1", "_t0", "_o1_0")
BUDGET = Budget(max_iterations=3, max_nodes=600, time_limit_s=5.0)


def renamed(program: Program) -> tuple[str, dict[str, str]]:
    names = dict(zip(program.symbols, INTERNAL_LOOKING, strict=False))
    source = program.source
    for old, new in names.items():
        source = re.sub(rf"\b{re.escape(old)}\b", new, source)
    return source, names


def optimize(source: str, name: str, sizes: dict[str, int]) -> tuple[Session, FuncOp]:
    (func,) = [op for op in parse_source(source, f"<{name}>").ops]
    assert isinstance(func, FuncOp)
    session = Session.from_function(func, RooflineCost("h200", sizes))
    session.run(BUDGET)
    return session, func


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_renamed_sizes_give_the_same_program(name: str) -> None:
    program = PROGRAMS[name]
    source, names = renamed(program)
    default = dict(program.default_sizes[0])
    plain, _ = optimize(program.source, name, default)
    session, func = optimize(source, name, {names.get(k, k): v for k, v in default.items()})
    best = session.best()
    emitted = session.export(best)
    assert plain.report is not None and session.report is not None
    if TIME_LIMIT not in (plain.report.stop_reason, session.report.stop_reason):
        # a search cut by the clock may end anywhere; otherwise names must not matter
        assert best.cost == pytest.approx(plain.best().cost, rel=1e-9)
    sizes = small_sizes(program, 0)
    inputs = make_inputs(program, sizes, seed=3)
    bound = {names.get(k, k): v for k, v in sizes.items()}
    want = run_function(func, inputs, bound, exact=True)
    got = run_function(emitted, inputs, bound, exact=True)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=1e-6, atol=1e-9)
