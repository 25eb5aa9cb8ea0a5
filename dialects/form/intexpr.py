"""Integer expressions over symbolic sizes and loop indices.

One small language serves three purposes: tensor dims in types (`M`, `M*N`, `K + 1`), index maps in
generic forms (`2*i + 1`, `t floordiv N`) and domain bounds (`j + 1`). Expressions are kept in a
canonical form, a polynomial over *atoms* (symbols and the non-polynomial `floordiv`, `mod`, `min`,
`max` nodes), so structurally different spellings of the same polynomial compare equal:
`M*N == N*M`, `(K + 1) - 1 == K`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import NoReturn, Protocol, TypeVar, Union

IntLike = Union["IntExpr", int, str]
T = TypeVar("T")


@dataclass(frozen=True)
class Atom:
    """A non-constant factor: a symbol, or a `floordiv`/`mod`/`min`/`max` of two expressions."""

    kind: str  # "sym" | "floordiv" | "mod" | "min" | "max"
    name: str = ""
    args: tuple[IntExpr, ...] = ()

    def __str__(self) -> str:
        if self.kind == "sym":
            return self.name
        return _kept_text(self)

    def _text(self) -> str:
        a, b = self.args
        if self.kind in ("min", "max"):
            return f"{self.kind}({a}, {b})"
        return f"{a._str_operand()} {self.kind} {b._str_operand(right=True)}"


Monomial = tuple[Atom, ...]  # sorted atoms with multiplicity; () is the constant monomial


@dataclass(frozen=True)
class IntExpr:
    """A canonical integer polynomial: a sorted tuple of (monomial, nonzero coefficient)."""

    terms: tuple[tuple[Monomial, int], ...]

    # ---- construction -------------------------------------------------------------------------
    @staticmethod
    def const(value: int) -> IntExpr:
        return IntExpr((((), value),) if value else ())

    @staticmethod
    def sym(name: str) -> IntExpr:
        return IntExpr((((Atom("sym", name),), 1),))

    @staticmethod
    def lift(value: IntLike) -> IntExpr:
        """Turn an int, a symbol name or expression text into an IntExpr."""
        if isinstance(value, IntExpr):
            return value
        if isinstance(value, bool):
            raise TypeError("a bool is not a size")
        if isinstance(value, int):
            return IntExpr.const(value)
        if isinstance(value, str):
            return parse_int_expr(value)
        raise TypeError(f"cannot use {value!r} as an integer expression")

    @staticmethod
    def _from_dict(acc: dict[Monomial, int]) -> IntExpr:
        return IntExpr(tuple(sorted(((m, c) for m, c in acc.items() if c), key=_term_key)))

    # ---- queries ------------------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return all(not m for m, _ in self.terms)

    @property
    def value(self) -> int:
        """The constant value; raises if the expression is not constant."""
        if not self.is_const:
            raise ValueError(f"{self} is not a constant")
        return self.terms[0][1] if self.terms else 0

    @property
    def as_symbol(self) -> str | None:
        """The symbol name when the expression is a single bare symbol."""
        if len(self.terms) == 1:
            (mono, coeff) = self.terms[0]
            if coeff == 1 and len(mono) == 1 and mono[0].kind == "sym":
                return mono[0].name
        return None

    def symbols(self) -> frozenset[str]:
        """Every symbol name that occurs, including inside floordiv/mod/min/max."""
        out: set[str] = set()
        for mono, _ in self.terms:
            for atom in mono:
                if atom.kind == "sym":
                    out.add(atom.name)
                else:
                    for arg in atom.args:
                        out |= arg.symbols()
        return frozenset(out)

    def is_affine_in(self, names: Iterable[str]) -> bool:
        """True when every named symbol occurs only linearly and outside floordiv/mod/min/max."""
        names = set(names)
        for mono, _ in self.terms:
            hits = [a for a in mono if a.kind == "sym" and a.name in names]
            if len(hits) > 1 and len(mono) > 1:
                return False
            for atom in mono:
                if atom.kind != "sym" and any(arg.symbols() & names for arg in atom.args):
                    return False
        return True

    # ---- arithmetic ---------------------------------------------------------------------------
    def __add__(self, other: IntLike) -> IntExpr:
        acc = dict(self.terms)
        for mono, coeff in IntExpr.lift(other).terms:
            acc[mono] = acc.get(mono, 0) + coeff
        return IntExpr._from_dict(acc)

    __radd__ = __add__

    def __neg__(self) -> IntExpr:
        return IntExpr(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: IntLike) -> IntExpr:
        return self + (-IntExpr.lift(other))

    def __rsub__(self, other: IntLike) -> IntExpr:
        return IntExpr.lift(other) - self

    def __mul__(self, other: IntLike) -> IntExpr:
        acc: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in IntExpr.lift(other).terms:
                mono = tuple(sorted(m1 + m2, key=str))
                acc[mono] = acc.get(mono, 0) + c1 * c2
        return IntExpr._from_dict(acc)

    __rmul__ = __mul__

    def floordiv(self, other: IntLike) -> IntExpr:
        den = IntExpr.lift(other)
        if den.is_const:
            d = den.value
            if d == 0:
                raise ZeroDivisionError(f"{self} floordiv 0")
            if d == 1:
                return self
            if all(c % d == 0 for _, c in self.terms):
                return IntExpr(tuple((m, c // d) for m, c in self.terms))
            # (d*A + c) floordiv d == A + (c floordiv d) for an integer polynomial A
            if all(c % d == 0 for m, c in self.terms if m):
                rest = IntExpr(tuple((m, c // d) for m, c in self.terms if m))
                return rest + _constant_term(self) // d
        if self.is_const and den.is_const:
            return IntExpr.const(self.value // den.value)
        if self == den:
            return IntExpr.const(1)
        return IntExpr((((Atom("floordiv", "", (self, den)),), 1),))

    def mod(self, other: IntLike) -> IntExpr:
        den = IntExpr.lift(other)
        if den.is_const:
            d = den.value
            if d == 0:
                raise ZeroDivisionError(f"{self} mod 0")
            if all(c % d == 0 for _, c in self.terms):
                return IntExpr.const(0)
            # (d*A + c) mod d == c mod d
            if all(c % d == 0 for m, c in self.terms if m):
                return IntExpr.const(_constant_term(self) % d)
        if self.is_const and den.is_const:
            return IntExpr.const(self.value % den.value)
        if self == den:
            return IntExpr.const(0)
        return IntExpr((((Atom("mod", "", (self, den)),), 1),))

    def min(self, other: IntLike) -> IntExpr:
        other = IntExpr.lift(other)
        if self == other:
            return self
        if self.is_const and other.is_const:
            return IntExpr.const(min(self.value, other.value))
        a, b = sorted((self, other), key=str)
        return IntExpr((((Atom("min", "", (a, b)),), 1),))

    def max(self, other: IntLike) -> IntExpr:
        other = IntExpr.lift(other)
        if self == other:
            return self
        if self.is_const and other.is_const:
            return IntExpr.const(max(self.value, other.value))
        a, b = sorted((self, other), key=str)
        return IntExpr((((Atom("max", "", (a, b)),), 1),))

    def ceildiv(self, other: IntLike) -> IntExpr:
        """ceil(self / other) for a positive divisor, as a floordiv."""
        den = IntExpr.lift(other)
        return (self + den - 1).floordiv(den)

    # ---- evaluation ---------------------------------------------------------------------------
    def fold(self, const: Callable[[int], T], sym: Callable[[str], T],
             apply: Callable[[str, T, T], T]) -> T:
        """The one traversal of an integer expression: its value in another domain (ints, z3
        terms, simplified expressions) whose values add and multiply, given the value of a
        constant, of a symbol, and of a `floordiv`/`mod`/`min`/`max` atom from its arguments'.

        `evaluate` and `substitute` here, the verifier's range simplification and its z3
        encoding are all folds."""
        total = const(0)
        for mono, coeff in self.terms:
            term = const(coeff)
            for atom in mono:
                if atom.kind == "sym":
                    value = sym(atom.name)
                else:
                    a, b = (arg.fold(const, sym, apply) for arg in atom.args)
                    value = apply(atom.kind, a, b)
                term = term * value  # type: ignore[operator]
            total = total + term  # type: ignore[operator]
        return total

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The value under concrete bindings of every symbol; floordiv and mod round to -inf.
        (`fold` with ints, written out: the interpreter evaluates indices by the million.)"""
        total = 0
        for mono, coeff in self.terms:
            term = coeff
            for atom in mono:
                if atom.kind == "sym":
                    if atom.name not in env:
                        raise KeyError(f"no value for size symbol '{atom.name}'")
                    term *= int(env[atom.name])
                else:
                    a, b = atom.args
                    term *= _eval_atom(atom.kind, a.evaluate(env), b.evaluate(env))
            total += term
        return total

    def substitute(self, env: Mapping[str, IntLike]) -> IntExpr:
        """Replace symbols by expressions (or ints); unbound symbols stay."""
        return self.fold(IntExpr.const,
                         lambda n: IntExpr.lift(env[n]) if n in env else IntExpr.sym(n),
                         lambda kind, a, b: getattr(a, kind)(b))

    # ---- printing -----------------------------------------------------------------------------
    def __str__(self) -> str:
        return _kept_text(self)

    def _text(self) -> str:
        if not self.terms:
            return "0"
        parts: list[str] = []
        for i, (mono, coeff) in enumerate(self.terms):
            alone = len(self.terms) == 1 and len(mono) == 1 and coeff == 1
            body = "*".join(_atom_text(a, not alone) for a in mono)
            mag = abs(coeff)
            text = str(mag) if not mono else (body if mag == 1 else f"{mag}*{body}")
            if i == 0:
                parts.append(f"-{text}" if coeff < 0 else text)
            else:
                parts.append(f" - {text}" if coeff < 0 else f" + {text}")
        return "".join(parts)

    def __repr__(self) -> str:
        return f"IntExpr({str(self)!r})"

    def _str_operand(self, right: bool = False) -> str:
        """Text safe to place beside a binary operator.

        On the right of `floordiv`/`mod` a product needs parentheses too: `x floordiv M*N`
        would parse back as `(x floordiv M) * N`."""
        text = str(self)
        simple = len(self.terms) <= 1 and (not self.terms or self.terms[0][1] >= 0)
        if right and simple and self.terms:
            mono, coeff = self.terms[0]
            simple = len(mono) + (coeff != 1) <= 1
        if simple and not (self.terms and len(self.terms[0][0]) == 1
                           and self.terms[0][0][0].kind in ("floordiv", "mod")):
            return text
        return f"({text})"


