"""Per-instruction costs: engine cycles of compute instructions, transfer time of DMAs.

The cycle formulas are the legacy ISA docs' "Estimated instruction cost" (written for NC-v2,
SDK@49ee15c5:general/nki/api/nki/isa/__init__.py), as ../shared/reference/nki.md section 6.1
lists them; the TensorE, VectorE/ScalarE and DMA facts are its section 6.2. `N` is the elements
per partition of the instruction's main operand (its largest read, or its dst when it reads
nothing). Cycles are the executing engine's; `CostConstants.clock_hz` turns them into seconds.
"""

from __future__ import annotations

from axon.targets.nki.cost.constants import CostConstants
from axon.targets.nki.simulator.trace import Access, Instruction

_SIXTEEN_BIT = ("bfloat16", "float16")


def _main_operand(inst: Instruction) -> Access:
    """The operand whose free size is the formulas' N."""
    if inst.reads:
        return max((a for _, a in inst.reads), key=lambda a: a.elements_per_partition)
    return inst.writes[0][1]


def _operand(inst: Instruction, name: str) -> Access | None:
    for key, access in (*inst.reads, *inst.writes):
        if key == name:
            return access
    return None


def _dense(access: Access) -> bool:
    """The access walks its partition's elements contiguously."""
    itemsize = access.bytes // max(1, access.partition_count * access.elements_per_partition)
    return access.contiguous_bytes >= access.elements_per_partition * itemsize


def matmul_cycles(inst: Instruction, c: CostConstants) -> float:
    """nc_matmul on TensorE (nki.md 6.1): `max(min(64, N_stationary), N_moving)` cycles for
    bf16/fp16/tf32/fp8 (the moving operand streams at one column per cycle, MultiplyMoving's
    initiation interval max(N, MM_INIT_LATENCY) [A1]); 4x that for fp32, of which
    `is_*_onezero` gives up to 2x back. A transpose (`is_transpose`) costs as nc_transpose."""
    if inst.option("transpose"):
        return transpose_pe_cycles(_main_operand(inst), c)
    stationary = _operand(inst, "stationary")
    moving = _operand(inst, "moving")
    assert stationary is not None and moving is not None
    cycles = max(min(c.min_ii_cycles, stationary.elements_per_partition),
                 moving.elements_per_partition)
    if "float32" in (stationary.dtype, moving.dtype):
        onezero = inst.option("stationary_onezero") or inst.option("moving_onezero")
        cycles *= 2 if onezero else 4
    return float(cycles)


def transpose_pe_cycles(data: Access, c: CostConstants) -> float:
    """nc_transpose on TensorE: `max(P, min(64, F))` cycles (nki.md 6.1)."""
    return float(max(data.partition_count, min(c.min_ii_cycles, data.elements_per_partition)))


def _perf_mode(inst: Instruction, c: CostConstants) -> float:
    """NC-v3 VectorE perf mode (nki.md 6.2, [A2]): the throughput factor of a VectorE
    instruction with 16-bit float operands on both sides; 1 where it does not apply."""
    accesses = [a for _, a in (*inst.reads, *inst.writes)]
    if inst.engine != "DVE" or not accesses or any(a.dtype not in _SIXTEEN_BIT
                                                   for a in accesses):
        return 1.0
    in_sbuf = all(a.buffer == "sbuf" for a in accesses)
    if inst.name in ("tensor_copy", "tensor_scalar"):
        if in_sbuf and all(_dense(a) for a in accesses):
            return c.dve_perf_mode_copy_speedup
        return c.dve_perf_mode_speedup
    if inst.name == "tensor_tensor" and in_sbuf:
        return c.dve_perf_mode_speedup
    return 1.0


def _tensor_tensor_cycles(inst: Instruction, n: int, c: CostConstants) -> float:
    """`max(MIN_II, N)` when one input is in PSUM, or bf16 in and out in SBUF with add, multiply
    or subtract, contiguous; otherwise `max(MIN_II, 2N)` (nki.md 6.1)."""
    inputs = [a for _, a in inst.reads]
    accesses = [a for _, a in (*inst.reads, *inst.writes)]
    one_pass = any(a.buffer == "psum" for a in inputs) or (
        all(a.dtype == "bfloat16" and a.buffer == "sbuf" and _dense(a) for a in accesses)
        and inst.option("op") in ("add", "multiply", "subtract"))
    return max(c.min_ii_cycles, n if one_pass else 2 * n)


