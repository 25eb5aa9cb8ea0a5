"""The cost of a tiled kernel at concrete sizes and tile sizes, under a device profile.

`kernel_cost(kernel, sizes, profile)` counts what one launch of a `tile.kernel` moves and
computes, what one program holds on chip, and how long the launch takes under the profile's
roofline. `sizes` binds every size symbol and every tile parameter.

**Programs and launch order.** The grid's programs are launched in row-major order (the last
grid dim varies fastest), or, for a 2-D grid priced with `group` G > 1, in groups of
G rows with the row id fastest within a group (Triton's GROUP_SIZE_M swizzle: a wave then
shares a few rows' tiles of one operand and a few columns' of the other), `W` at a time: a
*wave*. The order changes no result (every program writes its own block), only what L2 keeps.
`W` is the profile's cores times the programs one core holds at once (on a GPU: limited by the SM's
registers and shared memory over one program's peak use of each, by its resident warps
`warps_per_core_max` over the program's warps, and by its `programs_per_core_max`; on a
NeuronCore: one).

**Warps** (a GPU). A program runs as `warps` warps of `warp_threads` threads (Triton's
`num_warps`; the profile's `warps_per_program_default`, 4, unless the caller picks another of
`warp_counts`: the powers of two up to `warps_per_program_max`). Its tiles are spread over its
threads' registers, each thread holding at most `registers_per_thread_bytes`: the registers of
one program are at most `warps x warp_threads x registers_per_thread_bytes` (and at most the
profile's `registers_per_program_bytes`), so a big accumulator needs more warps to fit (a
128 x 256 fp32 accumulator is 128 KiB: more than 4 warps' 127.5 KiB, within 8 warps'). More
warps cost occupancy (fewer programs per SM) and lanes (below); they buy nothing else here.

**What a load reads.** A `tile.load` reads a tile of `shape` at `offsets`. Its *region* over a
set of programs and loop iterations is, per dim of the operand, the tile's extent times the
number of distinct values of the program ids and loop ivs that its offset in that dim uses,
clipped to the operand's extent (so a remainder tile, or a tile wider than its tensor, counts
only the elements that exist, and the region over the whole grid of an exactly covering tiling
is the operand); the region is at most the number of distinct (id, iv) combinations times one
clipped tile. This is exact when offsets are `id*B` (+ `iv*B'`) as the tilers write them; it
ignores constant shifts (a halo) beyond the clip. A load inside loops runs once per iteration.

**HBM traffic, no cache** (a profile without `memory.l2_bytes`: a NeuronCore): every execution
of a load moves its (clipped) tile from HBM, every execution of a store writes its tile:
`executions x region(all) / distinct (id, iv) combinations its offsets use`. For a matmul with a
K loop that is `ceildiv(N, BN)*M*K*s + ceildiv(M, BM)*K*N*s + M*N*s_out`.

**HBM traffic, with an L2** (a GPU). Three rules, in order:

1. If the tiles one wave holds in flight at one loop iteration (every load's region over the
   wave's programs, one iteration of each loop) exceed L2, nothing is shared: as with no cache.
2. Otherwise the programs of one wave share what they read at the same time: a region is read
   from HBM at most once per wave. A region's tile is read again by another program `R`
   programs later in launch order, `R` the launch-order stride of the fastest-varying grid dim
   its offsets do not use (none: no other program reads it). Between the first read and that
   re-read the launch touches at most the bytes of `R + W` consecutive programs (every load
   region and every store region over them). When those bytes fit in L2 the re-read is an L2
   hit (an LRU cache keeps what was touched within its capacity) and the region costs its
   distinct bytes over the launch, once.
3. When they do not fit, the re-read misses (a cyclic sweep over more than an LRU cache holds
   misses every time) and the region costs its distinct bytes per wave, summed over the waves.

Loads of one operand with the same offsets and shape (up to the names of loop ivs of equal
extent) are one region; an operand's traffic is at most its bytes under rules 1-2 (L2 holds
it). Stores write back through L2: each store region's distinct bytes over the launch.

`compulsory_bytes` is every input that some load reads, read once, plus every result, written
once: what any kernel must move.

**On chip.** Every tile-valued SSA value (a load, a `tile.full`, a compute op's result, a loop's
carried values and results) lives in a memory space from its definition to its last use (a use
inside a loop the value is defined outside of lasts until that loop ends). A compute op's result
takes the buffer of an operand of its shape and dtype that dies at it (an accumulate in place),
a loop's carried values the buffers of their inits; otherwise it lives in the accumulator space
for a contraction (`psum` on a NeuronCore) and the compute space else (`sbuf`; `registers` on a
GPU). `onchip_bytes` is each space's peak over one program: on a NeuronCore per partition (a
tile's first dim spans the partitions, the rest is one partition's bytes; a vector that is not
a block of rows lies along one partition, `across_partitions`; PSUM holds fp32, 4
bytes an element), on a GPU per program. A candidate over a capacity does not fit (`fits` is
False, `why_not` names the space, what it needs and what it has): spills are rejected, never
priced. A NeuronCore tile's first dim is also at most the partition count, and an `ax.matmul`
of tiles `[a, b] x [b, c]` has `a` at most the stationary free limit, `b` at most the partition
count and `c` at most the moving free limit (a matrix-vector product `[a, b] x [b]` moves one
column, `c` = 1).

**Flops** per execution of a compute op come from its generic form (`nugraph.cost`: the
tensor level's count), times its executions; a contraction runs at the matrix peak, the rest at
the vector peak. A remainder tile computes whole. On a NeuronCore an engine works on all
its partitions at once, so an op on a tile over fewer takes as long as over all: its flops
count scaled, for the time only, by `128 / P` for a result over `P` partitions, and by
`128*128 / (K*M)` for a matmul whose stationary operand fills `K` rows and `M` columns of the
array. On a GPU a program's T threads (`warps x warp_threads`: 128 at 4 warps) work in lock
step: an op other than a matmul over E elements takes as long as over `ceil(E / T) * T` (so
one-element programs are not free, and a small tile gains nothing from more warps).

**Time**: `overhead + max(max(hbm_bytes / bandwidth, loaded_bytes / l2_bandwidth, matrix_flops /
matrix_peak + vector_flops / vector_peak) / efficiency, waves * iterations * loop_latency)`,
where `loaded_bytes` is what every execution of every load brings on chip (on a GPU through
L2, at `memory.l2_bytes_per_s`; the term is left out where the profile has no such rate),
counted in whole sectors where the profile has `memory.sector_bytes` (a tile whose rows of
the operand's contiguous run are narrower than a sector, a column block of one element say,
moves a sector per row: a `[4096, 1]` bf16 tile of a row-major `[4096, 4096]` loads 16 times
what it uses), and
`efficiency = P / (ceil(P / cores) * cores)` for `P` programs: the busiest core runs
`ceil(P / cores)` of them at its share of the device's peaks (a tail wave or a grid smaller
than the cores leaves cores idle). `overhead` is the profile's one launch.

**Loop latency** (a profile with `roofline.loop_iteration_s`: the GPUs; left out on the
NeuronCores). The iterations of one program's loops run one after another, and none takes
less than that latency, whatever it computes: a launch takes at least `waves x iterations x
loop_iteration_s`, where `iterations` sums, over the program's loops, each loop's trip count
times those of the loops around it (a nested loop multiplies, loops one after another add;
trip counts as for the traffic: a typical program's). The programs of one wave run side by
side, so their latencies overlap; the waves do not. `num_stages` pipelining does not divide
the term: the tile search does not choose the stages (the KB does, at emission), and the
profile's figure was measured with the KB's stages (3 or 4), so it is the latency an iteration
keeps after pipelining. The term is a floor, not a sum: where the roofline time is longer the
loop's latency hides under it (a matmul at BK = 64 and at BK = 128 price alike), and where it is
shorter, fewer and longer iterations win (BK = 16 runs four times the iterations of BK = 64:
on the H200 the 1024^3 matmul took 0.0198 ms at 64x128x16 against 0.0054 ms at 64x128x64).
A loop without a contraction in its body (a K-looped row reduction, a multi-pass
normalization) prices its iterations at `roofline.unpipelined_loop_iteration_s` instead: Triton
software-pipelines the loads that feed a dot, not the others, so such an iteration waits for its
loads (about 1 us on the H200 against 0.25 us): row kernels then take whole rows or few long
blocks over many programs, not one wave of programs looping over short blocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from xdsl.ir import Operation, SSAValue

from axon.dialects.ax import MatmulOp, TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.interface import form_op, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.nugraph.cost import RooflineCost, is_contraction
from axon.targets.profiles import DeviceProfile

#: bytes of one PSUM element: NeuronCore matmuls accumulate in fp32 (../shared/reference/nki.md 3)
PSUM_ELEMENT_BYTES = 4
#: waves whose footprints are computed one by one; past this many, an even sample stands in
EXACT_WAVES = 64


@dataclass(frozen=True)
class KernelCost:
    """What one launch of a kernel costs at concrete sizes (see the module docstring)."""

    hbm_bytes: float
    """Modeled HBM traffic of the whole launch (reads and writes)."""
    compulsory_bytes: float
    """Every input the kernel reads, read once, and every result, written once."""
    onchip_bytes: Mapping[str, int]
    """Peak live bytes per memory space of one program (per partition on a NeuronCore)."""
    programs: int
    """The grid's size."""
    flops: float
    seconds: float
    """Modeled time: roofline of traffic and flops over the parallelism's efficiency, at
    least the loops' latency floor, plus one launch's overhead."""
    fits: bool
    """Every on-chip tile fits its space (and the engines' tile limits) under the profile."""
    why_not: str | None = None
    """When it does not fit: which space or limit, needed against available."""
    waves: int = 1
    """Waves of `cores x programs per core` programs the launch runs in."""
    matrix_flops: float = 0.0
    """The part of `flops` done by contractions (at the matrix peak)."""
    loaded_bytes: float = 0.0
    """Bytes every execution of every load brings on chip (through L2 on a GPU)."""
    warps: int | None = None
    """A GPU program's warp count the cost is for; None on a profile without warps."""
    iterations: int = 0
    """Sequential loop iterations of one program (nested loops multiplied, loops one after
    another added)."""


