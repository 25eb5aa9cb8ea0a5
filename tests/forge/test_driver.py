"""The planner's order and skip lines, the Proposer protocol and its loader, and the driver:
stages kept through an injected check (here syntax plus the problem set's interpreter check),
rolled back when it rejects, the fastest passing proposal kept when it measures."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from axon.benchmarks.forge import problem_set as forge
from axon.forge.driver import CheckOutcome, optimize_kernel_file, optimize_source
from axon.forge.planner import DEPENDENCIES, make_plan, order_stages
from axon.forge.proposer import Proposer, ProposerError, StageProposer, load_proposer
from axon.forge.source import KernelFile
from axon.forge.stages import AnalysisReport, ForgeOptions, Proposal, builtin_stages
from axon.targets.xe_triton.kb import Device, load_device

B70 = load_device("b70")
ORDER = ["analysis", "algorithmic", "base2", "dtype", "memory_access", "block_pointers",
         "swizzle", "persistent", "xe_tuning", "autotune"]


def path_of(name: str) -> Path:
    return forge.PROBLEMS[name].kernel_path


def interpreter_check(name: str, checked: Callable[[str, str], forge.CheckResult]
                      ) -> Callable[[str, str], CheckOutcome]:
    """The test double of the cascade: syntax, then the problem's Model on the interpreter."""
    def check(current: str, proposal: str) -> CheckOutcome:
        try:
            ast.parse(proposal)
        except SyntaxError as err:
            return CheckOutcome(False, "syntax", f"{err.msg} at line {err.lineno}")
        result = checked(name, proposal)
        return CheckOutcome(result.passed, "correctness", result.message or "agrees")
    return check


def test_planner_orders_by_dependencies_and_says_why_it_skips() -> None:
    stages = builtin_stages()
    assert [s.name for s in order_stages(list(reversed(stages)))] == ORDER
    assert set(DEPENDENCIES) == set(ORDER)
    for later, earlier in DEPENDENCIES.items():
        assert all(ORDER.index(e) < ORDER.index(later) for e in earlier)
    plan = make_plan(KernelFile.read(path_of("16_softmax")))
    lines = [step.line() for step in plan]
    assert [step.stage.name for step in plan] == ORDER
    assert lines[1].startswith("algorithmic: skipped: algorithmic: not applicable: kernel "
                               "`softmax_kernel`, loop at line ")
    assert lines[2] == ("base2: applies: base2: `softmax_kernel`: 2 tl.exp in base 2, 0 with "
                        "LOG2E folded into 0 scale(s)")
    assert lines[4] == ("memory_access: applies: memory_access: `softmax_kernel` (3 load(s) "
                        "hinted, 3 loop(s) to prefetch where the device's pipeliner stages "
                        "loads)")
    assert lines[6] == ("swizzle: skipped: swizzle: not applicable: kernel `softmax_kernel` has "
                        "no tl.dot")
    assert lines[3].startswith("dtype: skipped: dtype: not applicable: ")
    assert lines[7].startswith("persistent: applies: ")
    assert lines[8].startswith("xe_tuning: applies: ")
    gemm = make_plan(KernelFile.read(path_of("01_gemm_bias_relu")))
    assert [s.applies for s in gemm] == [True, False, False, False, False, True, True, True, True,
                                         True]


def test_driver_runs_the_plan_on_a_gemm(checked: Callable[[str, str], forge.CheckResult]
                                        ) -> None:
    said: list[str] = []
    result = optimize_kernel_file(path_of("01_gemm_bias_relu"), B70,
                                  interpreter_check("01_gemm_bias_relu", checked), said.append,
                                  ForgeOptions(max_proposals=2, max_configs=2))
    assert result.applied() == ["block_pointers", "swizzle", "persistent", "xe_tuning",
                                "autotune"]
    assert said == result.report_lines() and len(said) == 10
    assert said[1].startswith("algorithmic: skipped: ")
    assert said[2].startswith("base2: skipped: ")
    assert said[3].startswith("dtype: skipped: ")
    assert said[4].startswith("memory_access: skipped: ")
    assert said[5].startswith("block_pointers: applied (1 proposal(s)): ")
    assert said[7].startswith("persistent: applied (2 proposal(s)): persistent "
                              "`linear_bias_relu_kernel`: 32 programs loop")
    assert said[8].startswith("xe_tuning: applied (2 proposal(s)): ")
    # autotune after the swizzle, the loop and the tuning: the grid reads both blocks from
    # META, the loop's bound the kernel's own blocks
    assert said[9].startswith("autotune: applied (1 proposal(s)): ")
    assert "tl.make_block_ptr" in result.source and "tl.minimum(" in result.source
    assert "grid = lambda META: (min(triton.cdiv(M, META['BLOCK_M']) * triton.cdiv(N, " \
        "META['BLOCK_N']), PERSISTENT_PROGRAMS),)" in result.source
    assert "num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)" in result.source
    assert checked("01_gemm_bias_relu", result.source).passed
    # the text after each applied stage, each the next stage's input: the bundle's prefixes
    assert [stage for stage, _ in result.snapshots] == result.applied()
    texts = [text for _, text in result.snapshots]
    assert texts[-1] == result.source and len(set(texts)) == len(texts)
    assert "tl.make_block_ptr" in texts[0] and "tl.minimum(" not in texts[0]