def _kept_text(expr: Atom | IntExpr) -> str:
    """`expr._text()`, made once: the text is the sort key of monomials and min/max arguments,
    asked for again and again of the same (immutable) expression, so it is kept in the
    instance's `__dict__`, beside the fields and outside eq and hash."""
    text = expr.__dict__.get("_text")
    if text is None:
        text = expr.__dict__["_text"] = expr._text()
    return text


def _constant_term(expr: IntExpr) -> int:
    return sum(c for m, c in expr.terms if not m)


def _term_key(term: tuple[Monomial, int]) -> tuple[int, int, str]:
    mono, coeff = term
    # positive terms first, the constant last, so `d0 - K + 1` reads naturally
    return (0 if mono else 1, 0 if coeff > 0 else 1, "*".join(str(a) for a in mono))


def _atom_text(atom: Atom, in_product: bool) -> str:
    text = str(atom)
    if in_product and atom.kind in ("floordiv", "mod"):
        return f"({text})"
    return text


def _eval_atom(kind: str, a: int, b: int) -> int:
    if kind == "floordiv":
        return a // b
    if kind == "mod":
        return a % b
    return min(a, b) if kind == "min" else max(a, b)


# ---- parsing ----------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(.))")


class IntExprSyntaxError(ValueError):
    """Raised for malformed integer-expression text; the message names the offending token."""


