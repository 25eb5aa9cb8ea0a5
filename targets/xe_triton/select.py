"""Selecting the Triton kernel of a program: candidates enumerated, ordered, checked, picked.

    selection = select_kernel(func, SelectOptions(profile="h200", sizes={"M": 4096}),
                              executor=LocalExecutor())
    selection.chosen, selection.module          # the winner and its emitted module

The candidates are the nu-graph's top-k programs (`propagate{emit="top-k"}`: the program and
its cheapest proved reorderings) x their top-k proved tilings (`tiling.search.tile_program`,
ranked by the tiled cost model) x launch configurations: each tiling's top concrete tile sizes
(`tiling.concretize`) and the KB's autotune configurations (`kb.autotune_grid`). Each is priced
by the tiled cost model at the program's sizes (a configuration it cannot fit is pruned), the
candidates are ranked (`selection.space.ranked_bounded`, the best of each program and tiling
first) and emitted in that order until `max_candidates` have emitted (what does not lower is
skipped with the lowering's reason, and the next takes its place), each checked through
the cascade (`cascade.py`) on the executor, and the
fastest measured candidate that passed wins, or, where nothing could be timed, the one the
model prices lowest. Staged candidates add two-launch plans: each program cut at up to
`splits` values (`tiling.split`), both stages tiled and proved as programs, their launches
paired (`staged_candidates`), emitted as one module (`staged.staged_module`).

The KB devices without a cost profile of their own (the Intel GPUs) are priced with the h200
profile: it orders their candidates, the KB device decides what they may launch.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException

from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.tile import KernelOp
from axon.nugraph.stored import function_text, functions_from_texts
from axon.selection.executor import Executor, LocalExecutor
from axon.selection.space import Tally, Verdict, pick, ranked_bounded
from axon.selection.variants import program_variants, unnamed
from axon.targets.profiles import DeviceProfile, load_profile
from axon.targets.xe_triton.cascade import (
    LAUNCH_OPTIONS,
    TRITON_NUM_STAGES,
    Job,
    Launch,
    check_job,
    check_shapes,
    cuda_present,
    footprint,
    footprint_error,
    launch_error,
    register_budget,
    tiled_sizes,
    time_job,
)
from axon.targets.xe_triton.emit import EmittedModule, emit_triton, kb_launches, launch_block_io
from axon.targets.xe_triton.kb import Device, KernelFacts, load_device
from axon.targets.xe_triton.lower import NotSupported, lower_function
from axon.targets.xe_triton.staged import split_loop_module, staged_module
from axon.tiling.concretize import concretize
from axon.tiling.cost import KernelPlan
from axon.tiling.search import TIME_LIMIT_S, Proposal, all_sizes, tile_program
from axon.tiling.split import Split, cut_name, cut_points, intermediate_dtype, split_function
from axon.tiling.split_loop import NotSplit, Stages, stages
from axon.tiling.untie import untie
from axon.verifier.budget import SEARCH_BUDGET, ProofBudget
from axon.verifier.cache import ProofCache

#: the cost profile of a KB device that names none (see the module docstring)
FALLBACK_COST_PROFILE = "h200"
#: the launch settings a candidate may fix besides its block sizes (the emitter's names)
_TUNED = ("GROUP_M", "num_stages", "num_warps", "grf_mode")
#: the KB's names of Axon's dtypes
_KB_DTYPES = {"bf16": "bf16", "f16": "fp16", "f32": "fp32"}


class SelectionError(ValueError):
    """A program that yields no candidate: it does not tile, or none of its kernels lowers."""


@dataclass(frozen=True)
class SelectOptions:
    """How widely to search and how to check."""

    profile: str = "h200"
    sizes: Mapping[str, int] = field(default_factory=dict)
    programs: int = 3
    """The nu-graph's top-k programs tiled (1: the program alone, no propagation)."""
    tilings: int = 3
    """Proved tilings kept, over all programs, by modeled time."""
    tile_sizes: int = 3
    """Concrete tile sizes per tiling (the tiled cost model's best)."""
    configs: int = 4
    """KB autotune configurations per tiling."""
    max_candidates: int = 24
    splits: int = 2
    """Cut points per program tried for staged (two-launch) candidates (`tiling.split`); 0:
    whole-program kernels only."""
    time_on_gpu: bool = True
    proof_budget: ProofBudget = SEARCH_BUDGET
    """One kernel's proof budget in the tile search (counts of work, a safety-net clock)."""
    time_limit_s: float = TIME_LIMIT_S
    """The tile search's safety-net clock (its limit is `MAX_PROOFS` proofs, a count)."""


