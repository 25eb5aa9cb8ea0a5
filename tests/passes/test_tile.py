"""The `tile` pass: kernels proposed for every tiling of a program and its variants, admitted
only when proved, with the profile's limits as assumptions, ranked by the tiled cost model;
a program with no proved kernel is left as it was, with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.dialects.tile import KernelOp
from axon.interpreter import run_module
from axon.tiling import search
from axon.tools.embed import parse_mlir, parse_pipeline, parse_source, print_ir, run_pipeline


def tiled(source: str, options: str = "profile=trn2") -> tuple[ModuleOp, ModuleOp]:
    original = parse_source(source, "program.py")
    module = parse_source(source, "program.py")
    run_pipeline(module, f"tile{{{options}}}")
    return original, module


def functions(module: ModuleOp) -> dict[str, FuncOp]:
    return {f.sym_name.data: f for f in module.ops if isinstance(f, FuncOp)}


def kernel_of(func: FuncOp) -> KernelOp | None:
    return next((op for op in func.walk() if isinstance(op, KernelOp)), None)


def run_both(original: ModuleOp, tiled_module: ModuleOp, name: str,
             shapes: list[tuple[dict[str, int], dict[str, int]]]) -> None:
    """The printed tiled program reads back and computes what the original does at each
    (sizes, tile sizes), remainder blocks included."""
    again = parse_mlir(print_ir(tiled_module), "tiled.mlir")
    rng = np.random.default_rng(0)
    types = [t for t in functions(original)[name].function_type.inputs.data
             if isinstance(t, TensorType)]
    for sizes, blocks in shapes:
        inputs = [rng.uniform(0.5, 1.5, tuple(d.evaluate(sizes) for d in t.shape))
                  for t in types]
        (want,) = run_module(original, name, inputs, sizes, exact=True)
        (got,) = run_module(again, name, inputs, {**sizes, **blocks}, exact=True)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["softmax", "rmsnorm", "layernorm", "mul"])
def test_row_local_programs_become_proved_kernels_that_compute_the_same(name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    program = PROGRAMS[name]
    original, module = tiled(program.source)
    func = functions(module)[name]
    kernel = kernel_of(func)
    assert kernel is not None and "axon.proof_id" in func.attributes
    assert "BM <= 128" in kernel.assumptions()  # a NeuronCore has 128 partitions
    assert 'space = "sbuf"' in print_ir(module)
    err = capsys.readouterr().err
    assert f"tile: @{name}: " in err and "; best " in err
    blocks = {p: 3 for p in kernel.param_names()}
    run_both(original, module, name, [({"M": 7, "N": 5}, blocks), ({"M": 4, "N": 6}, blocks),
                                      ({"M": 1, "N": 3}, {k: 2 for k in blocks}),
                                      ({"M": 9, "N": 1}, {k: 1 for k in blocks})])


def test_variants_keep_the_function_and_add_every_proved_kernel_beside_it() -> None:
    _, module = tiled(PROGRAMS["mul"].source, 'profile=h200 emit="variants"')
    funcs = functions(module)
    assert kernel_of(funcs["mul"]) is None
    for kind in ("rows", "blocks"):
        tiling = funcs[f"mul_{kind}"]
        assert tiling.attributes["axon.tiling_of"] == SymbolRefAttr("mul")
        assert tiling.attributes["axon.tiling"] == StringAttr(kind)
        assert isinstance(tiling.attributes["axon.proof_id"], StringAttr)
        kernel = kernel_of(tiling)
        assert kernel is not None and "BM >= 1" in kernel.assumptions()
    assert 'space = "registers"' in print_ir(module)


def test_a_reduction_across_the_split_rows_is_not_tileable_and_the_program_is_kept(
        capsys: pytest.CaptureFixture[str]) -> None:
    source = "def colnorm(x: f32[M, N]):\n    return x - mean(x, axis=0, keepdims=True)\n"
    original, module = tiled(source)
    assert print_ir(module) == print_ir(original)
    err = capsys.readouterr().err
    assert "tile: @colnorm: 2 proposed, 0 proved" in err
    assert "reduces over M, which is split across programs" in err
    assert "tile: 0 of 1 programs tiled" in err


def test_a_transposed_operand_is_loaded_as_a_tile_and_transposed_on_chip() -> None:
    original, module = tiled(PROGRAMS["transpose_matmul"].source, "profile=h200")
    func = functions(module)["transpose_matmul"]
    kernel = kernel_of(func)
    assert kernel is not None
    text = print_ir(module)
    assert 'offsets = ["BK*k", "BM*i"], shape = ["BK", "BM"]' in text
    assert "ax.transpose" in text
    blocks = {k: 2 for k in kernel.param_names()}
    run_both(original, module, "transpose_matmul",
             [({"M": 5, "N": 3, "K": 7}, blocks), ({"M": 1, "N": 1, "K": 3}, blocks),
              ({"M": 4, "N": 6, "K": 1}, {k: 3 for k in blocks})])


FUSED = ("propagate{emit=\"top-k\" top_k=4},"
         "tile{profile=h200 sizes=\"M=4096,N=4096,K=4096\" emit=\"top-k\" top_k=2}")


def test_rmsnorm_matmul_becomes_one_fused_kernel_with_a_k_loop(
        capsys: pytest.CaptureFixture[str]) -> None:
    # propagation finds the order with the scale after the matmul; its K loop accumulates the
    # matmul and the sum of squares together, and that kernel is the cheapest
    source = PROGRAMS["rmsnorm_matmul"].source
    original = parse_source(source, "program.py")
    module = parse_source(source, "program.py")
    run_pipeline(module, FUSED)
    funcs = functions(module)
    best = funcs["rmsnorm_matmul"]
    assert best.attributes["axon.tiling"] == StringAttr("blocks_k")
    kernel = kernel_of(best)
    assert kernel is not None and kernel.param_names() == ["BM", "BN", "BK"]
    assert funcs["rmsnorm_matmul_t1"].attributes["axon.variant_of"] == SymbolRefAttr(
        "rmsnorm_matmul")
    sizes = best.attributes["axon.tile_sizes"]
    assert isinstance(sizes, ArrayAttr) and len(sizes.data) >= 1
    err = capsys.readouterr().err
    assert "best blocks_k of @rmsnorm_matmul_k" in err
    ratio = float(err.split("best blocks_k")[1].split("x compulsory")[0].rsplit("(", 1)[1])
    assert ratio <= 1.2
    shapes = [({"M": 5, "N": 3, "K": 7}, {"BM": 2, "BN": 2, "BK": 3}),
              ({"M": 1, "N": 4, "K": 1}, {"BM": 1, "BN": 3, "BK": 2}),
              ({"M": 6, "N": 1, "K": 8}, {"BM": 4, "BN": 1, "BK": 8})]
    both = ModuleOp([best.clone()])
    run_both(original, both, "rmsnorm_matmul", shapes)


def test_sizes_must_name_the_programs_symbols() -> None:
    module = parse_source(PROGRAMS["mul"].source, "program.py")
    with pytest.raises(DiagnosticException, match="tile: sizes names Q, which is not a size"):
        run_pipeline(module, 'tile{sizes="Q=4"}')


def test_an_unknown_profile_is_refused_when_the_pipeline_is_read() -> None:
    with pytest.raises(ValueError, match="unknown profile 'trn9'; known: "):
        parse_pipeline("tile{profile=trn9}")


def test_report_gives_a_line_per_tiling_with_its_verdict_and_reason(
        capsys: pytest.CaptureFixture[str]) -> None:
    tiled(PROGRAMS["softmax"].source, "profile=h200 report=true")
    lines = [line for line in capsys.readouterr().err.splitlines() if " of @softmax: " in line]
    assert len(lines) == 4
    assert lines[0].startswith("tile: @softmax: rows of @softmax: proved (proof ")
    assert lines[1] == ("tile: @softmax: blocks of @softmax: not tileable: @softmax: "
                        "'ax.reduce_max' reduces over N, which is split across programs")
    assert lines[2].startswith("tile: @softmax: rows_multipass of @softmax: proved (proof ")
    assert lines[3].startswith("tile: @softmax: rows_multipass_online of @softmax: proved ")


def test_a_second_run_with_the_cache_prints_the_same_and_an_edited_cache_is_a_diagnostic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "proofs.json"
    options = f'profile=h200 emit="top-k" cache="{cache}"'
    _, cold = tiled(PROGRAMS["softmax"].source, options)
    _, warm = tiled(PROGRAMS["softmax"].source, options)
    assert print_ir(warm) == print_ir(cold)
    build = search._kernel

    def other_code(*args: Any) -> FuncOp:  # builds another kernel than the one proved
        kernel = build(*args)
        search._kernel_op(kernel).assume_also(["N >= 1"])
        return kernel

    monkeypatch.setattr(search, "_kernel", other_code)
    with pytest.raises(DiagnosticException, match="tile: the .* kernel of @softmax in a "
                                                  "stored tile result does not build"):
        tiled(PROGRAMS["softmax"].source, options)
