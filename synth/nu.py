"""Admitted lowerings into the nu-graph: each one an e-node of the tile op's e-class.

A lowering's candidate function becomes a term over the e-classes of the tile op's operands
(`lowering_term`); `enter_lowerings` records its proof in the graph (move `synthesize-isa
<sketch>`, the verdict naming the synthesis proof's id: nothing is proved again) and enters the
term through `nugraph.admission.enter`, the one way a proved equality joins classes, so several
lowerings of one tile op sit in its class side by side, for extraction and selection to choose.

A lowering is proved under the profile's tile limits and its own size conditions (`F <= 128`
for a contraction over F); it enters only a graph whose sizes are known to meet them: every
such fact must follow from the `assumptions` the caller states for the graph (the same bound
or a tighter one on the same dim). Any other lowering is held back, with the fact it needs.

    held_back = enter_lowerings(g, imported.results[0], imported.params, report, spec,
                                assumptions=["P <= 128", "F <= 128"])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

from axon.dialects.form.interface import form_op
from axon.nugraph.admission import enter, fresh_proof_id
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph, Proof
from axon.nugraph.term import Child, Term
from axon.synth.sketch import Spec
from axon.synth.synthesize import Admitted, SynthesisReport

#: the move a lowering's proof is recorded under (the architecture's pass name)
MOVE = "synthesize-isa"


@dataclass(frozen=True)
class HeldBack:
    """A lowering not entered: the size fact it needs that the graph's assumptions lack."""

    lowering: Admitted
    needs: str


def lowering_term(func: FuncOp, leaves: Sequence[int]) -> Term:
    """The value `func` returns as a term over the classes `leaves` (one per parameter)."""
    block = func.body.block
    values: dict[SSAValue, Child] = dict(zip(block.args, leaves, strict=True))
    for op in block.ops:
        if isinstance(op, ReturnOp):
            (result,) = op.arguments
            term = values[result]
            if not isinstance(term, Term):
                raise ValueError(f"'{func.sym_name.data}' returns a parameter: no lowering")
            return term
        node = ENode.make(op.name, form_op(op).attrs(), ())
        values[op.results[0]] = Term.of(node, [values[v] for v in op.operands])
    raise ValueError(f"'{func.sym_name.data}' ends without func.return")


def enter_lowerings(g: EGraph, cls: int, leaves: Sequence[int], report: SynthesisReport,
                    spec: Spec, assumptions: Sequence[str]) -> list[HeldBack]:
    """Enter every lowering of `report` (for `spec`, whose operands are the classes `leaves`)
    into the class `cls` whose sizes meet `assumptions`; returns the lowerings held back."""
    node = g.class_nodes(cls)[0]
    original = Term.of(g.nodes[node]).text()
    held: list[HeldBack] = []
    for lowering in report.lowerings:
        missing = [fact for fact in (*spec.assumptions, *lowering.candidate.conditions)
                   if not implied(fact, assumptions)]
        if missing:
            held.append(HeldBack(lowering, missing[0]))
            continue
        term = lowering_term(lowering.func, leaves)
        pid = fresh_proof_id(g)
        g.record_proof(Proof(pid, f"{MOVE} {lowering.sketch}", original, term.text(),
                             f"proved {lowering.proof_id}", lowering.seconds))
        enter(g, node, term, pid)
    g.rebuild()
    return held


def implied(fact: str, assumptions: Sequence[str]) -> bool:
    """Does `fact` follow from `assumptions`: stated as it is, or `X <= m` stated for a fact
    `X <= n` with m <= n?"""
    if fact in assumptions:
        return True
    dim, _, bound = fact.partition(" <= ")
    if not bound.strip().isdigit():
        return False
    for text in assumptions:
        lhs, _, rhs = text.partition(" <= ")
        if lhs.strip() == dim.strip() and rhs.strip().isdigit() and int(rhs) <= int(bound):
            return True
    return False
