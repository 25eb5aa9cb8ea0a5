"""The Triton emitter: suite programs' kernels lowered to `xt`, printed as Triton 3.6 modules and
run with Triton's CPU interpreter (`TRITON_INTERPRET=1`, float32) against the reference
interpreter at three shapes (remainders of every block, and every size 1); a wrong kernel is
told apart; what does not lower is a "not supported" diagnostic."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.targets.xe_triton.check import check_emitted, compare, load_module
from axon.targets.xe_triton.emit import emit_triton
from axon.targets.xe_triton.lower import NotSupported, lower_function
from axon.tiling.kernels import Tiling, tile_function, tilings
from axon.tools.embed import parse_mlir, parse_source

#: block sizes: powers of two that no size below is a multiple of
BLOCKS = {"BM": 2, "BN": 4, "BK": 4}

#: (program, tiling) pairs checked: elementwise and row kernels, row reductions with loops
#: (and their parallel write pass, and the online loop), matmul blocks with a K loop
CASES = [("mul", "blocks"), ("relu", "rows"), ("silu", "blocks"), ("softmax", "rows"),
         ("softmax", "rows_multipass"), ("softmax", "rows_multipass_online"),
         ("rmsnorm", "rows"), ("rmsnorm", "rows_multipass"), ("matmul", "blocks_k"),
         ("matmul", "rows_k"), ("rmsnorm_matmul", "blocks_k"), ("silu_matmul", "blocks_k"),
         ("softmax_matmul", "blocks_k"), ("transpose_matmul", "blocks_k")]


def program(name: str) -> FuncOp:
    """A suite program in float32 (the interpreter's bf16 `tl.dot` is wrong)."""
    module = parse_source(PROGRAMS[name].source.replace("bf16[", "f32["), f"{name}.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func


def tiled(func: FuncOp, kind: str) -> FuncOp:
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    return tile_function(func, tiling, "registers", "registers")


def shapes(func: FuncOp) -> list[dict[str, int]]:
    """Three shapes: past a multiple of every block, all ones, and larger remainders
    (neighbouring sizes differ, so a swapped dim shows)."""
    names = sorted({s for t in func.function_type.inputs.data if isinstance(t, TensorType)
                    for d in t.shape for s in d.symbols()})
    return [{s: max(1, n - k % 3) for k, s in enumerate(names)} for n in (5, 1, 11)]


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_the_emitted_kernel_computes_what_the_program_does(name: str, kind: str) -> None:
    func = program(name)
    report = check_emitted(func, tiled(func, kind), shapes(func), BLOCKS)
    assert report.passed, report.shapes
    assert len(report.shapes) == 3


def test_a_wrong_kernel_is_told_apart() -> None:
    func = program("softmax")
    emitted = emit_triton(tiled(func, "rows_multipass"), tile_sizes=BLOCKS)
    assert "tl.exp(" in emitted.text
    wrong = replace(emitted, text=emitted.text.replace("tl.exp(", "tl.exp2("))
    with tempfile.TemporaryDirectory() as scratch:
        assert compare(func, load_module(emitted, Path(scratch)), emitted.name, shapes(func))
        assert not all(s.passed for s in compare(func, load_module(wrong, Path(scratch)),
                                                 wrong.name, shapes(func)))


def test_the_module_is_portable_and_launches_with_the_tile_sizes() -> None:
    func = program("matmul")
    kernel = tiled(func, "blocks_k")
    emitted = emit_triton(kernel, device="max1550", tile_sizes={**BLOCKS, "num_warps": 32})
    text = emitted.text
    assert "grf_mode: tl.constexpr" in text and "grf_mode=grf_mode" in text
    assert "num_warps=32" in text and "tl.dot(" in text and 'input_precision="ieee"' in text
    assert emitted.defaults == BLOCKS
    with pytest.raises(ValueError, match="num_warps=64 is not one h200 takes"):
        emit_triton(kernel, device="h200", tile_sizes={"num_warps": 64})
    with pytest.raises(ValueError, match="BK=3 is not a power of two"):
        emit_triton(kernel, tile_sizes={"BK": 3})


def test_bf16_inputs_accumulate_in_fp32() -> None:
    module = parse_source(PROGRAMS["matmul"].source, "matmul.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    lowered = lower_function(tiled(func, "blocks_k"))
    (dot,) = [op for op in lowered.walk() if isinstance(op, xt.DotOp)]
    assert [str(v.type.dtype) for v in dot.operands] == ["bf16", "bf16", "f32"]  # type: ignore
    text = emit_triton(tiled(func, "blocks_k"), tile_sizes=BLOCKS).text
    assert "tl.full((BM, BN), 0.0, tl.float32)" in text
    assert ".to(tl.bfloat16), mask=" in text  # the store converts to the result's dtype


def test_the_host_function_rejects_a_tensor_of_another_dtype_or_shape() -> None:
    func = program("mul")
    emitted = emit_triton(tiled(func, "blocks"), tile_sizes=BLOCKS)
    with tempfile.TemporaryDirectory() as scratch:
        run = getattr(load_module(emitted, Path(scratch)), emitted.name)
        x = torch.ones(3, 4)
        with pytest.raises(ValueError, match="expected a 2-d torch.float32 tensor"):
            run(x.double(), x)
        with pytest.raises(ValueError, match="dim 1 is 5, expected N"):
            run(x, torch.ones(3, 5))


def test_a_kernel_the_lowering_does_not_handle_is_a_diagnostic() -> None:
    t = "!ax.tensor<[M, N], f32>"
    func = next(op for op in parse_mlir(f"""
func.func @f(%x: {t}) -> !ax.tensor<[M, N], f32> {{
  %c = ax.generic %x {{form = "out[d0 < M, d1 < N] = add over r0 in [d1, N) of in0[d0, r0]",
                       dtype = f32}} : ({t}) -> {t}
  func.return %c : {t}
}}""", "f.mlir").ops if isinstance(op, FuncOp))
    kernel = tile_function(func, Tiling("M"), "registers", "registers")
    # a suffix sum: a cumsum (`tl.cumsum`) starts at 0
    with pytest.raises(NotSupported, match=r"^not supported: 'ax.generic': a reduction over"):
        lower_function(kernel)


@pytest.mark.parametrize("size", ["tl", "v3", "in0_ptr", "B_N"])
def test_a_size_named_like_one_of_the_modules_own_names_is_refused(size: str) -> None:
    # `B_N` is the block the kernel binds for a row held whole (N): a size of that name clashes
    source = (f"def f(x: f32[M, {size}], y: f32[M, N]):\n"
              "    return sum(x, axis=1, keepdims=True) + sum(y, axis=1, keepdims=True)\n")
    (func,) = (op for op in parse_source(source, "f.py").ops if isinstance(op, FuncOp))
    with pytest.raises(NotSupported, match=f"'{size}' is a name the emitted module uses"):
        emit_triton(tiled(func, "rows"), tile_sizes=BLOCKS)


def test_a_reshape_that_would_move_padded_lanes_is_a_diagnostic() -> None:
    # [M, N, K] -> [M, N*K]: K's block holds padding, so merging it moves lanes to other elements
    source = "def f(x: f32[M, N, K]):\n    return reshape(x, [M, N*K])\n"
    (func,) = (op for op in parse_source(source, "f.py").ops if isinstance(op, FuncOp))
    with pytest.raises(NotSupported, match=r"^not supported: 'ax.reshape' of .* a padded block"):
        lower_function(tiled(func, "rows"))
