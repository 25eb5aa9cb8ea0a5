"""Forge's torch path: a KernelBench-format problem becomes a drop-in `ModelNew` module whose
forward is Axon's proved and selected Triton kernel; the frozen harness (a child process) finds
it equal to the problem's Model on Triton's CPU interpreter; `axon forge` writes it, never over
its input, and refuses what it cannot do with one diagnostic."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from axon.benchmarks.forge.problem_set import PROBLEMS
from axon.forge.torch_path import (
    ForgeError,
    TorchForgeOptions,
    TorchForgeResult,
    check_sizes,
    forge_problem,
    load,
)
from axon.selection.executor import make_executor
from axon.targets.xe_triton.harness.forge_run import check_modules, problem_check
from axon.targets.xe_triton.harness.run import Measured

OPTIONS = TorchForgeOptions(max_candidates=3, keep=2, time_on_gpu=False)
#: `axon forge ARGS...` in a child process (the `axon_forge` fixture of conftest.py)
Forge = Callable[..., subprocess.CompletedProcess[str]]


def _verdicts(problem: Path, sizes: Sequence[Mapping[str, int]], dtype: str,
              modules: dict[str, Path], scratch: Path) -> dict[str, Measured]:
    """Each module's verdict from the frozen harness against the problem's float32 reference
    (`check_against_original` with no original), all of them in one child process."""
    check = problem_check(problem, sizes=sizes, dtype=dtype, device="cpu")
    found = check_modules(list(modules.items()), check, scratch)
    return {cid: checked.measured for cid, checked in found.items()}


def _forge(name: str) -> tuple[Path, TorchForgeResult]:
    executor = make_executor("local")
    try:
        return PROBLEMS[name].problem_path, forge_problem(
            PROBLEMS[name].problem_path, OPTIONS, executor, say=lambda line: None)
    finally:
        executor.close()


@pytest.mark.parametrize("name", ["12_rmsnorm", "06_bmm_scale"])
def test_forged_module_is_a_drop_in_that_matches_model(name: str, tmp_path: Path) -> None:
    """The module holds the problem's source, the kernel and `class ModelNew(Model)` whose
    forward passes the model's parameters by name; its float32 twin matches Model at the
    problem's small sizes (06 names a size `k`, the tiler's own index: renamed on capture)."""
    path, forged = _forge(name)
    assert forged.modules, "no module written"
    best = forged.best
    tree = ast.parse(best.text)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assert {"Model", "ModelNew"} <= set(classes)
    assert [ast.unparse(b) for b in classes["ModelNew"].bases] == ["Model"]
    assert best.text.startswith(path.read_text().rstrip())
    assert f"def {best.host}(" in best.text
    assert forged.dtype == "bf16"  # the problem's `dtype` global, no override given
    if name == "06_bmm_scale":
        assert forged.captured.renamed == {"k": "k_size"}
    twin = tmp_path / "twin.py"
    twin.write_text(best.twin_text)
    # a kernel that drops the weight is told apart by the same check
    wrong = tmp_path / "wrong.py"
    wrong.write_text(best.twin_text.replace("self.get_parameter('weight')",
                                            "torch.ones_like(self.get_parameter('weight'))")
                     if name == "12_rmsnorm" else
                     best.twin_text.replace("return " + best.host + "(",
                                            "return 2.0 * " + best.host + "("))
    assert wrong.read_text() != twin.read_text()
    verdicts = _verdicts(path, [PROBLEMS[name].small_sizes], "f32",
                         {"twin": twin, "wrong": wrong}, tmp_path)
    assert verdicts["twin"].correct, verdicts["twin"].reason
    assert not verdicts["wrong"].correct, verdicts["wrong"]
    assert verdicts["wrong"].step in ("correctness", "tamper"), verdicts["wrong"]


#: 08's sizes at which its row sum of W rounded to bf16 is off the float32 reference (a row's
#: result near zero is within atol 0.008 only when W's 2048-term row sums are not rounded)
ROW_SUM_SIZES = {"batch_size": 8, "in_features": 256, "out_features": 2048}


def test_gemm_sum_scale_keeps_its_row_sum_in_float32(tmp_path: Path) -> None:
    """08 through `distribute`: `x @ rowsum(W) + sum(b)`, two launches. The row sum, a bf16
    reduction feeding the mat-vec, is written in float32 (the selection report says so); each
    kept candidate's float32 twin matches Model, and the staged module itself, in bf16 (its
    kernels have no `tl.dot`, which the CPU interpreter gets wrong in bf16), matches the
    float32 reference where the same module with the row sum rounded to bf16 does not."""
    lines: list[str] = []
    executor = make_executor("local")
    path = PROBLEMS["08_gemm_sum_scale"].problem_path
    try:
        forged = forge_problem(path, OPTIONS, executor, say=lines.append)
    finally:
        executor.close()
    assert any("cut at ax.sum#0 (kept in f32: a bf16 ax.sum result that feeds arithmetic)" in
               line for line in lines), lines
    staged = [m for m in forged.modules if "`t` is ax.sum#0 in memory, in f32" in m.text]
    assert staged and forged.best in staged, [m.tiling for m in forged.modules]
    twins = {}
    for n, module in enumerate(forged.modules):
        twins[module.id] = tmp_path / f"twin{n}.py"
        twins[module.id].write_text(module.twin_text)
    verdicts = _verdicts(path, [PROBLEMS["08_gemm_sum_scale"].small_sizes], "f32", twins,
                         tmp_path)
    assert len(verdicts) == len(forged.modules)
    for cid, measured in verdicts.items():
        assert measured.correct, (cid, measured.reason)
    best = forged.best
    assert "tl.dot" not in best.text
    kept = tmp_path / "kept.py"
    kept.write_text(best.text)
    rounded = tmp_path / "rounded.py"
    call = re.search(r"^    t = (\w+)\((.*)\)$", best.text, re.M)
    assert call is not None
    rounded.write_text(best.text.replace(
        call.group(0), f"    t = {call.group(1)}({call.group(2)}).to(torch.bfloat16).float()"))
    verdicts = _verdicts(path, [ROW_SUM_SIZES], "bf16", {"kept": kept, "rounded": rounded},
                         tmp_path)
    assert verdicts["kept"].correct, verdicts["kept"].reason
    assert not verdicts["rounded"].correct and verdicts["rounded"].step == "correctness", \
        verdicts["rounded"]
    assert "wrong against the float32 reference" in verdicts["rounded"].reason


def test_check_sizes_keep_what_the_problem_needs() -> None:
    """Small odd sizes where Model runs at them; halved sizes where it does not (GQA's query
    heads must stay a multiple of its kv heads); fixed sizes keep their values."""
    rms = load(PROBLEMS["12_rmsnorm"].problem_path, TorchForgeOptions())
    assert check_sizes(rms, {}) == {"batch_size": 33, "dim": 65}
    gqa = load(PROBLEMS["21_gqa_attention"].problem_path, TorchForgeOptions())
    sizes = check_sizes(gqa, {"head_dim": 128})
    assert sizes["head_dim"] == 128
    assert sizes["num_q_heads"] % sizes["num_kv_heads"] == 0
    assert max(v for k, v in sizes.items() if k != "head_dim") <= 96


def test_check_sizes_pass_over_sizes_the_users_kernel_refuses() -> None:
    """`accepts` (for `axon forge --from triton`: the user's kernel runs and agrees with Model)
    rules out sizes the Model takes but the kernel does not, as causal attention's head dim of
    130 (its kernel wants a power of two); the halved sizes follow, and where none is taken
    the error names what was asked."""
    causal = load(PROBLEMS["20_causal_attention"].problem_path, TorchForgeOptions())
    seen: list[dict[str, int]] = []

    def power_of_two_head(sizes: dict[str, int]) -> bool:
        seen.append(dict(sizes))
        return sizes["head_dim"] & (sizes["head_dim"] - 1) == 0

    sizes = check_sizes(causal, {}, power_of_two_head, "the kernel runs")
    assert seen[0]["head_dim"] == 130 and sizes["head_dim"] == 64 and len(seen) == 2
    with pytest.raises(ForgeError, match="no small sizes found at which the kernel runs"):
        check_sizes(causal, {}, lambda sizes: False, "the kernel runs")


def test_missing_file_and_unknown_dtype_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(ForgeError, match="no such file"):
        load(tmp_path / "nope.py", TorchForgeOptions())
    with pytest.raises(ForgeError, match="expected one of"):
        load(PROBLEMS["12_rmsnorm"].problem_path, TorchForgeOptions(dtype="f64"))


def test_command_writes_a_checked_module_and_never_its_input(tmp_path: Path,
                                                             axon_forge: Forge) -> None:
    problem = tmp_path / "rmsnorm.py"
    problem.write_text(PROBLEMS["12_rmsnorm"].problem_path.read_text())
    out = tmp_path / "rmsnorm_opt.py"
    done = axon_forge(str(problem), "--from", "torch", "-o", str(out), "--max-candidates", "2")
    assert done.returncode == 0, done.stderr
    assert "class ModelNew(Model):" in out.read_text()
    assert "checked against Model at batch_size=33, dim=65" in done.stderr
    assert "timing skipped: no GPU" in done.stderr
    before = problem.read_text()
    same = axon_forge(str(problem), "--from", "torch", "-o", str(problem))
    assert same.returncode == 1 and "never overwrites its input" in same.stderr
    assert problem.read_text() == before
    missing = axon_forge(str(tmp_path / "nope.py"), "--from", "torch")
    assert missing.returncode == 1 and "no such file" in missing.stderr
    assert "Traceback" not in same.stderr + missing.stderr


#: a running sum down the columns: no tiling of it is proved (each is refuted)
DOWN_THE_COLUMNS = """
import torch
import torch.nn as nn

rows = 64
cols = 48


class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=0)


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""