@dataclass
class Candidate:
    """One program x tiling x launch configuration, priced."""

    id: str
    variant: str
    tiling: str
    proof_id: str
    kwargs: dict[str, Any]
    modeled_ms: float
    origin: str
    """"tile sizes" (the cost model's), "autotune" (the KB's) or "staged" (two launches)."""
    kernel: FuncOp = field(repr=False)
    stages: tuple[Candidate, ...] = ()
    """A staged candidate's launches, producer then consumer (`kernel` is the consumer's);
    empty for one kernel of the whole program."""
    split: Split | None = field(default=None, repr=False)
    """Where a staged candidate cuts its program."""
    join: Callable[[Sequence[EmittedModule]], EmittedModule] | None = field(default=None,
                                                                          repr=False)
    """How a candidate of several launches (`stages`) makes one module of theirs."""
    env: dict[str, int] = field(default_factory=dict)
    """Values of sizes its kernel has and the program does not (a split loop's combine: the
    stretch count `NS`, the heads as one size)."""

    def launch(self) -> str:
        """Its launch keywords as text, a staged candidate's launches joined by ` + `."""
        return " + ".join(" ".join(f"{k}={v}" for k, v in c.kwargs.items())
                          for c in (self.stages or (self,)))


@dataclass
class Selection:
    """What selecting one program's kernel found."""

    program: str
    sizes: dict[str, int]
    space: int = 0
    pruned: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(candidate or tiling, reason) of what could not be emitted."""
    candidates: list[Candidate] = field(default_factory=list)
    emitted: dict[str, EmittedModule] = field(default_factory=dict)
    twins: dict[str, str] = field(default_factory=dict)
    """Each emitted candidate's float32 twin module (what the CPU interpreter checks)."""
    verdicts: list[Verdict] = field(default_factory=list)
    chosen: Candidate | None = None
    verdict: Verdict | None = None
    seconds: float = 0.0

    @property
    def module(self) -> EmittedModule | None:
        """The chosen candidate's emitted module."""
        return self.emitted[self.chosen.id] if self.chosen is not None else None

    def tally(self) -> Tally:
        counts = Tally()
        counts.add(self.verdicts)
        return counts

    def passed(self) -> list[Candidate]:
        """The candidates that passed the cascade, best first (measured, else modeled)."""
        ok = {v.id: v for v in self.verdicts if v.passed}
        return sorted((c for c in self.candidates if c.id in ok),
                      key=lambda c: (ok[c.id].measured_ms or 0.0, c.modeled_ms))


Report = Callable[[str], None]


def cost_profile(device: Device) -> DeviceProfile:
    """The tiled cost model's profile for `device` (see the module docstring)."""
    return load_profile(device.profile or FALLBACK_COST_PROFILE)


def kernel_facts(kernel: xt.KernelOp, sizes: Mapping[str, int]) -> KernelFacts:
    """What the KB asks of a lowered kernel at `sizes`: its `dots` counted as the emitter counts
    them for the KB's grid (`emit.kb_launches`), so the launch rules that hold each dot's fp32
    accumulator and B tiles (`kb.config_error`) see every one of a gated MLP's two."""
    dots = [op for op in kernel.walk() if isinstance(op, xt.DotOp)]
    out = kernel.output_types()[0]
    ones = dict.fromkeys(kernel.param_names(), 1)
    # (a split loop's partials have a dim per stretch, a function of the params)
    dims = [d.evaluate({**ones, **sizes}) for d in out.shape] or [1]
    if dots:
        a = dots[0].operands[0].type
        assert isinstance(a, TensorType)
        loop = dots[0].parent_op()
        held = dict(kernel.block_defs())  # K held whole: the block's own extent
        k = (loop.extent_expr().evaluate({**sizes, **ones}) if isinstance(loop, xt.ForOp)
             else held[str(a.shape[-1])].evaluate(sizes) if str(a.shape[-1]) in held
             else a.shape[-1].evaluate({**sizes, **ones}))
        return KernelFacts("matmul", _KB_DTYPES.get(a.dtype, "fp32"),  # type: ignore[arg-type]
                           has_dot=True, m=dims[0] if len(dims) > 1 else 1, n=dims[-1], k=k,
                           grid_dims=len(kernel.grid_exprs()), dots=len(dots))
    kind = "reduction" if any(isinstance(op, xt.ReduceOp) for op in kernel.walk()) \
        else "elementwise"
    return KernelFacts(kind, _KB_DTYPES.get(out.dtype, "fp32"),  # type: ignore[arg-type]
                       m=dims[0], n=dims[-1], grid_dims=len(kernel.grid_exprs()))


