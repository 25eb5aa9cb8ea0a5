"""The Forge problem set (benchmarks/forge/): twenty or more problems in KernelBench format, each
with a Triton kernel; every kernel agrees with its problem's Model at small sizes that are no
multiple of its blocks (Triton's CPU interpreter, float32: the interpreter's bf16 `tl.dot` is
wrong), the two hold the same weights from one seed, and a planted wrong kernel is told apart."""

from __future__ import annotations

import os

# Triton reads this when it is first imported (tests/conftest.py sets it too)
os.environ["TRITON_INTERPRET"] = "1"

import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from axon.benchmarks.forge import problem_set as forge  # noqa: E402
from axon.benchmarks.forge.problem_set import (  # noqa: E402
    CATEGORIES,
    KERNEL_DIR,
    PROBLEM_DIR,
    PROBLEMS,
    ProblemError,
    check,
    load_file,
    load_kernel,
    load_problem,
    size_names,
)

NAMES = list(PROBLEMS)


def test_twenty_or_more_problems_each_with_a_kernel() -> None:
    """The registry, the problem files and the kernel files name the same problems, 20 or more,
    numbered in order, every category of issue 14 among them."""
    assert len(PROBLEMS) >= 20
    on_disk = sorted(p.stem for p in PROBLEM_DIR.glob("*.py"))
    assert on_disk == sorted(PROBLEMS)
    assert sorted(p.stem for p in KERNEL_DIR.glob("*.py")) == on_disk
    assert [int(n[:2]) for n in NAMES] == list(range(1, len(NAMES) + 1))
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+", n) for n in NAMES)
    assert {p.category for p in PROBLEMS.values()} == set(CATEGORIES)
    counts = {c: sum(p.category == c for p in PROBLEMS.values()) for c in CATEGORIES}
    assert counts["gemm_epilogue"] >= 4 and counts["gemm_reduction"] >= 3
    assert counts["attention"] >= 2 and counts["norm"] >= 3 and counts["softmax"] >= 2


@pytest.mark.parametrize("name", NAMES)
def test_problem_is_in_kernelbench_format(name: str) -> None:
    """Model, get_inputs and get_init_inputs; a bf16 or float32 `dtype`; the registry's small
    sizes are exactly the file's size globals, and get_inputs reads them when called."""
    module = load_problem(name)
    assert isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)
    assert module.dtype in (torch.float32, torch.bfloat16)
    small = PROBLEMS[name].small_sizes
    assert sorted(size_names(module)) == sorted(small)
    inputs = module.get_inputs()
    assert all(x.dtype == module.dtype for x in inputs)
    # benchmark sizes: millions of elements, not a toy
    assert sum(x.numel() for x in inputs) >= 2 ** 22
    for key, value in small.items():
        setattr(module, key, value)
    shrunk = module.get_inputs()
    assert {d for x in shrunk for d in x.shape} <= set(small.values())
    assert sum(x.numel() for x in shrunk) < sum(x.numel() for x in inputs)


@pytest.mark.parametrize("name", NAMES)
def test_model_and_kernel_hold_the_same_weights(name: str) -> None:
    """ModelNew takes Model's init inputs and builds the same parameters, equal from one seed."""
    module = load_problem(name, PROBLEMS[name].small_sizes)
    kernel = load_kernel(name)
    init = module.get_init_inputs()
    torch.manual_seed(3)
    want = module.Model(*init).state_dict()
    torch.manual_seed(3)
    got = kernel.ModelNew(*init).state_dict()
    assert list(got) == list(want)
    assert all(torch.equal(got[k], want[k]) for k in want)


@pytest.mark.parametrize("name", NAMES)
def test_kernel_agrees_with_its_problem_at_small_sizes(name: str) -> None:
    """ModelNew matches Model (float32) within float32's tolerance, on Triton's interpreter."""
    result = check(name, PROBLEMS[name].small_sizes, dtype=torch.float32)
    assert result.passed, result.message
    assert result.dtype == torch.float32 and result.sizes == dict(PROBLEMS[name].small_sizes)
    assert 0.0 <= result.max_abs_error < 1e-4


