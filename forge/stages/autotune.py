"""The `autotune` stage: a kernel wrapped in `@triton.autotune` over the KB's grid.

    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    kernel[grid](..., BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4)

becomes

    @triton.autotune(configs=[
        triton.Config({'BLOCK_M': 256, ...}, num_warps=32, num_stages=2), ...],
        key=['M', 'N', 'K'])
    ...
    grid = lambda META: (triton.cdiv(M, META['BLOCK_M']), triton.cdiv(N, META['BLOCK_N']))
    kernel[grid](...)

The tuned parameters are the dot kernel's block constexprs whose roles the text shows
(`edits.dot_block_roles`: the KB's tiles are given per role), `GROUP_SIZE_M` and `grf_mode` where
the kernel takes them, and `num_warps` / `num_stages`; the configurations are the KB's
`autotune_grid` for the device, at most `options.max_configs`, and the launch's own where its
literals give every tuned name (so the tuner never does worse than the launch as written). The
tuned keywords leave every
launch, and the grid becomes `lambda META: ...` with each `triton.cdiv(X, 64)` the launch's
blocks explain (`grid.grid_blocks`) reading `META[...]` (META holds every argument, a block
left at the launch too). The key is the size parameters the
kernel's masks compare block lanes against.

Legality: every configuration runs the same kernel with other constexprs and the grid computed
from them exactly as the user's was from the literals, so a kernel correct for any block values
stays correct (that is the cascade's correctness check to settle: a kernel may assume its blocks).
The autotuner runs the kernel once per configuration on the same arguments, so a kernel that
loads a buffer it also stores is not applicable (a rerun would read its own output), nor is a grid
that keeps a literal no tuned block explains, a tuned block passed positionally, or a grid the text
does not show (an expression, a lambda).
"""

from __future__ import annotations

import ast

from axon.forge.edits import (
    dot_block_roles,
    drop_keyword,
    keyword_node,
    triton_alias,
    wrapped_call,
)
from axon.forge.grid import grid_blocks, grid_expr, size_block_pairs
from axon.forge.source import Edit, KernelFile, apply_edits, indent_of, node_span
from axon.forge.stages.analysis import KernelSummary, analyse_file
from axon.forge.stages.base import Applicability, Proposal
from axon.forge.stages.facts import ForgeOptions, kernel_facts
from axon.forge.stages.xe_tuning import is_autotuned
from axon.targets.xe_triton.kb import Config, Device, autotune_grid

__all__ = ["AutotuneStage"]

#: the KB's axes and the launch option each becomes (the rest are kernel constexprs)
_OPTIONS = ("num_warps", "num_stages")


