"""Propagation: what it proves, what it refuses, budgets, proofs on every e-node, explanations.

Programs are NumPy-subset sources; `variant_in(s, source)` says whether a program is in the class
of the session's result (every op of it hash-conses to an e-node already in the graph).
"""

from __future__ import annotations

from typing import Any

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.form.syntax import parse_form
from axon.frontend.numpy_subset import parse_source
from axon.nugraph.convert import find_function
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import CONGRUENCE, INPUT_PROOF
from axon.nugraph.explain import explain
from axon.nugraph.merge import free_axis
from axon.nugraph.moves.fuse import _permutes
from axon.nugraph.nu_ir import read_graph
from axon.nugraph.prover import Prover
from axon.nugraph.runner import ITERATION_LIMIT, NODE_LIMIT, SATURATED, TIME_LIMIT, Budget
from axon.nugraph.session import Session
from axon.tools.registry import register_dialects
from axon.verifier import Unknown


def function(source: str) -> FuncOp:
    module = parse_source(source, "<test>")
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def session(source: str, budget: Budget | None = None, prover: Prover | None = None,
            sizes: dict[str, int] | None = None) -> Session:
    s = Session.with_sizes(function(source), "h200", sizes or {})
    s.run(budget or Budget(), prover)
    return s


def variant_in(s: Session, source: str) -> bool:
    found = find_function(s.graph, function(source), s.imported.params)
    return found is not None and found == [s.graph.find(r) for r in s.imported.results]


SUM_OF_MATMUL = "def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x @ w, axis=1)\n"


def test_proves_a_reduction_pushed_into_the_producer() -> None:
    s = session(SUM_OF_MATMUL)
    assert variant_in(s, "def f(x: f32[M, K], w: f32[K, N]):\n    return x @ sum(w, axis=1)\n")
    assert s.report is not None and s.report.stop_reason == SATURATED


def test_proves_matmul_associativity_and_distributivity() -> None:
    s = session("def f(x: f32[M, K], w: f32[K, N], a: f32[K, R], b: f32[R, N]):\n"
                "    return x @ w + (x @ a) @ b\n")
    assert variant_in(s, "def f(x: f32[M, K], w: f32[K, N], a: f32[K, R], b: f32[R, N]):\n"
                         "    return x @ (w + a @ b)\n")


def test_does_not_admit_false_reorderings() -> None:
    source = "def f(x: f32[M, K]):\n    return sum(exp(x), axis=1)\n"
    s = session(source, prover=Prover(numeric_test=False))
    assert s.report is not None
    assert s.report.refuted == 1 and s.report.tested_out == 0 and s.report.proved == 0
    assert not variant_in(s, "def f(x: f32[M, K]):\n    return exp(sum(x, axis=1))\n")
    assert s.graph.num_nodes == 3


def test_forced_timeouts_never_merge() -> None:
    def timeout(*args: Any, **kwargs: Any) -> Unknown:
        return Unknown("z3: timeout (forced)", 5.0)

    before = Session.from_function(function(SUM_OF_MATMUL))
    classes = before.graph.num_classes
    s = session(SUM_OF_MATMUL, prover=Prover(decide=timeout, numeric_test=False))
    assert s.report is not None
    assert s.report.unknown > 0 and s.report.proved == 0
    assert s.graph.num_classes == classes and s.graph.num_nodes == classes
    assert not s.graph.proofs and not s.graph.edges
    assert not variant_in(s, "def f(x: f32[M, K], w: f32[K, N]):\n    return x @ sum(w, axis=1)\n")


def test_limits_cut_the_search_and_say_so() -> None:
    source = PROGRAMS["rmsnorm_matmul"].source
    cases = [(Budget(max_iterations=1), ITERATION_LIMIT), (Budget(max_nodes=15), NODE_LIMIT),
             (Budget(time_limit_s=0.0), TIME_LIMIT)]
    for budget, reason in cases:
        s = session(source, budget)
        assert s.report is not None and s.report.stop_reason == reason, reason
        assert s.report.limit_hit and f"cut by the {reason}" in s.report.summary()
        assert s.graph.num_nodes <= max(budget.max_nodes, 15)
        s.export(s.best()).verify()


def test_every_admitted_enode_carries_a_proof() -> None:
    for name in ("rmsnorm_matmul", "softmax_matmul", "lora", "gemm_sum_scale", "layernorm"):
        fresh = Session.from_function(function(PROGRAMS[name].source))
        inputs = {fresh.graph.canonical(n) for _, n in fresh.graph.enodes()}
        s = session(PROGRAMS[name].source)
        g = s.graph
        for nid, _ in g.enodes():
            why = g.justification[nid]
            if why == INPUT_PROOF:
                assert g.nodes[nid] in inputs, (name, g.nodes[nid].label())
            else:
                assert why in g.proofs and g.proofs[why].verdict.startswith("proved"), why
        for edge in g.edges:
            assert edge.reason == CONGRUENCE or g.proofs[edge.reason].verdict.startswith("proved")
        ir = s.graph_ir()
        ir.verify()


