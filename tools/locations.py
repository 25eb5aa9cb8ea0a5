"""Source locations for MLIR input, so verifier errors read `file:line:col: error: ...`.

xDSL's parser leaves an op's location unknown unless the text spells `loc(...)`, and its verifier
reports a failure by reprinting the whole module in generic form. MLIR's parser instead gives every
op the `file:line:col` it was parsed from; `LocatingParser` does the same, and `locate_verify_error`
uses that location to turn a verifier exception into one located line plus the source line.
Types and attributes that fail their own verification while being parsed become located parse
errors in the same way.
"""

from __future__ import annotations

import linecache

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span


class LocatingParser(Parser):
    """An MLIR parser that records `file:line:col` on every op written without a `loc(...)`."""

    def __init__(self, ctx: Context, text: str | bytes, name: str = "<unknown>",
                 line_offset: int = 0) -> None:
        super().__init__(ctx, text, name)
        #: lines before this chunk under --split-input-file, so lines count from the file's start
        self.line_offset = line_offset

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
            where = start.get_location()
            op.location = FileLineColLoc(StringAttr(where.file), IntAttr(
                where.line + self.line_offset), IntAttr(where.col))
        return op


class LocatedVerifyError(VerifyException):
    """A verifier error rewritten as `file:line:col: error: message` (with the source line)."""


def locate_verify_error(err: VerifyException, module: ModuleOp) -> VerifyException:
    """The located form of `err` when its op can be found and has a file location, else `err`.

    xDSL's exception does not name the failing op, so the op is found again: the first one, in
    the verifier's own post-order, whose local checks fail with the same message."""
    message = str(err)
    for op in module.walk(reverse=False, region_first=True):
        if not isinstance(op.location, FileLineColLoc):
            continue
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as local:
            if str(local) != message:
                continue
            loc = op.location
            filename, line, col = loc.filename.data, loc.line.data, loc.column.data
            text = f"{filename}:{line}:{col}: error: {message}"
            source_line = linecache.getline(filename, line).rstrip("\n")
            if source_line:
                text += f"\n{source_line}\n{' ' * (col - 1)}^"
            return LocatedVerifyError(text)
    return err
