"""The PyTorch frontend captures the Forge problems with torch.export into `ax`: each translated
function, run by the reference interpreter at the problem's small sizes with the model's weights
as inputs, matches Model's forward in float32; an unsupported operator is named at its `forward`
line, and the command exits 1 with the diagnostics and no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from axon.benchmarks.forge.problem_set import PROBLEMS, tolerance
from axon.dialects.ax.tensor_type import TensorType
from axon.frontend.diagnostics import SourceError
from axon.frontend.torch import (
    CapturedProblem,
    LoadedProblem,
    TorchFrontendError,
    capture_problem,
    load_problem_file,
)
from axon.frontend.torch.command import main
from axon.interpreter import run_function
from axon.tools.embed import parse_mlir, print_ir, run_pipeline

TRANSLATES = "translates"
#: every problem: TRANSLATES with the size globals the function fixes at their captured value
#: (the function changes when they move alone: GQA's scale is `head_dim ** -0.5` computed in
#: Python, and its kv heads cannot move without its query heads), or the refusal's operators
EXPECTED: dict[str, tuple[str, frozenset[str]]] = {
    **{name: (TRANSLATES, frozenset()) for name in PROBLEMS},
    "21_gqa_attention": (TRANSLATES, frozenset({"num_kv_heads", "head_dim"})),
}


def _capture(name: str, dtype: torch.dtype = torch.float32
             ) -> tuple[LoadedProblem, CapturedProblem]:
    problem = load_problem_file(PROBLEMS[name].problem_path, PROBLEMS[name].small_sizes, dtype)
    return problem, capture_problem(problem)


def _reference(problem: LoadedProblem, inputs: list[torch.Tensor] | None = None) -> np.ndarray:
    with torch.no_grad():
        out = problem.model.float()(*(inputs if inputs is not None else problem.inputs))
    return out.double().numpy()


def _close(got: np.ndarray, want: np.ndarray, name: str) -> None:
    rtol, atol = tolerance(torch.float32)
    atol *= PROBLEMS[name].atol_scale
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


def test_expected_covers_every_problem() -> None:
    assert set(EXPECTED) == set(PROBLEMS)
    assert len(PROBLEMS) == 24
    assert sum(outcome == TRANSLATES for outcome, _ in EXPECTED.values()) == 24


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_problem_translates_and_matches_model(name: str) -> None:
    outcome, fixed = EXPECTED[name]
    problem, captured = _capture(name)
    assert outcome == TRANSLATES
    assert set(captured.fixed) == fixed
    symbolic = {s for t in captured.function.function_type.inputs.data
                if isinstance(t, TensorType) for d in t.shape for s in d.symbols()}
    assert symbolic == set(captured.sizes)
    assert symbolic <= set(PROBLEMS[name].small_sizes)
    (got,) = run_function(captured.function, captured.example_inputs)
    _close(got, _reference(problem), name)
    # the printed module reads back and builds a nu-graph (the pipeline's first pass)
    module = parse_mlir(print_ir(captured.module))
    run_pipeline(module, "build-nugraph")


def test_parameters_become_inputs() -> None:
    problem, captured = _capture("01_gemm_bias_relu")
    assert captured.input_names == ["linear_weight", "linear_bias", "x"]
    assert captured.parameter_names == ["linear_weight", "linear_bias"]
    types = [str(t) for t in captured.function.function_type.inputs.data]
    assert types == ["f32[out_features, in_features]", "f32[out_features]",
                     "f32[batch_size, in_features]"]
    np.testing.assert_array_equal(captured.example_inputs[0],
                                  problem.model.get_parameter("linear.weight").detach().numpy())
    text = print_ir(captured.module)
    assert "ax.transpose %linear_weight {perm = array<i64: 1, 0>}" in text


def test_sources_name_each_input_in_the_model() -> None:
    """Each input's kind and its name in the model or in `forward`'s signature."""
    _, captured = _capture("01_gemm_bias_relu")
    assert captured.sources == [("parameter", "linear.weight"), ("parameter", "linear.bias"),
                                ("input", "x")]


def test_reserved_size_symbols_are_renamed() -> None:
    """A size named like the tiler's own loop index (`k`) is renamed on capture when a stage
    reserves it; the values, the shapes and the other names stay."""
    _, plain = _capture("06_bmm_scale")
    assert "k" in plain.sizes and plain.renamed == {}
    problem = load_problem_file(PROBLEMS["06_bmm_scale"].problem_path,
                                PROBLEMS["06_bmm_scale"].small_sizes, torch.float32)
    captured = capture_problem(problem, reserved={"k", "i"})
    assert captured.renamed == {"k": "k_size"}
    assert captured.sizes["k_size"] == plain.sizes["k"] and "k" not in captured.sizes
    assert print_ir(captured.module) == print_ir(plain.module).replace("k,", "k_size,").replace(
        "k]", "k_size]")
    (got,) = run_function(captured.function, captured.example_inputs)
    _close(got, _reference(problem), "06_bmm_scale")


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_distinct_sizes_join_only_where_the_graph_requires(name: str) -> None:
    """With `distinct`, inputs share a size only where torch's graph equates them: every
    problem still matches Model; self-attention's key length and value head dim stand apart
    from the query's, the rest keep the problem's own names."""
    problem = load_problem_file(PROBLEMS[name].problem_path, PROBLEMS[name].small_sizes,
                                torch.float32)
    captured = capture_problem(problem, distinct=True)
    (got,) = run_function(captured.function, captured.example_inputs)
    _close(got, _reference(problem), name)
    plain = capture_problem(problem)
    apart = set(captured.sizes) - set(plain.sizes)
    if name in ("19_attention", "20_causal_attention"):
        assert apart == {"seq_len_v", "head_dim_v"}
    elif name == "21_gqa_attention":
        assert apart == {"seq_len_v"}
    else:
        assert apart == set(), apart
        assert print_ir(captured.module) == print_ir(plain.module)


def test_attention_shape_probe_leaves_no_dead_ops() -> None:
    """The attention handler's `q @ k^T` probe (it lets a size equation surface) is erased:
    the function holds the two matmuls of attention only."""
    _, captured = _capture("19_attention")
    block = captured.function.body.block
    names = [op.name for op in block.ops]
    assert names.count("ax.matmul") == 2
    assert all(r.uses for op in block.ops for r in op.results)


def test_symbolic_function_holds_at_other_sizes() -> None:
    """Captured at the small sizes, the function runs at other sizes and still matches Model."""
    problem, captured = _capture("13_add_layernorm")
    x, residual = torch.randn(5, 1100), torch.randn(5, 1100)
    weights = captured.example_inputs[:2]
    (got,) = run_function(captured.function, [*weights, x.numpy(), residual.numpy()])
    _close(got, _reference(problem, [x, residual]), "13_add_layernorm")
    problem, captured = _capture("20_causal_attention")
    q, k, v = (torch.randn(1, 2, 7, 16) for _ in range(3))
    (got,) = run_function(captured.function, [q.numpy(), k.numpy(), v.numpy()])
    _close(got, _reference(problem, [q, k, v]), "20_causal_attention")


def test_bf16_problem_keeps_its_dtype() -> None:
    problem = load_problem_file(PROBLEMS["12_rmsnorm"].problem_path,
                                PROBLEMS["12_rmsnorm"].small_sizes)
    captured = capture_problem(problem)
    types = captured.function.function_type.inputs.data
    assert [t.dtype for t in types if isinstance(t, TensorType)] == ["bf16", "bf16"]


PLANTED = '''import torch
import torch.nn as nn

batch_size = 4
dim = 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        {line}
        return y * 2.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def _planted(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "planted.py"
    path.write_text(PLANTED.replace("{line}", line))
    return path


@pytest.mark.parametrize(("line", "fixed"), [
    ("y = torch.triu(y, diagonal=2) + torch.tril(y, -1) * 3", set()),
    ("y = torch.where(y > 0.5, y, -y).clamp(-0.3, 0.7) - torch.exp(y).log1p()",
     "aten.log1p.default"),
    # handled, but not with a mask tensor: the operator is named with what is not translated
    ("y = nn.functional.scaled_dot_product_attention(y, y, y, attn_mask=y @ y.T > 0)",
     "aten.scaled_dot_product_attention.default"),
    ("y = y[:, -3:].sum(1, keepdim=True) + y[:, 1:2] * y[2]", set()),
    # the mask's rows are cut at batch_size, read back from the integer 4 the export baked
    ("y = y.masked_fill(torch.tril(torch.ones(dim, dim, dtype=torch.bool), -2)[:batch_size], "
     "float('-inf')).softmax(-1)", set()),
])
def test_operators_beyond_the_problems(tmp_path: Path, line: str, fixed: set[str] | str) -> None:
    """Triangles, where, clamp, slices and masks match the model; log1p and an attention mask
    are refused by the operator's name."""
    problem = load_problem_file(_planted(tmp_path, line))
    if isinstance(fixed, str):
        with pytest.raises(TorchFrontendError) as err:
            capture_problem(problem)
        assert err.value.operators == [fixed]
        return
    captured = capture_problem(problem)
    assert set(captured.fixed) == fixed
    (got,) = run_function(captured.function, captured.example_inputs)
    with torch.no_grad():
        want = problem.model(*problem.inputs).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_unsupported_operator_is_named_at_its_line(tmp_path: Path) -> None:
    path = _planted(tmp_path, "y = torch.sort(y, dim=-1).values + torch.cummax(x, dim=1).values")
    with pytest.raises(TorchFrontendError) as err:
        capture_problem(load_problem_file(path))
    assert err.value.operators == ["aten.sort.default", "aten.cummax.default"]
    first = err.value.diagnostics[0]
    assert isinstance(first, SourceError)
    assert (first.filename, first.line, first.column) == (str(path), 14, 9)
    assert str(first).splitlines() == [
        f"{path}:14:9: error: unsupported operator aten.sort.default; no ax translation",
        "        y = torch.sort(y, dim=-1).values + torch.cummax(x, dim=1).values",
        "        ^"]


