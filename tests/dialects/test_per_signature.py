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
from axon.tools.embed import parse_mlir, parse_source, print_ir, run_pipeline


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
