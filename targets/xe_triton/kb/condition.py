"""The knowledge base's condition language: when a pattern applies, over named facts.

A condition is a small boolean expression, parsed here (never `eval`) and type-checked against
the facts it may name, so a typo is a located error when the KB is loaded, not a silent False
when a kernel is emitted:

    device.vendor == intel and kernel.kind in [matmul, batched_matmul]
    kernel.tile_bytes >= 32768 and not device.large_grf
    kernel.programs < device.cores * 2

Grammar (lowest precedence first):

    or      := and ('or' and)*
    and     := not ('and' not)*
    not     := 'not' not | compare
    compare := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum | 'not'? 'in' list)?
    sum     := product (('+' | '-') product)*
    product := atom ('*' atom)*
    atom    := number | 'true' | 'false' | fact | symbol | '(' or ')'
    list    := '[' (atom (',' atom)*)? ']'

A `fact` is a dotted name (`device.cores`); a `symbol` is a bare word or a quoted string
(`intel`, `'256'`), compared only with a fact of symbol kind, whose known values it must be one
of. Numbers compare and add with numbers, booleans combine with `and`, `or`, `not`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

#: what a fact holds: a number, a truth value, or one of a fixed set of names
FactKind = Literal["number", "bool", "symbol"]


@dataclass(frozen=True)
class Fact:
    """A fact a condition may name: its kind, and for a symbol fact its possible values."""

    kind: FactKind
    symbols: tuple[str, ...] = ()
    doc: str = ""


class ConditionError(ValueError):
    """A condition that does not parse or type-check, at a 0-based offset into its text."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<string>'[^']*'|"[^"]*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op>==|!=|<=|>=|<|>|\+|-|\*|\(|\)|\[|\]|,)
""", re.VERBOSE)
_KEYWORDS = {"and", "or", "not", "in", "true", "false"}
_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, name, op, keyword, end
    text: str
    offset: int


@dataclass(frozen=True)
class Expr:
    """A node of a parsed condition: `op` names what it does, `args` its operands."""

    op: str
    """`const`, `fact`, `and`, `or`, `not`, a comparison, `+`, `-`, `*`, `in`, `not in`."""
    args: tuple[Expr, ...] = ()
    value: float | bool | str = 0
    """The constant of a `const`, the fact's name of a `fact`."""
    kind: FactKind | None = None
    """The type the node evaluates to; None for a symbol constant, typed by what it meets."""


@dataclass(frozen=True)
class Condition:
    """A parsed condition and the text it was written as."""

    text: str
    expr: Expr

    def facts(self) -> set[str]:
        """The facts the condition names."""
        found: set[str] = set()
        stack = [self.expr]
        while stack:
            node = stack.pop()
            if node.op == "fact":
                found.add(str(node.value))
            stack.extend(node.args)
        return found

    def holds(self, values: Mapping[str, float | bool | str]) -> bool:
        """Whether the condition is true under `values` (every fact it names by name)."""
        result = _evaluate(self.expr, values)
        assert isinstance(result, bool)
        return result


def parse_condition(text: str, facts: Mapping[str, Fact]) -> Condition:
    """Parse and type-check `text` over `facts`; ConditionError at the offending offset."""
    parser = _Parser(text, facts)
    expr = parser.disjunction()
    parser.expect_end()
    if expr.kind != "bool":
        raise ConditionError(f"expected a condition (true or false), got a {_kind(expr)}", 0)
    return Condition(text, expr)


class _Parser:
    def __init__(self, text: str, facts: Mapping[str, Fact]):
        self.text = text
        self.facts = facts
        self.tokens = self.tokenize(text)
        self.position = 0

    @staticmethod
    def tokenize(text: str) -> list[_Token]:
        tokens: list[_Token] = []
        offset = 0
        while offset < len(text):
            match = _TOKEN.match(text, offset)
            if match is None:
                raise ConditionError(f"unexpected character {text[offset]!r}", offset)
            kind = match.lastgroup
            assert kind is not None
            if kind != "space":
                word = match.group()
                if kind == "name" and word in _KEYWORDS:
                    kind = "keyword"
                tokens.append(_Token(kind, word, offset))
            offset = match.end()
        tokens.append(_Token("end", "", len(text)))
        return tokens

    def peek(self) -> _Token:
        return self.tokens[self.position]

    def take(self) -> _Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def accept(self, *texts: str) -> _Token | None:
        token = self.peek()
        if token.kind in ("op", "keyword") and token.text in texts:
            self.position += 1
            return token
        return None

    def expect(self, text: str) -> _Token:
        token = self.accept(text)
        if token is None:
            raise self.unexpected(f"'{text}'")
        return token

    def expect_end(self) -> None:
        if self.peek().kind != "end":
            raise self.unexpected("'and', 'or' or the end of the condition")

    def unexpected(self, wanted: str) -> ConditionError:
        token = self.peek()
        got = "the end of the condition" if token.kind == "end" else repr(token.text)
        return ConditionError(f"expected {wanted}, got {got}", token.offset)

    def disjunction(self) -> Expr:
        return self.chain("or", self.conjunction)

    def conjunction(self) -> Expr:
        return self.chain("and", self.negation)

    def chain(self, word: str, operand: Callable[[], Expr]) -> Expr:
        start = self.peek().offset
        expr = operand()
        while self.accept(word) is not None:
            right_start = self.peek().offset
            right = operand()
            _want(expr, "bool", start, word)
            _want(right, "bool", right_start, word)
            expr = Expr(word, (expr, right), kind="bool")
        return expr

    def negation(self) -> Expr:
        if self.accept("not") is not None:
            start = self.peek().offset
            operand = self.negation()
            _want(operand, "bool", start, "not")
            return Expr("not", (operand,), kind="bool")
        return self.comparison()

    def comparison(self) -> Expr:
        start = self.peek().offset
        left = self.sum()
        if (token := self.accept(*_COMPARISONS)) is not None:
            right_start = self.peek().offset
            right = self.sum()
            if token.text in ("==", "!="):
                left, right = self.unify(left, start, right, right_start)
            else:
                _want(left, "number", start, token.text)
                _want(right, "number", right_start, token.text)
            return Expr(token.text, (left, right), kind="bool")
        negated = self.peek().text == "not" and self.tokens[self.position + 1].text == "in"
        if negated:
            self.take()
        if self.accept("in") is not None:
            items = self.items()
            typed = []
            for item, offset in items:
                left, item = self.unify(left, start, item, offset)
                typed.append(item)
            return Expr("not in" if negated else "in", (left, *typed), kind="bool")
        return left

    def items(self) -> list[tuple[Expr, int]]:
        self.expect("[")
        items: list[tuple[Expr, int]] = []
        if self.accept("]") is None:
            while True:
                offset = self.peek().offset
                items.append((self.atom(), offset))
                if self.accept("]") is not None:
                    break
                self.expect(",")
        return items

    def unify(self, left: Expr, left_at: int, right: Expr,
              right_at: int) -> tuple[Expr, Expr]:
        """Both sides of `==` (or a list member and its subject) typed alike: a symbol constant
        takes the kind of the fact it meets and must be one of its values."""
        if left.kind is None and right.kind is None:
            raise ConditionError("expected a fact on one side of a comparison of names",
                                 left_at)
        if left.kind is None:
            return self.symbol(left, right, left_at), right
        if right.kind is None:
            return left, self.symbol(right, left, right_at)
        if left.kind != right.kind:
            raise ConditionError(f"cannot compare a {_kind(left)} with a {_kind(right)}",
                                 right_at)
        return left, right

    def symbol(self, constant: Expr, fact: Expr, offset: int) -> Expr:
        if fact.kind != "symbol":
            raise ConditionError(f"expected a {_kind(fact)}, got the name "
                                 f"{constant.value!r}", offset)
        known = self.facts[str(fact.value)].symbols if fact.op == "fact" else ()
        if known and constant.value not in known:
            raise ConditionError(f"{fact.value}: expected one of {', '.join(known)}, got "
                                 f"{constant.value!r}", offset)
        return Expr("const", value=constant.value, kind="symbol")

    def sum(self) -> Expr:
        start = self.peek().offset
        expr = self.product()
        while (token := self.accept("+", "-")) is not None:
            right_start = self.peek().offset
            right = self.product()
            _want(expr, "number", start, token.text)
            _want(right, "number", right_start, token.text)
            expr = Expr(token.text, (expr, right), kind="number")
        return expr

    def product(self) -> Expr:
        start = self.peek().offset
        expr = self.atom()
        while self.accept("*") is not None:
            right_start = self.peek().offset
            right = self.atom()
            _want(expr, "number", start, "*")
            _want(right, "number", right_start, "*")
            expr = Expr("*", (expr, right), kind="number")
        return expr

    def atom(self) -> Expr:
        token = self.peek()
        if self.accept("(") is not None:
            expr = self.disjunction()
            self.expect(")")
            return expr
        if token.kind == "number":
            self.take()
            return Expr("const", value=float(token.text), kind="number")
        if token.kind == "keyword" and token.text in ("true", "false"):
            self.take()
            return Expr("const", value=token.text == "true", kind="bool")
        if token.kind == "string":
            self.take()
            return Expr("const", value=token.text[1:-1])
        if token.kind == "name":
            self.take()
            if "." not in token.text:
                return Expr("const", value=token.text)
            fact = self.facts.get(token.text)
            if fact is None:
                raise ConditionError(f"unknown fact '{token.text}'; known: "
                                     f"{', '.join(sorted(self.facts))}", token.offset)
            return Expr("fact", value=token.text, kind=fact.kind)
        raise self.unexpected("a number, a fact, a name or '('")


def _want(expr: Expr, kind: FactKind, offset: int, operator: str) -> None:
    if expr.kind != kind:
        raise ConditionError(f"'{operator}' expects a {_KIND_NAMES[kind]}, got a "
                             f"{_kind(expr)}", offset)


_KIND_NAMES = {"number": "number", "bool": "condition", "symbol": "name"}


def _kind(expr: Expr) -> str:
    return _KIND_NAMES[expr.kind] if expr.kind is not None else "name"


def _evaluate(expr: Expr, values: Mapping[str, float | bool | str]) -> float | bool | str:
    op, args = expr.op, expr.args
    if op == "const":
        return expr.value
    if op == "fact":
        return values[str(expr.value)]
    if op == "and":
        return bool(_evaluate(args[0], values)) and bool(_evaluate(args[1], values))
    if op == "or":
        return bool(_evaluate(args[0], values)) or bool(_evaluate(args[1], values))
    if op == "not":
        return not _evaluate(args[0], values)
    if op in ("in", "not in"):
        subject = _evaluate(args[0], values)
        found = any(subject == _evaluate(item, values) for item in args[1:])
        return found if op == "in" else not found
    left, right = _evaluate(args[0], values), _evaluate(args[1], values)
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    assert isinstance(left, int | float) and isinstance(right, int | float)
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    if op == ">=":
        return left >= right
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    assert op == "*", op
    return left * right
