"""Program size and nesting: the source frontend never recurses on a program's shape. Flat
expressions and bodies of any length parse; brackets nest up to MAX_NESTING, past which a
located diagnostic (never a RecursionError) says so."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from axon.dialects.ax.tensor_type import TensorType
from axon.frontend.diagnostics import SourceError
from axon.frontend.numpy_subset import parse_source
from axon.frontend.numpy_subset.syntax import MAX_NESTING, parse_tree
from axon.frontend.numpy_subset.tokens import tokenize
from axon.interpreter import run_module
from axon.tools import embed

HEADER = "def f(x: f32[N]):\n"
RETURN = "    return "
X = np.arange(5, dtype=np.float32)


def _ops(module: ModuleOp) -> list[str]:
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    return [op.name for op in func.body.block.ops]


def _run(module: ModuleOp) -> np.ndarray:
    (out,) = run_module(module, "f", [X])
    return out


@pytest.mark.parametrize("parse", [parse_source, embed.parse_source], ids=["frontend", "embed"])
def test_a_flat_sum_of_2000_terms(parse: Callable[[str, str], ModuleOp]) -> None:
    module = parse(HEADER + RETURN + " + ".join(["x"] * 2000) + "\n", "sum.py")
    assert _ops(module) == ["ax.add"] * 1999 + ["func.return"]
    np.testing.assert_array_equal(_run(module), 2000 * X)


def test_flat_chains_far_past_the_recursion_limit_fold() -> None:
    """20,000 unary minuses, a 20,000-term sum of numbers and a 20,000-term dim: each a chain
    20,000 deep in the tree, folded by the walker without recursion."""
    dim = "+".join(["N"] * 20_000)
    text = (f"def f(x: f32[N], y: f32[{dim}]):\n"
            f"{RETURN}x * ({'-' * 20_001}2) + ({' + '.join(['1'] * 20_000)})\n")
    module = parse_source(text, "chains.py")
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    y_type = func.args[1].type
    assert isinstance(y_type, TensorType) and str(y_type.shape[0]) == "20000*N"
    (out,) = run_module(module, "f", [X, np.zeros(20_000 * len(X), np.float32)])
    np.testing.assert_array_equal(out, X * -2 + 20_000)


@pytest.mark.parametrize("opener, closer", [("(", ")"), ("neg(", ")"), ("[", "][0]")],
                         ids=["parens", "calls", "lists"])
def test_brackets_nest_up_to_the_limit(opener: str, closer: str) -> None:
    module = parse_source(HEADER + RETURN + opener * MAX_NESTING + "x" + closer * MAX_NESTING
                          + "\n", "deep.py")
    calls = MAX_NESTING if opener == "neg(" else 0
    assert _ops(module) == ["ax.neg"] * calls + ["func.return"]
    np.testing.assert_array_equal(_run(module), X)  # an even number of negations


@pytest.mark.parametrize("opener, closer, depth", [("(", ")", 500), ("exp(", ")", 400),
                                                   ("[", "]", 300), ("x[", "]", 250)],
                         ids=["500 parens", "400 calls", "300 lists", "250 subscripts"])
def test_deeper_nesting_is_a_located_error(opener: str, closer: str, depth: int) -> None:
    text = HEADER + RETURN + opener * depth + "x" + closer * depth + "\n"
    with pytest.raises(SourceError) as info:
        parse_source(text, "deep.py")
    first, _, caret = str(info.value).split("\n")
    # at the bracket that opens level MAX_NESTING + 1
    column = len(RETURN + opener * MAX_NESTING + opener[:-1]) + 1
    assert first == (f"deep.py:2:{column}: error: brackets nested more than {MAX_NESTING} deep; "
                     f"the Axon subset, like Python, allows at most {MAX_NESTING}")
    assert caret == " " * (column - 1) + "^"


def _chain(statements: int) -> str:
    lines = [f"    y{i} = y{i - 1} * 1.0001 + {i % 7}" for i in range(1, statements + 1)]
    return "\n".join(["def f(y0: f32[N]):", *lines, f"    return y{statements}"]) + "\n"


def test_ten_thousand_statements_parse() -> None:
    text = _chain(10_000)
    (func,) = parse_tree(tokenize(text), text, "long.py").children
    (statements,) = [c for c in func.children if c is not None and c.kind == "suite"]
    assert len(statements.children) == 10_001
    assert [s.children[0].kind for s in statements.children[:3]] == ["assign"] * 3
    # the whole way to IR, with statements that build no op until the last
    lines = [f"    y{i} = (y{i - 1}, {i})[0]" for i in range(1, 10_001)]
    module = parse_source("\n".join([HEADER.rstrip(), "    y0 = x", *lines,
                                     f"{RETURN}y10000 * 3"]) + "\n", "long.py")
    assert _ops(module) == ["ax.constant", "ax.mul", "func.return"]
    np.testing.assert_array_equal(_run(module), 3 * X)


def test_a_chain_of_statements_means_what_numpy_computes() -> None:
    module = parse_source(_chain(300), "chain.py")
    assert len(_ops(module)) == 4 * 300 + 1
    expected: np.ndarray = X.copy()
    for i in range(1, 301):
        expected = expected * np.float32(1.0001) + np.float32(i % 7)
    np.testing.assert_array_equal(_run(module), expected)


def test_a_tower_of_integer_powers_is_an_overflow_error_not_a_hang() -> None:
    with pytest.raises(SourceError, match=r"^tower\.py:2:\d+: error: .*out of range"):
        parse_source(HEADER + RETURN + "x * 2 ** 2 ** 2 ** 2 ** 2 ** 2\n", "tower.py")
    module = parse_source(HEADER + RETURN + "x * 2 ** 3 ** 2\n", "tower.py")
    np.testing.assert_array_equal(_run(module), 512 * X)
