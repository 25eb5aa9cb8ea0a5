"""The source frontend: parse a `.py` file in the Axon subset with lark and build IR without
running it.

    module = parse_source(text, "prog.py")   # ModuleOp, or SourceError with file:line:col

Parsing and syntax diagnostics live here; walking the tree (names, calls, inlining) lives in
`frontend/numpy_subset/walker.py`, which calls the builder functions of `frontend/builders.py`, the
same ones the tracing API uses.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.indenter import PythonIndenter
from xdsl.dialects.builtin import ModuleOp

from axon.frontend.diagnostics import SourceError, source_error
from axon.frontend.numpy_subset.walker import Walker

__all__ = ["SourceError", "parse_file", "parse_source"]

# Python keywords outside the subset, and what to say when one appears. The statement forms are
# judged by where the keyword stands: first on its line, or inside an expression.
_STATEMENT_KEYWORDS = {
    "for": "'for' loops are not part of the Axon subset",
    "while": "'while' loops are not part of the Axon subset",
    "if": "'if' statements are not part of the Axon subset (use where(cond, a, b))",
    "elif": "'if' statements are not part of the Axon subset (use where(cond, a, b))",
    "else": "'if' statements are not part of the Axon subset (use where(cond, a, b))",
    "class": "classes are not part of the Axon subset",
    "import": "imports are not part of the Axon subset: its functions are built in "
              "(write exp(x) or ax.exp(x))",
    "from": "imports are not part of the Axon subset: its functions are built in "
            "(write exp(x) or ax.exp(x))",
    "with": "'with' statements are not part of the Axon subset",
    "try": "exception handling ('try') is not part of the Axon subset",
    "except": "exception handling ('except') is not part of the Axon subset",
    "finally": "exception handling ('finally') is not part of the Axon subset",
    "raise": "'raise' is not part of the Axon subset",
    "global": "'global' declarations are not part of the Axon subset",
    "nonlocal": "'nonlocal' declarations are not part of the Axon subset",
    "lambda": "'lambda' expressions are not part of the Axon subset",
    "async": "'async' is not part of the Axon subset",
}
_EXPRESSION_KEYWORDS = {
    "for": "comprehensions are not part of the Axon subset",
    "if": "conditional expressions ('a if c else b') are not part of the Axon subset "
          "(use where(c, a, b))",
    "else": "conditional expressions ('a if c else b') are not part of the Axon subset "
            "(use where(c, a, b))",
    "and": "the boolean operator 'and' is not part of the Axon subset",
    "or": "the boolean operator 'or' is not part of the Axon subset",
    "not": "the boolean operator 'not' is not part of the Axon subset",
    "in": "the operator 'in' is not part of the Axon subset",
    "is": "the operator 'is' is not part of the Axon subset",
}
_KEYWORD = re.compile(r"(False|None|True|and|as|assert|async|await|break|class|continue|def|del|"
                      r"elif|else|except|finally|for|from|global|if|import|in|is|lambda|nonlocal|"
                      r"not|or|pass|raise|return|try|while|with|yield)\b")
_TOKEN_WORDS = {"_NEWLINE": "end of line", "_INDENT": "indentation", "_DEDENT": "end of block",
                "$END": "end of file"}


class _Indenter(PythonIndenter):
    """Python's indentation rules; an inconsistent dedent is reported at its line."""

    def handle_NL(self, token: Token):  # noqa: N802 - lark's hook name
        indent = len(token.rsplit("\n", 1)[1].replace("\t", " " * self.tab_len))
        if self.paren_level == 0 and indent < self.indent_level[-1] \
                and indent not in self.indent_level:
            raise _DedentError(token.end_line or 1, indent + 1)
        yield from super().handle_NL(token)


class _DedentError(Exception):
    def __init__(self, line: int, column: int):
        super().__init__("unindent does not match any outer indentation level")
        self.line, self.column = line, column


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="basic", postlex=_Indenter(),
                propagate_positions=True, maybe_placeholders=True)


def parse_source(text: str, filename: str = "<source>") -> ModuleOp:
    """Build a module with one `func.func` per `def` of `text`; SourceError on any mistake."""
    if not text.endswith("\n"):
        text += "\n"  # the indenter needs the last line closed
    try:
        tree = _parser().parse(text)
    except _DedentError as err:
        raise source_error(str(err), text, filename, err.line, err.column) from None
    except UnexpectedInput as err:
        raise _syntax_error(err, text, filename) from None
    module = Walker(text, filename).module(tree)
    module.verify()
    return module


def parse_file(path: str | Path) -> ModuleOp:
    """parse_source on the file at `path` (its name is used in diagnostics)."""
    path = Path(path)
    return parse_source(path.read_text(), str(path))


def _syntax_error(err: UnexpectedInput, text: str, filename: str) -> SourceError:
    """A specific message where the construct is known to be outside the subset."""
    line, column = max(err.line, 1), max(err.column, 1)
    if isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken)
                                          and err.token.type == "$END"):
        lines = text.splitlines() or [""]
        return source_error("unexpected end of file", text, filename, len(lines),
                            len(lines[-1]) + 1)
    if isinstance(err, UnexpectedCharacters):
        return source_error(_unlexable(text, err.pos_in_stream or 0), text, filename, line, column)
    assert isinstance(err, UnexpectedToken)
    token = err.token
    at_statement_start = text.splitlines()[line - 1][:column - 1].strip() == "" \
        if 0 < line <= len(text.splitlines()) else False
    if token.type == "MUL_OP" and token == "@" and at_statement_start:
        message = "decorators are not part of the Axon subset"
    elif token.type == "_INDENT":
        message = "unexpected indentation"
    elif token.type in _TOKEN_WORDS:
        message = f"invalid syntax: unexpected {_TOKEN_WORDS[token.type]}"
        if token.type == "_NEWLINE":
            line, column = token.line or line, token.column or column
    else:
        message = f"invalid syntax: unexpected {str(token)!r}"
    return source_error(message, text, filename, line, column)


def _unlexable(text: str, pos: int) -> str:
    """The message for text no token matches: a Python keyword outside the subset, or a stray
    character."""
    keyword = _KEYWORD.match(text, pos)
    if keyword:
        word = keyword.group(1)
        line_start = text.rfind("\n", 0, pos) + 1
        first_on_line = text[line_start:pos].strip() == ""
        if first_on_line and word in _STATEMENT_KEYWORDS:
            return _STATEMENT_KEYWORDS[word]
        if word in _EXPRESSION_KEYWORDS:
            return _EXPRESSION_KEYWORDS[word]
        if word in _STATEMENT_KEYWORDS:
            return _STATEMENT_KEYWORDS[word]
        if word in ("def", "return", "pass", "True", "False", "None"):
            return f"invalid syntax: unexpected '{word}'"
        return f"'{word}' is not part of the Axon subset"
    char = text[pos]
    if char in "{}":
        return "dicts and sets are not part of the Axon subset"
    return f"invalid character {char!r}"