def test_driver_rolls_back_what_the_check_rejects() -> None:
    source = path_of("01_gemm_bias_relu").read_text(encoding="utf-8")
    calls: list[str] = []

    def reject(current: str, proposal: str) -> CheckOutcome:
        calls.append(proposal)
        return CheckOutcome(False, "correctness", "max error 3.5 at (0, 1)")

    result = optimize_source(source, "01.py", B70, reject)
    assert result.source == source and not result.changed
    rolled = [r for r in result.records if r.status == "rolled back"]
    assert [r.stage for r in rolled] == ["block_pointers", "swizzle", "persistent", "xe_tuning",
                                         "autotune"]
    assert rolled[0].line() == ("block_pointers: rolled back (1 proposal(s)): every proposal "
                                "failed; the first at correctness: max error 3.5 at (0, 1)")
    assert all(c != source for c in calls)


def test_driver_keeps_the_fastest_passing_proposal() -> None:
    source = path_of("16_softmax").read_text(encoding="utf-8")
    times = iter([0.5, 0.2, 0.9, 0.1])

    def timed(current: str, proposal: str) -> CheckOutcome:
        return CheckOutcome(True, "performance", "faster", next(times, 1.0))

    stages = [s for s in builtin_stages(ForgeOptions(max_proposals=3)) if s.name == "xe_tuning"]
    result = optimize_source(source, "16.py", B70, timed, stages=stages)
    (record,) = result.records
    assert record.status == "applied" and record.why.endswith("(0.2 ms)")
    chosen = [d for d, o in record.outcomes if o.candidate_ms == 0.2][0]
    assert chosen in record.why


class TinyProposer:
    """A proposer of one text: the user's kernel with 8 warps at its launch."""

    name = "tiny"

    def propose(self, source: str, report: AnalysisReport, profile: Device
                ) -> Iterable[Proposal]:
        assert "softmax_kernel" in report.kernels
        yield Proposal(self.name, "8 warps", source.replace("num_warps=4", "num_warps=8"))


def test_a_plugged_proposer_goes_through_the_check(
        checked: Callable[[str, str], forge.CheckResult]) -> None:
    source = path_of("16_softmax").read_text(encoding="utf-8")
    proposer = load_proposer(f"{__name__}:TinyProposer")
    assert isinstance(proposer, Proposer) and proposer.name == "tiny"
    result = optimize_source(source, "16.py", B70, interpreter_check("16_softmax", checked),
                             stages=[], proposers=[proposer])
    assert result.report_lines() == ["tiny: applied (1 proposal(s)): 8 warps"]
    assert "num_warps=8" in result.source
    stage = StageProposer(builtin_stages()[6])  # the swizzle, as a proposer
    report = AnalysisReport("16.py")
    assert list(stage.propose(source, report, B70)) == []


@pytest.mark.parametrize(("spec", "message"), [
    ("tiny", "proposer 'tiny': expected 'package.module:attribute'"),
    ("axon.forge.no_such:X", "proposer 'axon.forge.no_such:X': module 'axon.forge.no_such' "
                             "does not import"),
    ("axon.forge.proposer:Nothing", "proposer 'axon.forge.proposer:Nothing': "
                                    "'axon.forge.proposer' has no attribute 'Nothing'"),
    ("axon.forge.proposer:StageProposer", "proposer 'axon.forge.proposer:StageProposer': "
                                          "calling StageProposer with no arguments failed"),
    ("axon.forge.planner:DEPENDENCIES", "proposer 'axon.forge.planner:DEPENDENCIES': "
                                        "DEPENDENCIES is not a proposer"),
])
def test_load_proposer_errors_say_what_failed(spec: str, message: str) -> None:
    with pytest.raises(ProposerError) as err:
        load_proposer(spec)
    assert str(err.value).startswith(message)


def test_a_file_that_does_not_parse_skips_every_stage_with_the_located_error() -> None:
    broken = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x:\n"
    result = optimize_source(broken, "bad.py", B70, lambda current, proposal: CheckOutcome(
        True, "syntax", "unreachable"))
    assert not result.changed
    assert [r.status for r in result.records] == ["skipped"] * len(ORDER)
    assert all("bad.py:4:" in r.why for r in result.records), result.report_lines()
