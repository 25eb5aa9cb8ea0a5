"""`!ax.tensor<[M, K*2], bf16>`: a tensor type with static or symbolic dims and a dtype."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from axon.dialects.form.dtypes import dtype_attr, dtype_name
from axon.dialects.form.intexpr import IntExpr, IntLike, parse_int_expr


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
            dim = parse_int_expr(d.data)
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
    """Recursive descent over xDSL tokens: `+ - * ( )`, `floordiv`, `mod`, `min(a, b)`,
    `max(a, b)`."""

    def expr() -> IntExpr:
        result = term()
        while True:
            if parser.parse_optional_punctuation("+") is not None:
                result = result + term()
            elif parser.parse_optional_punctuation("-") is not None:
                result = result - term()
            else:
                return result

    def term() -> IntExpr:
        result = factor()
        while True:
            if parser.parse_optional_punctuation("*") is not None:
                result = result * factor()
            elif parser.parse_optional_keyword("floordiv") is not None:
                result = result.floordiv(factor())
            elif parser.parse_optional_keyword("mod") is not None:
                result = result.mod(factor())
            else:
                return result

    def factor() -> IntExpr:
        if parser.parse_optional_punctuation("-") is not None:
            return -factor()
        if parser.parse_optional_punctuation("(") is not None:
            inner = expr()
            parser.parse_punctuation(")")
            return inner
        value = parser.parse_optional_integer(allow_boolean=False, allow_negative=False)
        if value is not None:
            return IntExpr.const(value)
        name = parser.parse_identifier(" in a tensor dim (an integer or a size symbol)")
        if name in ("min", "max") and parser.parse_optional_punctuation("(") is not None:
            a = expr()
            parser.parse_punctuation(",")
            b = expr()
            parser.parse_punctuation(")")
            return getattr(a, name)(b)
        return IntExpr.sym(name)

    return expr()
