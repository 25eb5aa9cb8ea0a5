"""Concrete tile sizes for a kernel: enumerate, keep what its assumptions and the profile
admit, rank by the tiled cost model (`tiling.cost`), keep the best few for the targets'
empirical selection.

Values tried for each tile parameter `P` (`kernel.param_names()`):

- the dims `P` tiles are the extents of the operand (or result) dims where a load's or a
  store's tile has `P` as its dim; `P` need not exceed the smallest power of two covering the
  largest of them (a bigger tile only adds padding);
- on a GPU profile (no partitions): powers of two up to that cover (Triton's blocks are powers
  of two: `tl.arange` needs it), from 16 for a parameter in the dims of a contraction's operand
  (`tl.dot` needs dims of at least 16; the cover alone when it is below 16), from 1 otherwise
  (a row kernel's block of rows may be a single row);
- on a NeuronCore profile: powers of two from 1 up to the cover, and the exact extents of the
  dims `P` tiles (a whole dim, no remainder); a parameter that is the first dim of an on-chip
  tile stops at the partition count. The matmul and PSUM limits, and every capacity, are checked
  by the cost model (`fits`), which rejects what exceeds them.

On a GPU with an L2 a kernel over a 2-D grid also gets a launch order, `GROUP_M` in
`GROUP_SIZES` (1: row-major; G: groups of G rows, Triton's GROUP_SIZE_M swizzle): it changes
what a wave shares in L2, never a result. On a GPU every candidate gets a warp count,
`num_warps` (`tiling.cost.warp_counts`: the powers of two up to the profile's
`warps_per_program_max`): tile sizes are first priced at the profile's default count (Triton's
4), or, when their tiles overflow that many warps' registers, at the fewest warps that hold
them; then each of the `ORDERED` best is priced at every warp count whose registers hold its
tiles (in row-major order), and at its best count in every launch order, and all are ranked
again. A count other than the default wins only where it changes the modeled time (a big tile
that needs more warps to fit; a small one that leaves fewer lanes idle with fewer), never on
traffic alone.

The enumeration is bounded: when the product of the lists exceeds `MAX_COMBINATIONS`, the
longest list is thinned (every other value dropped, its smallest and largest kept) until the
product fits; 3 or 4 parameters of 8-13 values each stay within a second or two. Each
combination is kept only if every assumption of the kernel holds at it (`parse_assumption`,
evaluated with the sizes) and the cost model says it fits; the kept ones are ranked by modeled
seconds (within 5% a tie), then fewer programs, then (on a NeuronCore) fewer loop trips, then
HBM bytes, then the values themselves (so the order is deterministic).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from axon.dialects.ax import TensorType
from axon.dialects.form.interface import form_op
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import KernelOp, parse_assumption
from axon.nugraph.cost import is_contraction
from axon.targets.profiles import DeviceProfile
from axon.tiling.cost import (
    GROUP,
    WARPS,
    KernelCost,
    KernelPlan,
    default_warps,
    laid_out,
    partition_count,
    warp_counts,
    warps_to_fit,
)
from axon.tiling.profiles import held_on_chip

#: the launch orders tried for a 2-D grid on a GPU: row-major (1), and groups of rows
GROUP_SIZES = (1, 4, 8, 16)
#: the best row-major candidates whose launch orders are tried
ORDERED = 16
#: modeled times within this factor rank as equal
TIME_BAND = 1.05
#: the most combinations of tile parameters priced for one kernel
MAX_COMBINATIONS = 1024
#: the smallest block of a contraction's operand on a GPU (tl.dot's minimum dim)
GPU_MIN_BLOCK = 16


@dataclass(frozen=True)
class Candidate:
    """Concrete values of a kernel's tile parameters and what they cost."""

    params: Mapping[str, int]
    cost: KernelCost


def concretize(kernel: KernelOp, sizes: Mapping[str, int], profile: DeviceProfile,
               top_k: int = 3) -> list[Candidate]:
    """The best `top_k` concrete tilings of `kernel` at `sizes` under `profile` (see the
    module docstring), best first; empty when none satisfies the assumptions and fits."""
    with held_on_chip(kernel, profile) as held:
        plan = KernelPlan.of(held)
    names = kernel.param_names()
    values = [parameter_values(plan, name, sizes, profile) for name in names]

    while math.prod(len(v) for v in values) > MAX_COMBINATIONS:
        longest = max(range(len(values)), key=lambda n: len(values[n]))
        if len(values[longest]) <= 2:
            break
        values[longest] = _thinned(values[longest])
    assumptions = [parse_assumption(text) for text in kernel.assumptions()]
    found: list[Candidate] = []
    for combo in itertools.product(*values):
        params = dict(zip(names, combo, strict=True))
        env = {**sizes, **params}
        if not all(_holds(lhs, op, rhs, env) for lhs, op, rhs in assumptions):
            continue
        cost = plan.cost(env, profile, warps=plan.fitting_warps(env, profile))
        if cost.fits:
            found.append(Candidate(params, cost))
    found.sort(key=functools.partial(_rank, profile=profile))
    memory = profile.memory
    grouped = len(plan.grid) == 2 and memory is not None and memory.l2_bytes is not None
    if grouped or warp_counts(profile):
        # the launch order and the warp count, for the best tile sizes at the default ones
        # (their ranking may change: a grouped order can keep in L2 what row-major re-reads)
        rank = functools.partial(_rank, profile=profile)
        configured = []
        for c in found[:max(ORDERED, top_k)]:
            row_major = [_configured(plan, c, sizes, profile, 1 if grouped else None, w)
                         for w in _warps_tried(c, profile)]
            best = min((r for r in row_major if r.cost.fits), key=rank, default=None)
            if best is None:
                continue
            warps = best.cost.warps
            configured.append(best)
            configured.extend(_configured(plan, c, sizes, profile, g, warps)
                              for g in GROUP_SIZES[1:] if grouped)
        found = sorted((c for c in configured if c.cost.fits), key=rank)
    return found[:top_k]


