"""Parse the text syntax of generic forms (the inverse of `str(GenericForm)`).

Used by `ax.generic`, whose meaning is written out in its `form` attribute, and by tests that state
forms directly. The grammar lives in generic_form.lark beside this file.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedInput, VisitError

from axon.dialects.form.generic_form import FormError, GenericForm, LoopDim
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Const, Index, Read, Reduced, ScalarExpr, call

_CMP = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "generic_form.lark").read_text()
    return Lark(grammar, parser="earley", maybe_placeholders=True)


@v_args(inline=True)
class _ToForm(Transformer[Token, Any]):
    # integer expressions
    def iconst(self, tok: Token) -> IntExpr:
        return IntExpr.const(int(tok))

    def isym(self, tok: Token) -> IntExpr:
        return IntExpr.sym(str(tok))

    def ineg(self, a: IntExpr) -> IntExpr:
        return -a

    def iadd(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return a + b

    def isub(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return a - b

    def imul(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return a * b

    def ifloordiv(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return a.floordiv(b)

    def imod(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return a.mod(b)

    def imin(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return a.min(b)

    def imax(self, a: IntExpr, b: IntExpr) -> IntExpr:
        return a.max(b)

    # scalars
    def number(self, tok: Token) -> Const:
        text = str(tok)
        return Const(int(text) if text.isdigit() else float(text))

    def true(self) -> Const:
        return Const(True)

    def false(self) -> Const:
        return Const(False)

    def inf(self) -> Const:
        return Const(float("inf"))

    def nan(self) -> Const:
        return Const(float("nan"))

    def acc(self) -> Reduced:
        return Reduced()

    def read(self, tok: Token, *index: IntExpr | None) -> Read:
        return Read(int(str(tok)[2:]), tuple(i for i in index if i is not None))

    def index(self, expr: IntExpr) -> Index:
        return Index(expr)

    def dtype(self, tok: Token) -> str:
        return str(tok)

    def call(self, name: Token, *args: Any) -> ScalarExpr:
        fn = str(name)
        if fn in ("pow", "cast"):
            *operands, param = args
            if isinstance(param, Const):
                param = float(param.value)
            return call(fn, *operands, param=param)
        return call(fn, *args)

    def neg(self, a: ScalarExpr) -> ScalarExpr:
        if isinstance(a, Const) and not isinstance(a.value, bool):
            return Const(-a.value)
        return call("neg", a)

    def add(self, a: ScalarExpr, b: ScalarExpr) -> Call:
        return call("add", a, b)

    def sub(self, a: ScalarExpr, b: ScalarExpr) -> Call:
        return call("sub", a, b)

    def mul(self, a: ScalarExpr, b: ScalarExpr) -> Call:
        return call("mul", a, b)

    def div(self, a: ScalarExpr, b: ScalarExpr) -> Call:
        return call("div", a, b)

    def compare(self, a: ScalarExpr, op: Token, b: ScalarExpr) -> Call:
        return call(_CMP[str(op)], a, b)

    # structure
    def pdim(self, name: Token, upper: IntExpr) -> LoopDim:
        return LoopDim(str(name), IntExpr.const(0), upper)

    def rdim(self, name: Token, lower: IntExpr, upper: IntExpr) -> LoopDim:
        return LoopDim(str(name), lower, upper)

    def reduction(self, kind: Token, *dims: LoopDim) -> tuple[str, tuple[LoopDim, ...]]:
        return str(kind), dims


def parse_form(text: str, num_operands: int) -> GenericForm:
    """Parse form text; FormError with the position on malformed input."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        raise FormError(f"malformed generic form at column {err.column}: "
                        f"{err.get_context(text).strip()}") from None
    except LarkError as err:
        raise FormError(f"malformed generic form: {err}") from None
    try:
        children = _ToForm().transform(tree).children
    except VisitError as err:
        raise FormError(f"malformed generic form: {err.orig_exc}") from None
    if children and children[0] is None:
        # a 0-d output (`out[] = ...`) leaves a placeholder for the absent pdim list
        children = children[1:]
    pdims = [c for c in children if isinstance(c, LoopDim)]
    # the optional parts arrive as None placeholders: [reduction] body [then finalize]
    reduction, body, _then, finalize = [c for c in children if not isinstance(c, LoopDim)]
    kind, reduced = reduction if reduction is not None else (None, ())
    return GenericForm(tuple(pdims), body, num_operands, kind, tuple(reduced), finalize)
