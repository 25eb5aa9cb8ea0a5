"""`lower-nki`: lower each tiled function's kernel to `nki` instructions, proved.

Every function that is one `tile.kernel` and its return (as `tile` emits it for a NeuronCore
profile) is replaced by its lowering (`axon.targets.nki.lower`), once the verifier proves the
lowering equal to it; the function then carries `axon.nki_proof_id`. Other functions are left
as they are. A kernel that does not lower, or whose lowering is not proved (refuted or
unknown), fails the pass with the reason. Before:

    %7 = ax.mul %5, %6 : (!ax.tensor<[BM, N], bf16>, !ax.tensor<[BM, N], bf16>) -> ...
    tile.store %7 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>

after:

    %7 = nki.tensor_tensor %5, %6 {op = "multiply", buffer = "sbuf", dtype = bf16} : ...
    tile.store %7 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], bf16>

stderr gets a line per lowered function and a summary.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import PassFailedException

from axon.dialects.tile import KernelOp
from axon.targets.nki.lower import Refused, lower_and_prove
from axon.tools.pass_options import CheckedPass, option
from axon.verifier import ProofBudget
from axon.verifier.budget import DEFAULT_BUDGET


@dataclass(frozen=True)
class LowerNkiPass(CheckedPass):
    """Replace each tiled function by its proved lowering to `nki` instructions."""

    name = "lower-nki"

    proof_steps: int = option(DEFAULT_BUDGET.steps, "normalization steps for one lowering's "
                              "proof", at_least=1)
    proof_rlimit: int = option(DEFAULT_BUDGET.rlimit,
                               "z3 resource units (rlimit) for one lowering's proof", at_least=1)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        start = time.perf_counter()
        budget = ProofBudget(self.proof_steps, self.proof_rlimit, DEFAULT_BUDGET.seconds)
        lines = []
        funcs = [f for f in op.ops if isinstance(f, FuncOp)
                 and any(isinstance(o, KernelOp) for o in f.body.block.ops)]
        for func in funcs:
            try:
                lowered = lower_and_prove(func, budget)
            except Refused as err:
                raise PassFailedException(f"lower-nki: {err}") from None
            lowered.func.attributes["axon.nki_proof_id"] = StringAttr(lowered.proof_id)
            op.body.block.insert_op_before(lowered.func, func)
            op.body.block.erase_op(func)
            lines.append(f"lower-nki: @{func.sym_name.data}: proved (proof "
                         f"{lowered.proof_id}) in {lowered.seconds:.3f}s")
        lines.append(f"lower-nki: lowered {len(funcs)} kernel(s) in "
                     f"{time.perf_counter() - start:.3f}s")
        print("\n".join(lines), file=sys.stderr)
