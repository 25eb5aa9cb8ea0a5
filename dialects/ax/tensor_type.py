"""`!ax.tensor<[M, K*2], bf16>`: a tensor type with static or symbolic dims and a dtype."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from axon.dialects.form.dtypes import dtype_attr, dtype_name
from axon.dialects.form.intexpr import IntExpr, IntLike, parse_int_expr, parse_int_tokens


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A ranked tensor; each dim is an integer expression over size symbols, kept canonical."""

    name = "ax.tensor"
    dims: ArrayAttr[StringAttr]
    element_type: Attribute

    def __init__(self, shape: Sequence[IntLike], element_type: Attribute | str):
        if isinstance(element_type, str):
            element_type = dtype_attr(element_type)
        super().__init__(ArrayAttr([StringAttr(str(IntExpr.lift(d))) for d in shape]),
                         element_type)

    @property
    def shape(self) -> tuple[IntExpr, ...]:
        return tuple(parse_int_expr(d.data) for d in self.dims.data)

    @property
    def rank(self) -> int:
        return len(self.dims.data)

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    def verify(self) -> None:
        try:
            dtype_name(self.element_type)
        except ValueError as err:
            raise VerifyException(str(err)) from None
        for d in self.dims.data:
            try:
                dim = parse_int_expr(d.data)
            except ValueError as err:
                raise VerifyException(f"tensor dim '{d.data}': {err}") from None
            if dim.is_const and dim.value < 0:
                raise VerifyException(f"tensor dim {dim} is negative")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                     lambda: _parse_dim(parser))
            parser.parse_punctuation(",")
            element = parser.parse_type()
        return (ArrayAttr([StringAttr(str(d)) for d in dims]), element)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<[{', '.join(d.data for d in self.dims.data)}], ")
        printer.print_attribute(self.element_type)
        printer.print_string(">")

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(d.data for d in self.dims.data)}]"


def _parse_dim(parser: AttrParser) -> IntExpr:
    """A tensor dim: the integer-expression grammar (`parse_int_tokens`) over xDSL's tokens."""
    return parse_int_tokens(_ParserTokens(parser))


class _ParserTokens:
    """`IntTokens` over xDSL's attribute parser (so types and text share one grammar)."""

    def __init__(self, parser: AttrParser) -> None:
        self.parser = parser

    def accept(self, symbol: str) -> bool:
        if symbol in ("floordiv", "mod"):
            return self.parser.parse_optional_keyword(symbol) is not None
        return self.parser.parse_optional_punctuation(symbol) is not None  # type: ignore[arg-type]

    def expect(self, symbol: str) -> None:
        self.parser.parse_punctuation(symbol)  # type: ignore[arg-type]

    def integer(self) -> int | None:
        return self.parser.parse_optional_integer(allow_boolean=False, allow_negative=False)

    def name(self) -> str:
        # xDSL's bare identifiers may hold dots and dollars (`ax.add`); a size symbol may not
        span = self.parser._current_token.span  # noqa: SLF001 - where the name starts
        name = self.parser.parse_identifier(" in a tensor dim (an integer or a size symbol)")
        if not name.isidentifier():
            self.parser.raise_error(f"'{name}' is not a size symbol (a name of letters, digits "
                                    "and '_') in a tensor dim", span.start, span.end)
        return name

    def fail(self, what: str) -> NoReturn:
        self.parser.raise_error(f"{what} in a tensor dim")
