"""Source locations for MLIR input, so verifier errors read `file:line:col: error: ...`.

xDSL's parser leaves an op's location unknown unless the text spells `loc(...)`, and its verifier
reports a failure by reprinting the whole module in generic form. MLIR's parser instead gives every
op the `file:line:col` it was parsed from; `LocatingParser` does the same, and `locate_verify_error`
uses that location to turn a verifier exception into one located line plus the source line.
Types and attributes that fail their own verification while being parsed become located parse
errors in the same way.

Three of xDSL's parse errors are reworded where MLIR's say more: a region left open (`expected '}'
to close the region opened at L:C` rather than ` in block definition` at the end of the input), a
value used but never defined (at its first use, not at the end of the input), and an empty input
(an empty module, as `mlir-opt` prints, rather than `Could not parse entire input!`).
"""

from __future__ import annotations

import linecache
import re
from bisect import bisect_right
from collections.abc import Iterable

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, AttributeInvT, Operation, Region, SSAValue, TypeAttribute
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from axon.dialects.ax.per_signature import Parsed

# xDSL 0.74 lexes a string literal with `"(?:[^"\\...]+|\\...)*"`: a `+` inside a `*`, which
# backtracks exponentially on a quote never closed on its line (a 300-character line took
# minutes). The same language without the nested quantifier fails in linear time.
MLIRLexer._unescaped_characters_regex = re.compile(  # noqa: SLF001
    r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

#: xDSL's message when a block holds something that is neither an op nor a block label
_NOT_AN_OP = " in block definition"
#: xDSL's message when the input ends with values never defined (reported at the end)
_UNDEFINED = "values used but not defined"


class LocatingParser(Parser):
    """An MLIR parser that records `file:line:col` on every op written without a `loc(...)`."""

    def __init__(self, ctx: Context, text: str | bytes, name: str = "<unknown>",
                 line_offset: int = 0) -> None:
        super().__init__(ctx, text, name)
        #: lines before this chunk under --split-input-file, so lines count from the file's start
        self.line_offset = line_offset
        content = self.lexer.input.content
        #: the offset where each line starts: an op's line is a bisection, not a rescan of the
        #: text before it (xDSL's `Span.get_location`), which made parsing quadratic
        self._line_starts = [0, *(m.end() for m in re.finditer("\n", content))]
        #: where each value name was first used, to report one never defined at its use
        self._first_use: dict[str, Span[str]] = {}
        #: what ax ops' text after their operands parses to (`dialects/ax/per_signature.py`)
        self.signature_memo: dict[tuple[int, str], Parsed] = {}

    def line_col(self, pos: int) -> tuple[int, int]:
        """The 1-based line (counted from the file's start) and column of offset `pos`."""
        line = bisect_right(self._line_starts, pos)
        return line + self.line_offset, pos - self._line_starts[line - 1] + 1

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        if allow_implicit_module and self._current_token.kind == MLIRTokenKind.EOF:
            return ModuleOp([])  # nothing but whitespace and comments: an empty module
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as err:
            if not err.msg.startswith(_UNDEFINED):
                raise
            names = sorted((n for n in self.forward_ssa_references if n in self._first_use),
                           key=lambda n: self._first_use[n].start)
            if not names:
                raise
            first, *others = names
            more = f" (also never defined: {', '.join('%' + n for n in others)})" if (
                others) else ""
            raise ParseError(self._first_use[first],
                             f"value %{first} is used but never defined{more}") from None

    def resolve_operand(self, operand: UnresolvedOperand,
                        type: AttributeInvT) -> SSAValue[AttributeInvT]:
        name = operand.operand_name
        if name not in self.ssa_values:
            self._first_use.setdefault(name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_optional_region(self, arguments: Iterable[Parser.Argument] | None = None
                              ) -> Region | None:
        opening = self._current_token
        try:
            return super().parse_optional_region(arguments)
        except ParseError as err:
            if err.msg != _NOT_AN_OP or opening.kind != MLIRTokenKind.L_BRACE:
                raise
            line, col = self.line_col(opening.span.start)
            here = self._current_token
            if here.kind == MLIRTokenKind.EOF:
                message = (f"expected '}}' to close the region opened at {line}:{col}; the input "
                           "ends first")
            else:
                message = (f"expected an operation or '}}' to close the region opened at "
                           f"{line}:{col}, found '{here.text}'")
            raise ParseError(here.span, message) from None

    def _span_from(self, start: int) -> Span[str]:
        """The text from `start` to the last consumed token (without the whitespace after it)."""
        text = self.lexer.input.content[start:self.pos]
        return Span(start, start + len(text.rstrip()), self.lexer.input)

    # A type or attribute whose own verify() fails (`!ax.tensor<[M, -2], f32>`) raises a bare
    # VerifyException from inside the parser; report it as a parse error at the type's text.
    def parse_optional_type(self) -> TypeAttribute | None:
        start = self.pos
        try:
            return super().parse_optional_type()
        except VerifyException as err:
            raise ParseError(self._span_from(start), str(err)) from None

    def parse_optional_attribute(self) -> Attribute | None:
        start = self.pos
        try:
            return super().parse_optional_attribute()
        except VerifyException as err:
            raise ParseError(self._span_from(start), str(err)) from None

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as err:  # a custom-syntax op whose operand types break its rules
            raise ParseError(self._span_from(start.start), str(err)) from None
        if isinstance(op.location, UnknownLoc):
            line, col = self.line_col(start.start)
            op.location = FileLineColLoc(StringAttr(self.lexer.input.name), IntAttr(line),
                                         IntAttr(col))
        return op


class LocatedVerifyError(VerifyException):
    """A verifier error rewritten as `file:line:col: error: message` (with the source line)."""


def locate_verify_error(err: VerifyException, module: ModuleOp) -> VerifyException:
    """The located form of `err` when its op can be found and has a file location, else `err`.

    An exception that names its op (an `op` attribute, as a tile kernel's check of an op it
    holds does) is located at that op. xDSL's own do not, so the op is found again: the first
    one, in the verifier's own post-order, whose local checks fail with the same message."""
    message = str(err)
    named = getattr(err, "op", None)
    if isinstance(named, Operation) and isinstance(named.location, FileLineColLoc):
        return _located(message, named.location)
    for op in module.walk(reverse=False, region_first=True):
        if not isinstance(op.location, FileLineColLoc):
            continue
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as local:
            if str(local) == message:
                return _located(message, op.location)
    return err


def _located(message: str, loc: FileLineColLoc) -> LocatedVerifyError:
    filename, line, col = loc.filename.data, loc.line.data, loc.column.data
    text = f"{filename}:{line}:{col}: error: {message}"
    source_line = linecache.getline(filename, line).rstrip("\n")
    if source_line:
        text += f"\n{source_line}\n{' ' * (col - 1)}^"
    return LocatedVerifyError(text)
