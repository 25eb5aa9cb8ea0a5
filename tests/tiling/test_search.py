"""The search over a program's tilings: bounded by its budgets, counting what it skips."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.tile import ForOp
from axon.targets.profiles import load_profile
from axon.tiling import search
from axon.tools.embed import parse_mlir, parse_source
from axon.verifier import Unknown

T = "!ax.tensor<[M, N], f32>"
ADD = f"""
func.func @f(%x: {T}, %y: {T}) -> {T} {{
  %z = ax.add %x, %y : ({T}, {T}) -> {T}
  func.return %z : {T}
}}
"""


def program(copies: int) -> list[FuncOp]:
    return [next(op for op in parse_mlir(ADD, "f.mlir").ops if isinstance(op, FuncOp))
            for _ in range(copies)]


@pytest.mark.parametrize("reason", [
    "out of time: the query's budget of 1 ms ran out before a verdict",
    "z3: canceled",
    "assumptions: z3 timeout",  # z3's own timeout in the premises check
])
def test_a_tiling_that_ran_out_of_time_is_skipped_for_the_later_variants(
        monkeypatch: pytest.MonkeyPatch, reason: str) -> None:
    calls: list[str] = []

    def out_of_time(kernel: FuncOp, func: FuncOp, **_: object) -> Unknown:
        calls.append(kernel.sym_name.data)
        return Unknown(reason, 0.0)

    monkeypatch.setattr(search, "prove_equivalent", out_of_time)
    result = search.tile_program(program(3), load_profile("h200"), {"M": 64, "N": 64})
    assert calls == ["f_rows", "f_blocks"]  # once per tiling, not once per variant
    assert [p.verdict for p in result.proposals] == ["unknown", "unknown", *["skipped"] * 4]
    assert "ran out of time" in result.proposals[-1].reason


def test_an_unknown_for_a_reason_is_not_taken_for_a_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def gave_up(kernel: FuncOp, func: FuncOp, **_: object) -> Unknown:
        return Unknown("z3 found candidate counterexamples, but none replayed", 0.0)

    monkeypatch.setattr(search, "prove_equivalent", gave_up)
    result = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64})
    assert [p.verdict for p in result.proposals] == ["unknown"] * 4


def test_the_time_limit_leaves_the_rest_counted_as_not_tried() -> None:
    result = search.tile_program(program(2), load_profile("h200"), {"M": 64, "N": 64},
                                 time_limit_s=1e-9)
    assert result.proposals == [] and result.unproposed == 4


def test_sizes_not_given_are_priced_at_1024() -> None:
    result = search.tile_program(program(1), load_profile("h200"), {"M": 8})
    best = result.proved[0].candidates[0]
    assert best.cost.compulsory_bytes == 3 * 8 * 1024 * 4


@pytest.mark.parametrize("profile", ["h200", "trn2"])
def test_the_multi_pass_softmax_kernel_is_proved(profile: str) -> None:
    # a loop for the max, one for the sum of exponentials, a parallel pass writing the rows:
    # each loop's masked partial reductions recombine into the reduction over the whole row
    module = parse_source(PROGRAMS["softmax"].source, "softmax.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    result = search.tile_program([func], load_profile(profile), {"M": 4096, "N": 4096})
    (multipass,) = (p for p in result.proposals if p.tiling.kind == "rows_multipass")
    assert multipass.verdict == "proved", multipass.reason
    assert multipass.kernel is not None
    loops = [op.loop_kind for op in multipass.kernel.walk() if isinstance(op, ForOp)]
    assert loops == ["sequential", "sequential", "parallel"]