def kernel_cost(kernel: KernelOp, sizes: Mapping[str, int], profile: DeviceProfile,
                group: int = 1, warps: int | None = None) -> KernelCost:
    """The cost of one launch of `kernel`; `sizes` binds every size symbol and every tile
    parameter (`kernel.param_names()`); `group` is the launch order (see the module
    docstring: 1 for row-major); `warps` a GPU program's warp count (None: the profile's
    default)."""
    return KernelPlan.of(kernel).cost(sizes, profile, group, warps)


@dataclass
class _Access:
    """A load (or a store) of an operand (a result): where and how much, in which loops."""

    operand: int
    extent: tuple[IntExpr, ...]
    shape: tuple[IntExpr, ...]
    itemsize: int
    dim_vars: tuple[tuple[str, ...], ...]
    """Per dim: the program ids and loop ivs its offset uses."""
    loops: tuple[int, ...]
    key: tuple[object, ...]
    """Equal for accesses of one operand at the same offsets and shape."""

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(v for vs in self.dim_vars for v in vs)


@dataclass
class _Tile:
    """One tile-valued SSA value: its type, where it lives, from when to when."""

    type: TensorType
    space: str | None
    """A named space (a load's or a full's), or None: decided by the profile (see `role`)."""
    role: str
    """`compute`, `accumulator` (a contraction's result), or `space`."""
    start: int
    end: int = -1
    alias: int | None = None
    """The tile whose buffer this one takes (its space too)."""


