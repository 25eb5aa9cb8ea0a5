"""Factor common operands: two computations that differ only in one operand become one computation
over the concatenation of the differing operands, with slices giving back each original.

    A = f(x, w1),  B = f(x, w2)      (f reads w only as w[.., d_j, ..], d_j a free output dim)
      ==>  M = f(x, concat(w1, w2, axis=p)),  A = slice(M, d_j in [0, N1)),
                                                B = slice(M, d_j in [N1, N1 + N2))

so silu(x @ w1) * (x @ w2) gets the variant with one GEMM over [w1 | w2] (and n computations
sharing x, n-way). Nothing here names an op: e-nodes qualify when they apply the same op (same
properties) to the same classes except at one operand position k, their generic form reduces
(a contraction re-reads the common operand for every output; an elementwise form would gain
nothing), and it reads operand k at an output dim d_j that nothing else in the form mentions (no
other operand's index, no `Index`, no reduction bound). Then that dim is free: the output at d_j
depends on operand k at d_j alone, so running the form over the concatenation along operand k's
axis p computes both results side by side. The same op over the concatenated operand must state
a result of the original shape with dim j widened; anything else is skipped.

Whether the slices are *equal* to the originals is decided by the verifier only (`prover.py`): each
slice is admitted on its own proof (the obligation also takes the other merged operand as a
parameter, which the original ignores).

Termination: only e-nodes of the input program are merged, each group of them once, so the
number of merges is bounded by the program (see `merge_groups`); propagation leaves the merged
computation's own class alone (`moves.sites.PairSite.find_all`). The merge move
(`moves/merge.py`) proposes the slices; this file finds the groups and builds the merge.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Index, Read, ScalarExpr
from axon.nugraph.egraph import INPUT_PROOF, EGraph
from axon.nugraph.ops import node_semantics
from axon.nugraph.term import Term

CONCAT = "ax.concat"
SLICE = "ax.slice"
#: the most e-nodes one merge takes (larger groups are merged in pieces of this size)
MAX_GROUP = 8


@dataclass(frozen=True)
class Merge:
    """E-nodes `nodes` (ids) and the terms that replace them, `halves[i]` for `nodes[i]`: slices
    of `merged`, which reads the concatenation `concat` of their differing operands."""

    nodes: tuple[int, ...]
    merged: Term
    concat: Term
    halves: tuple[Term, ...]


def free_axis(form: GenericForm, k: int) -> tuple[int, int] | None:
    """(output dim j, axis p of operand k) where every read of operand k indexes axis p by the
    bare parallel dim j, and nothing else in the form mentions dim j; None if there is none."""
    reads: list[Read] = []
    others: list[IntExpr] = [e for d in form.reduced for e in (d.lower, d.upper)]

    def visit(e: ScalarExpr) -> None:
        if isinstance(e, Read):
            if e.operand == k:
                reads.append(e)
            else:
                others.extend(e.index)
        elif isinstance(e, Index):
            others.append(e.expr)
        elif isinstance(e, Call):
            for a in e.args:
                visit(a)

    visit(form.body)
    if form.finalize is not None:
        visit(form.finalize)
    if not reads:
        return None
    for j, d in enumerate(form.parallel):
        if any(d.name in e.symbols() for e in others):
            continue
        axes = set()
        for r in reads:
            hits = [p for p, e in enumerate(r.index) if d.name in e.symbols()]
            if len(hits) != 1 or r.index[hits[0]] != IntExpr.sym(d.name):
                break
            axes.add(hits[0])
        else:
            if len(axes) == 1:
                return j, axes.pop()
    return None


def merge_groups(g: EGraph) -> Iterator[tuple[tuple[int, ...], int]]:
    """(e-node ids, operand position k) for each group of at least two program e-nodes that apply
    the same op to the same classes except at position k.

    Only e-nodes of the program (justified `input`) are merged: the computations the program
    states side by side. E-nodes that other moves derive (x @ (a @ b) next to x @ w, slices of a
    merged result, ...) would pair up anew after every iteration and multiply the graph; the
    merged computation itself is never merged again, and the runner looks at each group once, so
    merging ends after one round per group. A group holds every such e-node (up to `MAX_GROUP`),
    so q, k, v projections of one x become one computation.
    """
    groups: dict[tuple[str, object, int, tuple[int | None, ...]], list[int]] = {}
    for nid, node in enumerate(g.nodes):
        if node.is_input or g.justification[nid] != INPUT_PROOF:
            continue
        node = g.canonical(node)
        if len(node.children) < 2:
            continue  # no operand in common: f(a), f(b) side by side share nothing to factor
        for k in range(len(node.children)):
            if node.children.count(node.children[k]) != 1:
                continue  # the operand also fills another position: not a free choice
            rest = tuple(None if i == k else ch for i, ch in enumerate(node.children))
            groups.setdefault((node.op, node.attrs, k, rest), []).append(nid)
    for (_, _, k, _), ids in groups.items():
        # one node per class and per operand class, lowest class first: stable across runs
        chosen: dict[int, int] = {}
        operands: set[int] = set()
        for nid in sorted(ids, key=g.class_of):
            cls, operand = g.class_of(nid), g.canonical(g.nodes[nid]).children[k]
            if cls not in chosen and operand not in operands:
                chosen[cls] = nid
                operands.add(operand)
        members = tuple(chosen.values())
        # a weight shared by every layer of a deep model groups one e-node per layer: merged
        # in groups of at most MAX_GROUP, or one concatenation would read them all
        for start in range(0, len(members), MAX_GROUP):
            if len(members[start:start + MAX_GROUP]) >= 2:
                yield members[start:start + MAX_GROUP], k


def build_merge(g: EGraph, nodes: tuple[int, ...], k: int) -> Merge | None:
    """The merge of e-nodes `nodes` over their operands at position `k`; None when their forms
    do not qualify (see the module docstring)."""
    enodes = [g.canonical(g.nodes[n]) for n in nodes]
    forms = [node_semantics(n, [g.type_of(c) for c in n.children]).form for n in enodes]
    if any(f.reduction is None for f in forms):
        # elementwise forms read the common operand once per output either way: merging saves
        # nothing and only widens the graph (rope's shared cos, rmsnorm's shared eps); a
        # reduction re-reads it for every output, which one merged contraction shares
        return None
    axes = {free_axis(f, k) for f in forms}
    if len(axes) != 1 or None in axes:
        return None
    ((j, p),) = axes  # type: ignore[misc]
    operands = tuple(n.children[k] for n in enodes)
    types = [g.type_of(w) for w in operands]
    if any(t.rank != types[0].rank or t.dtype != types[0].dtype or any(
            x != y for q, (x, y) in enumerate(zip(t.shape, types[0].shape, strict=True))
            if q != p) for t in types):
        return None
    concat = Term(CONCAT, (("axis", p),), operands)
    first = enodes[0]
    merged = Term(first.op, first.attrs, tuple(concat if i == k else ch
                                               for i, ch in enumerate(first.children)))
    outs = [g.type_of(g.class_of(n)) for n in nodes]
    try:
        out = merged.result_type(g)
    except (ValueError, TypeError, IndexError, KeyError):
        return None
    offsets = [IntExpr.const(0)]
    for t in outs:
        offsets.append(offsets[-1] + t.shape[j])
    want = tuple(offsets[-1] if q == j else e for q, e in enumerate(outs[0].shape))
    if out.dtype != outs[0].dtype or tuple(out.shape) != want:
        return None
    halves = []
    for lo, hi, expect in zip(offsets[:-1], offsets[1:], outs, strict=True):
        start = tuple(lo if q == j else IntExpr.const(0) for q in range(len(want)))
        stop = tuple(hi if q == j else e for q, e in enumerate(want))
        step = tuple(IntExpr.const(1) for _ in want)
        half = Term(SLICE, (("start", start), ("step", step), ("stop", stop)), (merged,))
        try:
            if half.result_type(g) != expect:
                return None
        except (ValueError, TypeError, IndexError, KeyError):
            return None
        halves.append(half)
    return Merge(nodes, merged, concat, tuple(halves))
