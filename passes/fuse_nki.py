"""`fuse-nki`: fuse the instructions of each lowered NKI kernel, every rewrite proved.

Every function whose `tile.kernel` holds `nki` instructions (as `lower-nki` leaves it) is
rewritten by `axon.targets.nki.fuse.fuse_kernel`: each fusion its rules find is applied to a
copy, which replaces the function only when the verifier proves the two equal; a refuted or
unknown fusion is reported and dropped. The function then carries `axon.nki_fusions`, one
`rule: proof id` per admitted fusion. Other functions are left as they are. Before:

    %5 = nki.tensor_scalar %3, %4 {op0 = "subtract", ...}
    %6 = nki.activation %5 {func = "exp", ...}
    %7 = nki.tensor_reduce %6 {op = "add", axes = array<i64: 1>, keepdims = true, ...}

after:

    %n = nki.tensor_scalar %4 {op0 = "multiply", scalar0 = -1.0, ...}   (or the max negated)
    %6 = nki.activation %3, %n {func = "exp", ...}
    %7 = nki.activation_reduce %3, %n {func = "exp", reduce_op = "add", ...}

stderr gets a line per fusion tried (rule, instructions, verdict) and one per function.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp

from axon.dialects import nki
from axon.dialects.tile import KernelOp
from axon.targets.nki.fuse import fuse_kernel
from axon.tools.pass_options import CheckedPass, option
from axon.verifier import ProofBudget
from axon.verifier.budget import DEFAULT_BUDGET


@dataclass(frozen=True)
class FuseNkiPass(CheckedPass):
    """Fuse each lowered kernel's instructions where a proof admits it."""

    name = "fuse-nki"

    proof_steps: int = option(DEFAULT_BUDGET.steps, "normalization steps for one fusion's "
                              "proof", at_least=1)
    proof_rlimit: int = option(DEFAULT_BUDGET.rlimit,
                               "z3 resource units (rlimit) for one fusion's proof", at_least=1)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        budget = ProofBudget(self.proof_steps, self.proof_rlimit, DEFAULT_BUDGET.seconds)
        lines = []
        funcs = [f for f in op.ops if isinstance(f, FuncOp) and _lowered(f)]
        for func in funcs:
            name = func.sym_name.data
            fused = fuse_kernel(func, budget)
            for attempt in fused.attempts:
                detail = f"proof {attempt.detail}" if attempt.verdict == "proved" \
                    else attempt.detail
                lines.append(f"fuse-nki: @{name}: {attempt.rule} ({attempt.matched}): "
                             f"{attempt.verdict} ({detail})")
            lines.append(f"fuse-nki: @{name}: {fused.summary()} in {fused.seconds:.3f}s")
            fused.func.attributes["axon.nki_fusions"] = ArrayAttr(
                [StringAttr(f"{a.rule}: {a.detail}") for a in fused.attempts
                 if a.verdict == "proved"])
            if fused.func is not func:
                op.body.block.insert_op_before(fused.func, func)
                op.body.block.erase_op(func)
        print("\n".join(lines), file=sys.stderr)


def _lowered(func: FuncOp) -> bool:
    """Does the function hold a `tile.kernel` of `nki` instructions?"""
    return any(isinstance(k, KernelOp) and any(isinstance(o, nki.NkiOp) for o in k.walk())
               for k in func.body.block.ops)
