"""A nu-graph variant's unfused chain with its intermediates in fp32 (`widen.py`).

gemm_sum_scale's variant `(x @ sum(w, axis=1)) / 2 * s` rounds the row sums of w to bf16,
which the program never does; on standard normal inputs x's products with them cancel and the
bf16 chain is off the program at a few elements. Widened, the chain reads its 16-bit inputs
in fp32, passes fp32 between its kernels and rounds once at the end: right on the same inputs,
and proved equal to the variant as a whole (a planted change to one kernel is refuted)."""

from __future__ import annotations

from pathlib import Path

from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.dialects.ax.creation import ConstantOp
from axon.interpreter import run_function
from axon.targets.nki.select import (
    KernelRunner,
    OpKernel,
    chain_module,
    check_close,
    choose_kernel,
    default_tolerance,
    op_functions,
    random_inputs,
)
from axon.targets.nki.widen import composed, widened_chain, widened_parts
from axon.tools.embed import parse_source
from axon.verifier import Proved, prove_equivalent

SIZES = {"M": 256, "K": 1024, "N": 1024}


def parse(source: str, name: str) -> FuncOp:
    (func,) = (op for op in parse_source(source, f"{name}.py").ops if isinstance(op, FuncOp))
    return func


def program() -> FuncOp:
    return parse(PROGRAMS["gemm_sum_scale"].source, "gemm_sum_scale")


def variant() -> FuncOp:
    # the nu-graph's variant of gemm_sum_scale, as propagation writes it
    return parse("def gemm_sum_scale(x: bf16[M, K], w: bf16[K, N], s: bf16[]):\n"
                 "    return (x @ sum(w, axis=1)) / 2 * s\n", "gemm_sum_scale")


def dtypes(func: FuncOp) -> tuple[list[str], list[str]]:
    ins, outs = func.function_type.inputs.data, func.function_type.outputs.data
    return ([t.dtype for t in ins if isinstance(t, TensorType)],
            [t.dtype for t in outs if isinstance(t, TensorType)])


def test_the_widened_chain_passes_fp32_and_is_proved_equal_to_the_variant() -> None:
    v = variant()
    assert prove_equivalent(program(), v).verdict == "proved"
    widened = widened_chain(v, op_functions(v))
    assert widened is not None
    parts, proof = widened
    assert len(proof) == 16
    # row sums, the matrix-vector product, the divide, the scale: fp32 out of every kernel
    # but the last, which rounds once to the program's bf16
    assert [dtypes(p.func) for p in parts] == [
        (["bf16"], ["f32"]), (["bf16", "f32"], ["f32"]), (["f32"], ["f32"]),
        (["f32", "bf16"], ["bf16"])]
    # nothing to widen where no intermediate is 16-bit
    f32 = parse("def f(x: f32[M, K], w: f32[K]):\n    return (x @ w) * 2\n", "f")
    assert widened_parts(f32, op_functions(f32)) is None


def test_a_planted_change_to_one_kernel_of_the_chain_is_refuted() -> None:
    v = variant()
    parts = widened_parts(v, op_functions(v))
    assert parts is not None
    divide = parts[2].func.clone()
    (two,) = (op for op in divide.body.block.ops if isinstance(op, ConstantOp))
    three = ConstantOp.make([], **{**two.attrs(), "value": 3.0})
    divide.body.block.insert_op_before(three, two)
    two.results[0].replace_all_uses_with(three.results[0])
    divide.body.block.erase_op(two)
    planted = [*parts[:2], OpKernel(parts[2].op, divide, parts[2].operands), parts[3]]
    assert not isinstance(prove_equivalent(v, composed(v, planted)), Proved)


def test_the_widened_chain_is_right_where_the_bf16_chain_is_not(tmp_path: Path) -> None:
    func, v = program(), variant()
    inputs = random_inputs(func, SIZES)  # standard normal: the row sums of w cancel
    rounded, exact = (run_function(func, inputs, SIZES, exact=e)[0] for e in (False, True))
    tolerance = default_tolerance(func)
    runner = KernelRunner("trn2", tmp_path)

    def off(parts: list[OpKernel] | None) -> bool:
        out, _ = runner.run_module(chain_module(v, "trn2", SIZES, parts), inputs)
        return bool(check_close(out, rounded, tolerance)) and \
            bool(check_close(out, exact, tolerance))

    widened = widened_chain(v, op_functions(v))
    assert widened is not None
    assert off(None)  # the bf16 chain: its own roundings of sum(w, axis=1)
    assert not off(widened[0])


def test_the_selection_takes_the_widened_chain_on_standard_normal_inputs() -> None:
    # the selection's default inputs (standard normal) reject the variant's bf16 chain; its
    # widened twin (tried past the bound, as only a wrong chain gets one) is right and
    # cheaper than every fused candidate of the program
    # (eight row blocks: a fused tiling printed four programs at a time still reads w twice;
    # at SIZES' two, two programs at a time read it once and win)
    chosen = choose_kernel(program(), "trn2", {**SIZES, "M": 1024}, lambda line: None,
                           programs=4)
    assert chosen.kind == "chain" and "intermediates in fp32 (proof " in chosen.chosen
    bf16 = [c for c in chosen.candidates if c.program is not None and not c.widened
            and c.module is not None]
    assert bf16 and all(c.rejected.startswith("wrong result") for c in bf16)
    widened = [c for c in chosen.candidates if c.widened]
    assert [c.program for c in widened] == [c.program for c in bf16]
    fused = [c.latency_s for c in chosen.candidates
             if c.program is None and c.latency_s is not None]
    assert fused and chosen.latency_s < min(fused)