def test_command_refuses_what_does_not_tile_with_one_diagnostic(tmp_path: Path,
                                                              axon_forge: Forge) -> None:
    """A scan down the columns has no proved tiling, and the command says so (exit 1, no
    traceback)."""
    problem = tmp_path / "scan_rows.py"
    problem.write_text(DOWN_THE_COLUMNS)
    done = axon_forge(str(problem), "--from", "torch", "--max-candidates", "2", "--quiet")
    assert done.returncode == 1
    assert "scan_rows.py" in done.stderr and "does not tile: no kernel proved" in done.stderr
    assert "Traceback" not in done.stderr


#: the selection kept small for the tests: the captured program alone, one launch
QUICK = TorchForgeOptions(max_candidates=2, keep=1, time_on_gpu=False, programs=1, splits=0)


@pytest.mark.parametrize("name", ["18_causal_masked_softmax", "20_causal_attention",
                                  "21_gqa_attention"])
def test_masked_and_grouped_attention_are_drop_ins_that_match_model(name: str,
                                                                    tmp_path: Path) -> None:
    """18 and 20 (a causal mask of iota compares, tiled at the tiles' places; 18's square
    scores untied into rows and columns) and 21 (GQA with its heads fixed at numbers: one
    read through `floordiv 4`) emit a kernel whose float32 twin matches Model on the CPU; the
    same module with the mask's compare flipped (18, 20) or the kv head of the next group (21)
    does not."""
    lines: list[str] = []
    executor = make_executor("local")
    path = PROBLEMS[name].problem_path
    try:
        forged = forge_problem(path, QUICK, executor, say=lines.append)
    finally:
        executor.close()
    if name == "18_causal_masked_softmax":
        assert any("untied: seq_len_2 from seq_len" in line for line in lines), lines
    best = forged.best
    assert best.tiling.startswith("batched_rows"), best.tiling
    twin = tmp_path / "twin.py"
    twin.write_text(best.twin_text)
    # 21's heads are fixed at 32 and 8 by torch.export: sizes that keep them, at 2 batches
    # (check_sizes' 4: the kv head a query head reads does not depend on the batch, and
    # check_sizes itself is test_check_sizes_keep_what_the_problem_needs's)
    sizes = [{**check_sizes(load(path, QUICK), forged.captured.fixed), "batch_size": 2}
             if forged.captured.fixed else PROBLEMS[name].small_sizes]
    wrong = tmp_path / "wrong.py"
    # the diagonal masked (18: `col >= row + 1` as `>`; 20: `col <= row` as `<`), or every
    # query head reading the kv heads of the first half (21)
    pattern, planted = {"18_causal_masked_softmax": (r"\(\((v\d+) >= (v\d+)\)\)", r"((\1 > \2))"),
                        "20_causal_attention": (r"\(\((v\d+) <= (v\d+)\)\)", r"((\1 < \2))"),
                        "21_gqa_attention": (r"\(b1 // 4\)", "(b1 // 8)")}[name]
    text, count = re.subn(pattern, planted, best.twin_text)
    assert count, pattern
    wrong.write_text(text)
    verdicts = _verdicts(path, sizes, "f32", {"twin": twin, "wrong": wrong}, tmp_path)
    assert verdicts["twin"].correct, verdicts["twin"].reason
    assert not verdicts["wrong"].correct, verdicts["wrong"]
