"""`synth`, target-neutral: a toy "target" whose instructions are `ax` ops shows the enumeration
(product of the holes, the cap), pruning before any proof, admission only of what the
verifier proves (a refutation with its counterexample, an Unknown never admitted), the counts
and summary line, and the cache of admitted lowerings (a second run asks the prover nothing)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.ax import AddOp, MulOp, SubOp, TensorType
from axon.dialects.ax.op_base import TensorOp
from axon.synth import (
    Admitted,
    Candidate,
    Constraint,
    Filling,
    Hole,
    Pruned,
    Rejected,
    Sketch,
    SketchTooLarge,
    Slot,
    Spec,
    admit,
    describe,
    fillings,
    synthesize,
)
from axon.verifier import ProofCache, Refuted, Unknown, Verdict, prove_equivalent

X = TensorType(["P", "F"], "f32")
COLUMN = TensorType(["P", "1"], "f32")
OPS: dict[str, type[TensorOp]] = {"add": AddOp, "sub": SubOp, "mul": MulOp}


def function(name: str, params: list[TensorType],
             build: Callable[[list[SSAValue]], list[Operation]]) -> FuncOp:
    block = Block(arg_types=params)
    ops = build(list(block.args))
    block.add_ops([*ops, ReturnOp(ops[-1].results[0])])
    return FuncOp(name, FunctionType.from_lists(params, [ops[-1].results[0].type]),
                  Region(block))


def sub_spec(rhs: TensorType = X) -> Spec:
    """The tile op `x - y`."""
    return Spec("sub", function("spec", [X, rhs], lambda a: [SubOp.make(a)]), ("P <= 128",))


def build(spec: Spec, filling: Filling) -> Candidate:
    """The toy target: one `ax` op (the `op` hole) over the operands in the `order` hole's
    order; a shape it cannot take is Pruned."""
    params = [t for t in spec.func.function_type.inputs.data if isinstance(t, TensorType)]
    order = [0, 1] if filling["instr.order"] == "xy" else [1, 0]

    def ops(args: list[SSAValue]) -> list[Operation]:
        a, b = (args[k] for k in order)
        if a.type != b.type:
            raise Pruned(f"operand types {a.type} and {b.type} differ")
        return [OPS[str(filling["instr.op"])].make([a, b])]

    return Candidate(function("candidate", params, ops))


TOY = Sketch("sub.toy", "sub", (Slot("instr", (Hole("op", ("add", "sub", "mul")),
                                               Hole("order", ("xy", "yx")))),),
             build, (Constraint("no mul", lambda s, f: f["instr.op"] != "mul"),))


class CountingProver:
    """`prove_equivalent`, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Verdict:
        self.calls += 1
        return prove_equivalent(*args, **kwargs)


def test_fillings_are_the_product_of_the_holes_first_hole_slowest() -> None:
    got = [(f["instr.op"], f["instr.order"]) for f in fillings(TOY)]
    assert got == [("add", "xy"), ("add", "yx"), ("sub", "xy"), ("sub", "yx"), ("mul", "xy"),
                   ("mul", "yx")]
    assert TOY.size() == 6