def _tile_kernel(func: FuncOp) -> KernelOp:
    (kernel,) = [op for op in func.body.block.ops if isinstance(op, KernelOp)]
    return kernel


def candidate_id(variant: str, tiling: str, kwargs: Mapping[str, Any]) -> str:
    """`rmsnorm_matmul.blocks_k.BM128.BN128.BK64.w8` (`.grf256` when a GRF mode is asked)."""
    parts = [variant, tiling]
    parts += [f"{k.removeprefix('num_')}{v}" for k, v in kwargs.items()
              if k not in ("num_warps", "grf_mode")]
    parts.append(f"w{kwargs.get('num_warps')}")
    if "grf_mode" in kwargs:
        parts.append(f"grf{kwargs['grf_mode']}")
    return ".".join(parts)


def enumerate_candidates(proposals: Sequence[Proposal], device: Device, profile: DeviceProfile,
                         sizes: Mapping[str, int], options: SelectOptions,
                         skipped: list[tuple[str, str]]) -> list[Candidate]:
    """Every launch configuration of the top `options.tilings` proposals, priced (infinite:
    the cost model cannot fit it, or the KB device does not launch it); a proposal whose
    kernel does not lower goes to `skipped`.
    Per proposal: the cost model's best tile sizes, the KB's first autotune configuration,
    the other tile sizes, the other KB configurations, then wider warps where registers need
    them."""
    found: dict[str, Candidate] = {}
    default_warps = int(device.launch.num_warps_default.value
                        if device.launch.num_warps_default else 4)
    for proposal in proposals[:options.tilings]:
        assert proposal.kernel is not None
        where = f"{proposal.tiling.kind} of @{proposal.variant}"
        try:
            # a split loop launches its partials as the tiling's kernel, then their combine
            split = stages(proposal.kernel) if proposal.tiling.split else None
            kernel = split.partials if split is not None else proposal.kernel
            lowered = lower_function(kernel)
        except (NotSupported, NotSplit) as err:
            skipped.append((where, str(err)))
            continue
        (xt_kernel,) = [op for op in lowered.body.block.ops if isinstance(op, xt.KernelOp)]
        params = xt_kernel.param_names()
        plan = KernelPlan.of(_tile_kernel(kernel))
        settings: list[tuple[dict[str, Any], str]] = []
        for c in proposal.candidates[:options.tile_sizes]:
            kwargs: dict[str, Any] = {p: int(c.params[p]) for p in params if p in c.params}
            kwargs["num_warps"] = int(c.params.get("num_warps", default_warps))
            if "GROUP_M" in c.params:
                kwargs["GROUP_M"] = int(c.params["GROUP_M"])
            settings.append((kwargs, "tile sizes"))
        best = dict(settings[0][0]) if settings else {}
        facts = kernel_facts(xt_kernel, sizes)
        configs = 0
        for launch in kb_launches(xt_kernel, device, best, sizes):
            kwargs = {**best, **_host_keywords(launch, device)}
            if any(p not in kwargs for p in params):
                continue
            if any(kwargs == k for k, _ in settings):
                continue
            settings.append((kwargs, "autotune"))
            configs += 1
            if configs == options.configs:
                break
        if split is not None:  # the GPU settles how many programs share the loop
            settings += one_block_a_stretch(settings)
        for kwargs, _ in list(settings):
            wider = _enough_warps(kwargs, xt_kernel, facts, device, sizes)
            if wider is not None and all(wider != k for k, _ in settings):
                settings.append((wider, "registers"))
        for kwargs, origin in _kb_first_second(settings):
            ordered = {p: kwargs[p] for p in params if p in kwargs}
            ordered.update({k: kwargs[k] for k in _TUNED if k in kwargs})
            cost = plan.cost({**sizes, **{p: ordered[p] for p in params}}, profile,
                             warps=int(ordered["num_warps"]))
            cid = candidate_id(proposal.variant, proposal.tiling.kind, ordered)
            # a launch step 2 would refuse (a dot block under the MMA's 16 rows, pipeline
            # stages past shared memory) is pruned here, before it takes a kept place
            runs = cost.fits and _launches(device, facts, xt_kernel, sizes, ordered)
            modeled = cost.seconds * 1e3 if runs else float("inf")
            made = Candidate(cid, proposal.variant, proposal.tiling.kind, proposal.proof_id,
                             ordered, modeled, origin, kernel)
            if split is not None:
                made = _with_combine(made, split, proposal, profile, sizes, default_warps)
            found.setdefault(cid, made)
    return list(found.values())


