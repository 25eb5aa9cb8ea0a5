"""The nu-graph seams: the runner's per-iteration records, the backoff scheduler, admission as the
one way in, moves as pluggable objects, and e-class analyses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.frontend.numpy_subset import parse_source
from axon.nugraph import Budget, Report, Session
from axon.nugraph.admission import Limits, Outcome, admit
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import INPUT_PROOF, EGraph, Proof
from axon.nugraph.moves import PairSite, PushMove, default_moves
from axon.nugraph.ops import node_semantics
from axon.nugraph.prover import Prover
from axon.nugraph.runner import PROOF_LIMIT, SATURATED, BackoffScheduler, Runner
from axon.nugraph.term import Term
from axon.verifier import Unknown

SUM_OF_MATMUL = "def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x @ w, axis=1)\n"
RMSNORM_MATMUL = ("def f(x: f32[M, K], g: f32[K], w: f32[K, N]):\n"
                  "    return (x * rsqrt(mean(x * x, axis=-1, keepdims=True) + 1e-6) * g) @ w\n")


def function(source: str) -> FuncOp:
    module = parse_source(source, "<test>")
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def graph(source: str) -> EGraph:
    return Session.from_function(function(source)).graph


def test_the_report_is_the_sum_of_its_iterations() -> None:
    g = graph(RMSNORM_MATMUL)
    report = Runner(g, Budget()).run()
    assert report.stop_reason == SATURATED and report.iterations == len(report.history) > 1
    assert report.candidates == sum(i.candidates for i in report.history) > 0
    assert report.proved == sum(i.proved for i in report.history) > 0
    last = report.history[-1]
    assert last.admitted == 0 and (last.nodes, last.classes) == (g.num_nodes, g.num_classes)
    names = {m.name for m in default_moves()}
    for i in report.history:
        assert set(i.move_seconds) <= names and set(i.proposed) <= names
        assert i.candidates == i.known + i.proved + i.refuted + i.unknown
        assert sum(i.by_move.values()) == i.proved


def test_the_proof_count_stops_the_run_at_the_same_candidate_every_time() -> None:
    full = Runner(graph(RMSNORM_MATMUL), Budget()).run()
    asked = full.proved + full.refuted + full.unknown
    assert asked > 5
    runs = [Runner(graph(RMSNORM_MATMUL), Budget(max_proofs=5)).run() for _ in range(2)]
    for report in runs:
        assert report.stop_reason == PROOF_LIMIT and report.limit_hit
        assert report.proved + report.refuted + report.unknown == 5
    assert [i.proposed for i in runs[0].history] == [i.proposed for i in runs[1].history]
    assert runs[0].proved == runs[1].proved < full.proved


def test_default_moves_in_proposal_order() -> None:
    assert [m.name for m in default_moves()] == ["fuse", "hoist", "split", "sink", "factor",
                                                 "distribute", "push", "merge"]


def test_one_move_alone_runs_through_the_same_admission() -> None:
    g = graph(SUM_OF_MATMUL)
    report = Runner(g, Budget(), moves=[PushMove()]).run()
    assert set(report.by_move) <= {"push"} and set(report.history[0].proposed) == {"push"}


def test_backoff_bans_a_move_that_proposes_too_much() -> None:
    s = BackoffScheduler(match_limit=2, ban_length=2)
    assert s.proposed("push", 1, 2) and not s.proposed("push", 1, 3)
    assert not s.allows("push", 2) and not s.allows("push", 3) and s.allows("push", 4)
    assert s.allows("split", 2)  # bans are per move
    # the second ban: twice the limit, twice as long
    assert s.proposed("push", 4, 4) and not s.proposed("push", 4, 5)
    assert not s.allows("push", 8) and s.allows("push", 9)
    # saturating while a move is banned lifts its ban instead of stopping
    assert not s.can_stop(4) and s.allows("push", 5) and s.can_stop(5)


def test_a_tiny_match_limit_bans_moves_and_the_run_still_saturates() -> None:
    plain = Session.from_function(function(RMSNORM_MATMUL))
    plain.run(Budget())
    s = Session.from_function(function(RMSNORM_MATMUL))
    report = s.run(Budget(max_iterations=30),
                   scheduler=BackoffScheduler(match_limit=1, ban_length=1))
    banned = [m for i in report.history for m in i.banned]
    assert banned and report.stop_reason == SATURATED
    # a banned move's sites wait for it: once the bans end, the same cheapest program is found
    assert s.best().cost == plain.best().cost < plain.input_cost()


def test_admit_needs_a_proof_and_checks_the_node_budget() -> None:
    g = graph(SUM_OF_MATMUL)
    site = next(PairSite.find_all(g, set()))
    candidates = list(PushMove().propose(g, site))
    assert candidates
    before = (g.num_nodes, g.num_classes)
    limits = Limits(max_nodes=10_000, time_limit_s=60.0, elapsed=lambda: 0.0)

    def timeout(*args: Any, **kwargs: Any) -> Unknown:
        return Unknown("z3: timeout (forced)", 1.0)

    unknown = Prover(decide=timeout, numeric_test=False)
    assert {admit(g, unknown, c, limits, set()).outcome for c in candidates} == {Outcome.UNKNOWN}
    assert (g.num_nodes, g.num_classes) == before and not g.proofs
    tight = Limits(max_nodes=g.num_nodes, time_limit_s=60.0, elapsed=lambda: 0.0)
    assert admit(g, unknown, candidates[0], tight, set()).outcome is Outcome.NODE_LIMIT
    late = Limits(max_nodes=10_000, time_limit_s=1.0, elapsed=lambda: 2.0)
    assert admit(g, unknown, candidates[0], late, set()).outcome is Outcome.TIME_LIMIT


def test_admit_merges_on_a_proof_and_knows_what_it_holds() -> None:
    g = graph(SUM_OF_MATMUL)
    limits = Limits(max_nodes=10_000, time_limit_s=60.0, elapsed=lambda: 0.0)
    tried: set[tuple[int, Term]] = set()
    proved = [a for site in list(PairSite.find_all(g, set()))
              for c in PushMove().propose(g, site)
              if (a := admit(g, Prover(), c, limits, tried)).outcome is Outcome.PROVED]
    assert proved and all(a.merged and a.proof_id in g.proofs for a in proved)
    again = next(PairSite.find_all(g, set()))
    for c in PushMove().propose(g, again):
        assert admit(g, Prover(), c, limits, set()).outcome is Outcome.KNOWN


@dataclass(frozen=True)
class Typed:
    type: TensorType
    depth: int


class Depth:
    """A test analysis: the type, and the least op depth of any e-node in the class."""

    def make(self, node: ENode, children: Sequence[Typed]) -> Typed:
        sem = node_semantics(node, [c.type for c in children])
        assert isinstance(sem.result_type, TensorType)
        return Typed(sem.result_type, 1 + max((c.depth for c in children), default=0))

    def parameter(self, type_: TensorType) -> Typed:
        return Typed(type_, 0)

    def merge(self, a: Typed, b: Typed) -> Typed:
        return Typed(a.type, min(a.depth, b.depth))

    def type_of(self, data: Typed) -> TensorType:
        return data.type


def test_class_data_comes_from_the_analysis() -> None:
    g = EGraph(analysis=Depth())
    x = g.add_input("x", TensorType(["M", "K"], "f32"))
    w = g.add_input("w", TensorType(["K", "N"], "f32"))
    y = g.add(ENode.make("ax.matmul", {}, (x, w)), INPUT_PROOF)
    z = g.add(ENode.make("ax.neg", {}, (y,)), INPUT_PROOF)
    zz = g.add(ENode.make("ax.neg", {}, (z,)), INPUT_PROOF)
    assert g.type_of(y) == TensorType(["M", "N"], "f32")
    assert [g.classes[c].data.depth for c in (x, y, z, zz)] == [0, 1, 2, 3]
    g.record_proof(Proof("p1", "test", "", "", "proved", 0.0))
    g.union(g.class_nodes(zz)[0], g.class_nodes(y)[0], "p1")
    assert g.classes[g.find(zz)].data.depth == 1


def test_the_default_analysis_is_the_class_type() -> None:
    g = graph(SUM_OF_MATMUL)
    assert all(c.data == c.type for c in g.classes.values())


def test_an_empty_report() -> None:
    assert Report().iterations == 0 and Report().candidates == 0 and Report().by_move == {}
