"""The benchmark suite: every program parses, verifies, and runs in the reference interpreter to
the numbers of its NumPy reference, on two small shape bindings each; the registry covers the
suite."""

from __future__ import annotations

import numpy as np
import pytest

from axon.benchmarks.suite import PROGRAMS, Program, make_inputs, small_sizes
from axon.dialects.form.dtypes import DTYPES, numpy_dtype
from axon.frontend.numpy_subset import parse_file, parse_source
from axon.interpreter import run_module

#: The Tier 1 and Tier 2 names of ../shared/design/benchmarks.md (written out here because that
#: file is not in every checkout).
SUITE_NAMES = (
    # Tier 1
    "mul", "relu", "silu", "softmax", "cumsum", "rmsnorm", "layernorm", "rope", "matmul",
    # Tier 2
    "transpose_matmul", "matmul_transpose", "silu_matmul", "relu_matmul", "rmsnorm_matmul",
    "softmax_matmul", "matmul_red_div", "reduce_broadcast_mul", "gated_mlp", "mlp", "lora",
    "ntrans", "gemm_sum_scale", "gqa", "qknorm_gqa", "linear_attention",
)

CASES = [(name, variant) for name in PROGRAMS for variant in (0, 1)]


def test_registry_covers_the_suite() -> None:
    """Every Tier 1 and Tier 2 program has an entry, a source file and a tier."""
    missing = [n for n in SUITE_NAMES if n not in PROGRAMS]
    assert not missing, f"no registry entry for {missing}"
    for name in SUITE_NAMES:
        assert PROGRAMS[name].source_path.is_file(), name
    assert {PROGRAMS[n].tier for n in SUITE_NAMES[:9]} == {1}
    assert {PROGRAMS[n].tier for n in SUITE_NAMES[9:]} == {2}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_entry_is_consistent(name: str) -> None:
    """The source starts with a comment, defines `name` with parameters of the program's dtype,
    and the default and small sizes bind exactly its size symbols (small ones within 2..16)."""
    program = PROGRAMS[name]
    assert program.source.startswith("# "), "a program file starts with a comment line"
    assert program.params, "no parameters read from the signature"
    assert {p.dtype for p in program.params} == {program.dtype}
    assert program.default_sizes
    for sizes in program.default_sizes:
        assert set(sizes) == set(program.symbols)
    small = [small_sizes(program, v) for v in (0, 1)]
    assert small[0] != small[1]
    for sizes in small:
        assert set(sizes) == set(program.symbols)
        assert all(2 <= n <= 16 for n in sizes.values())
        if len(sizes) > 1:
            assert len(set(sizes.values())) == len(sizes), "small sizes must tell dims apart"


def _check_against_reference(program: Program, sizes: dict[str, int]) -> None:
    module = parse_file(program.source_path)
    module.verify()
    inputs = make_inputs(program, sizes, seed=7)
    for array, param in zip(inputs, program.params, strict=True):
        assert array.shape == param.shape(sizes)
        assert array.dtype == numpy_dtype(param.dtype)
    (actual,) = run_module(module, program.name, inputs)
    expected = program.reference(*[a.astype(np.float32) for a in inputs])
    assert actual.shape == expected.shape
    assert actual.dtype == numpy_dtype(program.dtype)
    rtol, atol = program.tolerance
    np.testing.assert_allclose(actual.astype(np.float32), expected, rtol=rtol, atol=atol,
                               err_msg=f"{program.name} at {sizes}")


@pytest.mark.parametrize(("name", "variant"), CASES)
def test_program_matches_reference(name: str, variant: int) -> None:
    """Parsed, verified and interpreted, the program agrees with its reference within tolerance."""
    program = PROGRAMS[name]
    _check_against_reference(program, small_sizes(program, variant))


@pytest.mark.parametrize(("name", "variant"), CASES)
def test_program_meaning_in_f32(name: str, variant: int) -> None:
    """Retyped to f32 (so the interpreter's rounding is that of the reference), the program agrees
    with its reference within the f32 tolerance: the program computes exactly the reference's
    function, and any bf16 difference is rounding alone."""
    program = PROGRAMS[name]
    module = parse_source(program.retyped_source("f32"), str(program.source_path))
    module.verify()
    inputs = [a.astype(np.float32) for a in
              make_inputs(program, small_sizes(program, variant), seed=11)]
    (actual,) = run_module(module, program.name, inputs)
    assert actual.dtype == np.float32
    rtol, atol = DTYPES["f32"].tolerance
    np.testing.assert_allclose(actual, program.reference(*inputs), rtol=rtol, atol=atol)


def test_parse_source_names_each_function() -> None:
    """parse_source of a program's text gives a module holding a function of the program's name."""
    for program in PROGRAMS.values():
        module = parse_source(program.source, str(program.source_path))
        names = [op.sym_name.data for op in module.ops if hasattr(op, "sym_name")]
        assert program.name in names, program.name


def test_reference_check_catches_a_wrong_program() -> None:
    """The comparison is tight enough to fail: relu's source against silu's reference differs."""
    relu, silu = PROGRAMS["relu"], PROGRAMS["silu"]
    module = parse_file(relu.source_path)
    inputs = make_inputs(relu, small_sizes(relu, 1), seed=7)
    (actual,) = run_module(module, "relu", inputs)
    expected = silu.reference(inputs[0].astype(np.float32))
    rtol, atol = DTYPES["bf16"].tolerance
    assert not np.allclose(actual.astype(np.float32), expected, rtol=rtol, atol=atol)


def _tree_cumsum(x: np.ndarray) -> np.ndarray:
    """A running sum along the last axis in float32, added as a log-depth tree (Hillis-Steele:
    the order of a parallel scan such as tl.cumsum's), not left to right."""
    y = x.astype(np.float32)
    step = 1
    while step < y.shape[-1]:
        y[..., step:] = y[..., step:] + y[..., :-step]
        step *= 2
    return y


def test_a_scan_tolerance_grows_with_its_length() -> None:
    program = PROGRAMS["cumsum_f32"]
    sizes = {"M": 1024, "N": 1024}
    rtol, atol = program.tolerance
    wide_rtol, wide_atol = program.tolerance_at(sizes)
    assert wide_rtol == rtol and wide_atol == atol + 1024 * 2.0 ** -23
    assert program.tolerance_at({"M": 1024, "N": 4096})[1] > wide_atol
    assert PROGRAMS["matmul"].tolerance_at(PROGRAMS["matmul"].default_sizes[0]) == (
        PROGRAMS["matmul"].tolerance)  # not a scan: as before
    # two float32 orders of one running sum over 1024 lanes differ past the f32 tolerance of
    # one rounding, and within the scan's
    (x,) = make_inputs(program, sizes, seed=0)
    left_to_right = np.cumsum(x.astype(np.float32), axis=-1, dtype=np.float32)
    error = np.abs(_tree_cumsum(x) - left_to_right)
    scale = np.abs(left_to_right)
    assert (error > atol + rtol * scale).any()
    assert (error <= wide_atol + wide_rtol * scale).all()