class IntTokens(Protocol):
    """A token stream the integer-expression grammar reads: text (`parse_int_expr`) or xDSL's
    attribute parser (tensor dims in types, `dialects/ax/tensor_type.py`)."""

    def accept(self, symbol: str) -> bool:
        """Consume `symbol` (punctuation or a keyword) when it comes next."""
        ...

    def expect(self, symbol: str) -> None:
        """Consume `symbol`, or raise a syntax error naming it."""
        ...

    def integer(self) -> int | None:
        """Consume a nonnegative integer literal when one comes next."""
        ...

    def name(self) -> str:
        """Consume a symbol name (an identifier other than `floordiv` and `mod`), or raise."""
        ...

    def fail(self, what: str) -> NoReturn:
        """Raise a syntax error at the current token saying `what` went wrong."""
        ...


MAX_INT_DEPTH = 64
"""Most nested parentheses, unary minuses and min/max calls one integer expression may spell out
(the grammar recurses only on these)."""


def parse_int_tokens(tokens: IntTokens) -> IntExpr:
    """The integer-expression grammar, written once:

        expr   := term (("+" | "-") term)*
        term   := factor (("*" | "floordiv" | "mod") factor)*
        factor := "-" factor | "(" expr ")" | INT | FN "(" expr "," expr ")" | NAME
        FN     := "min" | "max" | "ceildiv"

    `ceildiv(a, b)` is `(a + b - 1) floordiv b` (as that prints), for a positive `b`.

    It loops over sums and products and recurses only on nesting, which `MAX_INT_DEPTH` bounds.
    """
    depth = 0

    def expr() -> IntExpr:
        result = term()
        while True:
            if tokens.accept("+"):
                result = result + term()
            elif tokens.accept("-"):
                result = result - term()
            else:
                return result

    def term() -> IntExpr:
        result = factor()
        while True:
            if tokens.accept("*"):
                result = result * factor()
            elif tokens.accept("floordiv"):
                result = result.floordiv(factor())
            elif tokens.accept("mod"):
                result = result.mod(factor())
            else:
                return result

    def factor() -> IntExpr:
        nonlocal depth
        depth += 1
        if depth > MAX_INT_DEPTH:
            tokens.fail(f"integer expression nested deeper than {MAX_INT_DEPTH}")
        try:
            return nested_factor()
        finally:
            depth -= 1

    def nested_factor() -> IntExpr:
        if tokens.accept("-"):
            return -factor()
        if tokens.accept("("):
            inner = expr()
            tokens.expect(")")
            return inner
        value = tokens.integer()
        if value is not None:
            return IntExpr.const(value)
        name = tokens.name()
        if name in ("min", "max", "ceildiv") and tokens.accept("("):
            a = expr()
            tokens.expect(",")
            b = expr()
            tokens.expect(")")
            return getattr(a, name)(b)
        return IntExpr.sym(name)

    return expr()


