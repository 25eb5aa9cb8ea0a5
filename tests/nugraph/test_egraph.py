"""The nu-graph engine: union-find, hash-consing, unions with reasons, congruence, explanations."""

from __future__ import annotations

import pytest

from axon.dialects.ax import TensorType
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import CONGRUENCE, INPUT_PROOF, EGraph, Proof
from axon.nugraph.explain import explain
from axon.nugraph.union_find import UnionFind


def f32(*dims: str | int) -> TensorType:
    return TensorType(list(dims), "f32")


def proof(g: EGraph, pid: str, move: str = "test") -> str:
    g.record_proof(Proof(pid, move, "a", "b", "proved", 0.0))
    return pid


def test_union_find_keeps_first_root_and_compresses() -> None:
    uf = UnionFind()
    ids = [uf.make_set() for _ in range(5)]
    assert uf.union(ids[0], ids[1]) == 0
    assert uf.union(ids[2], ids[1]) == 2
    assert {uf.find(i) for i in ids[:3]} == {2}
    assert uf.find(ids[4]) == 4


def test_hash_consing_returns_the_existing_class() -> None:
    g = EGraph()
    x = g.add_input("x", f32("M"))
    a = g.add(ENode.make("ax.exp", {}, (x,)), INPUT_PROOF)
    b = g.add(ENode.make("ax.exp", {}, (x,)), INPUT_PROOF)
    assert a == b and g.num_nodes == 2


def test_new_node_needs_a_known_proof() -> None:
    g = EGraph()
    x = g.add_input("x", f32("M"))
    with pytest.raises(ValueError, match="unknown proof 'p7'"):
        g.add(ENode.make("ax.exp", {}, (x,)), "p7")


def test_union_rejects_different_types_and_unknown_reasons() -> None:
    g = EGraph()
    x = g.add_input("x", f32("M"))
    y = g.add_input("y", f32("N"))
    pid = proof(g, "p1")
    with pytest.raises(ValueError, match="cannot union"):
        g.union(g.class_nodes(x)[0], g.class_nodes(y)[0], pid)
    with pytest.raises(ValueError, match="unknown proof"):
        g.union(g.class_nodes(x)[0], g.class_nodes(y)[0], "nope")


def test_congruence_rebuild_merges_parents() -> None:
    g = EGraph()
    a = g.add_input("a", f32("M"))
    b = g.add_input("b", f32("M"))
    ea = g.add(ENode.make("ax.exp", {}, (a,)), INPUT_PROOF)
    eb = g.add(ENode.make("ax.exp", {}, (b,)), INPUT_PROOF)
    assert ea != eb
    g.union(g.class_nodes(a)[0], g.class_nodes(b)[0], proof(g, "p1"))
    assert g.rebuild() == 1
    assert g.find(ea) == g.find(eb)
    # hash-consing holds again: one exp node per class
    assert len(g.class_nodes(ea)) == 1


def test_explain_gives_the_proof_chain_through_congruence() -> None:
    g = EGraph()
    a = g.add_input("a", f32("M"))
    b = g.add_input("b", f32("M"))
    c = g.add_input("c", f32("M"))
    na, nb, nc = (g.class_nodes(x)[0] for x in (a, b, c))
    nea = g.class_nodes(g.add(ENode.make("ax.exp", {}, (a,)), INPUT_PROOF))[0]
    nec = g.class_nodes(g.add(ENode.make("ax.exp", {}, (c,)), INPUT_PROOF))[0]
    g.union(na, nb, proof(g, "p1", "first"))
    g.union(nb, nc, proof(g, "p2", "second"))
    g.rebuild()
    chain = explain(g, nea, nec)
    assert [s.reason for s in chain] == [CONGRUENCE]
    assert chain[0].proof_ids() == {"p1", "p2"}
    assert "by congruence" in chain[0].describe(g) and "p2 (second)" in chain[0].describe(g)


def test_explain_refuses_unequal_nodes() -> None:
    g = EGraph()
    a = g.add_input("a", f32("M"))
    b = g.add_input("b", f32("M"))
    with pytest.raises(ValueError, match="not equal"):
        explain(g, g.class_nodes(a)[0], g.class_nodes(b)[0])


def test_rebuild_keeps_an_enode_whose_children_merge_during_the_pass() -> None:
    # x + exp(x) = x and exp(x + exp(x)) = x + exp(x): exp(x) and exp(x + exp(x)) become one
    # e-node in the pass that merges their children; it stays in the graph
    g = EGraph()
    x = g.add_input("x", f32("M"))
    e = g.add(ENode.make("ax.exp", {}, (x,)), INPUT_PROOF)
    a = g.add(ENode.make("ax.add", {}, (x, e)), INPUT_PROOF)
    f = g.add(ENode.make("ax.exp", {}, (a,)), INPUT_PROOF)
    pid = proof(g, "p1")
    g.union(g.class_nodes(a)[0], g.class_nodes(x)[0], pid)
    g.union(g.class_nodes(f)[0], g.class_nodes(a)[0], pid)
    g.rebuild()
    assert g.num_classes == 1 and g.num_nodes == 3
    assert sorted(g.nodes[n].op for n in g.class_nodes(x)) == ["ax.add", "ax.exp", "input"]
    assert g.lookup(ENode.make("ax.exp", {}, (x,))) == g.find(x)


def test_explains_a_congruence_thousands_of_levels_deep() -> None:
    # two chains exp(exp(...(a))) and exp(exp(...(b))) become equal once a = b
    g = EGraph()
    a, b = g.add_input("a", f32("M")), g.add_input("b", f32("M"))
    ta, tb = a, b
    for _ in range(3000):
        ta = g.add(ENode.make("ax.exp", {}, (ta,)), INPUT_PROOF)
        tb = g.add(ENode.make("ax.exp", {}, (tb,)), INPUT_PROOF)
    g.union(g.class_nodes(a)[0], g.class_nodes(b)[0], proof(g, "p1", "first"))
    top_a, top_b = g.class_nodes(ta)[0], g.class_nodes(tb)[0]
    assert g.rebuild() == 3000
    chain = explain(g, top_a, top_b)
    assert chain[0].proof_ids() == {"p1"}
    lines = chain[0].describe(g).splitlines()
    assert len(lines) == 3001 and lines[-1].strip() == "a == b by p1 (first)"