class AutotuneStage:
    """`@triton.autotune` over the KB's grid (see the module docstring)."""

    name = "autotune"

    def __init__(self, options: ForgeOptions | None = None) -> None:
        self.options = options or ForgeOptions()

    def _refusal(self, file: KernelFile, summary: KernelSummary) -> str | None:
        name = summary.name
        if is_autotuned(file, name):
            return f"kernel `{name}` is autotuned already"
        if file.error is not None or triton_alias(file, "triton") is None:
            return "the file does not `import triton`"
        both = sorted(summary.loads & summary.stores)
        if both or summary.atomics:
            what = "uses atomics" if summary.atomics else "loads and stores " + ", ".join(both)
            return f"kernel `{name}` {what}: a rerun per configuration would read its own output"
        tuned = self._tuned_params(file, name)
        for site, call in zip(summary.launches, file.launch_calls(name), strict=True):
            expr, _ = grid_expr(file, call)
            if isinstance(expr, ast.Lambda) or not isinstance(expr, ast.Tuple):
                return (f"the grid `{site.grid}` at {site.loc[0]}:{site.loc[1]} is no tuple the "
                        "rewrite can read")
            found, why = grid_blocks(file, site, expr)
            if why:
                return why
            explained = {id(b.literal) for b in found} | {  # an index: `x.shape[0]`
                id(n.slice) for n in ast.walk(expr) if isinstance(n, ast.Subscript)}
            for node in ast.walk(expr):
                if isinstance(node, ast.Constant) and isinstance(node.value, int) \
                        and node.value != 1 and id(node) not in explained:
                    return (f"grid `{site.grid}`: the literal {node.value} is no block the launch "
                            "binds")
            for param in tuned:
                if site.arg(param) is not None and not any(k.arg == param
                                                            for k in call.keywords):
                    return f"{param} is passed positionally at {site.loc[0]}:{site.loc[1]}"
        return None

    def _tuned_params(self, file: KernelFile, kernel: str) -> dict[str, str]:
        """Kernel parameter -> the KB axis that sets it (a block only where every launch gives
        it a literal: a size-dependent block such as `HEAD_DIM=D` is the user's to keep)."""
        sites = file.kernel_launches(kernel)
        out = {axis: param for axis, param in dot_block_roles(file, kernel).items()
               if all(isinstance(site.literal(param), int) for site in sites)}
        jit = file.kernel(kernel)
        for axis, param in (("group_size_m", "GROUP_SIZE_M"), ("grf_mode", "grf_mode")):
            if jit.param(param) is not None:
                out[axis] = param
        return {param: axis for axis, param in out.items()}

    def _candidates(self, file: KernelFile) -> list[KernelSummary]:
        return list(analyse_file(file).kernels.values())

    def applies(self, kernel_file: KernelFile) -> Applicability:
        """Where some launched kernel can be autotuned (see the module docstring)."""
        if kernel_file.error is not None:
            return Applicability(False, f"autotune: not applicable: {kernel_file.error}")
        reasons = []
        for summary in self._candidates(kernel_file):
            why = self._refusal(kernel_file, summary)
            if why is None:
                return Applicability(True, f"autotune: kernel `{summary.name}` over the KB's "
                                           "grid")
            reasons.append(why)
        return Applicability(False, "autotune: not applicable: " + "; ".join(
            reasons or ["no launched kernel"]))

    def configs(self, file: KernelFile, summary: KernelSummary, profile: Device
                ) -> list[dict[str, int | str]]:
        """The KB's configurations as {parameter or launch option: value}, no two alike (at
        most `options.max_configs`), then the launch's own where every launch gives the same
        literals for the same names: the tuner then never picks a configuration slower than
        the kernel as it was launched (the KB's grid may hold none as good: 20's causal
        attention, cut at its diagonal, ran 0.189 ms at its own 64x32 and 4 warps, 0.266 at the
        KB's first 128x64 and 8 warps)."""
        tuned = self._tuned_params(file, summary.name)
        axes = {axis: param for param, axis in tuned.items()}
        out: list[dict[str, int | str]] = []
        for config in autotune_grid(profile, kernel_facts(summary, self.options), limit=64):
            entry = _entry(config, axes)
            # every configuration sets the same names: a launch keyword dropped for one is
            # dropped for all
            if entry and entry not in out and (not out or entry.keys() == out[0].keys()):
                out.append(entry)
            if len(out) == self.options.max_configs:
                break
        own = _launched(file, summary, list(out[0]) if out else [], profile)
        if own is not None and own not in out:
            out.append(own)
        return out

    def propose(self, kernel_file: KernelFile, profile: Device) -> list[Proposal]:
        """One proposal: the first kernel that can be autotuned, over the KB's grid."""
        split = self.propose_split(kernel_file, profile)
        return [] if split is None else [split[0]]

    def propose_split(self, kernel_file: KernelFile, profile: Device
                      ) -> tuple[Proposal, list[Proposal]] | None:
        """The proposal over the KB's grid and, for each of its configurations, the same rewrite
        over that configuration alone (an autotuner with one choice runs it, no timing), so a
        checker without a timer can check every configuration the grid's tuner may pick."""
        for summary in self._candidates(kernel_file):
            if self._refusal(kernel_file, summary) is None:
                configs = self.configs(kernel_file, summary, profile)
                if configs:
                    return (self._rewrite(kernel_file, summary, configs, profile),
                            [self._rewrite(kernel_file, summary, [c], profile)
                             for c in configs])
        return None

    def _rewrite(self, file: KernelFile, summary: KernelSummary,
                 configs: list[dict[str, int | str]], profile: Device) -> Proposal:
        triton = triton_alias(file, "triton")
        assert triton is not None
        name = summary.name
        node = file.kernel_node(name)
        indent = indent_of(file, node)
        params = [p.name for p in file.kernel(name).params]
        keys = [p for p in params if p in size_block_pairs(file.kernel(name))]
        lines = [f"{indent}@{triton}.autotune(configs=["]
        for entry in configs:
            kwargs = ", ".join(f"{k!r}: {v!r}" for k, v in entry.items() if k not in _OPTIONS)
            options = [f"{k}={entry[k]}" for k in _OPTIONS if k in entry]
            lines.append(wrapped_call(f"{indent}    ", f"{triton}.Config",
                                      [f"{{{kwargs}}}", *options]) + ",")
        lines.append(f"{indent}], key={keys!r})")
        first = min(node.decorator_list, key=lambda d: d.lineno)
        start = file.line_starts[first.lineno - 1]
        edits = [Edit(start, start, "\n".join(lines) + "\n")]
        tuned = set().union(*(e.keys() for e in configs))
        for site, call in zip(summary.launches, file.launch_calls(name), strict=True):
            for keyword in sorted(tuned | set(_OPTIONS)):
                drop = drop_keyword(file, call, keyword)
                if drop is not None:
                    edits.append(drop)
            expr, _ = grid_expr(file, call)
            found, _ = grid_blocks(file, site, expr)
            g_start, g_end = node_span(file, expr)
            inner = [Edit(s - g_start, e - g_start, f"META[{b.block!r}]")
                     for b in found for s, e in [node_span(file, b.literal)]]
            grid_text = apply_edits(file.source[g_start:g_end], inner)
            edits.append(Edit(g_start, g_end, f"lambda META: {grid_text}"))
        shown = ", ".join(sorted(tuned))
        return Proposal(self.name, f"autotune `{name}` for {profile.name}: {len(configs)} "
                                   f"configuration(s) of the KB's grid over {shown}; key "
                                   f"{', '.join(keys) or 'none'}",
                        apply_edits(file.source, edits))


