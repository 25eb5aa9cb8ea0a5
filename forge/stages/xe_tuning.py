"""The `xe_tuning` stage: launch settings from the KB profile (a small grid of proposals).

For the file's main kernel (its first with a `tl.dot`, else its first launched one) the KB's
`autotune_grid` for the device gives configurations the device can run; each becomes one
proposal that sets `num_warps` and `num_stages` at every launch, passes `grf_mode` (Intel) as a
`tl.constexpr` kernel parameter added with the default "default" (the XPU backend reads it
from the launch's constexprs; NVIDIA's Triton rejects an unknown launch keyword, and a kernel
parameter is no unknown keyword: the emitter does the same, `targets/xe_triton/emit.py`), and,
for a dot kernel whose block roles (`edits.dot_block_roles`) and grid (`grid.grid_blocks`) the
text shows, the KB's preferred tile: the launch's block literals and the grid's divisors change
together; a kernel the swizzle gave `GROUP_SIZE_M` takes the KB's group. A config whose blocks
cannot be placed keeps the user's blocks.

Legality: warps, stages and the GRF mode change how a program is compiled, not what it
computes. New block sizes change each program's tile, and the grid is recomputed from the same
sizes with the same blocks (`triton.cdiv(M, BLOCK_M)` with the new literal in both places); a
kernel correct for its blocks is correct for others only if it does not assume them (a single
block per row, say): the cascade's correctness check decides. Not applicable to an autotuned
kernel (its configs own these settings).
"""

from __future__ import annotations

import ast

from axon.forge.edits import add_param, dot_block_roles, set_keyword
from axon.forge.grid import GridBlock, grid_blocks, grid_expr
from axon.forge.source import Edit, KernelFile, apply_edits, node_span
from axon.forge.stages.analysis import KernelSummary, analyse_file
from axon.forge.stages.base import Applicability, Proposal
from axon.forge.stages.facts import ForgeOptions, kernel_facts
from axon.targets.xe_triton.kb import Config, Device, autotune_grid

__all__ = ["XeTuningStage", "is_autotuned", "main_kernel"]


def is_autotuned(file: KernelFile, kernel: str) -> bool:
    """Whether the kernel carries `@triton.autotune(...)`."""
    return any(isinstance(d, ast.Call) and file.module.qualified(d.func) in
               ("triton.autotune", "triton.runtime.autotune")
               for d in file.kernel_node(kernel).decorator_list)


def main_kernel(file: KernelFile) -> KernelSummary | None:
    """The first launched kernel with a `tl.dot`, else the first launched kernel."""
    kernels = list(analyse_file(file).kernels.values())
    return next((k for k in kernels if k.dots), kernels[0] if kernels else None)


def block_edits(file: KernelFile, kernel: str, config: Config) -> list[Edit] | None:
    """The edits giving `config`'s blocks at every launch of `kernel` (literals at the launch and
    in the grid), or None when some block cannot be placed."""
    roles = dot_block_roles(file, kernel)
    wanted = {roles[r]: v for r in ("block_m", "block_n", "block_k")
              if (v := getattr(config, r)) is not None and r in roles}
    if not wanted:
        return []
    edits: list[Edit] = []
    for site, call in zip(file.kernel_launches(kernel), file.launch_calls(kernel), strict=True):
        expr, _ = grid_expr(file, call)
        found, why = grid_blocks(file, site, expr)
        if why:
            return None
        for name, value in wanted.items():
            if site.literal(name) is None or not any(k.arg == name for k in call.keywords):
                return None
            edits.append(set_keyword(file, call, name, str(value)))
        by_node: dict[int, GridBlock] = {id(b.literal): b for b in found}
        for block in by_node.values():
            if block.block in wanted:
                edits.append(Edit(*node_span(file, block.literal), str(wanted[block.block])))
    return edits


class XeTuningStage:
    """Warps, stages, GRF mode and tiles from the KB (see the module docstring)."""

    name = "xe_tuning"

    def __init__(self, options: ForgeOptions | None = None) -> None:
        self.options = options or ForgeOptions()

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where the file launches a kernel that is not autotuned."""
        if kernel_file.error is not None:
            return Applicability(False, f"xe_tuning: not applicable: {kernel_file.error}")
        summary = main_kernel(kernel_file)
        if summary is None:
            return Applicability(False, "xe_tuning: not applicable: no launched kernel")
        if is_autotuned(kernel_file, summary.name):
            return Applicability(False, f"xe_tuning: not applicable: kernel `{summary.name}` "
                                        "is autotuned")
        return Applicability(True, f"xe_tuning: kernel `{summary.name}` ({summary.kind}) at "
                                   f"{len(summary.launches)} launch(es)")

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal per KB configuration, at most `options.max_proposals`."""
        if not self.applies(kernel_file).applies:
            return []
        summary = main_kernel(kernel_file)
        assert summary is not None
        configs = autotune_grid(profile, kernel_facts(summary, self.options),
                                limit=self.options.max_proposals * 4)
        has_grf = kernel_file.kernel(summary.name).param("grf_mode") is not None
        has_group = kernel_file.kernel(summary.name).param("GROUP_SIZE_M") is not None
        tl = next(a for a, f in kernel_file.module.aliases.items() if f == "triton.language")
        proposals: list[Proposal] = []
        seen: set[str] = set()
        for config in configs:
            edits: list[Edit] = []
            blocks = block_edits(kernel_file, summary.name, config) if summary.dots else []
            parts = []
            if blocks:
                edits += blocks
                parts.append("x".join(str(getattr(config, r)) for r in
                                      ("block_m", "block_n", "block_k")
                                      if getattr(config, r) is not None))
            grf = config.grf_mode if config.grf_mode not in (None, "default") else None
            group = config.group_size_m if has_group else None
            if grf is not None and not has_grf:
                edits.append(add_param(kernel_file, summary.name,
                                       f'grf_mode: {tl}.constexpr = "default"'))
            for call in kernel_file.launch_calls(summary.name):
                if config.num_warps is not None:
                    edits.append(set_keyword(kernel_file, call, "num_warps",
                                             str(config.num_warps)))
                if config.num_stages is not None:
                    edits.append(set_keyword(kernel_file, call, "num_stages",
                                             str(config.num_stages)))
                if grf is not None:
                    edits.append(set_keyword(kernel_file, call, "grf_mode", f'"{grf}"'))
                if group is not None:
                    edits.append(set_keyword(kernel_file, call, "GROUP_SIZE_M", str(group)))
            parts += [f"{k} {v}" for k, v in (("num_warps", config.num_warps),
                                              ("num_stages", config.num_stages),
                                              ("grf_mode", grf), ("GROUP_SIZE_M", group))
                      if v is not None]
            source = apply_edits(kernel_file.source, edits)
            if source in seen or source == kernel_file.source:
                continue
            seen.add(source)
            proposals.append(Proposal(self.name, f"xe_tuning `{summary.name}` for "
                                                 f"{profile.name}: {', '.join(parts)}", source))
            if len(proposals) == self.options.max_proposals:
                break
        return proposals
