"""The tokens of NumPy-subset source text: Python's lexical rules, for the subset's words.

    tokens = tokenize(text)   # list[Token], ending in NEWLINE, the closing DEDENTs and END

As Python's tokenizer does, indentation becomes INDENT and DEDENT tokens, line breaks inside
brackets and after a backslash join lines, and blank and comment-only lines give no token. A
mistake in the text (a stray character, a Python keyword outside the subset, an inconsistent
dedent, an unclosed bracket) becomes an ERROR token whose text is the message; the parser reports
it when it reaches it, so a syntax error earlier in the file is reported first.

One pass over the text with one regular expression: linear in its length, no recursion.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Token(NamedTuple):
    """A token: its kind, its text and where it starts (1-based line and column).

    Kinds: NAME, NUMBER, STRING, NEWLINE, INDENT, DEDENT, END, ERROR (the text is the message),
    the subset's keywords (`def`, `return`, `pass`, `True`, `False`, `None`) and, for operators
    and punctuation, the text itself (`+`, `**=`, `(`, `->`, `...`)."""

    kind: str
    text: str
    line: int
    column: int

    def __str__(self) -> str:
        return self.text


#: the Python keywords that are part of the subset; each is its own token kind
KEYWORDS = frozenset({"def", "return", "pass", "True", "False", "None"})

#: augmented assignment operators (parsed, then rejected with a specific message)
AUGMENTED = frozenset({"+=", "-=", "*=", "/=", "@=", "//=", "%=", "**="})

#: spaces a tab counts for when indentation is compared
TAB_WIDTH = 8

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
_OTHER_KEYWORDS = frozenset({"as", "assert", "await", "break", "continue", "del", "yield"})

_TOKEN = re.compile(r"""
    (?P<space>[ \t\f]+)
  | (?P<comment>\#[^\r\n]*)
  | (?P<newline>\r?\n)
  | (?P<joined>\\[ \t\f]*\r?\n)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<op>\*\*=|//=|\.\.\.|->|\*\*|//|[-+*/@%]=|[<>=!]=|[-+*/@%<>=()\[\],:;.])
""", re.VERBOSE)
_BLANKS = re.compile(r"[ \t\f]*")
_OPEN = {"(": ")", "[": "]"}
_CLOSE = frozenset(_OPEN.values())


def tokenize(text: str) -> list[Token]:
    """The tokens of `text`; mistakes become ERROR tokens in place (see the module docstring)."""
    tokens: list[Token] = []
    append = tokens.append
    indents = [0]
    open_brackets: list[Token] = []
    line, line_start = 1, 0
    # the first token of a logical line decides its indentation: the blanks that start the
    # physical line at `indent_from` (a backslash-joined line keeps its first line's indentation)
    at_line_start = True
    indent_from = 0
    # where the NEWLINE of the current logical line goes: a comment before the line break
    comment_at: tuple[int, int] | None = None
    pos, end = 0, len(text)
    match = _TOKEN.match
    while pos < end:
        found = match(text, pos)
        if found is None:
            append(Token("ERROR", _stray_character(text[pos]), line, pos - line_start + 1))
            return _finish(tokens, indents, open_brackets, line, pos - line_start + 1)
        kind = found.lastgroup
        value = found.group()
        column = pos - line_start + 1
        if kind == "space":
            pass
        elif kind == "comment":
            comment_at = (line, column)
        elif kind == "newline" or kind == "joined":
            if kind == "newline" and not at_line_start and not open_brackets:
                where = comment_at or (line, column)
                append(Token("NEWLINE", "\n", *where))
                at_line_start = True
            comment_at = None
            line, line_start = line + 1, found.end()
            if kind == "newline" and at_line_start:
                indent_from = line_start
        else:
            if at_line_start:
                blanks = _BLANKS.match(text, indent_from)
                assert blanks is not None
                indent = len(blanks.group().replace("\t", " " * TAB_WIDTH).replace("\f", ""))
                if not _indent(tokens, indents, indent, line, column):
                    return _finish(tokens, indents, open_brackets, line, column)
                at_line_start = False
            if kind == "name":
                if value in KEYWORDS:
                    append(Token(value, value, line, column))
                elif _is_python_keyword(value):
                    first_on_line = text[line_start:pos].strip() == ""
                    append(Token("ERROR", _keyword_message(value, first_on_line), line, column))
                    return _finish(tokens, indents, open_brackets, line, column)
                else:
                    append(Token("NAME", value, line, column))
            elif kind == "number":
                append(Token("NUMBER", value, line, column))
            elif kind == "string":
                append(Token("STRING", value, line, column))
                newlines = value.count("\n")
                if newlines:
                    line, line_start = line + newlines, pos + value.rindex("\n") + 1
            else:
                token = Token(value, value, line, column)
                if value in _OPEN:
                    open_brackets.append(token)
                elif value in _CLOSE and open_brackets:
                    open_brackets.pop()
                append(token)
        pos = found.end()
    if not at_line_start and not open_brackets:
        append(Token("NEWLINE", "\n", *(comment_at or (line, pos - line_start + 1))))
    return _finish(tokens, indents, open_brackets, line, pos - line_start + 1)


def _indent(tokens: list[Token], indents: list[int], indent: int, line: int,
            column: int) -> bool:
    """INDENT or DEDENT tokens for a logical line starting at `indent`; False (an ERROR token
    appended) when the dedent matches no outer level."""
    if indent > indents[-1]:
        indents.append(indent)
        tokens.append(Token("INDENT", "", line, column))
        return True
    if indent not in indents:
        tokens.append(Token("ERROR", "unindent does not match any outer indentation level",
                            line, indent + 1))
        return False
    while indent < indents[-1]:
        indents.pop()
        tokens.append(Token("DEDENT", "", line, column))
    return True


def _finish(tokens: list[Token], indents: list[int], open_brackets: list[Token], line: int,
            column: int) -> list[Token]:
    """Close the token list: an ERROR for an unclosed bracket, the DEDENTs, END."""
    if open_brackets:
        bracket = open_brackets[-1]
        tokens.append(Token("ERROR", f"'{bracket.text}' was never closed", bracket.line,
                            bracket.column))
    tokens.extend(Token("DEDENT", "", line, column) for _ in indents[1:])
    tokens.append(Token("END", "", line, column))
    return tokens


def _is_python_keyword(word: str) -> bool:
    return word in _STATEMENT_KEYWORDS or word in _EXPRESSION_KEYWORDS \
        or word in _OTHER_KEYWORDS


def _keyword_message(word: str, first_on_line: bool) -> str:
    """What to say about a Python keyword outside the subset."""
    if first_on_line and word in _STATEMENT_KEYWORDS:
        return _STATEMENT_KEYWORDS[word]
    if word in _EXPRESSION_KEYWORDS:
        return _EXPRESSION_KEYWORDS[word]
    if word in _STATEMENT_KEYWORDS:
        return _STATEMENT_KEYWORDS[word]
    return f"'{word}' is not part of the Axon subset"


def _stray_character(char: str) -> str:
    if char in "{}":
        return "dicts and sets are not part of the Axon subset"
    return f"invalid character {char!r}"
