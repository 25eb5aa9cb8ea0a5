"""Sketches: instruction slots with holes, and the tile op a sketch implements.

    Sketch("row_sum.matmul_ones", "row_sum",
           (Slot("layout", (Hole("transpose", ("none", "tensor", "vector", "dma")),)),
            Slot("matmul", (Hole("stationary", ("data", "ones")),))),
           build=...)

A filling gives every hole one value of its domain, by qualified name (`"layout.transpose"`).
The target's `build(spec, filling)` turns a filling into a `Candidate`: a function of the
target's instructions with the spec's parameters, and the size conditions its instructions
need beyond the profile's limits (`"F <= 32"` for a VectorE transpose). A filling that breaks
a shape or instruction rule raises `Pruned` there; a `Constraint` prunes before anything is
built. Nothing here knows a target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from io import StringIO

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.printer import Printer

from axon.dialects.form.interface import generic_form, has_form

#: the value a hole takes: a name, a number or a flag (JSON data, so a filling can be cached)
HoleValue = str | int | float | bool | None
#: a filling: every hole's value by its qualified name `slot.hole`
Filling = Mapping[str, HoleValue]


class Pruned(Exception):  # noqa: N818 (a verdict on a filling, not an error of the program)
    """The filling breaks a shape or instruction rule: dropped before any proof."""


@dataclass(frozen=True)
class Hole:
    """A choice left open in a slot, with its finite domain (the values tried, in order)."""

    name: str
    domain: tuple[HoleValue, ...]

    def __post_init__(self) -> None:
        if not self.domain:
            raise ValueError(f"hole '{self.name}' has an empty domain")
        for value in self.domain:  # a filling is cached as JSON
            if value is not None and not isinstance(value, (str, int, float, bool)):
                raise ValueError(f"hole '{self.name}': {value!r} is not a name, a number or a "
                                 "flag")


@dataclass(frozen=True)
class Slot:
    """One instruction of a sketch (or a layout step before it) and its holes."""

    name: str
    holes: tuple[Hole, ...] = ()


@dataclass(frozen=True)
class Spec:
    """The tile op a sketch implements: a function of tile-level ops over symbolic tile types
    (its parameters are the op's operands), the kind of op it is (what sketches are chosen
    by), and the size assumptions the profile's limits put on its tiles."""

    kind: str
    func: FuncOp
    assumptions: tuple[str, ...] = ()

    def form_text(self) -> str:
        """The spec as its generic forms (the cache's key): the parameters `%a0: type`, then
        per op `%v0 = name(%a0, ...): form`, then what is returned, so that the text says
        which value each op reads."""
        block = self.func.body.block
        names = {arg: f"%a{k}" for k, arg in enumerate(block.args)}
        lines = [f"{names[a]}: {a.type}" for a in block.args]
        for op in block.ops:
            reads = ", ".join(f"{names[v]}: {v.type}" for v in op.operands)
            if isinstance(op, ReturnOp):
                lines.append(f"return {reads}")
                continue
            for result in op.results:
                names[result] = f"%v{len(names) - len(block.args)}"
            body = str(generic_form(op)) if has_form(op) else _printed(op)
            lines.append(f"{', '.join(names[r] for r in op.results)} = {op.name}({reads}): "
                         f"{body}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Candidate:
    """A filling as the target built it: a function of instructions taking the spec's
    parameters, and the size conditions its instructions need (proved under them, and
    admitted only for tiles that meet them)."""

    func: FuncOp
    conditions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Constraint:
    """A predicate on a filling that must hold for it to be built (`name` says why not)."""

    name: str
    holds: Callable[[Spec, Filling], bool]


@dataclass(frozen=True)
class Sketch:
    """An instruction sequence with holes implementing tile ops of kind `kind`; the target
    builds each filling (`build`) and may prune fillings first (`constraints`)."""

    id: str
    kind: str
    slots: tuple[Slot, ...]
    build: Callable[[Spec, Filling], Candidate]
    constraints: tuple[Constraint, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        names = [name for name, _ in self.holes()]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"sketch '{self.id}' names hole(s) {', '.join(repeated)} twice")

    def holes(self) -> list[tuple[str, Hole]]:
        """Every hole with its qualified name `slot.hole`, slot by slot."""
        return [(f"{slot.name}.{hole.name}", hole) for slot in self.slots for hole in slot.holes]

    def size(self) -> int:
        """How many fillings there are (the product of the domains' sizes)."""
        return math.prod(len(hole.domain) for _, hole in self.holes())

    def signature(self) -> str:
        """The sketch's id, slots and domains as text (part of its cache key: a sketch whose
        holes change is another sketch)."""
        return f"{self.id} " + "; ".join(f"{name} in {list(hole.domain)!r}"
                                          for name, hole in self.holes())


def filling_text(filling: Filling) -> str:
    """A filling as `slot.hole=value` pairs, for reports."""
    return ", ".join(f"{k}={v}" for k, v in filling.items())


def _printed(op: object) -> str:
    out = StringIO()
    Printer(stream=out).print_op(op)  # type: ignore[arg-type]
    return out.getvalue()
