"""The `dtype` stage: a `tl.dot` whose loaded operands are widened to float32 first takes them
in the dtype they were loaded in (the accumulator stays float32).

    acc += tl.dot(x.to(tl.float32), w.to(tl.float32))   ->   acc += tl.dot(x, w)

Legality: `tl.dot` of two bf16/f16 blocks accumulates in float32 (its default `out_dtype`), and
the products of two bf16 values are exact in float32, so only the order and precision of the
dot's own accumulation change (an fp32 dot may run as TF32 on NVIDIA; on DPAS an fp32 dot is not
a matrix-unit op). Where the loaded dtype is float32 already the cast was a no-op and nothing
changes. The rounding may change: the proposal says so and the cascade's tolerance decides.
Applicable only where the analysis sees both operands of a dot written `NAME.to(tl.float32)`
with NAME assigned a `tl.load` (a narrower dtype cannot be told from the text).
"""

from __future__ import annotations

import ast

from axon.forge.source import Edit, KernelFile, apply_edits, node_span
from axon.forge.stages.analysis import analyse_file
from axon.forge.stages.base import Applicability, Proposal
from axon.targets.xe_triton.kb import Device

__all__ = ["DtypeStage"]


class DtypeStage:
    """Drop the float32 casts of a dot's loaded operands (see the module docstring)."""

    name = "dtype"

    def _dots(self, file: KernelFile) -> list[tuple[str, ast.Call]]:
        report = analyse_file(file)
        found = []
        for summary in report.kernels.values():
            cast_locs = {c.loc for c in summary.dot_casts}
            for node in ast.walk(file.kernel_node(summary.name)):
                if isinstance(node, ast.Call) and file.module.qualified(node.func) == \
                        "triton.language.dot" and len(node.args) >= 2 \
                        and all(file.module.loc(a) in cast_locs for a in node.args[:2]):
                    found.append((summary.name, node))
        return found

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where a dot's two operands are loaded values cast to float32."""
        if kernel_file.error is not None:
            return Applicability(False, f"dtype: not applicable: {kernel_file.error}")
        dots = self._dots(kernel_file)
        if not dots:
            return Applicability(False, "dtype: not applicable: no tl.dot takes both operands "
                                        "as loaded values cast to tl.float32")
        where = ", ".join(f"`{k}` at {d.lineno}:{d.col_offset + 1}" for k, d in dots)
        return Applicability(True, f"dtype: tl.dot of float32 casts in {where}")

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal: every such dot takes its operands as loaded."""
        edits = []
        for _, dot in self._dots(kernel_file):
            for operand in dot.args[:2]:
                assert isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute)
                edits.append(Edit(*node_span(kernel_file, operand),
                                  kernel_file.segment(operand.func.value)))
        if not edits:
            return []
        return [Proposal(self.name, "dtype: tl.dot takes its operands in their loaded dtype "
                                    "(float32 accumulation kept); this changes rounding, the "
                                    "cascade's tolerance decides",
                         apply_edits(kernel_file.source, edits))]
