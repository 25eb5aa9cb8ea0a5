"""The `tile` pass: row kernels proposed for row-local functions, admitted only when proved,
with the profile's limits as assumptions; everything else left as it was, with the reason."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.dialects.tile import KernelOp
from axon.interpreter import run_module
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


@pytest.mark.parametrize("name", ["softmax", "rmsnorm", "layernorm", "mul"])
def test_row_local_programs_become_proved_row_kernels_that_compute_the_same(name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    program = PROGRAMS[name]
    original, module = tiled(program.source)
    func = functions(module)[name]
    kernel = kernel_of(func)
    assert kernel is not None and "axon.proof_id" in func.attributes
    assert "BM <= 128" in kernel.assumptions()  # a NeuronCore has 128 partitions
    assert 'space = "sbuf"' in print_ir(module)
    assert f"tile: @{name}: row kernel proved" in capsys.readouterr().err
    # the printed kernel reads back, and runs as the program does, remainder blocks included
    again = parse_mlir(print_ir(module), "tiled.mlir")
    rng = np.random.default_rng(0)
    for m, n, bm in [(7, 5, 3), (4, 6, 4), (1, 3, 2), (9, 2, 1)]:
        sizes = {"M": m, "N": n}
        types = [t for t in functions(original)[name].function_type.inputs.data
                 if isinstance(t, TensorType)]
        inputs = [rng.uniform(0.5, 1.5, tuple(d.evaluate(sizes) for d in t.shape))
                  for t in types]
        (want,) = run_module(original, name, inputs, exact=True)
        (got,) = run_module(again, name, inputs, {"BM": bm}, exact=True)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_variants_keep_the_function_and_add_the_kernel_beside_it() -> None:
    _, module = tiled(PROGRAMS["softmax"].source, 'profile=h200 emit="variants"')
    funcs = functions(module)
    assert kernel_of(funcs["softmax"]) is None
    rows = funcs["softmax_rows"]
    assert rows.attributes["axon.tiling_of"] == SymbolRefAttr("softmax")
    assert isinstance(rows.attributes["axon.proof_id"], StringAttr)
    kernel = kernel_of(rows)
    assert kernel is not None and kernel.assumptions() == ["BM >= 1"]  # no limits for a GPU yet
    assert 'space = "registers"' in print_ir(module)


def test_a_function_that_is_not_row_local_is_refuted_and_kept(
        capsys: pytest.CaptureFixture[str]) -> None:
    source = "def colnorm(x: f32[M, N]):\n    return x - mean(x, axis=0, keepdims=True)\n"
    original, module = tiled(source)
    assert print_ir(module) == print_ir(original)
    err = capsys.readouterr().err
    assert "tile: @colnorm: row kernel rejected (refuted: " in err
    assert "tried 1, proved 0, rejected 1, not tileable 0" in err


def test_a_function_whose_inputs_span_the_rows_elsewhere_is_not_tileable(
        capsys: pytest.CaptureFixture[str]) -> None:
    original, module = tiled(PROGRAMS["transpose_matmul"].source)
    assert print_ir(module) == print_ir(original)
    assert "not tileable: an input of type bf16[K, M] spans the rows" in capsys.readouterr().err


def test_an_unknown_profile_is_refused_when_the_pipeline_is_read() -> None:
    with pytest.raises(ValueError, match="unknown profile 'trn9'; known: "):
        parse_pipeline("tile{profile=trn9}")