def _warps_tried(c: Candidate, profile: DeviceProfile) -> list[int | None]:
    """The warp counts whose registers hold the candidate's tiles (None: no warps)."""
    fewest = warps_to_fit(c.cost.onchip_bytes.get("registers", 0), profile)
    counts = [w for w in warp_counts(profile) if fewest is not None and w >= fewest]
    return list(counts) or [None]


def _configured(plan: KernelPlan, c: Candidate, sizes: Mapping[str, int],
                profile: DeviceProfile, group: int | None, warps: int | None) -> Candidate:
    """Candidate `c` priced at a launch order and a warp count (None: not a parameter)."""
    params = dict(c.params)
    if group is not None:
        params[GROUP] = group
    if warps is not None:
        params[WARPS] = warps
    cost = plan.cost({**sizes, **c.params}, profile, group=group or 1, warps=warps)
    return Candidate(params, cost)


def describe(candidate: Candidate) -> str:
    """`BM=128 BN=256 BK=64 GROUP_M=1 num_warps=8: 0.238 ms, HBM 100.7 MB (1.00x compulsory)`:
    how the tile pass and the tiled graph show a candidate."""
    cost = candidate.cost
    params = " ".join(f"{k}={v}" for k, v in candidate.params.items())
    return (f"{params}: {cost.seconds * 1e3:.3f} ms, HBM {cost.hbm_bytes / 1e6:.1f} MB "
            f"({cost.hbm_bytes / max(cost.compulsory_bytes, 1):.2f}x compulsory)")


def _rank(c: Candidate, profile: DeviceProfile
          ) -> tuple[int, int, int, bool, float, tuple[int, ...]]:
    """Modeled times within 5% of each other tie (the model's resolution); then fewer programs
    win (each has an overhead the model does not count: a one-element program is never
    better than a full tile), then, on a NeuronCore, fewer loop trips (each issues its
    instructions and DMAs again, with their fixed costs, which the model does not count
    either: a matrix-vector product's K loop at BK = 2 ties with BK = 128 on traffic alone),
    then the profile's default warp count (Triton's, whose other effects the model does not
    know), then less traffic, then the values themselves."""
    band = math.floor(math.log(max(c.cost.seconds, 1e-15)) / math.log(TIME_BAND))
    trips = c.cost.iterations if partition_count(profile) else 0
    other_warps = c.cost.warps is not None and c.cost.warps != default_warps(profile)
    return (band, c.cost.programs, trips, other_warps, c.cost.hbm_bytes,
            tuple(c.params.values()))


def parameter_values(plan: KernelPlan, name: str, sizes: Mapping[str, int],
                     profile: DeviceProfile) -> list[int]:
    """The values tried for tile parameter `name` (see the module docstring), ascending."""
    param = IntExpr.sym(name)
    extents: set[int] = set()
    for accesses in (plan.loads, plan.stores):
        for access in accesses:
            for dim, extent in zip(access.shape, access.extent, strict=True):
                if dim == param:
                    extents.add(max(extent.evaluate(sizes), 1))
    largest = max(extents) if extents else max([*sizes.values(), 1])
    cover = 1 << max(largest - 1, 0).bit_length()
    partitions = partition_count(profile)
    if not partitions:
        low = min(GPU_MIN_BLOCK if _in_a_contraction(plan, name) else 1, cover)
        return [1 << e for e in range(low.bit_length() - 1, cover.bit_length())]
    found = {1 << e for e in range(cover.bit_length())} | extents
    if any(laid_out(tile.type)[0] == param for tile in plan.tiles):
        found = {v for v in found if v <= partitions} or {partitions}
    return sorted(found)


def _in_a_contraction(plan: KernelPlan, name: str) -> bool:
    """Whether `name` is in the dims of an operand of a contraction (a `tl.dot` on a GPU)."""
    for compute in plan.computes:
        if is_contraction(form_op(compute.op).meaning().form) and any(
                name in d.symbols() for v in compute.op.operands
                if isinstance(v.type, TensorType) for d in v.type.shape):
            return True
    return False


def _thinned(values: list[int]) -> list[int]:
    if len(values) <= 2:
        return values
    kept = values[::2]
    if kept[-1] != values[-1]:
        kept.append(values[-1])
    return kept


def _holds(lhs: IntExpr, op: str, rhs: IntExpr, env: Mapping[str, int]) -> bool:
    a, b = lhs.evaluate(env), rhs.evaluate(env)
    return {"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b, "<": a < b,
            ">": a > b}[op]
