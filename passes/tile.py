"""`tile`: tiled kernels for the functions of a module, each admitted only when proved.

For each `func.func`, the pass proposes a tiled kernel (today: the row kernel of a row-local
function, `tiling/rows.py`, the one-pass variant of row-wise normalizations), with the tile
parameter's limits taken from the device profile (`tiling/profiles.py`) as assumptions, and asks
the verifier to prove it equal to the function for every size and every tile size the
assumptions admit. Options:

- `profile` (default `h200`): the device profile whose limits the kernels meet;
- `emit="best"` (default): a proved kernel replaces the function's body; `emit="variants"`:
  the function stays and the kernel is added beside it as `@<name>_rows`, marked
  `axon.tiling_of = @<name>`.

Either way a proved kernel's function carries `axon.proof_id`. A report goes to stderr: one
line per function (proved, rejected with the verifier's reason, or not tileable and why) and a
summary with the time taken. Unknown is never admitted.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.rewriter import InsertPoint, Rewriter

from axon.dialects.tile import KernelOp
from axon.targets.profiles import load_profile, unknown_profile
from axon.tiling.profiles import row_constraints, row_tile_space
from axon.tiling.rows import BLOCK, NotTileable, row_inputs, row_kernel, row_size
from axon.tools.pass_options import CheckedPass, option
from axon.verifier import Proved, prove_equivalent


@dataclass(frozen=True)
class TilePass(CheckedPass):
    """Propose a tiled kernel per function; keep those the verifier proves."""

    name = "tile"

    profile: str = option("h200", "the device profile whose limits the kernels meet",
                          check=unknown_profile, valid="a profile of targets/*/profiles/")
    emit: Literal["best", "variants"] = option(
        "best", "best: a proved kernel replaces the function; variants: it is added beside it")
    timeout_ms: int = option(10_000, "milliseconds for one kernel's proof", at_least=1)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        profile = load_profile(self.profile)
        start = time.perf_counter()
        counts = {"proved": 0, "rejected": 0, "not tileable": 0}
        for func in [f for f in op.ops if isinstance(f, FuncOp)]:
            name = func.sym_name.data
            try:
                rows = row_size(func)
                constraints = row_constraints(profile, BLOCK, row_inputs(func, rows))
                kernel = row_kernel(func, constraints, row_tile_space(profile))
            except NotTileable as err:
                counts["not tileable"] += 1
                print(f"tile: @{name}: not tileable: {err}", file=sys.stderr)
                continue
            verdict = prove_equivalent(kernel, func, timeout_ms=self.timeout_ms)
            if not isinstance(verdict, Proved):
                counts["rejected"] += 1
                detail = getattr(verdict, "reason", None) or str(
                    getattr(verdict, "counterexample", verdict.verdict))
                print(f"tile: @{name}: row kernel rejected ({verdict.verdict}: {detail})",
                      file=sys.stderr)
                continue
            counts["proved"] += 1
            print(f"tile: @{name}: row kernel proved (proof {verdict.proof_id}, "
                  f"{verdict.seconds:.2f} s) under {', '.join(_assumed(kernel))}",
                  file=sys.stderr)
            kernel.attributes["axon.proof_id"] = StringAttr(verdict.proof_id)
            if self.emit == "best":
                kernel.sym_name = StringAttr(name)
                Rewriter.replace_op(func, kernel)
            else:
                kernel.attributes["axon.tiling_of"] = SymbolRefAttr(name)
                Rewriter.insert_op(kernel, InsertPoint.after(func))
        tried = sum(counts.values())
        print(f"tile: tried {tried}, proved {counts['proved']}, rejected {counts['rejected']}, "
              f"not tileable {counts['not tileable']} in {time.perf_counter() - start:.2f} s "
              f"(profile {self.profile})", file=sys.stderr)


def _assumed(kernel_func: FuncOp) -> list[str]:
    return [text for op in kernel_func.walk() if isinstance(op, KernelOp)
            for text in op.assumptions()]
