"""`python -m axon.benchmarks.nki`: axon's kernel, the naive lowering (one kernel per op) and
the hand-written baseline run on the simulator, checked, priced; the table shows the ratios and
the compile time; a program that does not lower is listed with the reason; a wrong kernel is
reported wrong, never priced."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks import nki as bench
from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax.creation import ConstantOp
from axon.frontend.numpy_subset import parse_source
from axon.targets.nki.cost import load_constants
from axon.targets.nki.select import first_kernel


def row(name: str, sizes: dict[str, int], tmp_path: Path,
        max_candidates: int = bench.DEFAULT_MAX_CANDIDATES) -> bench.Row:
    runner = bench.KernelRunner("trn2", tmp_path)
    return bench.bench_program(PROGRAMS[name], "trn2", runner, lambda line: None, sizes,
                               max_candidates)


def no_kernel(*args: object, **kwargs: object) -> None:
    """A planted selection that finds nothing."""
    raise bench.NoKernel("no kernel lowers to nki (planted)")


def test_a_program_is_split_into_one_function_per_op() -> None:
    kernels = bench.op_functions(bench.parse_program(PROGRAMS["rmsnorm"]))
    assert [k.op.name for k in kernels] == ["ax.mul", "ax.mean", "ax.add", "ax.rsqrt", "ax.mul",
                                            "ax.mul"]
    (add,) = (k for k in kernels if k.op.name == "ax.add")
    # the constant 1e-6 is cloned into the kernel of the add that reads it, not a parameter
    assert len(add.operands) == 1 and len(add.func.function_type.inputs.data) == 1
    assert any(isinstance(op, ConstantOp) for op in add.func.body.block.ops)
    square = kernels[0]  # x * x reads x once
    assert len(square.operands) == 1


def test_softmax_row_prices_all_three_kernels(tmp_path: Path) -> None:
    r = row("softmax", {"M": 130, "N": 77}, tmp_path)
    assert r.axon.latency_s and r.naive.latency_s and r.hand and r.hand.latency_s
    assert r.naive.kernels == 5  # max, sub, exp, sum, div
    # five kernels moving the rows through HBM cost more than one fused kernel
    assert r.naive.latency_s > r.axon.latency_s
    assert r.symbolic_s > 0 and r.selection_s > 0
    text = bench.table([r], "trn2")
    (line,) = (ln for ln in text.splitlines() if ln.startswith("softmax"))
    assert "M=130,N=77*" in line and "/5" in line and "rows BM=128" in line
    ratio = r.naive.latency_s / r.axon.latency_s
    assert f"{ratio:.2f}" in line
    assert re.search(r"geomean naive/axon \d+\.\d{3} over 1 programs \(\d+\.\d{3} over the 1 "
                     r"of more than one op\); geomean hand/axon \d+\.\d{3} over 1 programs", text)
    assert bench.summary([r], 1.0).startswith("nki-bench: 1 programs: axon priced 1, naive 1, "
                                              "hand 1 of 1; 0 wrong")


def test_a_chain_that_does_not_lower_is_listed_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (every suite program's chain lowers since gqa's did: its broadcast kernel specialized at
    # G, its sqrt(D) a parameter; test_nki_naive_ops)
    monkeypatch.setattr(bench, "first_kernel", no_kernel)
    r = row("mul", {"M": 3, "N": 5}, tmp_path)
    assert r.axon.latency_s is not None
    assert r.naive.latency_s is None and "'ax.mul' does not lower" in r.naive.why
    text = bench.table([r], "trn2")
    assert "mul (naive): %0 'ax.mul' does not lower: no kernel lowers to nki (planted)" in text


def test_a_value_of_sizes_is_computed_for_the_kernel_that_takes_it(tmp_path: Path) -> None:
    # x / sqrt(K): x gives no K, so its kernel takes sqrt(K) as a rank-0 tensor, which the
    # chain computes with the interpreter
    (func,) = parse_source("def f(x: bf16[M, N], y: bf16[M, K]):\n"
                           "    return x / sqrt(K) + sum(y, axis=-1, keepdims=True)\n",
                           "f.py").ops
    assert isinstance(func, FuncOp)
    (div, *_) = bench.op_functions(func)
    assert len(div.operands) == 2  # x and sqrt(K)
    sizes = {"M": 130, "N": 7, "K": 9}
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((130, 7)).astype(ml_dtypes.bfloat16),
              rng.standard_normal((130, 9)).astype(ml_dtypes.bfloat16)]
    priced = bench.run_naive(func, PROGRAMS["softmax"], sizes, inputs,
                             bench.KernelRunner("trn2", tmp_path), "trn2", lambda line: None)
    assert priced.latency_s is not None and priced.kernels == 3, priced.why


def test_a_program_that_does_not_lower_is_listed_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "choose_kernel", no_kernel)
    r = row("mul", {"M": 3, "N": 5}, tmp_path)
    assert r.axon.latency_s is None and "no kernel lowers to nki (planted)" in r.axon.why
    assert "mul (axon): no kernel lowers to nki (planted)" in bench.table([r], "trn2")


def test_rope_is_priced_beside_its_hand_kernel(tmp_path: Path) -> None:
    # (rope was the case above until its rank-3 tiles lowered)
    r = row("rope", {"T": 3, "H": 2, "D2": 2}, tmp_path)
    assert r.axon.latency_s and r.naive.latency_s and r.hand is not None and r.hand.latency_s
    assert r.naive.latency_s > r.axon.latency_s


def test_a_wrong_kernel_is_reported_wrong_and_not_priced(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = tmp_path / "baselines"
    wrong.mkdir()
    text = (bench.BASELINES / "softmax.py").read_text()
    # the exponentials scaled by the sum instead of its reciprocal
    text = text.replace("operand0=inv[0:n])", "operand0=total[0:n])")
    (wrong / "softmax.py").write_text(text)
    monkeypatch.setattr(bench, "BASELINES", wrong)
    r = row("softmax", {"M": 5, "N": 7}, tmp_path)
    assert r.hand is not None and r.hand.latency_s is None and r.hand.wrong
    assert "wrong result" in r.hand.why
    text = bench.table([r], "trn2")
    (line,) = (ln for ln in text.splitlines() if ln.startswith("softmax"))
    assert line.split()[5] == "WRONG"  # program, tier, sizes, axon, naive, hand
    assert "softmax (hand): wrong result:" in text
    assert "geomean hand/axon - over 0 programs" in text  # not priced, not in the geomean
    assert "1 wrong" in bench.summary([r], 1.0)


def test_the_command_line(capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(bench.SHAPES, "mul", ({"M": 130, "N": 64}, "small, for the test"))
    bench.main(["--programs", "mul"])
    out, err = capsys.readouterr()
    assert "nki-bench: mul at M=130, N=64" in err
    lines = out.splitlines()
    assert lines[-1].startswith("nki-bench: 1 programs: axon priced 1, naive 1, hand 0 of 0")
    assert any(ln.startswith("mul ") and "M=130,N=64*" in ln for ln in lines)
    assert "  mul: small, for the test" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--programs", "nope"], "--programs: nope is not a suite program"),
    (["--profile", "h200"], "'h200' is not a NeuronCore profile"),
])
def test_bad_options_are_refused(argv: list[str], message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(argv)
    assert message in capsys.readouterr().err


def test_the_shapes_the_benchmark_states_are_programs_sizes() -> None:
    for name, (sizes, why) in bench.SHAPES.items():
        assert set(sizes) == set(PROGRAMS[name].symbols) and why


def test_a_kernel_the_simulator_refuses_is_reported_with_its_diagnostic(tmp_path: Path) -> None:
    # a row of 30000 elements: rmsnorm's multipass kernel walks it in blocks. The bounds keep
    # the first multipass candidate (rmsnorm's rows kernel and unfused chain overflow SBUF, the
    # chain taking the third place): its tile sizes are not what is checked, and each further
    # candidate is a simulation of 30000-element rows
    r = row("rmsnorm", {"M": 3, "N": 30000}, tmp_path, max_candidates=3)
    assert r.axon.latency_s is not None and r.axon.detail.startswith("rows_multipass")
    # the hand-written kernel stops at its own assert, saying why
    assert r.hand is not None and r.hand.latency_s is None and "more than SBUF's" in r.hand.why
    # layernorm's multipass kernel lowers (its masked sum of (x - mean)^2 through a column
    # mask built on chip) and runs; the unfused chain's row kernels do not fit SBUF
    r = row("layernorm", {"M": 3, "N": 30000}, tmp_path, max_candidates=1)
    assert r.axon.latency_s is not None and r.axon.detail.startswith("rows_multipass")
    assert r.naive.latency_s is None and not r.naive.wrong
    assert "the simulator stops: KernelError: layernorm_" in r.naive.why
    assert "SBUF overflow" in r.naive.why
    assert str(tmp_path) not in bench.table([r], "trn2")


def test_the_naive_kernels_fuse_no_instructions() -> None:
    # a tile divided by a column: fused, the reciprocal of the column times the tile (a pass
    # ScalarE runs too, `fuse.py`'s divide-reciprocal); the naive lowering keeps the lowering's
    # own divide (the "no fusion, first proved sketch")
    (func,) = parse_source("def f(x: bf16[M, N], c: bf16[M, 1]):\n    return x / c\n",
                           "f.py").ops
    assert isinstance(func, FuncOp)
    sizes = {"M": 256, "N": 512}
    fused = first_kernel(func, "trn2", sizes, lambda line: None).text
    naive = first_kernel(func, "trn2", sizes, lambda line: None, fuse=False).text
    assert "op0=nl.multiply" in fused and "op0=nl.divide, operand0=t" not in fused
    assert "op0=nl.divide, operand0=t" in naive


def test_the_dma_floor_bounds_every_kernel_and_the_table_states_it(tmp_path: Path) -> None:
    r = row("rmsnorm", {"M": 256, "N": 1024}, tmp_path)
    c = load_constants("trn2")
    # x [256, 1024] and the result in bf16, g [1024] in bf16: each moved once at the best rate
    nbytes = 2 * (256 * 1024 * 2) + 1024 * 2
    assert r.floor_s == pytest.approx(
        nbytes / (c.dma_bytes_per_s * max(c.dma_efficiency, c.dma_small_row_efficiency)))
    assert r.floor_s and r.axon.latency_s and r.naive.latency_s and r.hand and r.hand.latency_s
    assert min(r.axon.latency_s, r.naive.latency_s, r.hand.latency_s) >= r.floor_s
    text = bench.table([r], "trn2")
    (line,) = (ln for ln in text.splitlines() if ln.startswith("rmsnorm"))
    assert f"{r.floor_s * 1e6:.1f}" in line
    assert f"{r.naive.latency_s / r.floor_s:.2f}" in line
    bound = re.search(r"geomean naive/floor (\d+\.\d{3}) over the same 1 programs", text)
    assert bound and float(bound.group(1)) >= r.naive.latency_s / r.axon.latency_s - 1e-3