def test_gemm_sum_scale_becomes_a_matrix_vector_product() -> None:
    program = PROGRAMS["gemm_sum_scale"]
    s = session(program.source, sizes=dict(program.default_sizes[0]))
    best = s.best()
    assert best.cost < s.input_cost() / 3
    text = str(s.export(best))
    assert "ax.sum %w" in text and "!ax.tensor<[M, N], bf16>" not in text


def test_a_row_sum_of_a_biased_linear_layer_becomes_a_matrix_vector_product() -> None:
    """`distribute` (sum_n (a + b) -> sum_n a + sum_n b) lets `split` see the GEMM alone: the
    row sum of `x @ w.T + b` becomes `x @ rowsum(w) + sum(b)`, each step proved."""
    source = ("def f(x: f32[M, K], w: f32[N, K], b: f32[N]):\n"
              "    return sum(x @ transpose(w, (1, 0)) + b, axis=1)\n")
    s = session(source, sizes={"M": 2048, "K": 4096, "N": 4096})
    best = s.best()
    assert best.cost < s.input_cost() / 3
    text = str(s.export(best))
    assert "!ax.tensor<[M, N], f32>" not in text and "ax.sum %w" in text
    matvec = function("def f(x: f32[M, K], w: f32[N, K], b: f32[N]):\n"
                      "    return x @ sum(w, axis=0) + sum(b)\n")
    chain = s.explain(function(source), matvec)
    assert "distribute" in "\n".join(step.describe(s.graph) for step in chain)


def test_a_transposed_product_is_one_contraction_writing_the_transpose() -> None:
    """`(x @ w).T`: the transpose is absorbed into the contraction (`fuse`), which writes the
    transposed result itself; a broadcast of a reduction is not (it would recompute it)."""
    source = "def f(x: f32[M, K], w: f32[K, N]):\n    return transpose(x @ w, (1, 0))\n"
    s = session(source, sizes={"M": 1024, "N": 1024, "K": 1024})
    text = str(s.export(s.best()))
    assert "ax.transpose" not in text and "ax.matmul" not in text
    assert "in0[d1, r0] * in1[r0, d0]" in text
    assert _permutes(parse_form("out[d0 < N, d1 < M] = in0[d1, d0]", 1))
    assert not _permutes(parse_form("out[d0 < M, d1 < K] = in0[d0, 0]", 1))  # a broadcast
    assert not _permutes(parse_form("out[d0 < M] = in0[d0, 0]", 1))  # a slice
    assert not _permutes(parse_form("out[d0 < M, d1 < N] = in0[d0, d1]", 1))  # nor this one


def test_explanations_chain_proofs() -> None:
    s = session(SUM_OF_MATMUL)
    rowsum = function("def f(x: f32[M, K], w: f32[K, N]):\n    return x @ sum(w, axis=1)\n")
    chain = s.explain(function(SUM_OF_MATMUL), rowsum)
    assert chain and all(step.reason in s.graph.proofs for step in chain)
    assert "split" in "\n".join(step.describe(s.graph) for step in chain)
    other = function("def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x, axis=1)\n")
    with pytest.raises(ValueError, match="not in the graph"):
        s.explain(function(SUM_OF_MATMUL), other)


def test_graph_ir_reads_back() -> None:
    s = session(PROGRAMS["softmax_matmul"].source)
    text = str(s.graph_ir())
    ctx = register_dialects(Context())
    module = Parser(ctx, text).parse_module()
    assert isinstance(module, ModuleOp)
    module.verify()
    func_op = next(op for op in module.walk() if isinstance(op, FuncOp))
    g, imported = read_graph(func_op)
    assert (g.num_classes, g.num_nodes) == (s.graph.num_classes, s.graph.num_nodes)
    again = Session(g, imported, {}, s.cost)
    assert abs(again.best().cost - s.best().cost) < 1e-12


GATED_MERGED = """def gated_mlp(x: bf16[M, K], w1: bf16[K, N], w2: bf16[K, N]):
    h = x @ concatenate([w1, w2], axis=1)
    return silu(h[0:M, 0:N]) * h[0:M, N:2*N]
"""