def test_data_dependent_index_is_named(tmp_path: Path) -> None:
    path = _planted(tmp_path, "y = y + y[y > 0].sum()")
    with pytest.raises(TorchFrontendError) as err:
        capture_problem(load_problem_file(path))
    assert err.value.operators == ["aten.index.Tensor"]
    assert "(its result's shape depends on the data)" in str(err.value)
    assert f"{path}:14:9: error:" in str(err.value)


def test_data_dependent_branch_is_located(tmp_path: Path) -> None:
    path = _planted(tmp_path, "y = y if y.sum() > 0 else -y")
    with pytest.raises(TorchFrontendError) as err:
        capture_problem(load_problem_file(path))
    assert str(err.value).startswith(f"{path}:14:9: error: torch.export cannot capture forward: ")


def test_not_a_problem_and_unknown_size(tmp_path: Path) -> None:
    path = tmp_path / "plain.py"
    path.write_text("x = 1\n")
    with pytest.raises(TorchFrontendError, match="not a KernelBench problem: it defines no "
                                                 "Model, get_inputs, get_init_inputs"):
        load_problem_file(path)
    with pytest.raises(TorchFrontendError, match="no size global 'rows'; its sizes are "
                                                 "batch_size, dim"):
        load_problem_file(_planted(tmp_path, "pass"), {"rows": 3})
    scalar = tmp_path / "scalar.py"
    scalar.write_text(PLANTED.replace("{line}", "pass").replace(
        "return [torch.randn(batch_size, dim)]", "return [torch.randn(batch_size, dim), 3]")
        .replace("x: torch.Tensor)", "x: torch.Tensor, n: int)"))
    with pytest.raises(TorchFrontendError, match="get_inputs\\(\\) returns int 3; the PyTorch "
                                                 "frontend takes tensor inputs only"):
        capture_problem(load_problem_file(scalar))
    broken = tmp_path / "broken.py"
    broken.write_text(PLANTED.replace("{line}", "pass").replace("return []", "return [1 / 0]"))
    with pytest.raises(TorchFrontendError) as err:
        load_problem_file(broken)
    assert "building Model and its inputs failed: ZeroDivisionError" in str(err.value)
    assert f"{broken}:23:5: error:" in str(err.value)


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "axon.frontend.torch", *args],
                          capture_output=True, text=True, check=False)


