"""The Forge bundle builder: a problem forged on both paths becomes one case whose candidates the
harness's reader reads back (the torch path's in the problem's dtype, the Triton path's rewrite of
the user's kernel); bundles merge by case; mistakes are user errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.forge.problem_set import PROBLEMS
from axon.forge import bundle as bundle_module
from axon.forge import raised_path
from axon.forge.bundle import BundleReport, forge_case, main, merge_bundles, twin_sizes
from axon.forge.torch_path import TorchForgeOptions
from axon.selection.executor import make_executor
from axon.targets.xe_triton.harness import forge_bundle as harness
from axon.targets.xe_triton.select import Selection, select_kernel
from axon.tools.user_errors import UsageError
from axon.tools.version import axon_version

NAME = "24_scale_tanh_residual"


def _bundle(root: Path, paths: tuple[str, ...], keep: int = 1) -> harness.ForgeBundle:
    report = BundleReport()
    executor = make_executor("local")
    try:
        forge_case(NAME, "h200", executor, keep=keep, max_candidates=2, report=report,
                   log=lambda line: None, paths=paths)
    finally:
        executor.close()
    assert report.skipped == []
    bundle = harness.ForgeBundle(root, "h200", 0, axon_version(), tuple(report.cases))
    harness.write_forge_bundle(bundle, report.files)
    return harness.read_forge_bundle(root)


def test_both_paths_make_one_case_and_bundles_merge(tmp_path: Path) -> None:
    torch_only = _bundle(tmp_path / "torch", ("torch",))
    triton_only = _bundle(tmp_path / "triton", ("triton",))
    (case,) = torch_only.cases
    assert case.dtype == "f32" and case.atol_scale == PROBLEMS[NAME].atol_scale
    assert [c.id for c in case.candidates] == ["axon_0"]
    assert "class ModelNew(Model):" in torch_only.path(case.candidates[0].module).read_text()
    assert torch_only.path(case.input_kernel or "").read_text() == \
        PROBLEMS[NAME].kernel_path.read_text()
    stages, *rest = triton_only.cases[0].candidates
    prefixes = [c for c in rest if c.id.startswith("stages_")]
    twins = [c for c in rest if not c.id.startswith("stages_")]
    assert stages.id == "stages" and stages.note == "the user's kernel after xe_tuning, autotune"
    # each shorter prefix of the applied stages is a candidate too (the GPU's timing rolls back)
    assert len(prefixes) == stages.note.count(",") and [p.id for p in prefixes] == [f"stages_{n}"
                                                     for n in range(1, len(prefixes) + 1)]
    assert all(p.note in stages.note for p in prefixes)
    # and the plan without xe_tuning: autotune over the KB's grid and the launch's own config
    assert [(t.id, t.note) for t in twins] == [
        ("no_xe_tuning", "the user's kernel after autotune (the plan without xe_tuning)")]
    texts = [triton_only.path(c.module).read_text() for c in (stages, *rest)]
    assert len(set(texts)) == len(texts)
    merged = harness.read_forge_bundle(merge_bundles(
        [tmp_path / "torch", tmp_path / "triton"], tmp_path / "merged").parent)
    assert [c.id for c in merged.cases[0].candidates] == ["axon_0", "stages",
                                                          *[c.id for c in rest]]
    with pytest.raises(UsageError, match="repeats candidate"):
        merge_bundles([tmp_path / "torch", tmp_path / "torch"], tmp_path / "twice")
    # a rebuilt path replaces its candidates; globs leave candidates out
    again = harness.read_forge_bundle(merge_bundles(
        [tmp_path / "merged", tmp_path / "torch"], tmp_path / "again", drop=["no_*"],
        replace=True).parent)
    assert [c.id for c in again.cases[0].candidates] == ["axon_0", "stages",
                                                         *[p.id for p in prefixes]]
    assert sorted(p.name for p in (tmp_path / "again" / NAME).iterdir()) == sorted(
        [Path(c.module).name for c in again.cases[0].candidates] + ["input.py", "problem.py"])
    with pytest.raises(UsageError, match="no candidate is left"):
        merge_bundles([tmp_path / "torch", tmp_path / "triton"], tmp_path / "none", drop=["*"])


def test_the_raised_path_is_a_candidate(tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """24's three kernels raise to ax with proof and fuse into one of Axon's kernels: the raised
    path's module is a candidate, checked against the original on the CPU; its twin takes the
    selection's next passed launch, so that the GPU picks between them (from the same
    selection: the fused function is selected once for both)."""
    selected: list[str] = []

    def counted(func: FuncOp, *args: Any, **kwargs: Any) -> Selection:
        selected.append(kwargs["program"])
        return select_kernel(func, *args, **kwargs)

    monkeypatch.setattr(raised_path, "select_kernel", counted)
    (case,) = _bundle(tmp_path, ("raised",), keep=2).cases
    assert selected == ["forward_fused"]
    raised, twin = case.candidates
    assert (raised.id, twin.id) == ("raised", "raised_1")
    assert "raised to ax with proof" in raised.note and "selected at" in raised.note
    assert "selected (passed launch 2 of " in twin.note
    text = (tmp_path / raised.module).read_text()
    assert "class ModelNew" in text and text != PROBLEMS[NAME].kernel_path.read_text()
    twin_text = (tmp_path / twin.module).read_text()
    assert "class ModelNew" in twin_text and twin_text != text
    # the same fused function at another launch
    assert "forward_fused: rows (BM=" in raised.note and "forward_fused: rows (BM=" in twin.note
    assert raised.note.split("selected")[0] != twin.note.split("selected")[0]


def test_command_mistakes_are_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    for argv, message in ((["--problems", "99_nope", "-o", str(tmp_path)], "unknown 99_nope"),
                          (["--drop", "exp_*", "-o", str(tmp_path)],
                           "--drop and --replace go with --merge"),
                          (["--paths", "cuda", "-o", str(tmp_path)],
                           "expected some of torch, triton, raised")):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 1 and message in capsys.readouterr().err


def test_twins_of_a_problem_with_fixed_sizes_are_checked_where_model_runs() -> None:
    # torch.export fixes 21's kv heads at 8: with the problem's 4 small query heads beside
    # them the Model itself fails (group 4 // 8 = 0), so the twin is checked at check_sizes'
    options = TorchForgeOptions(time_on_gpu=False)
    small = PROBLEMS["21_gqa_attention"].small_sizes
    assert twin_sizes("21_gqa_attention", {}, options) == dict(small)
    sizes = twin_sizes("21_gqa_attention", {"num_kv_heads": 8}, options)
    assert sizes["num_kv_heads"] == 8 and sizes["num_q_heads"] % 8 == 0
    assert sizes["seq_len"] <= 96


def test_an_internal_error_in_one_case_keeps_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def planted(name: str, profile: str, executor: object, keep: int, max_candidates: int,
                report: BundleReport, *rest: object) -> None:
        if name == "23_cumsum":
            raise RuntimeError("planted")
        # the other problem's case as forging would add it (its own kernel as the candidate)
        text = PROBLEMS[name].kernel_path.read_text()
        report.files.update({f"{name}/problem.py": PROBLEMS[name].problem_path.read_text(),
                             f"{name}/input.py": text, f"{name}/stages.py": text})
        report.cases.append(harness.ForgeCase(
            name, f"{name}/problem.py", {}, "f32", 1.0, f"{name}/input.py",
            (harness.ForgeCandidate("stages", f"{name}/stages.py"),)))

    monkeypatch.setattr(bundle_module, "forge_case", planted)
    out = tmp_path / "b"
    assert main(["--problems", f"23_cumsum,{NAME}", "--paths", "triton", "-o", str(out)]) == 0
    assert [c.case for c in harness.read_forge_bundle(out).cases] == [NAME]
    err = capsys.readouterr().err
    assert "23_cumsum: skipped: internal error: RuntimeError: planted (a bug in Axon)" in err
    assert "1 problems skipped (23_cumsum)" in err
