"""`axon PROGRAM --target nki`: the selected kernel (the cheapest right candidate), printed
with its tile sizes; the module runs on the simulator; bad options are diagnostics."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects.form.dtypes import DTYPES
from axon.interpreter import run_function
from axon.targets.nki.command import NkiTargetError, NoKernel, choose_kernel, emit_kernel
from axon.targets.nki.simulator import load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits
from axon.tools.axon_main import main
from axon.tools.embed import parse_source


def program(name: str) -> FuncOp:
    """A suite program, parsed from its source."""
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def test_the_emitted_kernel_runs_and_the_progress_names_both_proofs(tmp_path: Path) -> None:
    said: list[str] = []
    module = parse_source(PROGRAMS["matmul"].source, "matmul.py")
    text = emit_kernel(module, "matmul.py", "trn2", "M=200,N=96,K=300", said.append)
    assert "tiling proof" in said[-1] and "lowering proof" in said[-1]
    path = tmp_path / "matmul.py"
    path.write_text(text)
    sizes = {"M": 200, "N": 96, "K": 300}
    inputs = make_inputs(PROGRAMS["matmul"], sizes)
    out = simulate(load_kernel(path), *inputs, limits=load_limits("trn2"))
    (expected,) = run_function(program("matmul"), inputs, sizes)
    rtol, atol = DTYPES["bf16"].tolerance
    np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize(("profile", "sizes", "message"), [
    ("h200", "", "'h200' is not a NeuronCore profile; known: trn1, trn2"),
    ("trn2", "Q=4", "--sizes: Q is not a size of @relu in relu.py"),
    ("trn2", "M=0", "--sizes 'M=0'"),
])
def test_bad_options_are_refused(profile: str, sizes: str, message: str) -> None:
    module = parse_source(PROGRAMS["relu"].source, "relu.py")
    with pytest.raises(NkiTargetError, match=re.escape(message)):
        emit_kernel(module, "relu.py", profile, sizes, lambda line: None)


def test_the_command_line_writes_the_module(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "relu_kernel.py"
    main(["relu", "--target", "nki", "--sizes", "M=64,N=32", "--no-cache", "-o", str(out)])
    assert "@nki.jit" in out.read_text()
    assert "axon: nki: @relu: rows" in capsys.readouterr().err


def test_choose_kernel_is_the_kernel_the_command_prints() -> None:
    module = parse_source(PROGRAMS["softmax"].source, "softmax.py")
    text = emit_kernel(module, "softmax.py", "trn2", "M=130,N=77", lambda line: None)
    chosen = choose_kernel(program("softmax"), "trn2", {"M": 130, "N": 77}, lambda line: None)
    assert chosen.module_text == text
    assert (chosen.kind, chosen.params, chosen.chosen) == ("rows", {"BM": 128}, "BM=128")
    assert len(chosen.lowering_proof) == 16 and chosen.tiling_proof
    assert chosen.symbolic_s > 0 and chosen.emit_s >= 0


def test_choose_kernel_says_why_nothing_lowers() -> None:
    # (rope was this case until its rank-3 tiles lowered)
    (func,) = (op for op in parse_source("def f(x: bf16[M, N]):\n    return x ** 3\n",
                                         "f.py").ops if isinstance(op, FuncOp))
    with pytest.raises(NoKernel, match="no kernel lowers to nki .rows: not lowered to nki: "
                                       "'ax.pow' has no NKI lowering yet"):
        choose_kernel(func, "trn2", {"M": 3, "N": 2}, lambda line: None)


def test_the_winner_is_cached_and_printed_again_without_a_selection(tmp_path: Path) -> None:
    """The selection's winner goes into the winner cache under the program's text, sizes,
    dtypes and `nki:<profile>`: the same program at the same sizes is printed from it; other
    sizes, `use_cache=False` or a corrupt file (a warning) select anew."""
    module = parse_source(PROGRAMS["relu"].source, "relu.py")
    cache = tmp_path / "winners.json"
    first: list[str] = []
    text = emit_kernel(module, "relu.py", "trn2", "M=64,N=32", first.append,
                       cache=str(cache), use_cache=True)
    assert any("candidate 1/" in line for line in first) and cache.exists()
    again: list[str] = []
    assert emit_kernel(module, "relu.py", "trn2", "M=64,N=32", again.append,
                       cache=str(cache), use_cache=True) == text
    (line,) = again
    assert "@relu: the cached winner rows" in line and "predicted" in line
    other: list[str] = []
    emit_kernel(module, "relu.py", "trn2", "M=65,N=32", other.append, cache=str(cache),
                use_cache=True)
    assert any("candidate 1/" in line for line in other)
    fresh: list[str] = []
    emit_kernel(module, "relu.py", "trn2", "M=64,N=32", fresh.append, cache=str(cache))
    assert any("candidate 1/" in line for line in fresh)
    cache.write_text("{not json")
    broken: list[str] = []
    assert emit_kernel(module, "relu.py", "trn2", "M=64,N=32", broken.append,
                       cache=str(cache), use_cache=True) == text
    assert broken[0].startswith("warning:") and any("candidate 1/" in line for line in broken)


def test_the_candidates_run_on_an_executor_as_they_run_here() -> None:
    """The checks on a local process pool and on a local Ray instance give the choice and
    the latencies of the checks run one after the other."""
    from axon.selection.executor import make_executor

    sizes = {"M": 20, "N": 9}
    here = choose_kernel(program("softmax"), "trn2", sizes, lambda line: None, max_candidates=2)
    for name in ("local", "ray"):
        executor = make_executor(name, workers=2 if name == "local" else 1)
        said: list[str] = []
        try:
            there = choose_kernel(program("softmax"), "trn2", sizes, said.append,
                                  max_candidates=2, executor=executor)
        finally:
            executor.close()
        assert there.module_text == here.module_text and there.latency_s == here.latency_s
        assert [c.latency_s for c in there.candidates] == [c.latency_s for c in here.candidates]
        assert any("candidate 1/" in line for line in said)
