"""What every loop with carried values checks, whichever level holds it (`tile.for`, `xt.for`):
its iteration is a name, its extent an integer expression (`check_iteration`), and the carried
values' types are the results', the body's arguments' and its terminator's (`check_carried`)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects.form.intexpr import IntExpr


def check_iteration(op: Operation, iv: str, extent: str) -> None:
    """The loop's iteration name and extent expression, or a `VerifyException` naming `op`."""
    if not iv.isidentifier():
        raise VerifyException(f"'{op.name}': iv '{iv}' is not a name")
    try:
        IntExpr.lift(extent)
    except ValueError as err:
        raise VerifyException(f"'{op.name}': extent: {err}") from None


def check_carried(op: Operation, inits: Sequence[SSAValue], terminator: str) -> None:
    """The carried values' types against `op`'s results, its body's arguments and the values of
    its body's last op, which must be a `terminator` (an op name) holding them in `values`."""
    init_types: list[Attribute] = [v.type for v in inits]
    if [r.type for r in op.results] != init_types:
        raise VerifyException(f"'{op.name}': results must have the types of the carried values")
    block = op.regions[0].block
    if [a.type for a in block.args] != init_types:
        raise VerifyException(f"'{op.name}': the body takes {len(block.args)} argument(s); it "
                              "needs one per carried value, of its type")
    end = block.last_op
    values = getattr(end, "values", None) if end is not None and end.name == terminator else None
    if values is None or [v.type for v in values] != init_types:
        raise VerifyException(f"'{op.name}': the body must end in {terminator} of the carried "
                              "values' types")