#: the origin of a split loop's launch at one block a stretch (`one_block_a_stretch`)
ONE_BLOCK = "one block a stretch"


def one_block_a_stretch(settings: Sequence[tuple[dict[str, Any], str]]
                         ) -> list[tuple[dict[str, Any], str]]:
    """Each split loop's launch of `settings` with `NB` (blocks a stretch) 1 where it is more,
    not already there: the most programs, each the shortest loop, against a combine over the
    most stretches. The cost model prices the wave against the combine's traffic coarsely
    (on the H200, qknorm_gqa's decode ran twice as fast at one block a stretch as at the two
    the model chose), so the GPU times both."""
    found: list[tuple[dict[str, Any], str]] = []
    for kwargs, _ in settings:
        one = {**kwargs, "NB": 1}
        if kwargs.get("NB", 1) != 1 and all(one != k for k, _ in [*settings, *found]):
            found.append((one, ONE_BLOCK))
    return found


def _with_combine(partials: Candidate, split: Stages, proposal: Proposal,
                  profile: DeviceProfile, sizes: Mapping[str, int], default_warps: int
                  ) -> Candidate:
    """A split loop's candidate: `partials` launched, then the combine at its cost model's
    best tile sizes for the stretches those make; priced as the two launches."""
    kernel = _tile_kernel(split.combine)
    env = split.combine_env({**sizes, **{k: int(v) for k, v in partials.kwargs.items()
                                         if isinstance(v, int)}})
    best = concretize(kernel, env, profile, top_k=1)
    kwargs: dict[str, Any] = {p: int(best[0].params[p]) for p in kernel.param_names()} \
        if best else {}
    kwargs["num_warps"] = int(best[0].params.get("num_warps", default_warps)) if best \
        else default_warps
    modeled = partials.modeled_ms + (best[0].cost.seconds * 1e3 if best else math.inf)
    combine = Candidate(f"{partials.id}.combine", partials.variant, partials.tiling,
                        partials.proof_id, kwargs, modeled - partials.modeled_ms,
                        partials.origin, split.combine,
                        env={k: v for k, v in env.items() if k in split.combine_sizes})
    params = len(proposal.kernel.function_type.inputs.data) if proposal.kernel else 0
    return Candidate(partials.id, partials.variant, partials.tiling, partials.proof_id, {},
                     modeled, partials.origin, proposal.kernel or split.combine,
                     (partials, combine),
                     join=functools.partial(split_loop_module, partials.variant, params))


