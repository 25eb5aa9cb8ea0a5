"""Programs of real size through every tool a user touches: 10,000 statements and 2,000-term
expressions are parsed, printed, re-parsed, proved equal to themselves and propagated, with no
RecursionError anywhere and the meaning kept (checked by the interpreter).

Times and peak memory against the issue's targets are the scaling benchmark's job
(`python -m axon.benchmarks.scaling`); these tests check that nothing breaks at the size.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp

from axon.interpreter import run_function
from axon.tools.embed import parse_mlir, parse_source, print_ir, run_pipeline

STATEMENTS = 10_000
TERMS = 2_000


def chain(name: str, statements: int) -> str:
    """`y{i} = y{i-1} * 1.0001 + {i % 7}`: a straight line with nothing to propagate."""
    lines = [f"def {name}(x: f32[N]):", "    y0 = x"]
    lines += [f"    y{i} = y{i - 1} * 1.0001 + {i % 7}" for i in range(1, statements + 1)]
    return "\n".join([*lines, f"    return y{statements}", ""])


def flat_sum(name: str, terms: int) -> str:
    """One statement whose expression is a sum of `terms` products."""
    body = " + ".join(f"x * {i % 5 + 1}" for i in range(terms))
    return f"def {name}(x: f32[N]):\n    return {body}\n"


def functions(module: ModuleOp) -> dict[str, FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}


def round_trip(text: str) -> ModuleOp:
    """Parse the source, mark `g` as equivalent to `f`, print, and read the printed IR back."""
    module = parse_source(text, "big.py")
    functions(module)["g"].attributes["axon.equivalent_to"] = SymbolRefAttr("f")
    printed = print_ir(module)
    again = parse_mlir(printed, "big.mlir")
    assert print_ir(again) == printed
    return again


def chain_value(x: np.ndarray, statements: int) -> np.ndarray:
    y = x.astype(np.float64)
    for i in range(1, statements + 1):
        y = y * 1.0001 + i % 7
    return y


@pytest.mark.parametrize(("text", "expected"), [
    (chain("f", STATEMENTS) + chain("g", STATEMENTS),
     lambda x: chain_value(x, STATEMENTS)),
    (flat_sum("f", TERMS) + flat_sum("g", TERMS),
     lambda x: x.astype(np.float64) * sum(i % 5 + 1 for i in range(TERMS))),
], ids=["chain-10000", "sum-2000"])
def test_real_size_programs_go_through_every_tool(text: str, expected) -> None:  # type: ignore[no-untyped-def]
    module = round_trip(text)
    x = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    (result,) = run_function(functions(module)["f"], [x], exact=True)
    np.testing.assert_allclose(result, expected(x), rtol=1e-9)

    run_pipeline(module, "verify-equivalence")
    verdict = functions(module)["g"].attributes["axon.verdict"]
    assert isinstance(verdict, StringAttr) and verdict.data == "proved"

    run_pipeline(module, "propagate{time_limit=60.0}")
    (after,) = run_function(functions(module)["f"], [x], exact=True)
    np.testing.assert_allclose(after, expected(x), rtol=1e-9)
