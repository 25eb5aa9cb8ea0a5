"""Reading a printed nu-graph back: its class memberships are claims, re-proved before use.

The graph is printed by a propagation session (`Session.graph_ir`), edited as text where a test
forges a membership, parsed and verified as `axon-opt` would, and read with `read_graph`.
"""

from __future__ import annotations

import re

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from axon.benchmarks.suite import PROGRAMS
from axon.frontend.numpy_subset import parse_source
from axon.nugraph.egraph import CONGRUENCE, INPUT_PROOF
from axon.nugraph.nu_ir import GraphReadError, read_graph
from axon.nugraph.prover import Prover
from axon.nugraph.runner import Budget
from axon.nugraph.session import Session
from axon.tools.registry import register_dialects

#: row sums of `x` (class c0 of gemm_sum_scale), citing the graph's first proof, which is about
#: something else: it has the type of the program's result, and nothing else in common with it
FORGED_SUM = ('ax.sum %c0 {nu.proof = "p1", axes = array<i64: 1>, keepdims = false} : '
              '(!ax.tensor<[M, K], bf16>) -> !ax.tensor<[M], bf16>')


def propagated(name: str) -> Session:
    module = parse_source(PROGRAMS[name].source, "<test>")
    s = Session.from_function(next(op for op in module.walk() if isinstance(op, FuncOp)))
    s.run(Budget())
    return s


def parse_graph(text: str) -> FuncOp:
    module = Parser(register_dialects(Context()), text).parse_module()
    assert isinstance(module, ModuleOp)
    module.verify()
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def forge(text: str, enode: str, first: bool = False) -> str:
    """`text` with `enode` added to the class the graph yields (second, or first)."""
    result = re.search(r"nu\.yield %(c\d+)", text)
    assert result is not None
    line = re.search(rf"^( *)%{result.group(1)} = nu\.class (%\d+)", text, re.M)
    assert line is not None
    indent, node = line.group(1), line.group(2)
    operands = f"%forged, {node}" if first else f"{node}, %forged"
    return (text[:line.start()] + f"{indent}%forged = {enode}\n"
            + text[line.start():line.end()].replace(node, operands, 1) + text[line.end():])


def export_text(s: Session) -> str:
    return str(s.export(s.best()))


@pytest.fixture(scope="module")
def gemm_sum_scale() -> tuple[Session, str]:
    s = propagated("gemm_sum_scale")
    return s, str(s.graph_ir())


def test_forged_membership_is_a_located_error(gemm_sum_scale: tuple[Session, str]) -> None:
    _, text = gemm_sum_scale
    func_op = parse_graph(forge(text, FORGED_SUM))
    with pytest.raises(GraphReadError, match=r"nu\.class %c\d+: e-node 'ax\.sum' "
                       r"\(nu\.proof = \"p1\"\) is not proved equal to its class .*refuted"):
        read_graph(func_op)


@pytest.mark.parametrize("first", [False, True], ids=["second", "first"])
def test_forged_input_node_is_rejected(gemm_sum_scale: tuple[Session, str], first: bool) -> None:
    """A second `input` e-node is re-proved like any other; one put first defines the class,
    and then the program's own e-node is the one that does not check."""
    _, text = gemm_sum_scale
    func_op = parse_graph(forge(text, FORGED_SUM.replace('"p1"', f'"{INPUT_PROOF}"'), first))
    offending = "ax.mul" if first else "ax.sum"
    with pytest.raises(GraphReadError, match=rf"e-node '{offending}' \(nu\.proof = \"input\"\) "
                       "is not proved equal to its class"):
        read_graph(func_op)


def test_unknown_proof_is_rejected_by_the_dialect_verifier(
        gemm_sum_scale: tuple[Session, str]) -> None:
    _, text = gemm_sum_scale
    with pytest.raises(VerifyException, match="cites proof 'p999'"):
        parse_graph(forge(text, FORGED_SUM.replace('"p1"', '"p999"')))


def test_a_class_that_only_reads_itself_cannot_be_defined() -> None:
    text = """func.func @f(%x: !ax.tensor<[N], f32>) -> !ax.tensor<[N], f32> {
  %0 = nu.graph -> !ax.tensor<[N], f32> {
    %c0 = nu.class %x : !ax.tensor<[N], f32>
    %1 = ax.neg %c1 {nu.proof = "p1"} : (!ax.tensor<[N], f32>) -> !ax.tensor<[N], f32>
    %c1 = nu.class %1 : !ax.tensor<[N], f32>
    nu.yield %c1 : !ax.tensor<[N], f32>
  } {proofs = {p1 = "made up"}}
  func.return %0 : !ax.tensor<[N], f32>
}"""
    with pytest.raises(GraphReadError, match=r"nu\.class %c1: no e-node of the class can define"):
        read_graph(parse_graph(text))


def test_round_trip_reproves_every_membership(gemm_sum_scale: tuple[Session, str]) -> None:
    s, text = gemm_sum_scale
    again = Session.from_graph_function(parse_graph(text))
    g = again.graph
    assert (g.num_classes, g.num_nodes) == (s.graph.num_classes, s.graph.num_nodes)
    unions = [e.reason for e in g.edges if e.reason != CONGRUENCE]
    assert unions, "the printed graph has classes of several e-nodes"
    for reason in unions:
        proof = g.proofs[reason]
        assert proof.move == "read-back" and proof.verdict.startswith("proved ")
        assert not proof.recorded
    # the input program is the same, and so is what propagation then finds
    assert again.input_cost() == pytest.approx(s.input_cost())
    again.run(Budget())
    assert export_text(again) == export_text(s)


def test_reading_twice_with_one_prover_hits_its_cache(
        gemm_sum_scale: tuple[Session, str]) -> None:
    _, text = gemm_sum_scale
    prover = Prover()
    read_graph(parse_graph(text), prover)
    misses = prover.cache.misses
    read_graph(parse_graph(text), prover)
    assert prover.cache.misses == misses and prover.cache.hits > 0


def test_build_nugraph_output_reads_back() -> None:
    module = parse_source(PROGRAMS["softmax"].source, "<test>")
    func_op = next(op for op in module.walk() if isinstance(op, FuncOp))
    s = Session.from_function(func_op)
    again = Session.from_graph_function(parse_graph(str(s.graph_ir(mark_best=False))))
    assert again.input_cost() == pytest.approx(s.input_cost())
    assert export_text(again) == export_text(s)


@pytest.mark.parametrize("name", ["softmax_matmul", "gated_mlp", "rmsnorm_matmul", "lora"])
def test_printed_graphs_of_benchmarks_read_back(name: str) -> None:
    s = propagated(name)
    again = Session.from_graph_function(parse_graph(str(s.graph_ir())))
    assert again.graph.num_nodes == s.graph.num_nodes
    assert again.best().cost == pytest.approx(s.best().cost)
