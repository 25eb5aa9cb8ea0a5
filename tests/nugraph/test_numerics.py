"""The float-error check of emitted programs: what it measures, what it rejects, what the report
says, and that the programs propagation emits for the benchmarks pass it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.frontend.numpy_subset import parse_source
from axon.nugraph import session as session_module
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import INPUT_PROOF, EGraph, Proof
from axon.nugraph.numerics import (
    MAX_ELEMENTS,
    ORIGINAL_ERROR_FACTOR,
    FloatCheck,
    choose_sizes,
    result_error,
)
from axon.nugraph.runner import Budget
from axon.nugraph.session import Session
from axon.tools.embed import run_pipeline


def function(source: str) -> FuncOp:
    return next(op for op in parse_source(source, "<test>").walk() if isinstance(op, FuncOp))


def ops(func: FuncOp) -> list[str]:
    return [op.name for op in func.body.ops if op.name != "func.return"]


CATASTROPHIC = "def f(x: f32[M]):\n    return (x + 1e8) - 1e8\n"
IDENTITY = "def f(x: f32[M]):\n    return x\n"


# ---- the measurement ----------------------------------------------------------------------------
def test_cancellation_against_a_large_constant_fails_in_f32() -> None:
    bad = FloatCheck(function(IDENTITY)).measure(function(CATASTROPHIC))
    assert not bad.ok and bad.error is not None and bad.error > 0.1
    assert bad.describe().startswith("float error ") and "(f32 tolerance 2e-05)" in bad.describe()
    good = FloatCheck(function(IDENTITY)).measure(function(IDENTITY))
    assert good.ok and good.error == 0.0


def test_the_input_programs_own_error_widens_the_bound() -> None:
    # replacing a catastrophic program by an accurate one passes, and so does the program itself
    check = FloatCheck(function(CATASTROPHIC))
    own = check.original_errors[0]
    assert own > DTYPES["f32"].tolerance[0]
    same = check.measure(function(CATASTROPHIC))
    assert same.ok and same.allowed == pytest.approx(ORIGINAL_ERROR_FACTOR * own)
    assert "input program" in same.describe()
    assert check.measure(function(IDENTITY)).ok


def test_bf16_rounding_of_a_reordering_is_within_the_bound() -> None:
    # (x * g) @ w and (x @ (g * w)) round different intermediates to bf16
    original = function("def f(x: bf16[M, K], g: bf16[K, 1], w: bf16[K, N]):\n"
                        "    return (x * reshape(g, (1, K))) @ w\n")
    moved = function("def f(x: bf16[M, K], g: bf16[K, 1], w: bf16[K, N]):\n"
                     "    return x @ (g * w)\n")
    error = FloatCheck(original).measure(moved)
    assert error.ok and error.dtype == "bf16" and 0 < (error.error or 0) < 0.1


def test_error_is_the_dtype_tolerance_test_for_results_of_order_one() -> None:
    rtol, atol = DTYPES["f16"].tolerance
    ref = np.array([1.0, -0.5, 0.0, 0.25])
    value = ref + np.array([rtol * 1.0 + atol, 0.0, atol, 0.0])  # exactly at the bound
    assert result_error(value, ref, "f16") == pytest.approx(rtol)
    assert result_error(np.array([np.inf, 0.0]), np.array([1.0, 0.0]), "f16") == math.inf
    assert result_error(np.array([0.0, 1.0]), np.array([np.nan, 1.0]), "f16") == 0.0
    assert result_error(np.array([3, 4]), np.array([3, 5]), "i32") == 1.0


def test_sizes_are_small_distinct_and_capped() -> None:
    sizes = choose_sizes(function("def f(x: f32[M, K], w: f32[K, N]):\n    return x @ w\n"))
    assert len(set(sizes.values())) == 3 and all(16 <= v <= 64 for v in sizes.values())
    gqa = function(PROGRAMS["gqa"].source)
    sizes = choose_sizes(gqa)
    assert len(set(sizes.values())) == len(sizes)
    shapes = [r.type.shape for op in gqa.walk() for r in op.results
              if isinstance(r.type, TensorType)]
    assert max(math.prod(d.evaluate(sizes) for d in shape) for shape in shapes) <= MAX_ELEMENTS
    assert FloatCheck(gqa).skipped is None


def test_a_large_concrete_dim_is_scaled_down_or_skips_the_check_with_the_reason() -> None:
    big = function("def f(x: f32[4096, K]):\n    return x * 2.0\n")
    check = FloatCheck(big)
    assert check.skipped is None and check.inputs[0][0].shape[0] == 256
    assert check.measure(function("def f(x: f32[4096, K]):\n    return x + x\n")).ok
    square = function("def f(x: f32[4096]):\n    return reshape(x, (64, 64)) * 2.0\n")
    check = FloatCheck(square)
    assert check.skipped is not None and "4096" in check.skipped
    error = check.measure(square)
    assert error.ok and error.error is None
    assert error.describe() == f"float error not checked ({check.skipped})"
    small = FloatCheck(function("def f(x: f32[8, K]):\n    return x * 2.0\n"))
    assert small.skipped is None and small.inputs[0][0].shape[0] == 8


def test_integer_and_boolean_results_must_match_exactly() -> None:
    check = FloatCheck(function("def f(a: i32[M], b: i32[M]):\n    return a * b + a\n"))
    assert check.measure(function("def f(a: i32[M], b: i32[M]):\n    return a * (b + 1)\n")).ok
    wrong = check.measure(function("def f(a: i32[M], b: i32[M]):\n    return a * b\n"))
    assert not wrong.ok and wrong.dtype == "i32"


# ---- the session: a catastrophic cheapest candidate is not emitted ------------------------------
def _catastrophic_session() -> tuple[Session, int, int]:
    """A session over `x * 3` whose root class also holds `((x + 1e8) - 1e8) * 3` (the cheapest
    under the test's cost) and `3 * x` (good, dearer); the input program is the dearest."""
    s = Session.from_function(function("def f(x: f32[M]):\n    return x * 3.0\n"))
    g: EGraph = s.graph
    x = s.imported.params[0]
    (root,) = s.imported.results
    three = next(c for c in g.class_ids() if g.nodes[g.class_nodes(c)[0]].op == "ax.constant")
    big = g.add(ENode.make("ax.constant", {"value": 1e8, "shape": (), "dtype": "f32"}, ()),
                INPUT_PROOF)
    shifted = g.add(ENode.make("ax.add", {}, (x, big)), INPUT_PROOF)
    back = g.add(ENode.make("ax.sub", {}, (shifted, big)), INPUT_PROOF)
    bad_node = g.class_nodes(g.add(ENode.make("ax.mul", {}, (back, three)), INPUT_PROOF))[0]
    good_node = g.class_nodes(g.add(ENode.make("ax.mul", {}, (three, x)), INPUT_PROOF))[0]
    # the test plays the prover: both are x * 3 over the reals
    g.record_proof(Proof("p1", "test", "", "", "proved", 0.0))
    input_node = g.class_nodes(root)[0]
    for other in (bad_node, good_node):
        g.union(input_node, other, "p1")
    g.rebuild()

    def cost(graph: EGraph, nid: int) -> float:
        if graph.nodes[nid].is_input:
            return 0.0
        return {input_node: 100.0, good_node: 3.0}.get(nid, 0.1 if nid != bad_node else 1.0)

    s.cost = cost
    return s, bad_node, good_node


def test_the_cheapest_candidate_is_skipped_when_catastrophic() -> None:
    s, bad_node, good_node = _catastrophic_session()
    root = s.graph.find(s.imported.results[0])
    assert s.best().chosen()[root] == bad_node  # the ranking prefers the catastrophic program
    checked = s.checked_best()
    assert checked.extraction.chosen()[root] == good_node
    assert checked.float_error.ok and (checked.float_error.error or 1) < 1e-6
    assert ops(s.export(checked.extraction)) == ["ax.constant", "ax.mul"]
    (rejected,) = s.float_rejected.values()
    assert not rejected.ok and (rejected.error or 0) > 0.1
    top = s.checked_top_k(3)
    assert [c.extraction.chosen()[root] for c in top] == [good_node, s.input_choice[root]]


def test_the_input_program_is_the_last_resort(monkeypatch: pytest.MonkeyPatch) -> None:
    s, bad_node, _ = _catastrophic_session()
    # with no look past the best extraction, the input program is what is left
    monkeypatch.setattr(session_module, "CHECK_DEPTH", 0)
    root = s.graph.find(s.imported.results[0])
    assert s.best().chosen()[root] == bad_node
    checked = s.checked_best()
    assert checked.extraction == s.input_extraction() and checked.float_error.ok
    assert checked.extraction.chosen()[root] == s.input_choice[root]
    assert s.input_extraction().cost == pytest.approx(s.input_cost())


def test_the_input_program_is_measured_only_when_its_error_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to propagate: the best program is the input, which passes by definition, so the
    check runs nothing until its error is asked for (a report); then it measures it once."""
    from axon.nugraph import numerics

    runs: list[str] = []
    real = numerics.run_function

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append("run")
        return real(*args, **kwargs)

    monkeypatch.setattr(numerics, "run_function", counted)
    s = Session.from_function(function(IDENTITY))
    s.run(Budget(time_limit_s=30))
    checked = s.checked_best()
    assert checked.extraction == s.input_extraction() and runs == []
    assert checked.float_error.ok and checked.float_error.error == 0.0
    measured = len(runs)
    assert measured == 2 * len(numerics.DRAWS)  # the exact reference and the dtype run, per draw
    assert checked.float_error.ok and len(runs) == measured  # measured once


# ---- the pass ------------------------------------------------------------------------------------
SUM_OF_MATMUL = "def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x @ w, axis=1)\n"


def test_the_report_prints_the_float_error(capsys: pytest.CaptureFixture[str]) -> None:
    module = parse_source(SUM_OF_MATMUL, "<test>")
    run_pipeline(module, 'propagate{report=true emit="top-k" top_k=2}')
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if "float error" in ln]
    assert line.startswith("propagate: @f: ")
    assert "(f32 tolerance 2e-05), runners-up " in line
    assert line.endswith("; 0 rejected for float error")
    value = float(line.split("float error ")[1].split()[0])
    assert 0 <= value < 2e-5


@pytest.mark.parametrize("name", ["transpose_matmul", "softmax_matmul", "gemm_sum_scale",
                                  "reduce_broadcast_mul"])
def test_emitted_benchmark_programs_pass(name: str) -> None:
    original = function(PROGRAMS[name].source)
    s = Session.from_function(original)
    s.run(Budget(time_limit_s=30))
    checked = s.checked_best()
    assert checked.extraction == s.best() and not s.float_rejected
    # an independent check of the exported program against the source program
    error = FloatCheck(original).measure(s.export(checked.extraction))
    assert error.ok and error.error is not None and error.error <= error.allowed
    assert error.error == pytest.approx(checked.float_error.error)
