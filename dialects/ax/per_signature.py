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

from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
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
    if op_class.get_irdl_definition().regions:  # type: ignore[attr-defined]
        raise TypeError(f"{op_class.__name__} has regions: its verifier and text depend on "
                        "more than its signature")
    op_class.verify_ = _verified_once(op_class.verify_)  # type: ignore[method-assign, assignment]
    op_class.format_print = op_class.print  # type: ignore[attr-defined]
    op_class.print = _printed_once(op_class.print)  # type: ignore[method-assign, assignment]
    op_class.parse = classmethod(_parsed_once(op_class.parse))  # type: ignore[method-assign, assignment]
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


#: what a parser keeps per signature text: operand types, result types, properties, attributes
Parsed = tuple[tuple[Attribute, ...], tuple[Attribute, ...], tuple[tuple[str, Attribute], ...],
               tuple[tuple[str, Attribute], ...]]


def _parsed_once(parse: Callable[[Parser], Operation]) -> Callable[[Any, Parser], Operation]:
    """The class's format `parse`, run once per text after the operands on a parser that keeps
    a `signature_memo` (`tools/locations.LocatingParser`: one per input, so type aliases and
    dialects are the input's own). The text is the rest of the op's line (up to a trailing
    `loc(...)`); a line whose op the format reads as exactly that text is remembered with the
    types and attributes it gave, and a later op with the same text after its operands is
    built from them. Anything else (a comment, an op over several lines) is parsed in full."""

    def parse_op(cls: Any, parser: Parser) -> Operation:
        memo: dict[tuple[int, str], Parsed] | None = getattr(parser, "signature_memo", None)
        if memo is None:
            return parse(parser)
        start = parser.pos
        names = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand) or []
        after = parser.pos
        content = parser.lexer.input.content
        assert isinstance(content, str)
        end = content.find("\n", after)
        line = content[after:end if end >= 0 else len(content)]
        text = line.split(" loc(", 1)[0].rstrip()
        key = (len(names), text)
        known = memo.get(key) if "//" not in text else None
        if known is not None:
            operand_types, result_types, properties, attributes = known
            parser._resume_from(after + len(text))  # noqa: SLF001 - the lexer's own API
            operands = [parser.resolve_operand(n, t) for n, t in zip(names, operand_types,
                                                                     strict=True)]
            return cls.create(operands=operands, result_types=list(result_types),
                              properties=dict(properties), attributes=dict(attributes))
        parser._resume_from(start)  # noqa: SLF001
        op = parse(parser)
        if "//" not in text and content[after:parser.pos].rstrip() == text \
                and len(op.operands) == len(names):
            memo[key] = (tuple(v.type for v in op.operands), tuple(r.type for r in op.results),
                         tuple(op.properties.items()), tuple(op.attributes.items()))
        return op

    parse_op.__doc__ = parse.__doc__
    return parse_op


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
