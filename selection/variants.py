"""A program's variants: the nu-graph's cheapest programs equal to it, for a target to tile.

Both targets take their candidates from the program and the nu-graph's next cheapest
programs (`propagate{emit="top-k"}`: every one proved equal to the program); each target
tiles them all and lets its cost model and measurements choose.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from axon.nugraph.stored import function_text
from axon.tools.embed import run_pipeline


def program_variants(func: FuncOp, profile: str, sizes: Mapping[str, int],
                     count: int) -> list[FuncOp]:
    """The program and the nu-graph's next `count - 1` cheapest programs equal to it."""
    if count <= 1:
        return [func]
    module = ModuleOp([func.clone()])
    shown = ",".join(f"{k}={v}" for k, v in sizes.items())
    run_pipeline(module, f'propagate{{emit="top-k" top_k={count} device={profile} '
                         f'sizes="{shown}"}}')
    return [op for op in module.ops if isinstance(op, FuncOp)]


def unnamed(func: FuncOp) -> str:
    """`func`'s text without its name (two variants compare by what they compute)."""
    return function_text(func).replace(func.sym_name.data, "f")