def _launched(file: KernelFile, summary: KernelSummary, names: list[str], profile: Device
              ) -> dict[str, int | str] | None:
    """{name: value} of the launch for `names` (kernel constexprs and launch options; an option
    the launch leaves out at `profile`'s launch default, from the KB), or None where a launch
    does not give one as a literal, the KB has no default for it, or two launches differ."""
    if not names:
        return None
    launch = profile.launch
    defaults = {"num_warps": launch.num_warps_default, "num_stages": launch.num_stages_default}
    found: dict[str, int | str] | None = None
    for site, call in zip(summary.launches, file.launch_calls(summary.name), strict=True):
        entry: dict[str, int | str] = {}
        for name in names:
            given = keyword_node(call, name)
            default = defaults.get(name)
            value: object = site.literal(name) if name not in defaults else (
                (None if default is None else int(default.value)) if given is None else
                given.value.value if isinstance(given.value, ast.Constant) else None)
            if not isinstance(value, (int, str)) or isinstance(value, bool):
                return None
            entry[name] = value
        if found is not None and entry != found:
            return None
        found = entry
    return found


def _entry(config: Config, axes: dict[str, str]) -> dict[str, int | str]:
    entry: dict[str, int | str] = {}
    for axis, param in axes.items():
        value = getattr(config, axis)
        if value is not None and not (axis == "grf_mode" and value == "default"):
            entry[param] = value
    for option in _OPTIONS:
        value = getattr(config, option)
        if value is not None:
            entry[option] = value
    return entry