def _planted(name: str, old: str, new: str, tmp_path: Path) -> forge.CheckResult:
    """Check problem `name` against its kernel file with `old` replaced by `new`."""
    source = PROBLEMS[name].kernel_path.read_text()
    assert source.count(old) == 1, old
    path = tmp_path / f"{name}_planted.py"
    path.write_text(source.replace(old, new))
    kernel = load_file(path, f"forge_planted_{name}")
    return check(name, PROBLEMS[name].small_sizes, dtype=torch.float32, kernel=kernel)


@pytest.mark.parametrize(("name", "old", "new"), [
    # the epilogue dropped
    ("01_gemm_bias_relu", "acc = tl.maximum(acc, 0.0)", "acc = acc"),
    # the GEMM's last K block dropped (the loop stops short on a remainder)
    ("02_gemm_gelu", "for k0 in range(0, K, BLOCK_K):",
     "for k0 in range(0, K - BLOCK_K, BLOCK_K):"),
    # the scale of a reduction forgotten
    ("08_gemm_sum_scale", "total = tl.sum(acc, axis=0) * scale", "total = tl.sum(acc, axis=0)"),
    # the affine bias ignored
    ("11_layernorm", "y = (x - mean) * rstd * w + b", "y = (x - mean) * rstd * w"),
    # the causal mask dropped
    ("20_causal_attention", "& (keys[None, :] <= offs_m[:, None])", ""),
    # every query head reading kv head 0
    ("21_gqa_attention", "hkv = h // GROUP", "hkv = h * 0"),
    # the carry between blocks lost
    ("23_cumsum", "carry += tl.sum(x, axis=0)", "carry += 0.0"),
    # the last op of an unfused chain dropped
    ("24_scale_tanh_residual", "tl.store(y_ptr + offs, a + b, mask=mask)",
     "tl.store(y_ptr + offs, a, mask=mask)"),
])
def test_a_planted_wrong_kernel_is_caught(name: str, old: str, new: str,
                                          tmp_path: Path) -> None:
    result = _planted(name, old, new, tmp_path)
    assert not result.passed
    assert result.message.startswith("result 0[")


def test_a_kernel_returning_the_wrong_dtype_or_shape_is_caught(tmp_path: Path) -> None:
    name = "07_gemm_row_max"
    wrong_dtype = _planted(name, "y = torch.empty((M, 1), device=x.device, dtype=x.dtype)",
                           "y = torch.empty((M, 1), device=x.device, dtype=torch.float64)",
                           tmp_path)
    assert not wrong_dtype.passed and "is torch.float64, expected torch.float32" in \
        wrong_dtype.message
    wrong_shape = _planted(name, "        return y\n", "        return y.view(-1)\n", tmp_path)
    assert not wrong_shape.passed and "has shape" in wrong_shape.message


def test_bad_names_and_sizes_are_diagnosed() -> None:
    with pytest.raises(ProblemError, match="no problem named 'nope'; the problems are 01_"):
        check("nope")
    with pytest.raises(ProblemError, match="01_gemm_bias_relu: no size 'rows'; its sizes are "
                                           "batch_size, in_features, out_features"):
        load_problem("01_gemm_bias_relu", {"rows": 3})


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run([sys.executable, "-m", "axon.benchmarks.forge", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_the_command_lists_and_checks() -> None:
    listed = _command("--list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["name", "category", "dtype", "problem", "kernel"]
    assert len(lines) == 1 + len(PROBLEMS)
    assert lines[1].split()[:3] == ["01_gemm_bias_relu", "gemm_epilogue", "bf16"]
    checked = _command("--check", "12_rmsnorm", "--small")
    assert checked.returncode == 0, checked.stderr
    row = checked.stdout.splitlines()[1].split()
    assert row[:5] == ["12_rmsnorm", "norm", "f32", "33x1100", "yes"]
    unknown = _command("--check", "nope", "--small")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("axon.benchmarks.forge: error: no problem named 'nope'")
    assert "Traceback" not in unknown.stderr
    nowhere = _command("--check", "12_rmsnorm", "--device", "nowhere")
    assert nowhere.returncode == 1 and nowhere.stdout.splitlines()[1].split()[-2:] == ["NO", "-"]
    assert nowhere.stderr.startswith("axon.benchmarks.forge: 12_rmsnorm: RuntimeError: ")
    assert "Traceback" not in nowhere.stderr