def staged_candidates(funcs: Sequence[FuncOp], device: Device, profile: DeviceProfile,
                      sizes: Mapping[str, int], options: SelectOptions,
                      proofs: ProofCache | None, skipped: list[tuple[str, str]],
                      say: Report, bound_ms: float = math.inf) -> list[Candidate]:
    """Two-launch candidates of `funcs`: each program cut at up to `options.splits` values
    (`tiling.split`), both stages tiled, proved and priced like programs, and their best
    launches paired (the producer's best with the consumer's best few, and the reverse), priced
    as the sum of the two launches. A cut whose intermediate alone, written once and read back
    once at the profile's bandwidth, takes longer than `bound_ms` (the best one-launch
    candidate's price) cannot win and is not tiled (attention's [S, L] scores: 1 GiB at the
    benchmark shape, where tiling and proving its stages took minutes)."""
    found: dict[str, Candidate] = {}
    done: set[tuple[str, str]] = set()
    for func in funcs:
        name = func.sym_name.data
        for n, value in enumerate(cut_points(func, options.splits)):
            assert isinstance(value.type, TensorType)
            itemsize = DTYPES[intermediate_dtype(value)].storage.itemsize
            least_ms = (2 * _elements(value.type, sizes) * itemsize
                        / profile.roofline.bytes_per_s.value * 1e3)
            if least_ms > bound_ms:
                skipped.append((f"@{name} cut at {cut_name(func, value)}",
                                f"its intermediate takes {least_ms:.3g} ms to write and read "
                                f"back, over the best single launch's {bound_ms:.3g} ms"))
                continue
            split = split_function(func, value)
            texts = (unnamed(split.producer), unnamed(split.consumer))
            if texts in done:  # another variant cut the same way
                continue
            done.add(texts)
            parts: list[list[Candidate]] = []
            for part in (split.producer, split.consumer):
                result = tile_program([part], profile, sizes, budget=options.proof_budget,
                                      time_limit_s=options.time_limit_s,
                                      top_k=options.tile_sizes, cache=proofs)
                priced = enumerate_candidates(result.proved, device, profile, sizes, options,
                                              skipped)
                # on a tie the KB's launch (measured) before the cost model's own tile sizes
                parts.append(sorted((c for c in priced if math.isfinite(c.modeled_ms)),
                                    key=lambda c: (c.modeled_ms, c.origin != "autotune")))
            producers, consumers = parts
            where = f"@{name} cut at {split.value}"
            if split.widened:
                where += f" (kept in {split.dtype}: {split.widened})"
            if not producers or not consumers:
                skipped.append((where, "a stage has no proved kernel that fits"))
                continue
            pairs = [(producers[0], c) for c in consumers[:options.tile_sizes]]
            pairs += [(p, consumers[0]) for p in producers[1:options.tile_sizes]]
            for producer, consumer in pairs:
                cid = (f"{name}.cut{n}.{_launch_id(producer)}+{_launch_id(consumer)}")
                found.setdefault(cid, Candidate(
                    cid, name, f"staged(cut{n}: {producer.tiling}+{consumer.tiling})",
                    f"{producer.proof_id}+{consumer.proof_id}", {},
                    producer.modeled_ms + consumer.modeled_ms, "staged", consumer.kernel,
                    (producer, consumer), split, functools.partial(staged_module, split)))
            say(f"staged: {where}: {len(producers)} x {len(consumers)} launches priced")
    return list(found.values())


def distinct(candidates: Sequence[Candidate]) -> list[Candidate]:
    """`candidates` without those that repeat an earlier one's kernels and launches: two
    variants of a program often tile to the same kernel (the cheaper variant's reorder does
    not reach it), and one timing of it is enough."""
    texts: dict[int, str] = {}

    def signature(c: Candidate) -> tuple[object, ...]:
        if c.stages:
            return tuple(signature(s) for s in c.stages)
        if id(c.kernel) not in texts:
            texts[id(c.kernel)] = unnamed(c.kernel)
        return (texts[id(c.kernel)], tuple(sorted(c.kwargs.items())))

    seen: set[tuple[object, ...]] = set()
    kept = []
    for c in candidates:
        key = signature(c)
        if key not in seen:
            seen.add(key)
            kept.append(c)
    return kept


def _launch_id(candidate: Candidate) -> str:
    """A stage candidate's id without its function's name: `rows.BM1.w4`."""
    return candidate.id.removeprefix(f"{candidate.variant}.")