def test_a_sketch_s_holes_are_named_once_and_hold_json_values() -> None:
    with pytest.raises(ValueError, match="names hole\\(s\\) instr.op twice"):
        Sketch("twice", "sub", (Slot("instr", (Hole("op", ("add",)), Hole("op", ("sub",)))),),
               build)
    with pytest.raises(ValueError, match="hole 'op': .* is not a name, a number or a flag"):
        Hole("op", (AddOp,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hole 'op' has an empty domain"):
        Hole("op", ())


def test_the_cap_is_enforced_before_any_filling_with_a_clear_message() -> None:
    prover = CountingProver()
    with pytest.raises(SketchTooLarge, match=r"sketch 'sub.toy' has 6 fillings \(3 \(instr.op\) "
                       r"x 2 \(instr.order\)\), more than the cap of 5"):
        synthesize(sub_spec(), [TOY], "toy", cap=5, prove=prover)
    assert prover.calls == 0
    assert len(synthesize(sub_spec(), [TOY], "toy", cap=6).lowerings) == 1


def test_only_the_proved_filling_is_admitted_and_the_counts_add_up() -> None:
    report = synthesize(sub_spec(), [TOY], "toy")
    (lowering,) = report.lowerings
    assert dict(lowering.filling) == {"instr.op": "sub", "instr.order": "xy"}
    assert len(lowering.proof_id) == 16 and not lowering.cached
    c = report.counts
    assert (c.tried, c.pruned, c.admitted, c.refuted, c.unknown) == (6, 2, 1, 3, 0)
    assert {r.reason for r in report.rejected("pruned")} == {"no mul"}
    for rejected in report.rejected("refuted"):  # each refutation replays in the interpreter
        assert isinstance(rejected.verdict, Refuted)
        candidate = TOY.build(sub_spec(), rejected.filling).func
        assert rejected.verdict.counterexample.shows_in(candidate, sub_spec().func)
    assert report.summary().startswith("synth sub @ toy: 1 sketches (0 from cache), 6 tried, "
                                       "2 pruned, 1 admitted, 3 refuted, 0 unknown, ")
    (wrong_order, *_) = report.rejected("refuted")
    assert describe(wrong_order).startswith("sub.toy [instr.op=add, instr.order=xy]: refuted: ")
    assert "in exact arithmetic" in describe(wrong_order)
    lines: list[str] = []
    synthesize(sub_spec(), [TOY], "toy", progress=lines.append)
    assert len(lines) == 1 and lines[0].startswith("  sub.toy: 6 tried, 2 pruned, 1 admitted")


def test_a_shape_the_target_cannot_build_or_a_wrong_result_type_is_pruned_unproved() -> None:
    prover = CountingProver()
    report = synthesize(sub_spec(COLUMN), [TOY], "toy", prove=prover)
    assert report.counts.pruned == 6 and prover.calls == 0
    assert any("differ" in r.reason for r in report.rejected("pruned"))

    def wrong_params(spec: Spec, filling: Filling) -> Candidate:
        return Candidate(function("c", [X, X], lambda a: [AddOp.make(a)]))

    sketch = Sketch("sub.column", "sub", (), wrong_params)
    decided = admit(sub_spec(COLUMN), sketch, {}, prove=prover)
    assert isinstance(decided, Rejected) and decided.outcome == "pruned"
    assert "parameter types" in decided.reason and prover.calls == 0


def test_an_unknown_is_never_admitted() -> None:
    def undecided(*args: Any, **kwargs: Any) -> Verdict:
        return Unknown("out of budget (a stand-in verifier)", 0.0)

    report = synthesize(sub_spec(), [TOY], "toy", prove=undecided)
    assert report.lowerings == [] and report.counts.unknown == 4
    assert all(r.reason.startswith("unknown: out of budget") for r in report.rejected("unknown"))


def test_a_second_run_is_served_from_the_cache_without_asking_the_prover(tmp_path: Path) -> None:
    cache = ProofCache(tmp_path / "proofs.json")
    prover = CountingProver()
    first = synthesize(sub_spec(), [TOY], "toy", cache=cache, prove=prover)
    assert prover.calls == 4
    cache.save()
    # a second program: its own spec object and a cache read back from the file
    again = ProofCache(tmp_path / "proofs.json")
    second = synthesize(sub_spec(), [TOY], "toy", cache=again, prove=prover)
    assert prover.calls == 4
    (lowering,) = second.lowerings
    assert isinstance(lowering, Admitted) and lowering.cached
    assert dict(lowering.filling) == dict(first.lowerings[0].filling)
    assert lowering.proof_id == first.lowerings[0].proof_id
    assert "(1 from cache), 0 tried" in second.summary()
    assert second.counts.cached == 1
    # another profile is another key: decided again
    synthesize(sub_spec(), [TOY], "other", cache=again, prove=prover)
    assert prover.calls == 8


def test_a_clock_shaped_unknown_keeps_the_sketch_out_of_the_cache() -> None:
    cache = ProofCache()

    def by_clock(*args: Any, **kwargs: Any) -> Verdict:
        return Unknown("the safety net", 0.0, limited=True, budget="seconds")

    synthesize(sub_spec(), [TOY], "toy", cache=cache, prove=by_clock)
    assert cache.results == {}


def test_the_cache_key_says_which_value_each_op_reads() -> None:
    swapped = Spec("sub", function("spec", [X, X], lambda a: [SubOp.make([a[1], a[0]])]),
                   ("P <= 128",))
    assert swapped.form_text() != sub_spec().form_text()
    assert "%v0 = ax.sub(%a1: f32[P, F], %a0: f32[P, F])" in swapped.form_text()
    cache = ProofCache()
    synthesize(sub_spec(), [TOY], "toy", cache=cache)
    prover = CountingProver()
    report = synthesize(swapped, [TOY], "toy", cache=cache, prove=prover)
    assert prover.calls == 4 and not report.lowerings[0].cached
    assert dict(report.lowerings[0].filling) == {"instr.op": "sub", "instr.order": "yx"}
