"""Identical programs, decided by their structure: both functions hash-consed into one DAG.

Every value of the two functions becomes a node of one table: a parameter by its position and
type, a form op's result by its generic form's text, its result type and its operands' nodes. An
op's result is a function of its form and its operands alone (forms are deterministic), so two
results that are the same node are equal for every size and every input, and two functions whose
returned values are the same nodes, in order, compute the same results. This is decided in one
pass over the ops, in time linear in the programs: a chain of 10,000 statements whose normal form
(`terms.py`) would carry coefficients of thousands of digits is proved equal to itself before any
normalization. Anything else (a different op, constant or order of operands) falls through to
the normal forms and z3.
"""

from __future__ import annotations

import hashlib

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.interface import generic_form, has_form


def shared_structure(a: FuncOp, b: FuncOp) -> str | None:
    """A digest of the shared DAG when `a` and `b` return the same nodes, else None.

    Both must be straight-line (one block of form ops with one result each, ending in
    `func.return`); any other function gives None and is left to the normal path."""
    table = _Table()
    returned = [table.returned(f) for f in (a, b)]
    if returned[0] is None or returned[0] != returned[1]:
        return None
    digest = hashlib.sha256()
    for line in table.lines:
        digest.update(line.encode())
        digest.update(b"\n")
    digest.update(f"returns {returned[0]}".encode())
    return digest.hexdigest()


class _Table:
    """Hash-consing of values: one node id per distinct (definition, operand nodes)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, tuple[int, ...]], int] = {}
        #: the definition of each node, by id: the text the digest covers
        self.lines: list[str] = []

    def node(self, definition: str, operands: tuple[int, ...]) -> int:
        key = (definition, operands)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.lines)
            self.lines.append(f"{definition} ({', '.join(map(str, operands))})")
        return found

    def returned(self, func: FuncOp) -> list[int] | None:
        """The nodes `func` returns, or None when it is not a straight-line function of form
        ops."""
        if len(func.body.blocks) != 1:
            return None
        nodes: dict[SSAValue, int] = {}
        for arg in func.body.block.args:
            nodes[arg] = self.node(f"param {arg.index} {arg.type}", ())
        # the text of each distinct form object (ops of one kind and types share theirs); the
        # form is kept beside its text so that its id stays its own
        forms: dict[int, tuple[GenericForm, str]] = {}
        for op in func.body.block.ops:
            if isinstance(op, ReturnOp):
                if op is not func.body.block.last_op:
                    return None
                return [nodes[v] for v in op.arguments]
            if not has_form(op) or op.regions or len(op.results) != 1:
                return None
            form = generic_form(op)
            known = forms.get(id(form))
            if known is None:
                known = forms[id(form)] = (form, str(form))
            text = known[1]
            operands = tuple(nodes[v] for v in op.operands)
            nodes[op.results[0]] = self.node(f"{text} : {op.results[0].type}", operands)
        return None
