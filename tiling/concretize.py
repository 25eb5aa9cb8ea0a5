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
`GROUP_SIZES` (1: row-major; G: groups of G rows, Triton's GROUP_SIZE_M swizzle), tried for
the `ORDERED` best candidates in row-major order and ranked again with them: it changes what a
wave shares in L2, never a result.

The enumeration is bounded: when the product of the lists exceeds `MAX_COMBINATIONS`, the
longest list is thinned (every other value dropped, its smallest and largest kept) until the
product fits; 3 or 4 parameters of 8-13 values each stay within a second or two. Each
combination is kept only if every assumption of the kernel holds at it (`parse_assumption`,
evaluated with the sizes) and the cost model says it fits; the kept ones are ranked by modeled
seconds (within 5% a tie), then fewer programs, then HBM bytes, then the values themselves (so
the order is deterministic).
"""

from __future__ import annotations

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
from axon.tiling.cost import GROUP, KernelCost, KernelPlan, partition_count

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
    plan = KernelPlan.of(kernel)
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
        env = {**sizes, **dict(zip(names, combo, strict=True))}
        if not all(_holds(lhs, op, rhs, env) for lhs, op, rhs in assumptions):
            continue
        cost = plan.cost(env, profile)
        if cost.fits:
            found.append(Candidate(dict(zip(names, combo, strict=True)), cost))
    found.sort(key=_rank)
    memory = profile.memory
    if len(plan.grid) == 2 and memory is not None and memory.l2_bytes is not None:
        # the launch order, for the best tile sizes in row-major order (their ranking may
        # change: a grouped order can keep in L2 what row-major re-reads)
        ordered = [Candidate({**c.params, GROUP: g},
                             plan.cost({**sizes, **c.params}, profile, group=g))
                   for c in found[:max(ORDERED, top_k)] for g in GROUP_SIZES]
        found = sorted(ordered, key=_rank)
    return found[:top_k]


def _rank(c: Candidate) -> tuple[int, int, float, tuple[int, ...]]:
    """Modeled times within 5% of each other tie (the model's resolution); then fewer programs
    win (each has an overhead the model does not count: a one-element program is never
    better than a full tile), then less traffic, then the values themselves."""
    band = math.floor(math.log(max(c.cost.seconds, 1e-15)) / math.log(TIME_BAND))
    return (band, c.cost.programs, c.cost.hbm_bytes, tuple(c.params.values()))


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
    if any(tile.type.shape and tile.type.shape[0] == param for tile in plan.tiles):
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
