"""Bounded ranking keeps the best of every group before runners-up and never an unpriceable
candidate; the pick prefers measured times, then the model."""

from __future__ import annotations

import math

from axon.selection.space import Tally, Verdict, pick, ranked_bounded


def test_the_groups_are_interleaved_by_rank_and_the_bound_holds() -> None:
    costs = {"a1": 1.0, "a2": 1.1, "a3": 1.2, "b1": 3.0, "b2": 4.0, "c1": 2.0,
             "c2": math.inf}
    kept = ranked_bounded(costs, cost=costs.__getitem__, group=lambda c: c[0], limit=4)
    assert kept.chosen == ["a1", "c1", "b1", "a2"]
    assert (kept.space, kept.pruned) == (7, 3)
    every = ranked_bounded(costs, costs.__getitem__, lambda c: c[0], 100)
    assert every.chosen == ["a1", "c1", "b1", "a2", "b2", "a3"]  # c2: no price, never kept


def test_the_pick_prefers_the_fastest_measured_then_the_cheapest_modeled() -> None:
    modeled = {"x": 2.0, "y": 1.0, "z": 0.5}.__getitem__
    untimed = [Verdict("x", True), Verdict("y", True), Verdict("z", False, "structure", "r")]
    chosen = pick(untimed, modeled)
    assert chosen is not None and chosen.id == "y"
    timed = [Verdict("x", True, measured_ms=0.3), Verdict("y", True, measured_ms=0.4)]
    chosen = pick(timed, modeled)
    assert chosen is not None and chosen.id == "x"
    assert pick([Verdict("z", False, "syntax", "r")], modeled) is None


def test_the_tally_counts_rejections_per_step() -> None:
    tally = Tally()
    tally.add([Verdict("a", True), Verdict("b", False, "structure", "too big"),
               Verdict("c", False, "structure", "odd"), Verdict("d", False, "correctness", "x")])
    assert tally.line() == ("4 checked, 1 passed; rejected: syntax 0, structure 2, "
                            "correctness 1, performance 0")
    assert tally.first_reasons == {"structure": "b: too big", "correctness": "d: x"}