def test_gated_mlp_gets_one_gemm_over_concatenated_weights() -> None:
    s = session(PROGRAMS["gated_mlp"].source)
    assert s.report is not None and s.report.stop_reason == SATURATED
    assert s.report.by_move.get("merge") == 2  # one proof per slice
    assert variant_in(s, GATED_MERGED)
    g = s.graph
    merges = [p for p in g.proofs.values() if p.move == "merge"]
    assert {p.original for p in merges} == {"ax.matmul(c0, c1)", "ax.matmul(c0, c2)"}
    assert all(p.verdict.startswith("proved") and "ax.concat{axis=1}(c1, c2)" in p.candidate
               for p in merges)
    # each original matmul is explained by its merge proof
    x, w1 = s.imported.params[0], s.imported.params[1]
    original = g.node_id(ENode("ax.matmul", (), (x, w1)))
    assert original is not None
    sliced = [n for n in g.class_nodes(g.class_of(original)) if g.nodes[n].op == "ax.slice"]
    assert len(sliced) == 1
    chain = explain(g, original, sliced[0])
    assert [g.proofs[step.reason].move for step in chain] == ["merge"]


def test_three_projections_of_one_input_merge_into_one_gemm() -> None:
    source = ("def f(x: f32[M, K], q: f32[K, N], k: f32[K, N], v: f32[K, P]):\n"
              "    return (x @ q) * (x @ k) + sum(x @ v, axis=1, keepdims=True)\n")
    s = session(source)
    assert variant_in(s, "def f(x: f32[M, K], q: f32[K, N], k: f32[K, N], v: f32[K, P]):\n"
                         "    h = x @ concatenate([q, k, v], axis=1)\n"
                         "    return h[0:M, 0:N] * h[0:M, N:2*N] + "
                         "sum(h[0:M, 2*N:2*N + P], axis=1, keepdims=True)\n")


def test_free_axis_comes_from_the_index_maps() -> None:
    def form(source: str) -> Any:
        op = next(o for o in function(source).body.block.ops if o.name.startswith("ax."))
        return op.generic_form()

    mm = form("def f(x: f32[M, K], w: f32[K, N]):\n    return x @ w\n")
    assert free_axis(mm, 1) == (1, 1) and free_axis(mm, 0) == (0, 0)
    # the first op is the transpose out[d0, d1] = in0[d1, d0]: output dim 0 is operand axis 1
    tr = form("def f(x: f32[M, K], w: f32[N, K]):\n    return x @ w.T\n")
    assert free_axis(tr, 0) == (0, 1)
    # a + b: both operands read both output dims, so neither has a dim of its own
    add = form("def f(a: f32[M, N], b: f32[M, N]):\n    return a + b\n")
    assert free_axis(add, 0) is None and free_axis(add, 1) is None
    # a row bias broadcast over columns leaves the column dim to the other operand
    bias = form("def f(a: f32[M, 1], b: f32[M, N]):\n    return a + b\n")
    assert free_axis(bias, 1) == (1, 1) and free_axis(bias, 0) is None


def test_elementwise_computations_sharing_an_operand_are_not_merged() -> None:
    # a + b and a + c read a once per output either way: nothing to share, no merge proposed
    source = ("def f(a: f32[M, N], b: f32[M, N], c: f32[M, N]):\n"
              "    return (a + b) * (a + c)\n")
    s = session(source)
    assert s.report is not None and "merge" not in s.report.by_move
    assert all(node.op != "ax.concat" for _, node in s.graph.enodes())


def test_unproved_merges_admit_nothing() -> None:
    def unknown(*_: Any, **__: Any) -> Unknown:
        return Unknown("forced", 0.0)

    s = session(PROGRAMS["gated_mlp"].source, prover=Prover(decide=unknown, numeric_test=False))
    assert s.report is not None and s.report.proved == 0 and s.report.unknown >= 2
    assert not variant_in(s, GATED_MERGED)
    assert all(n.op != "ax.slice" for _, n in s.graph.enodes())


def test_a_candidate_with_an_unbound_size_is_never_admitted() -> None:
    from axon.nugraph.prover import unbound_sizes
    from axon.tools.embed import parse_mlir

    bound = function("def f(x: f32[M, K]):\n    return sum(exp(x), axis=1)\n")
    assert unbound_sizes(bound) == set()
    stray = parse_mlir(
        'func.func @g(%x: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {\n'
        '  %0 = ax.generic %x {form = "out[d0 < M] = in0[min(d0, v1)]", dtype = f32}'
        ' : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>\n'
        '  func.return %0 : !ax.tensor<[M], f32>\n}').ops.first
    assert isinstance(stray, FuncOp)
    assert unbound_sizes(stray) == {"v1"}


def test_a_size_only_a_broadcast_carries_is_not_unbound() -> None:
    # G reaches the graph through broadcast_to's shape, not through k's type (as in gqa): the
    # candidates that mention it are proved, not turned away as unbound
    s = Session.from_function(function(
        "def f(q: f32[G*H, L], k: f32[H, L]):\n"
        "    kk = reshape(broadcast_to(reshape(k, (H, 1, L)), (H, G, L)), (H*G, L))\n"
        "    return sum(q * kk, axis=1)\n"))
    report = s.run(Budget(6, 2000, 60))
    assert report.unknown == 0 and report.proved > 0