def compute_cycles(inst: Instruction, c: CostConstants) -> float:
    """Cycles of a compute instruction on its engine (PE, ACT, DVE or POOL), nki.md 6.1.

    An instruction the table does not list costs what [A1] gives for VectorE/ScalarE in general
    (nki.md 6.2): about N cycles per tensor input, at least MIN_II."""
    name = inst.name
    main = _main_operand(inst)
    n = main.elements_per_partition
    mii = c.min_ii_cycles
    if name == "nc_matmul":
        return matmul_cycles(inst, c)
    if name == "nc_transpose":
        return transpose_pe_cycles(main, c) if inst.engine == "PE" else max(mii, n)
    if name in ("iota", "affine_select"):
        dst = inst.writes[0][1]
        return c.gpsimd_start_cycles + dst.elements_per_partition
    if name in ("tensor_copy_dynamic_src", "tensor_copy_dynamic_dst"):
        return max(c.dynamic_copy_cycles, n)
    if name == "memset":
        zero16 = inst.option("value") == 0.0 and main.dtype in _SIXTEEN_BIT
        cycles = max(mii, n / 2 if zero16 else n)
    elif name == "activation":
        cycles = max(mii, n)
        if inst.option("reduce"):
            cycles += mii
        if _operand(inst, "reduce_res") is not None:
            cycles += c.act_read_accumulator_cycles
    elif name == "exponential":
        cycles = max(mii, n) + (mii if inst.option("reduce") else 0)
    elif name in ("tensor_copy", "tensor_scalar"):
        cycles = max(mii, n)
    elif name == "tensor_tensor":
        cycles = _tensor_tensor_cycles(inst, n, c)
    elif name == "tensor_reduce":
        halved = main.dtype == "bfloat16" and inst.writes[0][1].dtype == "bfloat16" \
            and inst.option("op") in ("add", "maximum")
        cycles = n / 2 if halved else n
    elif name == "tensor_tensor_scan":
        cycles = max(mii, 2 * n)
    elif name == "bn_stats":
        cycles = max(mii, n)
    elif name == "bn_aggr":
        cycles = max(mii, 13 * n / 3)
    else:
        tensor_inputs = max(1, len(inst.reads))
        cycles = max(mii, tensor_inputs * n)
    return cycles / _perf_mode(inst, c)


def dma_efficiency(inst: Instruction, c: CostConstants) -> float:
    """The fraction of the DMA bandwidth a transfer reaches: `dma_efficiency` when every side
    moves at least `dma_efficient_row_bytes` contiguous bytes per partition (HBM row),
    `dma_small_row_efficiency` otherwise (nki.md 6.2: bandwidth needs >= 2 KiB per partition)."""
    return float(getattr(c, dma_efficiency_name(inst, c)))


def dma_efficiency_name(inst: Instruction, c: CostConstants) -> str:
    """Which constant gives a transfer's efficiency: `dma_efficiency` when every side moves at
    least `dma_efficient_row_bytes` contiguous bytes per partition (HBM row), else
    `dma_small_row_efficiency`."""
    rows = min(a.contiguous_bytes for _, a in (*inst.reads, *inst.writes))
    return "dma_efficiency" if rows >= c.dma_efficient_row_bytes else "dma_small_row_efficiency"


def dma_bytes(inst: Instruction) -> int:
    """Bytes a DMA moves (its destination's)."""
    return inst.writes[0][1].bytes


def dma_transfer_s(inst: Instruction, c: CostConstants) -> float:
    """Seconds a DMA holds the core's DMA engines: bytes / (bandwidth x efficiency). The fixed
    cost (`dma_fixed_s`) is latency, paid in the DMA's queue, not bandwidth (nki.md 6.2)."""
    return dma_bytes(inst) / (c.dma_bytes_per_s * dma_efficiency(inst, c))
