"""Parse the text syntax of generic forms (the inverse of `str(GenericForm)`).

Used by `ax.generic`, whose meaning is written out in its `form` attribute, and by tests that state
forms directly. The parser is written by hand over one token stream, and every integer expression
in a form (dim bounds, read indices, `idx(...)`) is read by the integer grammar of `intexpr.py`
(`parse_int_tokens`), the same one tensor types and `parse_int_expr` use:

    form      := "out" "[" [pdim ("," pdim)*] "]" "=" [reduction] scalar ["then" scalar]
    pdim      := NAME "<" intexpr
    reduction := NAME "over" rdim ("," rdim)* "of"
    rdim      := NAME "in" "[" intexpr "," intexpr ")"
    scalar    := sum [CMP sum]                 CMP: == != <= >= < >
    sum       := product (("+" | "-") product)*
    product   := unary (("*" | "/") unary)*
    unary     := "-" unary | atom
    atom      := NUMBER | "true" | "false" | "inf" | "nan" | "acc" | "(" scalar ")"
               | READ "[" [intexpr ("," intexpr)*] "]"      READ: in0, in1, ...
               | "idx" "(" intexpr ")"
               | NAME "(" arg ("," arg)* ")"              arg: scalar | DTYPE

The parser recurses only on the nesting a form's text spells out, and `MAX_DEPTH` bounds the
depth of the tree it builds, so neither the parser nor the form's own (recursive) traversals can
exhaust Python's stack.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NoReturn

from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import FormError, GenericForm, LoopDim
from axon.dialects.form.intexpr import IntExpr, TokenList, parse_int_tokens
from axon.dialects.form.scalar import Call, Const, Index, Read, Reduced, ScalarExpr, call

_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_CONSTANTS = {"true": True, "false": False, "inf": float("inf"), "nan": float("nan")}
# words that are syntax, never a dim, size or function name
_KEYWORDS = frozenset({"out", "over", "of", "in", "then", "idx", "acc", "floordiv", "mod"})
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>==|!=|<=|>=|[-+*/<>=()\[\],])
""", re.VERBOSE)
_READ = re.compile(r"in(\d+)")

MAX_DEPTH = 64
"""Deepest expression tree a form may spell out: nested parentheses, calls, unary minuses and
chained binary operators each count a level. Forms are printed by Axon from one op's meaning and
nest a few levels; the bound keeps the parser's recursion (five frames a level, plus
`MAX_INT_DEPTH` levels of an integer expression inside) well inside Python's stack."""


class _FormTokens(TokenList):
    """The tokens of one form's text, with their kinds and columns; the integer grammar reads
    them as a `TokenList`."""

    reserved = _KEYWORDS

    def __init__(self, text: str) -> None:
        texts: list[str] = []
        self.kinds: list[str] = []
        self.columns: list[int] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise FormError(f"malformed generic form at column {pos + 1}: unexpected "
                                f"character {text[pos]!r}: {text.strip()}")
            kind = match.lastgroup or ""
            if kind != "ws":
                texts.append(match.group())
                self.kinds.append(kind)
                self.columns.append(pos + 1)
            pos = match.end()
        super().__init__(texts)
        self.text = text
        self.depth = 0

    def kind(self) -> str | None:
        return self.kinds[self.pos] if self.pos < len(self.kinds) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            self.fail("unexpected end of form")
        self.pos += 1
        return token

    def fail(self, what: str, at: int | None = None) -> NoReturn:
        """Raise a FormError at the next token, saying what was found there, or at the column of
        token `at` when the error is about what starts there."""
        if at is not None:
            column, found = self.columns[at], ""
        elif self.pos < len(self.tokens):
            column, found = self.columns[self.pos], f", found {self.tokens[self.pos]!r}"
        else:
            column, found = len(self.text) + 1, ", found end of form"
        raise FormError(f"malformed generic form at column {column}: {what}{found}: "
                        f"{self.text.strip()}")

    def end_item(self, close: str) -> bool:
        """After an item of a comma-separated list: True at `close` (consumed), False at ','."""
        if self.accept(close):
            return True
        if not self.accept(","):
            self.fail(f"expected ',' or {close!r}")
        return False

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH}")


def parse_form(text: str, num_operands: int) -> GenericForm:
    """Parse form text; FormError with the column on malformed input."""
    tokens = _FormTokens(text)
    parser = _FormParser(tokens)
    form = parser.form(num_operands)
    if tokens.peek() is not None:
        tokens.fail("unexpected text after the form")
    return form


