"""Rows folded over partitions (`targets/nki/fold.py`): a row kernel of few rows printed with
each row over pmax // BM partitions, its row sums completed across a row's partitions by a
matmul with a block-diagonal ones matrix. Each folded kernel runs on the simulator against the
reference interpreter, at shapes with a last block of fewer rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.interpreter import run_function
from axon.targets.nki.cost import estimate, load_constants
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.fold import FOLD, emit_folded, fold_factor, fold_refusal
from axon.targets.nki.lower import Refused
from axon.targets.nki.narrow import narrowed
from axon.targets.nki.select import check_close, choose_kernel

from .test_nki_schedule import kernel, program, run


def right(name: str, sizes: dict[str, int], text: str, tmp_path: Path) -> float:
    """The module's latency on trn2 where it matches the reference (selection's rule: the
    program's tolerance, against the interpreter's rounded or exact run); fails otherwise."""
    inputs = make_inputs(PROGRAMS[name], sizes)
    out, trace = run(text, tmp_path, inputs)
    tolerance = PROGRAMS[name].tolerance_at(sizes)
    problems = [check_close(out, run_function(program(name), inputs, sizes, exact=exact)[0],
                            tolerance) for exact in (False, True)]
    assert "" in problems, (sizes, problems)
    return estimate(trace, load_constants("trn2")).total_s


@pytest.mark.parametrize("name", ["ntrans", "rmsnorm", "layernorm"])
def test_a_folded_row_kernel_matches_the_reference_with_a_short_last_block(
        name: str, tmp_path: Path) -> None:
    # BM = 8: each row on 16 partitions; 19 rows are blocks of 8, 8 and 3 (48 partitions)
    func = kernel(name, "rows")
    assert fold_refusal(func) == ""
    text = emit_folded(func, {"BM": 8}).text
    assert "stationary=fold_b" in text
    for sizes in ({"M": 19, "N": 160}, {"M": 5, "N": 96}):
        right(name, sizes, text, tmp_path)


def test_ntrans_folded_is_three_times_faster_at_eight_rows(tmp_path: Path) -> None:
    # 8 rows of 4096: on 8 partitions every pass walks 4096 elements; folded, 256 on 128
    func = narrowed(kernel("ntrans", "rows"))
    assert func is not None
    sizes = {"M": 8, "N": 4096}
    plain = right("ntrans", sizes, emit_nki(func[0], {"BM": 8}).text, tmp_path)
    folded = right("ntrans", sizes, emit_folded(func[0], {"BM": 8}).text, tmp_path)
    assert folded < plain / 3, (plain, folded)


def test_what_does_not_fold_is_refused_with_the_reason() -> None:
    # softmax's row max has no sum over partitions; a multipass kernel loops over columns
    assert fold_refusal(kernel("softmax", "rows")) == \
        "a row maximum over partitions (only sums fold)"
    assert fold_refusal(kernel("rmsnorm", "rows_multipass")) == "a loop in the kernel's body"
    with pytest.raises(Refused, match="rows do not fold over partitions: a loop"):
        emit_folded(kernel("rmsnorm", "rows_multipass"), {"BM": 8, "BK": 128})


def test_the_fold_factor_needs_two_partitions_a_row_and_a_row_they_divide() -> None:
    func = kernel("ntrans", "rows")
    assert fold_factor(func, {"BM": 8}, {"M": 8, "N": 4096}, 128) == 16
    assert fold_factor(func, {"BM": 64}, {"M": 64, "N": 4096}, 128) == 2
    assert fold_factor(func, {"BM": 8}, {"M": 8, "N": 100}, 128) == 0  # 100 % 16
    assert fold_factor(func, {"BM": 128}, {"M": 128, "N": 4096}, 128) == 0
    assert fold_factor(kernel("softmax", "rows"), {"BM": 8}, {"M": 8, "N": 4096}, 128) == 0


def test_selection_takes_the_folded_kernel_for_few_long_rows() -> None:
    sizes = {"M": 8, "N": 4096}
    chosen = choose_kernel(program("ntrans"), "trn2", sizes, lambda line: None,
                           inputs=make_inputs(PROGRAMS["ntrans"], sizes),
                           tolerance=PROGRAMS["ntrans"].tolerance_at(sizes))
    assert FOLD in chosen.chosen, chosen.chosen
    plain = [c for c in chosen.candidates if c.latency_s is not None and FOLD not in c.label]
    assert chosen.latency_s is not None
    assert chosen.latency_s < min(c.latency_s or 0.0 for c in plain) / 2
