"""The Triton-level `algorithmic` stage: a causal attention loop's dead iterations cut off with
its three facts proved, the cut module still agreeing with the problem's Model on the CPU
interpreter, and every planted variant whose iterations are not dead (or not provably so)
left alone with the reason."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from axon.benchmarks.forge import problem_set as forge
from axon.forge.source import KernelFile
from axon.forge.stages import AlgorithmicStage, dead_loops
from axon.forge.stages import algorithmic as stage_module
from axon.forge.stages.algorithmic import find_loops
from axon.targets.xe_triton.kb import load_device

H200 = load_device("h200")
CAUSAL = "20_causal_attention"


def _source() -> str:
    return forge.PROBLEMS[CAUSAL].kernel_path.read_text(encoding="utf-8")


def _planted(old: str, new: str) -> KernelFile:
    source = _source()
    assert source.count(old) == 1, old
    return KernelFile(source.replace(old, new), "planted.py")


def test_the_causal_loop_stops_at_the_diagonal_and_still_agrees(
        checked: Callable[[str, str], forge.CheckResult]) -> None:
    file = KernelFile(_source(), "20.py")
    found, _ = dead_loops(file)
    assert [(d.kernel, d.loop.lineno, d.cut) for d in found] == [
        ("causal_attention_kernel", 34, "BLOCK_M + BLOCK_M*pid_m")]
    assert "fails at every lane of the tl.where at line 39 (z3)" in found[0].why
    assert "`l_i`, `acc`, `m_i` unchanged" in found[0].why
    split, proposal = AlgorithmicStage().propose(file, H200)
    assert "for n0 in range(0, tl.minimum(L, BLOCK_M + BLOCK_M*pid_m), BLOCK_N):" \
        in proposal.source
    assert checked(CAUSAL, proposal.source).passed
    # the iterations below the diagonal run first with no where and no load masks
    (prefix,) = find_loops(file).prefixes
    assert prefix.why == (
        "`causal_attention_kernel`: the loop at line 34 below L - BLOCK_N + 1 and "
        "BLOCK_M*pid_m - BLOCK_N + 2 sees every lane of the mask of the tl.where at line(s) 39 "
        "hold (z3): split there, the where dropped and 2 load(s) unmasked")
    assert "    n0_full = tl.minimum(L, BLOCK_M + BLOCK_M*pid_m)\n" \
        "    n0_full = tl.minimum(n0_full, L - BLOCK_N + 1)\n" \
        "    n0_full = tl.minimum(n0_full, BLOCK_M*pid_m - BLOCK_N + 2)\n" \
        "    for n0 in range(0, n0_full, BLOCK_N):\n" in split.source
    assert "    n0_rest = ((tl.maximum(n0_full, 0) + BLOCK_N - 1) // BLOCK_N) * BLOCK_N\n" \
        "    for n0 in range(n0_rest, tl.minimum(L, BLOCK_M + BLOCK_M*pid_m), BLOCK_N):\n" \
        in split.source
    assert split.source.count("tl.where(") == 1 and split.source.count("other=0.0") == 3
    assert checked(CAUSAL, split.source).passed
    # the loop whose keys are not masked by the queries has nothing dead
    other = KernelFile(forge.PROBLEMS["19_attention"].kernel_path.read_text(encoding="utf-8"),
                       "19.py")
    plain = find_loops(other)
    assert not plain.cuts
    assert "no comparison of its tl.where masks grows with the loop at its step" \
        in plain.reasons[0]
    # but its key blocks before the last see the key mask hold everywhere: split there
    assert [p.splits for p in plain.prefixes] == [("L - BLOCK_N + 1",)]
    (split_19,) = AlgorithmicStage().propose(other, H200)
    assert split_19.source.count("tl.where(") == 1
    assert checked("19_attention", split_19.source).passed


@pytest.mark.parametrize(("old", "new", "reason"), [
    # a future key scored 0, not -inf: the iteration past the diagonal still adds exp(0 - m)
    ('keys[None, :] <= offs_m[:, None]), s, float("-inf"))',
     'keys[None, :] <= offs_m[:, None]), s, 0.0)', "no tl.where(mask, x, -inf) in it"),
    # the mask's key bound falls as the loop goes on: later iterations are the live ones
    ("(keys[None, :] <= offs_m[:, None])", "(keys[None, :] >= offs_m[:, None])",
     "no comparison of its tl.where masks grows with the loop at its step"),
    # a dead iteration that still adds to the accumulator
    ("acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)",
     "acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v) + 1.0",
     "a dead iteration leaves `acc` finite, not itself"),
    # rows 0..63 have no live key at all: their running max stays -inf
    ("(keys[None, :] <= offs_m[:, None])", "(keys[None, :] + 64 <= offs_m[:, None])",
     "refuted at"),
    # m_i against itself reindexed is no zero block: sum_j (m_i - m_j) moves l_i
    ("l_i = l_i * alpha + tl.sum(p, axis=1)",
     "l_i = l_i * alpha + tl.sum(p, axis=1) + tl.sum(m_i[:, None] - m_i[None, :], axis=1)",
     "a dead iteration leaves `l_i` finite, not itself"),
    # -inf cast to an integer is no -inf: the where's scores past the cut are not known
    ("m_new = tl.maximum(m_i, tl.max(s, axis=1))",
     "m_new = tl.maximum(m_i, tl.max(s.to(tl.int32).to(tl.float32), axis=1))",
     "a dead iteration leaves `l_i` unknown, not itself"),
    # a store in the loop would be lost
    ("        m_i = m_new\n", "        m_i = m_new\n"
     "        tl.store(o_ptr + offs_m, m_new, mask=offs_m < L)\n",
     "it stores (a cut iteration's store would be lost)"),
])
def test_planted_loops_are_left_alone_with_the_reason(old: str, new: str, reason: str) -> None:
    file = _planted(old, new)
    found = find_loops(file)
    assert not found.cuts
    assert any(reason in r for r in found.reasons), found.reasons
    for proposal in AlgorithmicStage().propose(file, H200):
        assert "BLOCK_M + BLOCK_M*pid_m" not in proposal.source


def test_a_cut_one_block_early_is_refuted_by_z3(monkeypatch: pytest.MonkeyPatch) -> None:
    """The derivation of the cut is checked, not trusted: one less than the derived cut lets
    an iteration with a live lane through, and z3 finds it."""
    derived = stage_module._cut_of

    def early(*args: object, **kwargs: object) -> object:
        cut = derived(*args, **kwargs)  # type: ignore[arg-type]
        return None if cut is None else cut - 1

    monkeypatch.setattr(stage_module, "_cut_of", early)
    found, reasons = dead_loops(KernelFile(_source(), "20.py"))
    assert not found
    assert any("dead past the cut: refuted at" in r for r in reasons), reasons


def test_a_split_one_block_late_is_refuted_by_z3(monkeypatch: pytest.MonkeyPatch) -> None:
    """The split is checked the same way: one past the derived split lets an iteration with a
    masked lane into the unmasked loop, z3 finds it and the cut is proposed alone."""
    derived = stage_module._cut_of

    def late(*args: object, holds: bool = False) -> object:
        cut = derived(*args, holds=holds)  # type: ignore[arg-type,misc]
        return cut + 1 if cut is not None and holds else cut

    monkeypatch.setattr(stage_module, "_cut_of", late)
    file = KernelFile(_source(), "20.py")
    found = find_loops(file)
    assert len(found.cuts) == 1 and not found.prefixes
    assert any("the mask of the tl.where at line 39 holds at every lane below the split: "
               "refuted at" in r for r in found.reasons), found.reasons
    (proposal,) = AlgorithmicStage().propose(file, H200)
    assert "n0_full" not in proposal.source


@pytest.mark.parametrize(("old", "new", "reason"), [
    # a bound the loop's variable cancels out of, which need not hold: L may be small
    ("s = tl.where((keys[None, :] < L)", "s = tl.where((keys[None, :] > n0 - L)",
     "holds at every lane below the split: refuted at"),
    # a key bound moving at twice the loop's step: no split is derived from it
    ("s = tl.where((keys[None, :] < L)", "s = tl.where((2 * keys[None, :] < L)",
     "`2*BLOCK_N*n0_iter + 2*lane1 < L` at line 39 does not grow with the loop at its step"),
])
def test_a_mask_that_does_not_hold_below_the_diagonal_is_not_split(old: str, new: str,
                                                                   reason: str) -> None:
    found = find_loops(_planted(old, new))
    assert len(found.cuts) == 1 and not found.prefixes
    assert any(reason in r for r in found.reasons), found.reasons


def test_a_where_whose_other_operand_is_a_block_is_not_split() -> None:
    """`tl.where(mask, s, t)` with t a block is not s where the mask holds unless the shapes
    and dtypes agree, which the value graph does not tell: such a where is left alone."""
    source = forge.PROBLEMS["19_attention"].kernel_path.read_text(encoding="utf-8")
    old = 's = tl.where(keys[None, :] < L, s, float("-inf"))'
    assert source.count(old) == 1
    found = find_loops(KernelFile(source.replace(old, 's = tl.where(keys[None, :] < L, s, 0 * s)'),
                                  "19.py"))
    assert not found.prefixes
    assert any("the tl.where at line 36 is not a float block against a constant of its shape"
               in r for r in found.reasons), found.reasons


def test_nested_wheres_whose_edits_overlap_are_not_split() -> None:
    """Two proved wheres, one inside the other's kept operand, would edit overlapping text:
    the loop is not split (no crash), and the proposal list says nothing of a split."""
    source = forge.PROBLEMS["19_attention"].kernel_path.read_text(encoding="utf-8")
    old = 's = tl.where(keys[None, :] < L, s, float("-inf"))'
    new = ('s = tl.where(keys[None, :] < L, tl.where(keys[None, :] < L, s, float("-inf")), '
           'float("-inf"))')
    file = KernelFile(source.replace(old, new), "19.py")
    (prefix,) = find_loops(file).prefixes
    assert len(prefix.wheres) == 2
    assert AlgorithmicStage().propose(file, H200) == []
