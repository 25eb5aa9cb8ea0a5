"""Extraction: DAG-aware best program, cycles, top-k, and the roofline cost it ranks by."""

from __future__ import annotations

import math
import random

import pytest

from axon.dialects.ax import TensorType
from axon.nugraph import extract
from axon.nugraph.cost import RooflineCost
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import INPUT_PROOF, EGraph, Proof
from axon.nugraph.extract import extract_best, extract_top_k, reachable, tree_costs
from axon.targets.profiles import load_profile

M = TensorType(["M"], "f32")
OP_COST = {"input": 0.0, "ax.exp": 6.0, "ax.neg": 1.0, "ax.log": 1.0, "ax.abs": 5.0,
           "ax.tanh": 5.0, "ax.add": 1.0, "ax.mul": 1.0, "ax.constant": 1.0}


def table_cost(g: EGraph, nid: int) -> float:
    return OP_COST[g.nodes[nid].op]


def node(g: EGraph, op: str, *children: int) -> int:
    return g.add(ENode.make(op, {}, children), INPUT_PROOF)


def merge(g: EGraph, a: int, b: int, pid: str = "p1") -> None:
    if pid not in g.proofs:
        g.record_proof(Proof(pid, "test", "", "", "proved", 0.0))
    g.union(g.class_nodes(a)[0], g.class_nodes(b)[0], pid)
    g.rebuild()


def test_shared_subterm_counts_once() -> None:
    # A = {abs(x), neg(exp(x))}, B = {tanh(x), log(exp(x))}, root add(A, B).
    # Per class (tree cost) abs and tanh win (5 < 6 + 1); together, sharing exp(x) wins:
    # 6 + 1 + 1 + 1 = 9 < 5 + 5 + 1 = 11.
    g = EGraph()
    x = g.add_input("x", M)
    e = node(g, "ax.exp", x)
    a, a2 = node(g, "ax.abs", x), node(g, "ax.neg", e)
    b, b2 = node(g, "ax.tanh", x), node(g, "ax.log", e)
    merge(g, a, a2)
    merge(g, b, b2)
    root = node(g, "ax.add", a, b)
    _, pick = tree_costs(g, table_cost)
    assert g.nodes[pick[g.find(a)]].op == "ax.abs"
    best = extract_best(g, [root], table_cost)
    assert best.cost == 9.0
    ops = sorted(g.nodes[n].op for _, n in best.choice)
    assert ops == ["ax.add", "ax.exp", "ax.log", "ax.neg", "input"]


def test_cycles_extract_to_an_acyclic_program() -> None:
    # x * 1 = x puts x's class inside its own e-node
    g = EGraph()
    x = node(g, "ax.exp", g.add_input("x", M))
    one = g.add(ENode.make("ax.constant", {"value": 1.0, "shape": (), "dtype": "f32"}, ()),
                INPUT_PROOF)
    times_one = node(g, "ax.mul", x, one)
    merge(g, x, times_one)
    assert any(g.find(c) == g.find(x) for nid in g.class_nodes(x) for c in g.nodes[nid].children)
    best = extract_best(g, [x], table_cost)
    assert reachable(g, [x], best.chosen()) is not None
    assert g.nodes[best.chosen()[g.find(x)]].op == "ax.exp"


def test_top_k_is_distinct_and_ranked() -> None:
    g = EGraph()
    x = g.add_input("x", M)
    a, a2 = node(g, "ax.abs", x), node(g, "ax.neg", node(g, "ax.exp", x))
    merge(g, a, a2)
    top = extract_top_k(g, [a], table_cost, 5)
    assert [t.cost for t in top] == [5.0, 7.0]
    assert len({t.choice for t in top}) == 2
    assert top[0] == extract_best(g, [a], table_cost)


def test_roofline_cost_of_a_matmul() -> None:
    g = EGraph()
    x = g.add_input("x", TensorType(["M", "K"], "bf16"))
    w = g.add_input("w", TensorType(["K", "N"], "bf16"))
    mm = node(g, "ax.matmul", x, w)
    sizes = {"M": 4096, "N": 4096, "K": 4096}
    cost = RooflineCost(load_profile("h200"), sizes)
    flops = 2 * 4096 ** 3
    nbytes = 3 * 4096 * 4096 * 2
    roof = load_profile("h200").roofline
    expected = roof.op_overhead_s.value + max(flops / roof.matrix_flops.value,
                                              nbytes / roof.bytes_per_s.value)
    assert math.isclose(cost(g, g.class_nodes(mm)[0]), expected)
    # 2 * 4096^3 FLOP at 790 TFLOP/s is the 0.174 ms floor of benchmarks.md
    assert math.isclose(flops / roof.matrix_flops.value * 1e3, 0.174, rel_tol=0.01)
    assert cost(g, g.class_nodes(x)[0]) == 0.0
    # a device name builds the same cost
    assert RooflineCost("h200", sizes)(g, g.class_nodes(mm)[0]) == expected
    with pytest.raises(ValueError, match="unknown device profile"):
        RooflineCost("nope")


def test_a_deep_program_that_reuses_its_values_extracts() -> None:
    # y = y + y, 1,500 times: its tree cost (each use counted) is 2^1500, past any float
    g = EGraph()
    y = g.add_input("x", M)
    for _ in range(1500):
        y = node(g, "ax.add", y, y)
    best = extract_best(g, [y], table_cost)
    assert best.cost == 1500.0 and len(best.choice) == 1501


def random_graph(seed: int, size: int) -> tuple[EGraph, int]:
    """`size` random unary and binary e-nodes over two inputs, with some classes merged (cycles
    included); the root reads the last few."""
    rng = random.Random(seed)
    g = EGraph()
    made = [g.add_input("x", M), g.add_input("y", M)]
    for _ in range(size):
        op = rng.choice(sorted(OP_COST.keys() - {"input", "ax.constant"}))
        arity = 2 if op in ("ax.add", "ax.mul") else 1
        made.append(node(g, op, *(rng.choice(made) for _ in range(arity))))
    for _ in range(size // 10):
        merge(g, rng.choice(made), rng.choice(made))
    root = node(g, "ax.add", made[-1], made[-2])
    return g, root


@pytest.mark.parametrize("seed", range(6))
def test_large_graphs_get_the_same_tree_costs_in_cost_order(seed: int) -> None:
    g, _ = random_graph(seed, 300)
    assert g.num_nodes > extract.PAIR_SEARCH_NODES
    by_passes, _ = extract._tree_costs_by_passes(g, table_cost)
    in_order, pick = extract._tree_costs_in_order(g, table_cost)
    assert in_order == by_passes
    for c, nid in pick.items():
        assert g.class_of(nid) == c


@pytest.mark.parametrize("seed", range(6))
def test_the_switch_search_keeps_its_program_and_cost_in_step(seed: int) -> None:
    g, root = random_graph(seed, 300)
    _, tree_pick = tree_costs(g, table_cost)
    start = extract.dag_cost(g, [root], tree_pick, table_cost)
    best = extract_best(g, [root], table_cost)
    # the cost it reports is the cost of the program it returns, summed afresh
    assert best.cost == pytest.approx(extract.dag_cost(g, [root], best.chosen(), table_cost))
    assert best.cost <= start + 1e-9
    assert reachable(g, [root], best.chosen()) is not None