def _kb_first_second(settings: list[tuple[dict[str, Any], str]]
                     ) -> list[tuple[dict[str, Any], str]]:
    """`settings` with the KB's first autotune configuration moved next to the cost model's
    best tile sizes: the two are priced alike where they differ only in what the model does not
    see (stages, block I/O), and the bounded ranking keeps equal costs in this order, so the
    KB's configuration (the measured small-GEMM launch) is its tiling's second, not its
    last."""
    first = next((n for n, (_, origin) in enumerate(settings) if origin == "autotune"), None)
    if first is None or first <= 1:
        return settings
    return [settings[0], settings[first], *settings[1:first], *settings[first + 1:]]


def _launches(device: Device, facts: KernelFacts, kernel: xt.KernelOp,
              sizes: Mapping[str, int], kwargs: Mapping[str, Any]) -> bool:
    """Whether the cascade's step 2 admits `kernel` launched with `kwargs` (its KB launch
    rules and its estimated registers and shared memory)."""
    if launch_error(device, facts, kwargs) is not None:
        return False
    env = {**sizes, **{k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}}
    stages = int(kwargs.get("num_stages", TRITON_NUM_STAGES))
    block_io = kwargs.get("block_io") or launch_block_io(kernel, device, kwargs, sizes)
    shares = footprint(kernel, device, env, stages, block_io)
    return footprint_error(device, kwargs, shares) is None


def _enough_warps(kwargs: Mapping[str, Any], kernel: xt.KernelOp, facts: KernelFacts,
                  device: Device, sizes: Mapping[str, int]) -> dict[str, Any] | None:
    """`kwargs` at the fewest warps the device launches whose registers hold the program's
    estimated live tiles, where its own warps do not (a row of 32768 f32 lanes, 128 KiB, is
    256 registers a thread at 4 warps, past the 255 a thread has, and 64 at 16 warps: cumsum's
    rows kernel); None where they already do or no launchable count does."""
    env = {**sizes, **{k: v for k, v in kwargs.items() if k not in LAUNCH_OPTIONS}}
    stages = int(kwargs.get("num_stages", TRITON_NUM_STAGES))
    need = footprint(kernel, device, env, stages).register_bytes
    if need <= register_budget(device, kwargs)[0]:
        return None
    for warps in sorted(w for w in device.num_warps if w > int(kwargs["num_warps"])):
        wider = {**kwargs, "num_warps": warps}
        if launch_error(device, facts, wider) is None and \
                need <= register_budget(device, wider)[0]:
            return wider
    return None


def _host_keywords(launch: Mapping[str, int | str], device: Device) -> dict[str, Any]:
    """A KB launch (`emit.kb_launches`) as the keywords a candidate holds: `GROUP_M` for the
    emitter's `GROUP_SIZE_M`, a GRF mode only where the device has modes (Intel)."""
    kwargs: dict[str, Any] = {("GROUP_M" if k == "GROUP_SIZE_M" else k): v
                              for k, v in launch.items() if k != "grf_mode"}
    mode = launch.get("grf_mode")
    if device.vendor == "intel" and mode not in (None, "default"):
        kwargs["grf_mode"] = str(mode)
    return kwargs


def retyped(func: FuncOp, dtype: str = "f32") -> FuncOp:
    """`func` with every float tensor in `dtype` (the CPU interpreter's bf16 dot is wrong)."""
    text = re.sub(r"\b(bf16|f16)\b", dtype, function_text(func))
    (twin,) = functions_from_texts([text])
    return twin


def make_job(candidate: Candidate, source: FuncOp, device: Device, sizes: Mapping[str, int],
             time_on_gpu: bool, program: str = "") -> tuple[Job, EmittedModule]:
    """The cascade's job for `candidate` (NotSupported / ValueError when it does not emit)."""
    parts = [_emit_launch(c, device, {**sizes, **c.env})
             for c in (candidate.stages or (candidate,))]
    if candidate.join is not None:
        emitted = candidate.join([p.emitted for p in parts])
        twin = candidate.join([p.twin for p in parts])
        candidate.kwargs = {}  # each launch's settings are its own host function's defaults
    else:
        (part,) = parts
        emitted, twin = part.emitted, part.twin
        candidate.kwargs = dict(part.kwargs)
    reference = retyped(source)
    tensors = [t for t in source.function_type.inputs.data if isinstance(t, TensorType)]
    symbols = sorted({s for t in tensors for d in t.shape for s in d.symbols()})

    def largest(binding: Mapping[str, int]) -> int:
        return max((_elements(t, binding) for t in tensors), default=0)

    tiled: dict[str, int] = {}
    for part in parts:
        for size, block in tiled_sizes(part.kernel, part.emitted.defaults).items():
            tiled[size] = max(tiled.get(size, 0), block)
    shapes = check_shapes(symbols, tiled, largest)
    job = Job(candidate.id, emitted.name, emitted.text, dict(candidate.kwargs), device.name,
              tuple(p.launch for p in parts), twin.text, function_text(reference), shapes,
              program, dict(sizes),
              tuple((tuple(d.evaluate(sizes) for d in t.shape), t.dtype) for t in tensors),
              time_on_gpu, time_on_gpu, function_text(source))
    return job, emitted


