"""Materialization: every candidate the moves generate is a program over the parameters' sizes.

A composed expression's loop variables must all become dims of the op that materializes it (an
output dim or a reduced dim); a variable left over would read as one more size symbol that no
parameter binds (`out[d0 < T, d1 < D] = in0[d0, v1 + 1, d1] * in1[d0, 0, d1]`, once made by the
sink move from a slice of a broadcast product). The prover rejects such candidates
(`prover.unbound_sizes`); these tests check them at the source, where candidates are generated,
before any prover sees them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.generic_form import LoopDim
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Read
from axon.frontend.numpy_subset import parse_source
from axon.nugraph import propagate as propagate_module
from axon.nugraph.candidates import Candidate, size_symbols
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import Factor, Group, NameSupply
from axon.nugraph.materialize import materialize
from axon.nugraph.moves.sink import sinks
from axon.nugraph.ops import node_semantics
from axon.nugraph.runner import Budget
from axon.nugraph.session import Session
from axon.nugraph.term import Term

# a slice of a broadcast product: the composed read x[v0, v1 + 1, v2] carries v1 only inside a
# compound index
SLICED_PRODUCT = ("def f(x: f32[T, H, D], c: f32[T, 1, D]):\n"
                  "    return (x * c)[:, 1:H, :]\n")
# the same through a merge: x @ b is a slice of x @ [a | b], read at [i, N + j]
SLICED_MERGE = ("def f(x: f32[M, K], a: f32[K, N], b: f32[K, N], c: f32[M, 1]):\n"
                "    return x @ a + (x @ b) * c\n")
STRIDED_PRODUCT = "def f(x: f32[T, D], c: f32[D]):\n    return (x * c)[:, 0::2]\n"


def function(source: str) -> FuncOp:
    module = parse_source(source, "<test>")
    return next(op for op in module.walk() if isinstance(op, FuncOp))


def param_sizes(func_op: FuncOp) -> frozenset[str]:
    return frozenset(s for t in func_op.function_type.inputs.data if isinstance(t, TensorType)
                     for d in t.shape for s in d.symbols())


def stray_sizes(g: EGraph, term: Term, bound: frozenset[str]) -> set[str]:
    """Size symbols the term's ops (their generic forms and result types) mention outside
    `bound`: the check of `prover.unbound_sizes`, on a term rather than a function."""
    def walk(t: Term) -> tuple[TensorType, set[str]]:
        stray: set[str] = set()
        types = []
        for c in t.children:
            if isinstance(c, Term):
                type_, inner = walk(c)
                stray |= inner
                types.append(type_)
            else:
                types.append(g.type_of(c))
        sem = node_semantics(ENode(t.op, t.attrs, ()), types)
        assert isinstance(sem.result_type, TensorType)
        used = set(sem.form.size_symbols())
        used |= {s for d in sem.result_type.shape for s in d.symbols()}
        return sem.result_type, stray | (used - bound)

    return walk(term)[1]


@dataclass
class Recording:
    """A move that records every candidate it proposes, with its graph."""

    move: Any
    seen: list[tuple[EGraph, Candidate]]

    @property
    def name(self) -> str:
        return self.move.name

    @property
    def site(self) -> type:
        return self.move.site

    def propose(self, g: EGraph, site: Any) -> list[Candidate]:
        found = list(self.move.propose(g, site))
        self.seen.extend((g, c) for c in found)
        return found


@pytest.fixture
def generated(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[EGraph, Candidate]]]:
    """Every candidate propagation generates while the test runs, with its graph."""
    seen: list[tuple[EGraph, Candidate]] = []
    moves = propagate_module.default_moves
    monkeypatch.setattr(propagate_module, "default_moves",
                        lambda: [Recording(m, seen) for m in moves()])
    yield seen


def unbound_candidates(source: str, seen: list[tuple[EGraph, Candidate]], budget: Budget
                       ) -> tuple[int, list[str]]:
    func_op = function(source)
    bound = param_sizes(func_op)
    start = len(seen)
    Session.from_function(func_op).run(budget)
    bad = [f"{c.move}: {c.term.text()} uses {sorted(stray)}"
           for g, c in seen[start:] if (stray := stray_sizes(g, c.term, bound))]
    return len(seen) - start, bad


def test_no_benchmark_candidate_uses_an_unbound_size(
        generated: list[tuple[EGraph, Candidate]]) -> None:
    total, bad = 0, []
    for name, program in PROGRAMS.items():
        count, found = unbound_candidates(program.source, generated,
                                          Budget(3, time_limit_s=10))
        total += count
        bad += [f"{name}: {b}" for b in found]
    assert not bad
    assert total > 500  # the check saw the moves at work


@pytest.mark.parametrize("source", [SLICED_PRODUCT, SLICED_MERGE, STRIDED_PRODUCT])
def test_slices_of_broadcast_products_materialize_bound(
        source: str, generated: list[tuple[EGraph, Candidate]]) -> None:
    _, bad = unbound_candidates(source, generated, Budget(3, time_limit_s=10))
    assert not bad


def test_sink_needs_every_variable_of_the_read_as_a_dim() -> None:
    supply = NameSupply(frozenset({"T", "H", "D"}))
    v0, v1, v2 = (IntExpr.sym(supply.fresh()) for _ in range(3))
    x = Read(0, (v0, v1 + IntExpr.const(1), v2))  # v1 only in a compound index
    c = Read(1, (v0, IntExpr.const(0), v2))
    scope = {v.as_symbol: LoopDim(v.as_symbol, IntExpr.const(0), IntExpr.sym(n))
             for v, n in ((v0, "T"), (v1, "H"), (v2, "D")) if v.as_symbol is not None}
    assert sinks([Factor(x, 1), Factor(c, 1)], scope, supply) == []
    # bare reads still sink
    y = Read(0, (v0, v1, v2))
    assert sinks([Factor(y, 1), Factor(c, 1)], scope, supply)


def test_a_group_missing_a_variable_does_not_materialize() -> None:
    func_op = function(SLICED_PRODUCT)
    s = Session.from_function(func_op)
    g = s.graph
    x, c = (g.find(p) for p in s.imported.params)
    supply = NameSupply(size_symbols(g))
    t, h, d = (LoopDim(supply.fresh(), IntExpr.const(0), IntExpr.sym(n)) for n in "THD")
    sym = {k.name: IntExpr.sym(k.name) for k in (t, h, d)}
    body = Call("mul", (Read(x, (sym[t.name], sym[h.name] + IntExpr.const(1), sym[d.name])),
                        Read(c, (sym[t.name], IntExpr.const(0), sym[d.name]))))
    out = (t, LoopDim(h.name, IntExpr.const(0), IntExpr.sym("H") - IntExpr.const(1)), d)
    assert materialize(g, Group((t, d), body), out, "f32", supply, 3) is None
    whole = materialize(g, Group(out, body), out, "f32", supply, 3)
    assert whole is not None and not stray_sizes(g, whole, param_sizes(func_op))
