"""Long programs through the verifier: no RecursionError, and a verdict that says why.

A chain `y = y * 1.0001 + c` multiplies its normal form's coefficients by a 53-bit fraction per
statement; identical programs are proved by their shared structure whatever their length,
reordered ones through the normal forms while the coefficients stay within their limit, and
past it the answer is an Unknown that names the limit (or a refutation, when the interpreter
finds a difference)."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp

from axon.dialects.form.intexpr import IntExpr
from axon.tools.embed import parse_source, run_pipeline
from axon.verifier import terms as T


def chain(name: str, statements: int, *, reordered: bool = False, period: int = 7) -> str:
    lines = [f"def {name}(x: f32[N]):", "    y0 = x"]
    for i in range(1, statements + 1):
        lines.append(f"    y{i} = {i % period} + 1.0001 * y{i - 1}" if reordered
                     else f"    y{i} = y{i - 1} * 1.0001 + {i % 7}")
    return "\n".join([*lines, f"    return y{statements}", ""])


def verdict(f_source: str, g_source: str) -> str:
    module = parse_source(f_source + g_source, "chain.py")
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}
    funcs["g"].attributes["axon.equivalent_to"] = SymbolRefAttr("f")
    run_pipeline(module, "verify-equivalence")
    found = funcs["g"].attributes["axon.verdict"]
    assert isinstance(found, StringAttr)
    return found.data


@pytest.mark.parametrize("statements", [100, 1_000])
def test_identical_long_chains_are_proved(statements: int) -> None:
    # once an internal RecursionError made this unknown at 100 statements
    assert verdict(chain("f", statements), chain("g", statements)) == "proved"


def test_a_reordered_chain_is_proved_through_its_normal_form() -> None:
    assert verdict(chain("f", 100), chain("g", 100, reordered=True)) == "proved"


@pytest.mark.parametrize("statements", [100, 400])
def test_a_different_chain_is_refuted(statements: int) -> None:
    assert verdict(chain("f", statements),
                   chain("g", statements, reordered=True, period=5)) == "refuted"


def test_past_the_coefficient_limit_the_answer_is_unknown_not_proved(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert verdict(chain("f", 400), chain("g", 400, reordered=True)) == "unknown"
    assert "a coefficient grew past" in capsys.readouterr().err


def test_deeply_nested_selects_build_without_recursion_on_their_depth() -> None:
    # `select` decides nested selects on its own condition a bounded depth down only
    x = T.atom(T.Read("a0", (IntExpr.sym("$o0_0"),)))
    value = x
    for i in range(600):  # a term's text stays under MAX_TERM_CHARS
        cond = T.icompare("le", IntExpr.sym("$o0_0") - i)
        value = T.select(cond, x * T.const(i), value)
    assert isinstance(value, T.Poly) and len(value.terms) == 1
    same = T.icompare("le", IntExpr.sym("$o0_0") - 599)
    assert T.select(same, value, x) == T.select(same, x * T.const(599), x)