@dataclass
class _Emitted:
    """One kernel of a candidate, emitted: its module, float32 twin, `xt` kernel and launch."""

    emitted: EmittedModule
    twin: EmittedModule
    kernel: xt.KernelOp
    kwargs: dict[str, Any]
    launch: Launch


def _emit_launch(candidate: Candidate, device: Device, sizes: Mapping[str, int]) -> _Emitted:
    """`candidate`'s one kernel emitted, with the keywords its host function runs as selected
    (the module's defaults)."""
    launch = {k: v for k, v in candidate.kwargs.items() if k != "grf_mode"}
    emitted = emit_triton(candidate.kernel, device.name, launch, sizes=sizes)
    if "grf_mode" in candidate.kwargs:
        # the emitter takes integer launch defaults only: the chosen GRF mode becomes the host
        # function's default here, so the module runs as selected without keywords
        emitted = dataclasses.replace(emitted, text=_with_grf_mode(
            emitted.text, emitted.name, str(candidate.kwargs["grf_mode"])))
    twin = emit_triton(retyped(candidate.kernel), device.name, launch, sizes=sizes)
    # the host function's keywords, as the module's defaults hold them
    kwargs = {**emitted.defaults, "num_warps": emitted.num_warps, **emitted.options,
              **({"grf_mode": candidate.kwargs["grf_mode"]}
                 if "grf_mode" in candidate.kwargs else {})}
    lowered = lower_function(candidate.kernel)
    (xt_kernel,) = [op for op in lowered.body.block.ops if isinstance(op, xt.KernelOp)]
    env = {**sizes, **emitted.defaults}
    stages = int(emitted.options.get("num_stages", TRITON_NUM_STAGES))
    return _Emitted(emitted, twin, xt_kernel, kwargs,
                    Launch(kernel_facts(xt_kernel, sizes),
                           footprint(xt_kernel, device, env, stages,
                                     kwargs.get("block_io")), dict(kwargs)))


def _with_grf_mode(text: str, function: str, mode: str) -> str:
    """`text` with the host function's `grf_mode` default set to `mode`."""
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if line.startswith(f"def {function}("):
            lines[n] = line.replace('grf_mode="default"', f'grf_mode="{mode}"', 1)
    return "\n".join(lines)


def _elements(t: TensorType, sizes: Mapping[str, int]) -> int:
    count = 1
    for d in t.shape:
        count *= d.evaluate(sizes)
    return count


def _timed(jobs: Sequence[Job], verdicts: Sequence[Verdict], say: Report) -> list[Verdict]:
    """`verdicts` with step 4 run for each job that passed steps 1-3, in one worker process
    (one timing at a time; the candidates' modules are imported there, not here), or marked
    "timing skipped: no GPU" without one."""
    if not cuda_present():
        return [dataclasses.replace(v, timing="timing skipped: no GPU") if v.passed else v
                for v in verdicts]
    passed = [j for j, v in zip(jobs, verdicts, strict=True) if v.passed]
    with LocalExecutor(workers=1) as serial:
        timed = serial.map(time_job, passed, progress=lambda done, total: say(
            f"timing: {done}/{total} candidates on the GPU"))
    by_id = {v.id: v for v in timed}
    return [by_id.get(v.id, v) for v in verdicts]


