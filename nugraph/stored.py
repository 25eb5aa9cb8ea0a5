"""Functions kept as text in a stored step result (`ProofCache.put_result`), and read back.

    texts = function_texts(funcs)          # one printed function each
    again = functions_from_texts(texts)    # new, detached FuncOps printing the same text

Reading back parses with every dialect Axon and xDSL register, so a result holding `ax`, `nu`
or `tile` ops reads back whatever context the caller has.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from io import StringIO

from xdsl.context import Context
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from axon.tools.registry import register_dialects


def function_text(func: FuncOp) -> str:
    """`func` as MLIR text (custom syntax)."""
    out = StringIO()
    Printer(stream=out).print_op(func)
    return out.getvalue()


def function_texts(funcs: Sequence[FuncOp]) -> list[str]:
    """Each function as MLIR text."""
    return [function_text(f) for f in funcs]


def functions_from_texts(texts: Sequence[str]) -> list[FuncOp]:
    """The functions `texts` print, parsed and verified, detached from any module."""
    module = Parser(register_dialects(Context()), "\n".join(texts)).parse_module()
    module.verify()
    funcs = list(module.ops)
    if len(funcs) != len(texts) or not all(isinstance(f, FuncOp) for f in funcs):
        raise ValueError("a stored result does not read back as its functions")
    for f in funcs:
        f.detach()
    return funcs  # type: ignore[return-value]


def stored_functions(texts: object, step: str) -> list[FuncOp] | None:
    """The functions of a stored result of `step`, or None (with a warning: the step is then
    run again) when they do not read back."""
    try:
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError("its functions are not a list of texts")
        return functions_from_texts(texts)
    except (ParseError, VerifyException, ValueError) as err:
        warnings.warn(f"a stored {step} result ignored: {err}", stacklevel=2)
        return None