@dataclass
class _Loop:
    iv: str
    extent: IntExpr
    outer: tuple[int, ...]
    start: int
    end: int = -1


@dataclass
class _Compute:
    op: Operation
    loops: tuple[int, ...]


@dataclass
class KernelPlan:
    """A kernel read once into what its cost needs, then priced at any sizes (`cost`)."""

    grid: tuple[IntExpr, ...]
    program_ids: tuple[str, ...]
    inputs: tuple[TensorType, ...]
    outputs: tuple[TensorType, ...]
    loops: list[_Loop] = field(default_factory=list)
    loads: list[_Access] = field(default_factory=list)
    stores: list[_Access] = field(default_factory=list)
    tiles: list[_Tile] = field(default_factory=list)
    computes: list[_Compute] = field(default_factory=list)
    matmuls: list[tuple[TensorType, TensorType]] = field(default_factory=list)
    row_block: str | None = None
    """The tile parameter of the grid's first dim (the block of rows), if one."""

    @staticmethod
    def of(kernel: KernelOp) -> KernelPlan:
        """Read `kernel`'s body (one walk, no recursion)."""
        plan = KernelPlan(tuple(kernel.grid_exprs()), tuple(kernel.program_names()),
                          tuple(kernel.input_types()), tuple(kernel.output_types()),
                          row_block=row_block(kernel))
        _Reader(plan, kernel).read()
        return plan

    # ---- pricing ------------------------------------------------------------------------------
    def cost(self, sizes: Mapping[str, int], profile: DeviceProfile,
             group: int = 1, warps: int | None = None) -> KernelCost:
        """The launch's cost with every size and tile parameter bound by `sizes`, in launch
        order `group`, with `warps` warps a program on a GPU (None: the profile's default)."""
        env = {k: int(v) for k, v in sizes.items()}
        warps = warps if warps is not None else default_warps(profile)
        grid = [max(g.evaluate(env), 0) for g in self.grid]
        programs = math.prod(grid)
        extents = self._loop_extents(env, grid)
        onchip, why_not = self._onchip(env, profile, warps)
        counts = dict(zip(self.program_ids, grid, strict=True))
        counts.update({loop.iv: extents[n] for n, loop in enumerate(self.loops)})

        cores = _quantity(profile.parallelism.cores if profile.parallelism else None, 1)
        per_core = self._programs_per_core(onchip, profile, warps)
        wave = max(cores * per_core, 1)
        waves = -(-programs // wave) if programs else 0
        memory = profile.memory
        l2 = memory.l2_bytes.value if memory is not None and memory.l2_bytes else None
        traffic = _Traffic(self, env, grid, counts, extents, wave, group)
        hbm = traffic.uncached() if l2 is None else traffic.cached(l2)
        sector = (int(memory.sector_bytes.value)
                  if memory is not None and memory.sector_bytes is not None else None)
        loaded = sum(traffic.executed(a) * traffic.sector_scale(a, sector) for a in self.loads)

        matrix, vector, matrix_busy, vector_busy = self._flops(env, profile, programs, extents,
                                                               warps)
        roof = profile.roofline
        busy = -(-programs // cores) * cores if programs else 1
        efficiency = programs / busy if programs else 1.0
        l2_rate = memory.l2_bytes_per_s if memory is not None else None
        work = max(hbm / roof.bytes_per_s.value,
                   loaded / l2_rate.value if l2_rate is not None else 0.0,
                   matrix_busy / roof.matrix_flops.value + vector_busy / roof.vector_flops.value)
        iterations = self._iterations(extents)
        floor = waves * self._latency(extents, profile)
        seconds = roof.op_overhead_s.value + max(work / max(efficiency, 1e-12), floor)
        return KernelCost(hbm_bytes=float(hbm), compulsory_bytes=float(traffic.compulsory()),
                          onchip_bytes=MappingProxyType(onchip), programs=programs,
                          flops=float(matrix + vector), seconds=seconds,
                          fits=why_not is None, why_not=why_not, waves=waves,
                          matrix_flops=float(matrix), loaded_bytes=float(loaded), warps=warps,
                          iterations=iterations)

    def fitting_warps(self, sizes: Mapping[str, int], profile: DeviceProfile) -> int | None:
        """The profile's default warp count, or, when the program's tiles overflow that many
        warps' registers, the fewest warps that hold them (the default where none does); None
        on a profile without warps."""
        default = default_warps(profile)
        if default is None:
            return None
        onchip, _ = self._onchip({k: int(v) for k, v in sizes.items()}, profile, default)
        needed = warps_to_fit(onchip.get("registers", 0), profile)
        return max(default, needed) if needed is not None else default

    def _loop_extents(self, env: dict[str, int], grid: Sequence[int]) -> list[int]:
        """Each loop's trip count; an extent that uses a program id or an outer iv is taken at
        the middle of its range (a typical program)."""
        scope = dict(env)
        scope.update({p: max(g - 1, 0) // 2 for p, g in zip(self.program_ids, grid,
                                                               strict=True)})
        found = []
        for loop in self.loops:
            extent = max(loop.extent.evaluate(scope), 0)
            found.append(extent)
            scope[loop.iv] = max(extent - 1, 0) // 2
        return found

    def _trips(self, extents: Sequence[int]) -> list[int]:
        """Each loop's iterations in one program: its trip count times those of the loops
        around it (see the module docstring)."""
        return [extents[n] * math.prod(extents[o] for o in loop.outer)
                for n, loop in enumerate(self.loops)]

    def _iterations(self, extents: Sequence[int]) -> int:
        """The sequential loop iterations of one program, summed over its loops."""
        return sum(self._trips(extents))

    def _latency(self, extents: Sequence[int], profile: DeviceProfile) -> float:
        """The seconds one program's loop iterations take at least, in sequence: a loop with a
        contraction in its body (at any depth) at `loop_iteration_s`, one without at
        `unpipelined_loop_iteration_s` (see the module docstring); 0 without the first."""
        roof = profile.roofline
        if roof.loop_iteration_s is None:
            return 0.0
        pipelined = roof.loop_iteration_s.value
        unpipelined = (roof.unpipelined_loop_iteration_s.value
                       if roof.unpipelined_loop_iteration_s is not None else pipelined)
        with_dot = {n for c in self.computes if isinstance(c.op, MatmulOp) for n in c.loops}
        return sum(trips * (pipelined if n in with_dot else unpipelined)
                   for n, trips in enumerate(self._trips(extents)))

    def _executions(self, loops: tuple[int, ...], programs: int, extents: Sequence[int]) -> int:
        return programs * math.prod(extents[n] for n in loops)

    def _flops(self, env: dict[str, int], profile: DeviceProfile, programs: int,
               extents: Sequence[int], warps: int | None
               ) -> tuple[float, float, float, float]:
        """Matrix and vector flops, then the same as the engines' time counts them (with idle
        partitions: `_lane_scale`)."""
        counter = RooflineCost(profile, env)
        matrix = vector = matrix_busy = vector_busy = 0.0
        for c in self.computes:
            meaning = form_op(c.op).meaning()
            total = counter.flops(meaning.form) * self._executions(c.loops, programs, extents)
            busy = total * _lane_scale(c.op, env, profile, warps)
            if is_contraction(meaning.form):
                matrix += total
                matrix_busy += busy
            else:
                vector += total
                vector_busy += busy
        return matrix, vector, matrix_busy, vector_busy

    # ---- on chip ------------------------------------------------------------------------------
    def _onchip(self, env: dict[str, int], profile: DeviceProfile, warps: int | None
                ) -> tuple[dict[str, int], str | None]:
        """Peak live bytes per space of one program, and why it does not fit (or None)."""
        spaces = _spaces(profile, warps)
        partitions = partition_count(profile)
        compute, accumulator = ("sbuf", "psum") if partitions else ("registers", "registers")
        why_not: str | None = None
        resolved: list[str] = []
        events: list[tuple[int, int, str, int]] = []
        for tile in self.tiles:
            if tile.alias is not None:
                space = resolved[tile.alias]
            elif tile.space is not None:
                space = tile.space
            else:
                space = accumulator if tile.role == "accumulator" else compute
            resolved.append(space)
            shape = [max(d.evaluate(env), 0) for d in laid_out(tile.type)]
            itemsize = (PSUM_ELEMENT_BYTES if space == "psum"
                        else DTYPES[tile.type.dtype].storage.itemsize)
            if partitions and shape and across_partitions(tile.type, self.row_block):
                if shape[0] > partitions and why_not is None:
                    why_not = (f"a tile {_shown(tile.type, shape)} in {space} spans "
                               f"{shape[0]} partitions; the core has {partitions}")
                nbytes = math.prod(shape[1:]) * itemsize
            else:
                nbytes = math.prod(shape) * itemsize
            events.append((tile.start, 0, space, nbytes))
            events.append((tile.end, 1, space, -nbytes))
        peak: dict[str, int] = {}
        live: dict[str, int] = {}
        for _, _, space, delta in sorted(events):
            live[space] = live.get(space, 0) + delta
            peak[space] = max(peak.get(space, 0), live[space])
        if spaces:
            for space, need in sorted(peak.items()):
                have = spaces.get(space)
                if have is None:
                    why_not = why_not or (f"a tile in space '{space}', which profile "
                                          f"{profile.name} does not have ("
                                          f"{', '.join(sorted(spaces))})")
                elif need > have and why_not is None:
                    unit = " per partition" if partitions else " per program"
                    at = f" at {warps} warps" if space == "registers" and warps else ""
                    why_not = (f"{space} needs {need} bytes{unit}; {profile.name} has "
                               f"{have}{at}")
        return peak, why_not or self._engine_limits(env, profile)

    def _engine_limits(self, env: dict[str, int], profile: DeviceProfile) -> str | None:
        """A NeuronCore matmul's operand limits (see the module docstring)."""
        limits = profile.limits
        partitions = partition_count(profile)
        if limits is None or not partitions:
            return None
        for lhs, rhs in self.matmuls:
            if lhs.rank != 2 or rhs.rank not in (1, 2):
                continue
            a, b = (d.evaluate(env) for d in lhs.shape)
            # a matrix-vector product `[M, K] @ [K]` moves the vector as one column
            c = rhs.shape[1].evaluate(env) if rhs.rank == 2 else 1
            for what, need, limit in [
                    ("stationary free size", a, limits.matmul_stationary_free_max),
                    ("contraction (partition) size", b, None),
                    ("moving free size", c, limits.matmul_moving_free_max)]:
                have = partitions if limit is None else int(limit.value)
                if need > have:
                    return f"ax.matmul {what} {need} > {have} on {profile.name}"
        return None

    def _programs_per_core(self, onchip: Mapping[str, int], profile: DeviceProfile,
                           warps: int | None) -> int:
        """Programs one core holds at once: one on a NeuronCore; on a GPU as many as the SM's
        registers, shared memory and resident warps hold, at most its
        `programs_per_core_max`."""
        parallelism, memory = profile.parallelism, profile.memory
        most = _quantity(parallelism.programs_per_core_max if parallelism else None, 1)
        warps_per_core = parallelism.warps_per_core_max if parallelism else None
        if warps and warps_per_core is not None:
            most = min(most, max(int(warps_per_core.value) // warps, 1))
        if memory is None:
            return most
        for space, per_core in (("registers", memory.registers_per_core_bytes),
                                ("shared", memory.shared_per_core_bytes)):
            need = onchip.get(space, 0)
            if per_core is not None and need > 0:
                most = min(most, max(int(per_core.value) // need, 1))
        return most


class _Traffic:
    """HBM bytes of one launch (see the module docstring for the rules)."""

    def __init__(self, plan: KernelPlan, env: dict[str, int], grid: list[int],
                 counts: dict[str, int], extents: list[int], wave: int,
                 group: int = 1) -> None:
        self.plan, self.grid, self.counts, self.wave = plan, grid, counts, wave
        self.programs = math.prod(grid)
        self.extents = extents
        self.inputs = [[max(d.evaluate(env), 0) for d in t.shape] for t in plan.inputs]
        self.outputs = [[max(d.evaluate(env), 0) for d in t.shape] for t in plan.outputs]
        self.shapes = {id(a): [max(d.evaluate(env), 0) for d in a.shape]
                       for a in (*plan.loads, *plan.stores)}
        self.group = max(group, 1) if len(grid) == 2 else 1
        if self.group > 1:  # the first dim fastest within a group, then the second
            self.strides = [1, min(self.group, grid[0])]
        else:
            self.strides = [math.prod(grid[k + 1:]) for k in range(len(grid))]

    # ---- sizes --------------------------------------------------------------------------------
    def operand_bytes(self, access: _Access, store: bool) -> int:
        extent = (self.outputs if store else self.inputs)[access.operand]
        return math.prod(extent) * access.itemsize

    def region(self, access: _Access, counts: Mapping[str, int], store: bool = False) -> int:
        """Distinct bytes `access` covers when each id and iv takes `counts[v]` values."""
        extent = (self.outputs if store else self.inputs)[access.operand]
        shape = self.shapes[id(access)]
        box = one = access.itemsize
        for d, vs in enumerate(access.dim_vars):
            n = math.prod(counts[v] for v in vs)
            box *= min(extent[d], n * shape[d])
            one *= min(extent[d], shape[d])
        return min(box, one * math.prod(counts[v] for v in access.variables))

    def window(self, first: int, last: int, iterations: bool = True) -> dict[str, int]:
        """Counts of the ids over programs [first, last) in launch order, and of the ivs (all
        iterations, or one)."""
        counts = {}
        if self.group > 1:
            counts.update(self.grouped_window(first, last))
        else:
            for pid, size, stride in zip(self.plan.program_ids, self.grid, self.strides,
                                         strict=True):
                span = (last - 1) // stride - first // stride + 1 if last > first else 0
                counts[pid] = min(size, span)
        for n, loop in enumerate(self.plan.loops):
            counts[loop.iv] = self.extents[n] if iterations else min(self.extents[n], 1)
        return counts

    def grouped_window(self, first: int, last: int) -> dict[str, int]:
        """Distinct values of the two program ids over programs [first, last) launched in
        groups of `group` rows (Triton's GROUP_SIZE_M order): within a group the row id varies
        fastest, then the column id. Exact: the rows of the groups touched add up, the columns
        are the union of each group's run of columns."""
        rows_total, cols_total = self.grid
        per_group = self.group * cols_total
        rows = 0
        runs: list[tuple[int, int]] = []
        for g in range(first // per_group, (last - 1) // per_group + 1 if last > first else 0):
            height = min(self.group, rows_total - g * self.group)
            lo = max(first, g * per_group) - g * per_group
            hi = min(last, g * per_group + height * cols_total) - g * per_group
            if hi <= lo:
                continue
            rows += min(height, hi - lo)
            runs.append((lo // height, (hi - 1) // height))
        cols = 0
        reach = -1
        for lo, hi in sorted(runs):
            if hi > reach:
                cols += hi - max(lo, reach + 1) + 1
                reach = hi
        row_id, col_id = self.plan.program_ids
        return {row_id: min(rows, rows_total), col_id: min(cols, cols_total)}

    # ---- the rules ----------------------------------------------------------------------------
    def compulsory(self) -> int:
        read = {a.operand: self.operand_bytes(a, False) for a in self.plan.loads}
        written = sum(math.prod(shape) * DTYPES[t.dtype].storage.itemsize
                      for shape, t in zip(self.outputs, self.plan.outputs, strict=True))
        return sum(read.values()) + written

    def sector_scale(self, access: _Access, sector: int | None) -> float:
        """How many bytes a load of `access` moves per byte it uses, where memory moves whole
        sectors of `sector` bytes (None: 1): a tile row of the operand's contiguous run (its
        trailing dims while the tile holds them whole, then the first one it cuts) rounded up
        to whole sectors, over the run."""
        if not sector:
            return 1.0
        extent = self.inputs[access.operand]
        shape = self.shapes[id(access)]
        run = access.itemsize
        for d in reversed(range(len(shape))):
            run *= min(shape[d], extent[d])
            if shape[d] < extent[d]:
                break
        return -(-run // sector) * sector / run if run else 1.0

    def executed(self, access: _Access, store: bool = False) -> float:
        """Bytes moved when every execution of `access` goes to HBM."""
        combos = math.prod(self.counts[v] for v in access.variables)
        if not combos:
            return 0.0
        runs = self.plan._executions(access.loops, self.programs, self.extents)
        return runs * self.region(access, self.counts, store) / combos

    def uncached(self) -> float:
        return (sum(self.executed(a) for a in self.plan.loads)
                + sum(self.executed(a, store=True) for a in self.plan.stores))

    def cached(self, l2: float) -> float:
        writes = sum(min(self.region(a, self.counts, True), self.operand_bytes(a, True))
                     for a in _distinct(self.plan.stores))
        first_wave = self.window(0, min(self.wave, self.programs), iterations=False)
        in_flight = sum(self.region(a, first_wave) for a in _distinct(self.plan.loads))
        if in_flight > l2:
            return sum(self.executed(a) for a in self.plan.loads) + writes
        reads: dict[int, float] = {}
        touched: dict[int, float] = {}
        for access in _distinct(self.plan.loads):
            period = self.period(access)
            if period is None or self.touched(period, touched) <= l2:
                cost = float(self.region(access, self.counts))
            else:
                cost = self.per_wave(access)
            reads[access.operand] = reads.get(access.operand, 0.0) + cost
        total = 0.0
        for operand, cost in reads.items():
            nbytes = math.prod(self.inputs[operand]) * _itemsize(self.plan.inputs[operand])
            total += min(cost, nbytes) if self.touched(0, touched) <= l2 else cost
        return total + writes

    def period(self, access: _Access) -> int | None:
        """Programs between a program's read of a tile of `access` and the next program's
        read of the same tile, in launch order; None when no other program reads it."""
        strides = [s for pid, size, s in zip(self.plan.program_ids, self.grid, self.strides,
                                             strict=True)
                   if pid not in access.variables and size > 1]
        return min(strides) if strides else None

    def touched(self, period: int, memo: dict[int, float]) -> float:
        """Distinct bytes (loads and stores) of `period + W` consecutive programs."""
        if period not in memo:
            counts = self.window(0, min(period + self.wave, self.programs))
            found: dict[tuple[bool, int], float] = {}
            for store, accesses in ((False, self.plan.loads), (True, self.plan.stores)):
                for a in _distinct(accesses):
                    key = (store, a.operand)
                    found[key] = found.get(key, 0.0) + self.region(a, counts, store)
            memo[period] = sum(min(v, self.operand_bytes(_first(self.plan, k), k[0]))
                               for k, v in found.items())
        return memo[period]

    def per_wave(self, access: _Access) -> float:
        """The region's distinct bytes summed over the waves (an even sample of the waves
        when there are more than `EXACT_WAVES`)."""
        waves = -(-self.programs // self.wave)
        picked = range(waves) if waves <= EXACT_WAVES else sorted(
            {round(n * (waves - 1) / (EXACT_WAVES - 1)) for n in range(EXACT_WAVES)})
        total = 0.0
        for w in picked:
            start = w * self.wave
            total += self.region(access, self.window(start, min(start + self.wave,
                                                                self.programs)))
        return total * waves / len(picked)


def _distinct(accesses: Sequence[_Access]) -> list[_Access]:
    seen: dict[tuple[object, ...], _Access] = {}
    for a in accesses:
        seen.setdefault(a.key, a)
    return list(seen.values())


def _first(plan: KernelPlan, key: tuple[bool, int]) -> _Access:
    store, operand = key
    return next(a for a in (plan.stores if store else plan.loads) if a.operand == operand)


def _itemsize(t: TensorType) -> int:
    return DTYPES[t.dtype].storage.itemsize


def _quantity(q: object, default: int) -> int:
    value = getattr(q, "value", None)
    return default if value is None else int(value)


def _lane_scale(op: Operation, env: Mapping[str, int], profile: DeviceProfile,
                warps: int | None) -> float:
    """How much longer an op takes for leaving lanes idle. On a NeuronCore the engines work on
    every partition at once, so a tile over P < 128 partitions takes as long as one over 128 (a
    vector op: its result's first dim; a matmul: its stationary operand `[K, M]` fills K rows
    and M columns of the 128 x 128 array). On a GPU a program's threads (`warps` warps) work in
    lock step: an op other than a matmul over E elements takes as long as over a whole number
    of the program's threads, E being its largest tile, operand or result (a row sum of a
    [1, 4096] tile keeps every thread busy, whatever the size of its [1, 1] result)."""
    partitions = partition_count(profile)
    if not partitions:
        result = op.results[0].type if op.results else None
        if not isinstance(result, TensorType) or isinstance(op, MatmulOp):
            return 1.0
        lanes = program_threads(profile, warps)
        tiles = [t for t in (*(v.type for v in op.operands), result)
                 if isinstance(t, TensorType)]
        elements = max(max(math.prod(d.evaluate(env) for d in t.shape) for t in tiles), 1)
        return -(-elements // lanes) * lanes / elements

    def used(dim: IntExpr) -> int:
        return min(max(dim.evaluate(env), 1), partitions)

    if isinstance(op, MatmulOp):
        lhs = op.operands[0].type
        if isinstance(lhs, TensorType) and lhs.rank >= 2:  # batch dims are 1 on tiles
            return partitions * partitions / (used(lhs.shape[-2]) * used(lhs.shape[-1]))
    result = op.results[0].type if op.results else None
    if isinstance(result, TensorType) and result.rank:
        return partitions / used(laid_out(result)[0])
    return float(partitions)


#: the threads of one GPU program on a profile that gives no warps (Triton's default
#: `num_warps=4`, 32 threads a warp): an elementwise op over fewer elements leaves the rest idle
GPU_PROGRAM_LANES = 128

#: the name a candidate shows a GPU program's warp count by (Triton's `num_warps`); like
#: `GROUP`, an argument of the cost, never read from the sizes
WARPS = "num_warps"


def warp_counts(profile: DeviceProfile) -> tuple[int, ...]:
    """The warp counts a GPU program may have: the powers of two up to the profile's
    `warps_per_program_max` (Triton takes num_warps as a power of two); none on a profile
    without warps (a NeuronCore)."""
    parallelism = profile.parallelism
    most = parallelism.warps_per_program_max if parallelism else None
    if most is None:
        return ()
    return tuple(1 << e for e in range(int(most.value).bit_length()))


def default_warps(profile: DeviceProfile) -> int | None:
    """The warp count a program gets unless another is chosen (the profile's
    `warps_per_program_default`); None on a profile without warps."""
    parallelism = profile.parallelism
    default = parallelism.warps_per_program_default if parallelism else None
    return int(default.value) if default is not None and warp_counts(profile) else None


def program_threads(profile: DeviceProfile, warps: int | None) -> int:
    """A GPU program's threads: `warps` warps of the profile's `warp_threads`
    (`GPU_PROGRAM_LANES` where the profile gives no warps)."""
    parallelism = profile.parallelism
    threads = parallelism.warp_threads if parallelism else None
    if warps is None or threads is None:
        return GPU_PROGRAM_LANES
    return warps * int(threads.value)


def warps_to_fit(register_bytes: int, profile: DeviceProfile) -> int | None:
    """The fewest warps whose threads hold `register_bytes` of a program's tiles within the
    per-thread and per-program register limits (None: no count does, or the profile has no
    warps)."""
    for warps in warp_counts(profile):
        if _spaces(profile, warps).get("registers", register_bytes) >= register_bytes:
            return warps
    return None


#: the name a candidate shows its launch order by (`group`: programs of a 2-D grid launched in
#: groups of this many rows, Triton's GROUP_SIZE_M swizzle; 1 for row-major order); never a
#: size, so a program's own size symbol of that name cannot be mistaken for it
GROUP = "GROUP_M"


def row_block(kernel: KernelOp) -> str | None:
    """The tile parameter in the extent of the kernel's first grid dim that has one (`BM` of
    `ceildiv(M, BM)`; a batched kernel's leading grid dims, one index per program, have none),
    when exactly one is."""
    params = set(kernel.param_names())
    for extent in kernel.grid_exprs():
        found = extent.symbols() & params
        if found:
            return next(iter(found)) if len(found) == 1 else None
    return None


def laid_out(tile: TensorType) -> tuple[IntExpr, ...]:
    """A tile's dims as a NeuronCore lays them out: dims of one dropped (a batched kernel's
    `[1, 1, BM, D]` tile is a `[BM, D]` one), a tile of ones being one element."""
    dims = tuple(d for d in tile.shape if d != IntExpr.const(1))
    return dims or (IntExpr.const(1),)


def across_partitions(tile: TensorType, rows: str | None) -> bool:
    """Whether a NeuronCore tile lays its first dim (of `laid_out`) across the partitions: a
    tile of rank 2 or more does, and a vector does when it is a block of rows (one value per
    row, as a row sum); any other vector (a weight along the columns, broadcast over the rows)
    lies along one partition's free dim."""
    dims = laid_out(tile)
    if len(dims) >= 2:
        return True
    return rows is not None and dims[0] == IntExpr.sym(rows)


def partition_count(profile: DeviceProfile) -> int:
    """The partitions of a NeuronCore profile's on-chip memory; 0 for a profile without."""
    memory = profile.memory
    return int(memory.partitions.value) if memory is not None and memory.partitions else 0


def _spaces(profile: DeviceProfile, warps: int | None = None) -> dict[str, int]:
    """Each memory space's capacity for one program (per partition on a NeuronCore; on a GPU
    the registers of `warps` warps' threads, within the program's limit); empty when the
    profile gives none (every tile fits)."""
    memory = profile.memory
    if memory is None:
        return {}
    found: dict[str, int] = {}
    sbuf = memory.sbuf_partition_usable_bytes or memory.sbuf_partition_bytes
    for name, q in (("sbuf", sbuf), ("psum", memory.psum_partition_bytes),
                    ("registers", memory.registers_per_program_bytes),
                    ("shared", memory.shared_per_program_bytes)):
        if q is not None:
            found[name] = int(q.value)
    per_thread = memory.registers_per_thread_bytes
    if warps and per_thread is not None and "registers" in found:
        threads = program_threads(profile, warps)
        found["registers"] = min(found["registers"], threads * int(per_thread.value))
    return found


def _shown(t: TensorType, shape: Sequence[int]) -> str:
    return f"[{', '.join(map(str, shape))}] {t.dtype}"


class _Reader:
    """Walks a kernel's body in program order (loops flattened, no recursion) into a plan."""

    def __init__(self, plan: KernelPlan, kernel: KernelOp) -> None:
        self.plan, self.kernel = plan, kernel
        self.tile_of: dict[SSAValue, int] = {}
        self.args: dict[SSAValue, int] = {a: n for n, a in enumerate(kernel.body.block.args)}
        self.uses: list[tuple[int, int, tuple[int, ...]]] = []
        self.defined_in: list[tuple[int, ...]] = []
        self.loop_ops: list[ForOp] = []
        #: (tile, operand tile, position): the tile takes the operand's buffer if it dies there
        self.in_place: list[tuple[int, int, int]] = []

    def read(self) -> None:
        stack: list[tuple[Iterator[Operation], int | None]] = [
            (iter(self.kernel.body.block.ops), None)]
        chain: list[int] = []
        pos = 0
        while stack:
            ops, loop = stack[-1]
            op = next(ops, None)
            if op is None:
                stack.pop()
                if loop is not None:
                    chain.pop()
                    self.plan.loops[loop].end = pos
                    for r, arg in zip(self.loop_ops[loop].results,
                                      self.loop_ops[loop].body.block.args, strict=True):
                        t = self.define(r, None, "compute", pos, tuple(chain))
                        self.plan.tiles[t].alias = self.tile_of[arg]
                    pos += 1
                continue
            loops = tuple(chain)
            for v in op.operands:
                if v in self.tile_of:
                    self.uses.append((self.tile_of[v], pos, loops))
            if isinstance(op, ForOp):
                n = len(self.plan.loops)
                self.plan.loops.append(_Loop(op.iv.data, op.extent_expr(), loops, pos))
                self.loop_ops.append(op)
                chain.append(n)
                for arg, init in zip(op.body.block.args, op.inits, strict=True):
                    t = self.define(arg, None, "compute", pos, tuple(chain))
                    if init in self.tile_of:
                        self.in_place.append((t, self.tile_of[init], pos))
                stack.append((iter(op.body.block.ops), n))
            else:
                self.visit(op, pos, loops)
            pos += 1
        self.finish()

    def define(self, value: SSAValue, space: str | None, role: str, pos: int,
               loops: tuple[int, ...]) -> int:
        assert isinstance(value.type, TensorType)
        self.plan.tiles.append(_Tile(value.type, space, role, pos))
        self.defined_in.append(loops)
        self.tile_of[value] = len(self.plan.tiles) - 1
        return self.tile_of[value]

    def visit(self, op: Operation, pos: int, loops: tuple[int, ...]) -> None:
        if isinstance(op, LoadOp):
            self.plan.loads.append(self.access(op.source, op.offsets.data, op.shape.data,
                                               loops, False))
            self.define(op.result, op.space.data, "space", pos, loops)
        elif isinstance(op, StoreOp):
            tile = op.value.type
            assert isinstance(tile, TensorType)
            self.plan.stores.append(self.access(op.result.value.data, op.offsets.data,
                                                tile.shape, loops, True))
        elif isinstance(op, FullOp):
            self.define(op.result, op.space.data, "space", pos, loops)
        elif has_form(op) and not isinstance(op, YieldOp):
            self.plan.computes.append(_Compute(op, loops))
            if isinstance(op, MatmulOp):
                lhs, rhs = (v.type for v in op.operands)
                assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
                self.plan.matmuls.append((lhs, rhs))
            role = "accumulator" if is_contraction(form_op(op).meaning().form) else "compute"
            for r in op.results:
                if not isinstance(r.type, TensorType):
                    continue
                t = self.define(r, None, role, pos, loops)
                operand = next((self.tile_of[v] for v in op.operands
                                if v in self.tile_of and v.type == r.type), None)
                if operand is not None:
                    self.in_place.append((t, operand, pos))

    def access(self, source: SSAValue | int, offsets: Sequence[object],
               shape: Sequence[object], loops: tuple[int, ...], store: bool) -> _Access:
        if isinstance(source, int):
            operand, t = source, self.plan.outputs[source]
        elif source in self.args:
            operand, t = self.args[source], self.plan.inputs[self.args[source]]
        else:
            raise ValueError("'tile.load' reads something other than a kernel argument")
        names = set(self.plan.program_ids) | {self.plan.loops[n].iv for n in loops}
        offs = [IntExpr.lift(getattr(o, "data", o)) for o in offsets]  # type: ignore[arg-type]
        dims = tuple(IntExpr.lift(getattr(d, "data", d)) for d in shape)  # type: ignore[arg-type]
        # loops of one extent walk one range: an iv's name does not change the region
        canon = {self.plan.loops[n].iv: IntExpr.sym(f"iv_{m}")
                 for m, n in enumerate(loops)}
        key = (store, operand, tuple(str(o.substitute(canon)) for o in offs),
               tuple(str(d) for d in dims),
               tuple(str(self.plan.loops[n].extent) for n in loops))
        return _Access(operand, t.shape, dims, _itemsize(t),
                       tuple(tuple(sorted(o.symbols() & names)) for o in offs), loops, key)

    def finish(self) -> None:
        """Each tile's last use (a use inside a loop the tile is defined outside of lasts to
        that loop's end), then the in-place buffers: a tile takes an operand's buffer (and
        space) when that operand dies where the tile is made."""
        tiles, loops = self.plan.tiles, self.plan.loops
        for tile in tiles:
            tile.end = tile.start
        for t, pos, use_loops in self.uses:
            inside = [n for n in use_loops if n not in self.defined_in[t]]
            tiles[t].end = max(tiles[t].end, loops[inside[0]].end if inside else pos)
        for t, operand, pos in self.in_place:
            if tiles[t].alias is None and tiles[operand].end == pos:
                tiles[t].alias = operand
                tiles[operand].end = pos - 1
