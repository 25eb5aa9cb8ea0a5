"""Verification and printing memoized per op signature: the same verdicts and the same text as
doing the work for every op."""

from __future__ import annotations

import io

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import ALL_OPS, AddOp
from axon.dialects.ax.per_signature import unmemoized
from axon.tools.embed import make_context, parse_mlir, parse_source, print_ir, run_pipeline
from axon.tools.locations import LocatingParser


def texts(module: ModuleOp) -> list[str]:
    located = io.StringIO()
    Printer(stream=located, print_debuginfo=True).print_op(module)
    return [print_ir(module), print_ir(module, generic=True), located.getvalue()]


@pytest.mark.parametrize("name", ["rmsnorm", "softmax_matmul", "rope", "lora"])
def test_memoized_printing_is_the_assembly_formats_text(name: str) -> None:
    module = parse_source(PROGRAMS[name].source, f"{name}.py")
    run_pipeline(module, 'propagate{emit="top-k" top_k=3 max_iterations=2}')
    memoized = texts(module)
    with unmemoized(ALL_OPS):
        assert texts(module) == memoized
    assert "ax." in memoized[0]


WRONG_RESULT = """
func.func @f(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> {
  %0 = ax.add %x, %x : (!ax.tensor<[N], f32>, !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
  %1 = ax.add %x, %x : (!ax.tensor<[N], f32>, !ax.tensor<[N], f32>) -> !ax.tensor<[M], f32>
  func.return %0 : !ax.tensor<[N], f32>
}
"""


def test_a_failing_signature_fails_every_time_and_a_passing_one_stays_passing() -> None:
    for _ in range(2):  # a failure is never remembered as a pass
        with pytest.raises(Exception, match="result type is"):
            parse_mlir(WRONG_RESULT, "wrong.mlir")
    module = parse_mlir(WRONG_RESULT.replace("[M], f32>\n", "[N], f32>\n", 1), "right.mlir")
    adds = [op for op in module.walk() if isinstance(op, AddOp)]
    assert len(adds) == 2
    module.verify()
    # the op's place is still checked for every op: an ax op cannot end a function
    func = next(iter(module.ops))
    last = func.body.block.last_op  # type: ignore[attr-defined]
    assert last is not None
    last.detach()
    with pytest.raises(VerifyException, match="not a terminator"):
        module.verify()


# TN and TS stand for the two tensor types (lines stay short)
EDGES = """
func.func @f(%x: TN, %y: TN) -> TN {
  %0 = ax.add %x, %y : (TN, TN) -> TN
  %1 = ax.add %0, %y : (TN, TN) -> TN loc("a.py":3:4)
  %2 = ax.add %1, %y : (TN, TN) -> TN // note
  %3 = ax.add %2, %y : (TN, TN)
         -> TN
  %4 = ax.constant {value = 2.0 : f64, shape = [], dtype = f32} : TS
  %5 = ax.constant {value = 3.0 : f64, shape = [], dtype = f32} : TS
  %6 = ax.constant {value = 2.0 : f64, shape = [], dtype = f32} : TS
  %7 = ax.mul %3, %4 : (TN, TS) -> TN
  %8 = ax.mul %7, %6 : (TN, TS) -> TN
  %9 = ax.add %8, %y : (TN, TN) -> TN
  %10 = ax.mul %9, %5 : (TN, TS) -> TN
  func.return %10 : TN
}
""".replace("TN", "!ax.tensor<[N], f32>").replace("TS", "!ax.tensor<[], f32>")


def parsed(text: str, memo: bool) -> ModuleOp:
    parser = LocatingParser(make_context(), text, "t.mlir")
    if not memo:
        parser.signature_memo = None  # type: ignore[assignment]
    module = parser.parse_module()
    module.verify()
    return module


@pytest.mark.parametrize("name", ["edges", "rmsnorm_matmul", "gated_mlp", "rope"])
def test_memoized_parsing_builds_the_ops_the_format_does(name: str) -> None:
    if name == "edges":
        text = EDGES
    else:
        module = parse_source(PROGRAMS[name].source, f"{name}.py")
        run_pipeline(module, 'propagate{emit="top-k" top_k=3 max_iterations=2}')
        text = print_ir(module)
    fast, full = parsed(text, memo=True), parsed(text, memo=False)
    assert texts(fast) == texts(full)
    assert "loc(" in texts(fast)[2]