def test_command_prints_a_module_that_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "out.mlir"
    path = PROBLEMS["05_gemm_swiglu"].problem_path
    assert main([str(path), "-o", str(out), "--size", "num_tokens=9", "--size",
                 "hidden_size=12", "--size", "intermediate_size=10", "--dtype", "f32"]) == 0
    module = parse_mlir(out.read_text())
    run_pipeline(module, "build-nugraph")
    done = _command(str(path), "--size", "num_tokens=9", "--size", "hidden_size=12",
                    "--size", "intermediate_size=10")
    assert done.returncode == 0, done.stderr
    assert "func.func @forward(%gate_proj_weight: !ax.tensor<[intermediate_size, " \
           "hidden_size], bf16>" in done.stdout
    assert done.stderr.strip() == (
        "forward: 6 ax ops, 3 inputs (2 parameters as inputs: gate_proj_weight, up_proj_weight); "
        "symbolic sizes num_tokens=9, hidden_size=12, intermediate_size=10; fixed sizes none")


def test_command_refuses_with_diagnostics_and_says_it_runs_the_file(tmp_path: Path) -> None:
    done = _command(str(_planted(tmp_path, "y = torch.sort(y, dim=-1).values")))
    assert done.returncode == 1
    assert "planted.py:14:9: error: unsupported operator aten.sort.default" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    done = _command("--help")
    assert "RUNS THE FILE'S PYTHON" in " ".join(done.stdout.split())
    done = _command(str(tmp_path / "missing.py"))
    assert done.returncode == 1 and "missing.py: error: no such file" in done.stderr