class TokenList:
    """`IntTokens` over a list of token texts; a subclass says how a failure reads (`fail`)."""

    #: identifiers that are syntax, never a size symbol
    reserved: frozenset[str] = frozenset({"floordiv", "mod"})

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self, ahead: int = 0) -> str | None:
        at = self.pos + ahead
        return self.tokens[at] if at < len(self.tokens) else None

    def accept(self, symbol: str) -> bool:
        if self.peek() == symbol:
            self.pos += 1
            return True
        return False

    def expect(self, symbol: str) -> None:
        if not self.accept(symbol):
            self.fail(f"expected {symbol!r}")

    def integer(self) -> int | None:
        tok = self.peek()
        if tok is not None and tok.isdigit():
            self.pos += 1
            return int(tok)
        return None

    def name(self) -> str:
        tok = self.peek()
        if tok is None or not _NAME.fullmatch(tok) or tok in self.reserved:
            self.fail("expected a name")
        self.pos += 1
        return tok

    def fail(self, what: str) -> NoReturn:
        raise NotImplementedError


class _TextTokens(TokenList):
    """`IntTokens` over expression text."""

    def __init__(self, text: str) -> None:
        super().__init__([m.group(1) or m.group(2) or m.group(3) for m in _TOKEN.finditer(text)
                          if m.group(1) or m.group(2) or m.group(3)])
        self.text = text

    def fail(self, what: str) -> NoReturn:
        tok = self.peek()
        raise IntExprSyntaxError(f"in size expression '{self.text}': {what}, found "
                                 f"{'end of text' if tok is None else repr(tok)}")


_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@lru_cache(maxsize=1 << 16)
def parse_int_expr(text: str) -> IntExpr:
    """Parse `M*N`, `2*i + 1`, `(K + 3) floordiv 4`, `min(i, N)`, ... into an IntExpr.

    Memoized: types hold their dims as text and are read far more often than written, and an
    IntExpr is immutable, so the same text may always give the same object."""
    tokens = _TextTokens(text)
    result = parse_int_tokens(tokens)
    if tokens.peek() is not None:
        tokens.fail("unexpected text after the expression")
    return result
