"""Work on a tensor op done once per signature, not once per op.

An op's *signature* is its class, its operand and result types, its properties and attributes:
all immutable, hashable attributes. A tensor op has no regions or successors, so two ops with one
signature pass or fail their op verifier alike and print alike after their operand names. A
program of 10,000 statements has a few hundred signatures; verifying and printing it costs a few
hundred full checks and renderings, and a lookup per op.

`per_signature(op_class)` rewraps the `verify_` and `print` that `irdl_op_definition` builds for
the class (IRDL's constraints then the class's own rules; the declarative assembly format) with
these memos. What depends on an op's place (a terminator, an erased operand, its SSA names, its
location) stays with `Operation.verify` and `Printer.print_op`, which run for every op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from io import StringIO
from typing import Any

from xdsl.ir import Operation
from xdsl.printer import Printer

#: signatures of ops that passed their op verifier, cleared whole when full
_VERIFIED: set[tuple[Any, ...]] = set()
#: signature -> the text the assembly format prints after the op's operands, cleared when full
_SUFFIXES: dict[tuple[Any, ...], str] = {}
_LIMIT = 1 << 16


def per_signature(op_class: type[Operation]) -> None:
    """Memoize `op_class`'s op verifier and printing per signature (once per class)."""
    if getattr(op_class, "_per_signature", False):
        return
    op_class.verify_ = _verified_once(op_class.verify_)  # type: ignore[method-assign, assignment]
    op_class.format_print = op_class.print  # type: ignore[attr-defined]
    op_class.print = _printed_once(op_class.print)  # type: ignore[method-assign, assignment]
    op_class._per_signature = True  # type: ignore[attr-defined]


@contextmanager
def unmemoized(op_classes: Iterable[type[Operation]]) -> Iterator[None]:
    """Within the block, `op_classes` print through their assembly format directly (each op
    rendered in full): a check that the memo prints the same text."""
    classes = [c for c in op_classes if getattr(c, "_per_signature", False)]
    memoized = [c.print for c in classes]
    try:
        for c in classes:
            c.print = c.format_print  # type: ignore[attr-defined, method-assign]
        yield
    finally:
        for c, p in zip(classes, memoized, strict=True):
            c.print = p  # type: ignore[method-assign]


def signature(op: Operation) -> tuple[Any, ...] | None:
    """The op's signature, or None when an attribute in it cannot be hashed (no memo then)."""
    key = (type(op), tuple(v.type for v in op.operands), tuple(r.type for r in op.results),
           tuple(op.properties.items()), tuple(op.attributes.items()), len(op.regions),
           len(op.successors))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _verified_once(verify: Callable[[Any], None]) -> Callable[[Any], None]:
    def verify_(op: Operation) -> None:
        key = signature(op)
        if key is not None and key in _VERIFIED:
            return
        verify(op)
        if key is not None:
            if len(_VERIFIED) >= _LIMIT:
                _VERIFIED.clear()
            _VERIFIED.add(key)

    verify_.__doc__ = verify.__doc__
    return verify_


def _printed_once(print_: Callable[[Any, Printer], None]) -> Callable[[Any, Printer], None]:
    def print_op(op: Operation, printer: Printer) -> None:
        key = signature(op)
        suffix = None if key is None else _SUFFIXES.get(key)
        if suffix is None:
            suffix = _suffix(op, print_)
            if suffix is None or key is None:
                print_(op, printer)
                return
            if len(_SUFFIXES) >= _LIMIT:
                _SUFFIXES.clear()
            _SUFFIXES[key] = suffix
        if op.operands:
            printer.print_string(" ")
            printer.print_list(op.operands, printer.print_ssa_value)
        printer.print_string(suffix)

    print_op.__doc__ = print_.__doc__
    return print_op


def _suffix(op: Operation, print_: Callable[[Any, Printer], None]) -> str | None:
    """What `print_` prints after the operands (` {attrs} : types`), rendered by the format
    itself in a scratch printer; None when its text does not start with the operands as
    `print_op` writes them (a format that places them elsewhere is not memoized)."""
    out = StringIO()
    scratch = Printer(stream=out)
    scratch.print_list(op.operands, scratch.print_ssa_value)  # names the operands first
    names = out.getvalue()
    print_(op, scratch)
    text = out.getvalue()[len(names):]
    head = f" {names}" if op.operands else ""
    return text[len(head):] if text.startswith(head) and "\n" not in text else None
