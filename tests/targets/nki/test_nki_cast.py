"""`ax.cast` on NKI: a float cast that widens reads its operand's tile (no instruction), one
that narrows is a `tensor_copy` into the cast's dtype, which rounds as the cast does; a
matmul of fp32 operands runs in fp32 on TensorE though a tile was loaded in bf16; a loaded
scalar widened is read as the scalar. Each kernel is the first proved lowering of its program
(`first_kernel`), run on the simulator against the reference interpreter at three shapes with
partial tiles."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.interpreter import run_function
from axon.targets.nki.select import (
    KernelRunner,
    NoKernel,
    check_close,
    default_tolerance,
    first_kernel,
    random_inputs,
)
from axon.tools.embed import parse_source


def parse(source: str) -> FuncOp:
    (func,) = (op for op in parse_source(source, "f.py").ops if isinstance(op, FuncOp))
    return func


def runs_like_the_interpreter(func: FuncOp, text: str, shapes: list[dict[str, int]],
                              tmp_path: Path) -> list[np.ndarray]:
    outs = []
    for number, sizes in enumerate(shapes):
        inputs = random_inputs(func, sizes, seed=number)
        out, _ = KernelRunner("trn2", tmp_path).run(text, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert out.dtype == np.asarray(expected).dtype
        assert check_close(out, expected, default_tolerance(func)) == "", sizes
        outs.append(out)
    return outs


def test_an_fp32_matrix_vector_product_of_a_widened_bf16_matrix(tmp_path: Path) -> None:
    # x is loaded in bf16 and widened exactly; the vector is fp32, so TensorE multiplies in
    # fp32 (a bf16 copy of the vector would be off by ~2**-9 of each product, far past fp32's
    # tolerance: the check below would fail)
    func = parse("def mv(x: bf16[M, K], s: f32[K]):\n    return astype(x, f32) @ s\n")
    first = first_kernel(func, "trn2", {"M": 256, "K": 1024}, lambda line: None)
    (stationary, moving) = re.search(r"nisa\.nc_matmul\(dst=\w+, stationary=(\w+), "
                                     r"moving=(\w+)\)", first.text).groups()  # type: ignore[union-attr]
    for operand in (stationary, moving):
        assert re.search(rf"{operand} = nl\.ndarray\([^\n]*dtype=nl\.float32", first.text)
    runs_like_the_interpreter(func, first.text, [{"M": 256, "K": 1024}, {"M": 200, "K": 300},
                                                 {"M": 5, "K": 129}], tmp_path)


def test_a_narrowing_cast_rounds_inside_the_kernel(tmp_path: Path) -> None:
    # x - f32(bf16(x)) is the bf16 rounding error of x: zero only if the cast were dropped
    func = parse("def nc(x: f32[M, N]):\n    return x - astype(astype(x, bf16), f32)\n")
    first = first_kernel(func, "trn2", {"M": 256, "N": 512}, lambda line: None)
    assert "dtype=nl.bfloat16" in first.text and "nisa.tensor_copy(" in first.text
    outs = runs_like_the_interpreter(func, first.text, [{"M": 256, "N": 512},
                                                        {"M": 130, "N": 70}, {"M": 3, "N": 5}],
                                     tmp_path)
    assert all(np.count_nonzero(out) > out.size // 2 for out in outs)


def test_a_widened_loaded_scalar_scales_per_row_values(tmp_path: Path) -> None:
    func = parse("def fin(t: f32[M], s: bf16[]):\n"
                 "    return astype(t / 2 * astype(s, f32), bf16)\n")
    first = first_kernel(func, "trn2", {"M": 256}, lambda line: None)
    runs_like_the_interpreter(func, first.text, [{"M": 256}, {"M": 200}, {"M": 7}], tmp_path)


def test_an_integer_cast_is_refused_by_name() -> None:
    func = parse("def ic(x: f32[M, N]):\n    return astype(x, i32)\n")
    with pytest.raises(NoKernel, match=r"'ax.cast' from f32 to i32 has no NKI lowering "
                                       r"\(float to float casts only\)"):
        first_kernel(func, "trn2", {"M": 256, "N": 512}, lambda line: None)
