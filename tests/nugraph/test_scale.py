"""Programs of real size: thousands of statements propagate, extract, export, print and read back
without recursion, and every limit of a run is honoured and reported."""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.frontend import api as ax
from axon.frontend.numpy_subset import parse_source
from axon.interpreter import run_function
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import INPUT_PROOF, EGraph
from axon.nugraph.merge import merge_groups
from axon.nugraph.nu_ir import read_graph
from axon.nugraph.propagate import propagate
from axon.nugraph.prover import Prover
from axon.nugraph.runner import ITERATION_LIMIT, NODE_LIMIT, SATURATED, TIME_LIMIT, Budget
from axon.nugraph.session import Session
from axon.verifier import ProofBudget, Unknown, Verdict, prove_equivalent


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


def chain_graph(statements: int) -> EGraph:
    """The e-graph of `chain(statements)`, built e-node by e-node (no function to import)."""
    g = EGraph()
    y = g.add_input("x", TensorType(["N"], "f32"))
    for i in range(1, statements + 1):
        for op, value in (("ax.mul", 1.0001), ("ax.add", float(i % 7))):
            c = g.add(ENode.make("ax.constant", {"dtype": "f32", "shape": (), "value": value}, ()),
                      INPUT_PROOF)
            y = g.add(ENode.make(op, {}, (y, c)), INPUT_PROOF)
    return g


def sums_of_matmuls(blocks: int) -> EGraph:
    """`y = sum(y @ w, axis=1)` over a fresh `w` per block: each block offers the push
    sum(x @ w) = x @ sum(w) to prove."""
    g = EGraph()
    y = g.add_input("x", TensorType(["M", "K"], "f32"))
    for i in range(blocks):
        w = g.add_input(f"w{i}", TensorType(["K", "K"], "f32"), i + 1)
        mm = g.add(ENode.make("ax.matmul", {}, (y, w)), INPUT_PROOF)
        total = g.add(ENode.make("ax.sum", {"axes": (1,), "keepdims": True}, (mm,)), INPUT_PROOF)
        y = g.add(ENode.make("ax.mul", {}, (y, total)), INPUT_PROOF)
    return g


def test_the_time_limit_stops_a_run_that_only_proposes() -> None:
    # 16,000 e-nodes and nothing to prove: the clock is read while sites are listed and
    # candidates generated. The collector is held off during the run: a full collection of the
    # whole test session's heap (seen in CI: 1.0 s) is the interpreter's pause, not the runner's
    g = chain_graph(4000)
    gc.collect()
    gc.disable()
    try:
        report = propagate(g, Budget(time_limit_s=0.2))
    finally:
        gc.enable()
    assert report.stop_reason == TIME_LIMIT and "cut by the time limit" in report.summary()
    assert report.seconds < 1.0


def test_the_time_limit_cuts_a_proof_short() -> None:
    def slow(*args: Any, budget: ProofBudget, **kwargs: Any) -> Unknown:
        time.sleep(budget.seconds)  # the safety net, which the run's clock caps
        return Unknown("out of budget: past the safety net (forced)", budget.seconds,
                       limited=True, budget="seconds")

    g = sums_of_matmuls(3)
    prover = Prover(budget=ProofBudget(10, 10, 5.0), decide=slow, numeric_test=False)
    report = propagate(g, Budget(time_limit_s=0.3), prover)
    assert report.stop_reason == TIME_LIMIT and report.seconds < 1.0
    # the proof the clock cut is not counted as undecided
    assert report.unknown == 0


def test_node_and_iteration_limits_stop_a_large_run_and_say_so() -> None:
    g = sums_of_matmuls(200)
    start = time.perf_counter()
    report = propagate(g, Budget(max_nodes=g.num_nodes + 10))
    assert report.stop_reason == NODE_LIMIT and g.num_nodes <= report.history[0].nodes
    assert time.perf_counter() - start < 10.0
    g = sums_of_matmuls(20)
    report = propagate(g, Budget(max_iterations=1))
    assert report.stop_reason == ITERATION_LIMIT and report.proved >= 20


def test_a_session_past_its_time_limit_still_emits_a_checked_program() -> None:
    def slow(*args: Any, **kwargs: Any) -> Verdict:
        time.sleep(0.1)
        return prove_equivalent(*args, **kwargs)

    blocks = 12
    params = ", ".join(f"w{i}: f32[K, K]" for i in range(blocks))
    body = "".join(f"    x = tanh(x * sum(x @ w{i}, axis=1, keepdims=True))\n"
                   for i in range(blocks))
    module = parse_source(f"def f(x: f32[M, K], {params}):\n{body}    return x\n", "<test>")
    s = Session.from_function(next(op for op in module.walk() if isinstance(op, FuncOp)))
    s.run(Budget(time_limit_s=0.5), Prover(decide=slow))
    start = time.perf_counter()
    checked = s.checked_best()
    assert time.perf_counter() - start < 5.0
    assert s.report is not None and s.report.stop_reason == TIME_LIMIT and s.report.proved
    # past the limit, top-k prices no runner-up: the float check has the best program alone
    assert s.report.cut_after == ["extraction"]
    assert "the time limit also cut extraction short" in s.report.summary()
    assert checked.float_error.ok and checked.extraction.cost < s.input_cost()


def test_a_weight_shared_by_every_layer_merges_in_small_groups() -> None:
    # y = exp(y @ w) with one w for 40 layers: the matmuls differ only in y, one group of 40
    g = EGraph()
    y = g.add_input("x", TensorType(["K", "K"], "f32"))
    w = g.add_input("w", TensorType(["K", "K"], "f32"), 1)
    for _ in range(40):
        y = g.add(ENode.make("ax.exp", {}, (g.add(ENode.make("ax.matmul", {}, (y, w)),
                                                  INPUT_PROOF),)), INPUT_PROOF)
    sizes = sorted(len(nodes) for nodes, _ in merge_groups(g))
    assert sizes == [8, 8, 8, 8, 8]
    start = time.perf_counter()
    report = propagate(g, Budget(time_limit_s=3.0, max_iterations=2))
    assert time.perf_counter() - start < 6.0 and report.candidates > 0
