"""Generic candidate machinery: what every reordering move shares, from generic forms.

Nothing here names an op. A consumer e-node and producer e-nodes of its operand classes are
composed into one index expression (`Composition`: `index_expr.compose`, with nested sums
flattened); a move (`moves/`) reshapes that expression, looking only at which loop variables
each part depends on, and the composition materializes each reshaped expression back into ops
(`materialize`). The traversals below say where in an expression a move applies. Whether a
candidate is *equal* is not decided here: the verifier proves or rejects every one
(`admission.admit`).

A shape-validity filter is built in: an intermediate whose dims are not all fixed extents, or
whose rank exceeds every operand's and the output's, is not materialized.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from axon.dialects.form.generic_form import LoopDim
from axon.dialects.form.scalar import Call, ScalarExpr
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import (
    Factor,
    Fold,
    Group,
    NameSupply,
    compose,
    factors,
    flatten_sums,
    output_dims,
    product,
)
from axon.nugraph.materialize import materialize
from axon.nugraph.term import Term


@dataclass(frozen=True)
class Candidate:
    """A proposed replacement `term` for e-node `node`, whose value `original` states (a consumer
    over its producers, or the e-node itself), and the move that proposed it.

    `extra_leaves`: the term may read classes the original does not (proved for every value of
    them, see `Prover.obligation`). `derived`: further terms the candidate brings in whose classes
    propagation leaves alone as consumers (a merged computation and its concatenation, see
    `moves.sites.PairSite.find_all`)."""

    move: str
    term: Term
    node: int
    original: Term
    extra_leaves: bool = False
    derived: tuple[Term, ...] = ()


def size_symbols(g: EGraph) -> frozenset[str]:
    """Every size symbol some class's type mentions (loop variables must avoid them)."""
    return g.size_symbols()


@dataclass(frozen=True)
class Composition:
    """A consumer composed with its producers, in the two shapes moves start from: `composed`
    (the producers substituted in) and `flat` (nested sums flattened), at the output dims `out`;
    with what materializing needs (the names issued, the result dtype, the largest rank an
    intermediate may have) and every loop dim by name (`scope`)."""

    consumer: ENode
    producers: Mapping[int, ENode]
    supply: NameSupply
    out: tuple[LoopDim, ...]
    composed: ScalarExpr
    flat: ScalarExpr
    scope: Mapping[str, LoopDim]
    dtype: str
    max_rank: int

    @staticmethod
    def of(g: EGraph, consumer: ENode, producers: Mapping[int, ENode]) -> Composition:
        """`consumer` (canonical) with the given producers (by operand class) substituted."""
        cls = g.lookup(consumer)
        assert cls is not None
        supply = NameSupply(size_symbols(g))
        out = output_dims(g, cls, supply)
        composed = compose(g, consumer, producers, out, supply)
        flat = flatten_sums(composed, supply)
        ranks = [len(g.type_of(c).shape) for c in consumer.children]
        ranks += [len(g.type_of(c).shape) for p in producers.values() for c in p.children]
        return Composition(consumer, producers, supply, out, composed, flat, _scope(out, flat),
                           g.type_of(cls).dtype, max([len(out), *ranks]))

    def materialize(self, g: EGraph, expr: ScalarExpr) -> Term | None:
        """`expr` (a reshaping of this composition) as ops, or None when it is not shape-valid."""
        return materialize(g, expr, self.out, self.dtype, self.supply, self.max_rank)


# ---- where moves apply -------------------------------------------------------------------------
def at_folds(expr: ScalarExpr, fn: Callable[[Fold], list[ScalarExpr]]) -> Iterator[ScalarExpr]:
    """`expr` with one fold replaced by each of fn(fold), for every fold in it."""
    if isinstance(expr, Fold):
        yield from fn(expr)
        for b in at_folds(expr.body, fn):
            yield Fold(expr.kind, expr.dims, b, expr.finalize)
    elif isinstance(expr, Group):
        for b in at_folds(expr.body, fn):
            yield Group(expr.dims, b)
    elif isinstance(expr, Call):
        for i, a in enumerate(expr.args):
            for v in at_folds(a, fn):
                yield Call(expr.fn, (*expr.args[:i], v, *expr.args[i + 1:]), expr.param)


def at_products(expr: ScalarExpr, fn: Callable[[list[Factor]], list[list[Factor]]]
                ) -> Iterator[ScalarExpr]:
    """`expr` with one maximal product replaced by each of fn(its factors)."""
    fs = factors(expr)
    if len(fs) > 1:
        for new in fn(fs):
            yield product(new)
        for i, f in enumerate(fs):
            for v in at_products(f.expr, fn):
                yield product([*fs[:i], Factor(v, f.power), *fs[i + 1:]])
        return
    if isinstance(expr, Fold):
        for b in at_products(expr.body, fn):
            yield Fold(expr.kind, expr.dims, b, expr.finalize)
    elif isinstance(expr, Group):
        for b in at_products(expr.body, fn):
            yield Group(expr.dims, b)
    elif isinstance(expr, Call):
        for i, a in enumerate(expr.args):
            for v in at_products(a, fn):
                yield Call(expr.fn, (*expr.args[:i], v, *expr.args[i + 1:]), expr.param)


def at_sums(expr: ScalarExpr, fn: Callable[[Call], list[ScalarExpr]]) -> Iterator[ScalarExpr]:
    """`expr` with one add/sub call replaced by each of fn(call)."""
    if isinstance(expr, Call):
        if expr.fn in ("add", "sub"):
            yield from fn(expr)
        for i, a in enumerate(expr.args):
            for v in at_sums(a, fn):
                yield Call(expr.fn, (*expr.args[:i], v, *expr.args[i + 1:]), expr.param)
    elif isinstance(expr, Fold):
        for b in at_sums(expr.body, fn):
            yield Fold(expr.kind, expr.dims, b, expr.finalize)
    elif isinstance(expr, Group):
        for b in at_sums(expr.body, fn):
            yield Group(expr.dims, b)


def _scope(out: tuple[LoopDim, ...], expr: ScalarExpr) -> dict[str, LoopDim]:
    """Every loop dim of the expression by name: the output's, then each fold's."""
    scope = {d.name: d for d in out}

    def visit(e: ScalarExpr) -> None:
        if isinstance(e, (Fold, Group)):
            scope.update({d.name: d for d in e.dims})
            visit(e.body)
        elif isinstance(e, Call):
            for a in e.args:
                visit(a)

    visit(expr)
    return scope
