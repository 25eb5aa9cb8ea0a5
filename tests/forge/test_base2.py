"""The Triton-level `base2` stage: `tl.exp` as `tl.exp2`, LOG2E folded into the scale the scores
already take where every use of the scaled values allows it (attention's running max, a
masked softmax), the rewritten modules still agreeing with their problems' Models on the CPU
interpreter, and every planted use that scaling would change left with the plain rewrite."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from axon.benchmarks.forge import problem_set as forge
from axon.forge.source import KernelFile
from axon.forge.stages import BaseTwoStage
from axon.forge.stages import base2 as stage_module
from axon.forge.stages.base2 import LOG2E, base2_plan
from axon.targets.xe_triton.kb import load_device

H200 = load_device("h200")


def _file(name: str, old: str = "", new: str = "") -> KernelFile:
    source = forge.PROBLEMS[name].kernel_path.read_text(encoding="utf-8")
    if old:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return KernelFile(source, f"{name}.py")


def _folds(file: KernelFile) -> list[bool]:
    plans, _ = base2_plan(file)
    return [folded for plan in plans for _, folded in plan.exps]


def test_the_lemmas_hold_and_a_stage_without_them_proposes_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert stage_module._lemmas() == []
    monkeypatch.setattr(stage_module, "_LEMMA_FAILURES", ["maximum (and a row max)"])
    verdict = BaseTwoStage().applies(_file("19_attention"))
    assert not verdict.applies
    assert "z3 did not prove the identities of maximum (and a row max)" in verdict.why


@pytest.mark.parametrize("name", ["19_attention", "20_causal_attention"])
def test_attention_folds_log2e_into_its_scale_and_still_agrees(
        name: str, checked: Callable[[str, str], forge.CheckResult]) -> None:
    file = _file(name)
    stage = BaseTwoStage()
    assert stage.applies(file).why.endswith("2 tl.exp in base 2, 2 with LOG2E folded into 1 "
                                            "scale(s)")
    (proposal,) = stage.propose(file, H200)
    assert f"s = tl.dot(q, kt) * (scale * {LOG2E})" in proposal.source
    assert "alpha = tl.exp2(m_i - m_new)" in proposal.source
    assert "p = tl.exp2(s - m_new[:, None])" in proposal.source
    assert "tl.exp(" not in proposal.source
    assert checked(name, proposal.source).passed


def test_a_masked_softmax_folds_inside_its_where_and_a_plain_one_changes_base(
        checked: Callable[[str, str], forge.CheckResult]) -> None:
    (causal,) = BaseTwoStage().propose(_file("18_causal_masked_softmax"), H200)
    assert f"x * (scale * {LOG2E}), float(\"-inf\"))" in causal.source
    assert "e = tl.exp2(s - tl.max(s, axis=0))" in causal.source
    assert checked("18_causal_masked_softmax", causal.source).passed
    (plain,) = BaseTwoStage().propose(_file("16_softmax"), H200)
    assert f"acc += tl.exp2((x - m) * {LOG2E})" in plain.source
    assert checked("16_softmax", plain.source).passed
    assert not BaseTwoStage().applies(_file("01_gemm_bias_relu")).applies


@pytest.mark.parametrize(("old", "new"), [
    # a shifted score: c*(x + 1) is no c*x + 1
    ("s = tl.dot(q, kt) * scale", "s = tl.dot(q, kt) * scale + 1.0"),
    # the running max stored: its scaled value would reach memory
    ("        m_i = m_new\n", "        m_i = m_new\n"
     "        tl.store(o_ptr + offs_m, m_new, mask=offs_m < L)\n"),
    # the max added to the output (logsumexp-like): it meets a value that is not scaled
    ("out = acc / l_i[:, None]", "out = acc / l_i[:, None] + m_i[:, None]"),
    # a running max that starts at a constant scaling moves: c * 1.0 is no 1.0
    ('m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)',
     "m_i = tl.full((BLOCK_M,), 1.0, dtype=tl.float32)"),
    # a product of two score blocks: c*(s*s) is no (c*s)*(c*s)
    ("m_new = tl.maximum(m_i, tl.max(s, axis=1))",
     "m_new = tl.maximum(m_i, tl.max(s * s, axis=1))"),
])
def test_a_use_scaling_would_change_keeps_the_plain_rewrite(old: str, new: str) -> None:
    file = _file("19_attention", old, new)
    assert _folds(file) == [False, False]
    (proposal,) = BaseTwoStage().propose(file, H200)
    assert "s = tl.dot(q, kt) * scale" in proposal.source
    assert f"p = tl.exp2((s - m_new[:, None]) * {LOG2E})" in proposal.source


def test_an_exp_inside_another_stays_and_the_values_it_reads_are_not_scaled() -> None:
    """Only plain calls outside another exp's argument are rewritten; the inner one stays
    `tl.exp`, so the scores it reads keep their scale (no fold anywhere in their component)."""
    file = _file("19_attention", "p = tl.exp(s - m_new[:, None])",
                 "p = tl.exp(tl.exp(s - m_new[:, None]) - 1.0)")
    (plan,), _ = base2_plan(file)
    assert [folded for _, folded in plan.exps] == [False, False]
    assert any("is not a plain `tl.exp(x)` call" in note for note in plan.notes)
    (proposal,) = BaseTwoStage().propose(file, H200)
    assert "s = tl.dot(q, kt) * scale\n" in proposal.source
    assert f"p = tl.exp2((tl.exp(s - m_new[:, None]) - 1.0) * {LOG2E})" in proposal.source