class _FormParser:
    def __init__(self, tokens: _FormTokens) -> None:
        self.t = tokens

    def int_expr(self) -> IntExpr:
        return parse_int_tokens(self.t)

    def form(self, num_operands: int) -> GenericForm:
        t = self.t
        t.expect("out")
        t.expect("[")
        parallel: list[LoopDim] = []
        closed = t.accept("]")
        while not closed:
            name = t.name()
            t.expect("<")
            parallel.append(LoopDim(name, IntExpr.const(0), self.int_expr()))
            closed = t.end_item("]")
        t.expect("=")
        kind: str | None = None
        reduced: list[LoopDim] = []
        if t.kind() == "name" and t.peek(1) == "over":
            kind = t.name()
            t.expect("over")
            closed = False
            while not closed:
                name = t.name()
                t.expect("in")
                t.expect("[")
                lower = self.int_expr()
                t.expect(",")
                upper = self.int_expr()
                t.expect(")")
                reduced.append(LoopDim(name, lower, upper))
                closed = t.end_item("of")
        body = self.scalar()
        finalize = self.scalar() if t.accept("then") else None
        return GenericForm(tuple(parallel), body, num_operands, kind, tuple(reduced), finalize)

    # ---- scalars ------------------------------------------------------------------------------
    def scalar(self) -> ScalarExpr:
        left = self.sum()
        op = self.t.peek()
        if op in _CMP and self.t.kind() == "op":
            self.t.take()
            return call(_CMP[op], left, self.sum())
        return left

    def sum(self) -> ScalarExpr:
        return self.chain(self.product, {"+": "add", "-": "sub"})

    def product(self) -> ScalarExpr:
        return self.chain(self.unary, {"*": "mul", "/": "div"})

    def chain(self, operand: Callable[[], ScalarExpr], ops: dict[str, str]) -> ScalarExpr:
        """`a op b op c ...`, left-associated; each operator nests the tree one level deeper, so
        it counts against `MAX_DEPTH` like a parenthesis (the form's traversals recurse on the
        tree)."""
        t = self.t
        result = operand()
        levels = 0
        while t.peek() in ops:
            fn = ops[t.take()]
            t.nest()
            levels += 1
            result = call(fn, result, operand())
        t.depth -= levels
        return result

    def unary(self) -> ScalarExpr:
        t = self.t
        minuses = 0
        while t.accept("-"):
            minuses += 1
            t.nest()
        result = self.atom()
        for _ in range(minuses):
            if isinstance(result, Const) and not isinstance(result.value, bool):
                result = Const(-result.value)
            else:
                result = call("neg", result)
        t.depth -= minuses
        return result

    def atom(self) -> ScalarExpr:
        t = self.t
        kind, token = t.kind(), t.peek()
        if kind == "number":
            t.take()
            assert token is not None
            return Const(int(token) if token.isdigit() else float(token))
        if token == "(":
            t.take()
            t.nest()
            inner = self.scalar()
            t.expect(")")
            t.depth -= 1
            return inner
        if kind != "name" or token is None:
            t.fail("expected a scalar expression")
        if token in _CONSTANTS:
            t.take()
            return Const(_CONSTANTS[token])
        if token == "acc":
            t.take()
            return Reduced()
        if token == "idx":
            t.take()
            t.expect("(")
            expr = self.int_expr()
            t.expect(")")
            return Index(expr)
        read = _READ.fullmatch(token)
        if read is not None:
            t.take()
            t.expect("[")
            index: list[IntExpr] = []
            closed = t.accept("]")
            while not closed:
                index.append(self.int_expr())
                closed = t.end_item("]")
            return Read(int(read.group(1)), tuple(index))
        return self.call()

    def call(self) -> ScalarExpr:
        t = self.t
        start = t.pos
        fn = t.name()
        t.expect("(")
        t.nest()
        args: list[ScalarExpr | str] = []
        closed = False
        while not closed:
            token = t.peek()
            if token in DTYPES and t.kind() == "name" and t.peek(1) in (",", ")"):
                args.append(t.take())
            else:
                args.append(self.scalar())
            closed = t.end_item(")")
        t.depth -= 1
        try:
            return _make_call(fn, args)
        except (KeyError, ValueError, TypeError) as err:
            reason = err.args[0] if err.args else err
            t.fail(f"bad call of {fn!r}: {reason}", at=start)


def _make_call(fn: str, args: list[ScalarExpr | str]) -> Call:
    """pow's exponent and cast's dtype are parameters, written as the last argument."""
    param: float | str | None = None
    if fn in ("pow", "cast"):
        *args, last = args
        param = float(last.value) if isinstance(last, Const) else last  # type: ignore[assignment]
    if any(isinstance(a, str) for a in args):
        raise ValueError("a dtype is only cast's last argument")
    return call(fn, *args, param=param)  # type: ignore[arg-type]