def select_kernel(func: FuncOp, options: SelectOptions, executor: Executor,
                  report: Report | None = None, program: str = "",
                  proofs: ProofCache | None = None) -> Selection:
    """Enumerate, prune, check and pick `func`'s Triton kernel (see the module docstring).
    SelectionError when nothing tiles or nothing lowers."""
    start = time.perf_counter()
    say = report or (lambda line: None)
    device = load_device(options.profile)
    profile = cost_profile(device)
    sizes = all_sizes(func, options.sizes)
    selection = Selection(func.sym_name.data, sizes)
    # a symbol in two parts (square scores' rows and columns) is tiled as two; the cascade
    # checks against `func` itself
    untied, parts = untie(func)
    if parts:
        sizes = {**sizes, **{new: sizes[old] for new, old in parts.items()}}
        say("untied: " + ", ".join(f"{new} from {old}" for new, old in parts.items())
            + " (one size in two parts of the program, tiled apart; equal where it runs)")
    try:
        funcs = program_variants(untied, profile.name, sizes, options.programs)
    except DiagnosticException as err:
        say(f"propagation found no variant ({err}); tiling the program alone")
        funcs = [untied]
    say(f"programs: {len(funcs)} (the program and {len(funcs) - 1} nu-graph variant(s))")
    result = tile_program(funcs, profile, sizes, budget=options.proof_budget,
                          time_limit_s=options.time_limit_s, top_k=options.tile_sizes,
                          cache=proofs)
    proved = result.proved
    say(f"tilings: {len(result.proposals)} proposed, {len(proved)} proved")
    if not proved:
        first = next((p.reason for p in result.proposals if p.reason), "")
        raise SelectionError(f"@{selection.program} does not tile: no kernel proved"
                             + (f" ({first})" if first else ""))
    everything = enumerate_candidates(proved, device, profile, sizes, options,
                                      selection.skipped)
    if options.splits:
        single = min((c.modeled_ms for c in everything), default=math.inf)
        everything += staged_candidates(funcs, device, profile, sizes, options, proofs,
                                        selection.skipped, say, bound_ms=single)
    everything = distinct(everything)
    for where, why in selection.skipped:
        say(f"skipped {where}: {why}")
    ranked = ranked_bounded(everything, cost=lambda c: c.modeled_ms,
                            group=lambda c: (c.variant, c.tiling), limit=len(everything))
    jobs: list[Job] = []
    failed = 0
    for candidate in ranked.chosen:  # in rank order, until `max_candidates` have emitted
        if len(jobs) == options.max_candidates:
            break
        try:
            job, emitted = make_job(candidate, func, device, sizes, options.time_on_gpu,
                                    program)
        except (NotSupported, ValueError) as err:
            selection.skipped.append((candidate.id, str(err)))
            say(f"skipped {candidate.id}: {err}")
            failed += 1
            continue
        selection.candidates.append(candidate)
        selection.emitted[candidate.id] = emitted
        selection.twins[candidate.id] = job.check_text
        jobs.append(job)
    selection.space = ranked.space
    selection.pruned = ranked.space - len(jobs) - failed
    say(f"candidates: {ranked.space} in the space, {len(jobs)} kept "
        f"(max {options.max_candidates}), {selection.pruned} pruned by the cost model")
    if not jobs:
        raise SelectionError(f"@{selection.program}: no candidate emits"
                             + (f" ({selection.skipped[0][1]})" if selection.skipped else ""))
    # steps 1-3 on the executor, in parallel; step 4's timings one at a time on this
    # machine's GPU (timings taken side by side on one GPU slow each other down)
    selection.verdicts = executor.map(
        check_job, [dataclasses.replace(j, time_on_gpu=False) for j in jobs],
        progress=lambda done, total: say(f"cascade: {done}/{total} candidates checked"))
    if options.time_on_gpu:
        selection.verdicts = _timed(jobs, selection.verdicts, say)
    modeled = {c.id: c.modeled_ms for c in selection.candidates}
    selection.verdict = pick(selection.verdicts, lambda cid: modeled[cid])
    if selection.verdict is not None:
        selection.chosen = next(c for c in selection.candidates
                                if c.id == selection.verdict.id)
    selection.seconds = time.perf_counter() - start
    return selection
