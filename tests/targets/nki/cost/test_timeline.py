"""The timeline: engine overlap, dependencies through buffers, DMA queues and bandwidth, ports."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from axon.targets.nki.cost import CostConstants, estimate, load_constants
from axon.targets.nki.cost.formulas import compute_cycles, dma_transfer_s
from axon.targets.nki.simulator import Trace, load_kernel, simulate
from axon.targets.nki.simulator.trace import Instruction
from axon.targets.nki.simulator_limits import load_limits

from .helpers import KERNELS, hbm, inst, tile


@pytest.fixture(scope="module")
def trn1() -> CostConstants:
    return load_constants("trn1")


def _seconds(instruction: Instruction, c: CostConstants) -> float:
    return compute_cycles(instruction, c) / c.clock_hz(instruction.engine)


def _scale(src: int, dst: int, n: int = 4096) -> Instruction:
    return inst("tensor_scalar", "DVE", {"data": tile(src, n)}, {"dst": tile(dst, n)},
                op0="multiply")


def _exp(src: int, dst: int, n: int = 4096) -> Instruction:
    return inst("activation", "ACT", {"data": tile(src, n)}, {"dst": tile(dst, n)},
                function="exp", reduce=False)


def test_independent_instructions_on_different_engines_overlap(trn1: CostConstants) -> None:
    a, b = _scale(1, 2), _exp(3, 4)
    result = estimate(Trace([a, b]), trn1)
    assert [e.start for e in result.events] == [0.0, 0.0]
    assert result.total_s == pytest.approx(max(_seconds(a, trn1), _seconds(b, trn1)))


def test_instructions_on_one_engine_run_in_order(trn1: CostConstants) -> None:
    a, b = _scale(1, 2), _scale(3, 4)
    result = estimate(Trace([a, b]), trn1)
    assert result.events[1].start == pytest.approx(result.events[0].end)
    assert result.total_s == pytest.approx(_seconds(a, trn1) + _seconds(b, trn1))


def test_read_after_write_serializes_with_the_sync_cost(trn1: CostConstants) -> None:
    a, b = _scale(1, 2), _exp(2, 3)
    result = estimate(Trace([a, b]), trn1)
    sync = trn1.sync_cycles / trn1.act_hz
    assert result.events[1].start == pytest.approx(result.events[0].end + sync)
    assert result.events[1].wait_kind == "dependency"
    assert result.events[1].waited_for == 0
    assert result.total_s == pytest.approx(_seconds(a, trn1) + sync + _seconds(b, trn1))


def test_write_after_read_waits_for_the_reader(trn1: CostConstants) -> None:
    reader = _exp(1, 2)
    overwrite = inst("memset", "DVE", {}, {"dst": tile(1, 4096)}, value=0.0)
    result = estimate(Trace([reader, overwrite]), trn1)
    assert result.events[1].start == pytest.approx(
        result.events[0].end + trn1.sync_cycles / trn1.dve_hz)


def test_reads_of_one_region_wait_for_the_latest_write_before_each(
        trn1: CostConstants) -> None:
    # the timeline remembers when a region's writes let it be read until the next write: the
    # read after the second write must still wait for that write, on either engine
    first, read1 = _scale(1, 2), _exp(2, 3)
    second, read2, read3 = _scale(4, 2), _exp(2, 5), _scale(2, 6)
    result = estimate(Trace([first, read1, second, read2, read3]), trn1)
    events = result.events
    assert events[1].waited_for == 0
    assert events[3].waited_for == 2
    assert events[3].start == pytest.approx(events[2].end + trn1.sync_cycles / trn1.act_hz)
    assert events[4].start >= events[2].end


def test_disjoint_bytes_of_one_allocation_do_not_depend(trn1: CostConstants) -> None:
    n = 2048
    write_low = inst("tensor_scalar", "DVE", {"data": tile(1, n)}, {"dst": tile(2, n)},
                     op0="add")
    read_high = inst("activation", "ACT", {"data": tile(2, n, offset=n * 4)},
                     {"dst": tile(3, n)}, function="exp", reduce=False)
    read_low = inst("activation", "ACT", {"data": tile(2, n, offset=0)},
                    {"dst": tile(4, n)}, function="exp", reduce=False)
    assert estimate(Trace([write_low, read_high]), trn1).events[1].start == 0.0
    assert estimate(Trace([write_low, read_low]), trn1).events[1].start > 0.0
    # other partitions of the same bytes are other memory too
    read_other_partitions = inst("activation", "ACT",
                                 {"data": tile(2, n, partitions=32, start=0)},
                                 {"dst": tile(5, n, partitions=32)}, function="exp",
                                 reduce=False)
    write_top = inst("tensor_scalar", "DVE", {"data": tile(1, n, partitions=32, start=96)},
                     {"dst": tile(2, n, partitions=32, start=96)}, op0="add")
    assert estimate(Trace([write_top, read_other_partitions]), trn1).events[1].start == 0.0


def _load(allocation: int, src_offset: int = 0, cols: int = 1024) -> Instruction:
    return inst("dma_copy", "SP-DMA", {"src": hbm(100, 128, cols, 8192, offset=src_offset)},
                {"dst": tile(allocation, cols)}, dge_mode="unknown")


def test_a_dma_takes_fixed_latency_plus_bytes_over_bandwidth(trn1: CostConstants) -> None:
    load = _load(1)
    result = estimate(Trace([load]), trn1)
    nbytes = 128 * 1024 * 4
    assert result.total_s == pytest.approx(
        trn1.dma_fixed_s + nbytes / (trn1.dma_bytes_per_s * trn1.dma_efficiency))
    assert result.busy_s["DMA"] == pytest.approx(dma_transfer_s(load, trn1))


def test_dmas_on_different_queues_share_the_bandwidth(trn1: CostConstants) -> None:
    loads = [_load(1), _load(2, src_offset=4096)]
    result = estimate(Trace(loads), trn1)
    transfer = dma_transfer_s(loads[0], trn1)
    assert [e.queue for e in result.events] == [0, 1]
    assert result.total_s == pytest.approx(trn1.dma_fixed_s + 2 * transfer)
    assert result.events[1].wait_kind == "bandwidth"


def test_a_queue_is_fifo_after_every_queue_has_a_transfer(trn1: CostConstants) -> None:
    wide = dataclasses.replace(trn1, dma_bytes_per_s=1e15)  # latency-bound: fixed costs show
    loads = [_load(i + 1, src_offset=64 * i) for i in range(trn1.dma_queues + 1)]
    result = estimate(Trace(loads), wide)
    last = result.events[-1]
    assert last.queue == 0
    assert last.start == pytest.approx(result.events[0].end)
    assert result.total_s == pytest.approx(2 * trn1.dma_fixed_s, rel=1e-3)


def test_compute_waits_for_its_load_and_overlaps_the_next(trn1: CostConstants) -> None:
    first, second = _load(1), _load(2, src_offset=4096)
    use = inst("tensor_scalar", "DVE", {"data": tile(1, 1024)}, {"dst": tile(3, 1024)},
               op0="add")
    result = estimate(Trace([first, second, use]), trn1)
    compute = result.events[2]
    assert compute.start == pytest.approx(result.events[0].end + trn1.sync_cycles / trn1.dve_hz)
    assert compute.start < result.events[1].end  # the second load is still in flight


def test_an_accumulation_group_on_tensore_runs_back_to_back(trn1: CostConstants) -> None:
    acc = tile(9, 512, buffer="psum")
    group = [inst("nc_matmul", "PE",
                  {"stationary": tile(1, 128, "bfloat16"), "moving": tile(2, 512, "bfloat16"),
                   "dst": acc}, {"dst": acc}, accumulate=None, transpose=False)
             for _ in range(4)]
    result = estimate(Trace(group), trn1)
    assert result.total_s == pytest.approx(4 * 512 / trn1.pe_hz)


def test_nc_v2_port_conflicts_serialize_vector_and_gpsimd_on_sbuf() -> None:
    n = 4096
    dve = _scale(1, 2, n)
    pool = inst("iota", "POOL", {}, {"dst": tile(3, n)})
    trn1 = load_constants("trn1")
    serial = estimate(Trace([dve, pool]), trn1)
    assert serial.events[1].start == pytest.approx(serial.events[0].end)
    assert serial.events[1].wait_kind == "port"
    trn2 = load_constants("trn2")
    assert estimate(Trace([dve, pool]), trn2).events[1].start == 0.0


def test_summary_utilisation_and_critical_path_add_up(trn1: CostConstants) -> None:
    # the last, independent and short, ends before the dependent chain does
    trace = Trace([_load(1), _scale(1, 2, 1024), _exp(2, 3, 1024), _scale(5, 6, 64)])
    result = estimate(trace, trn1)
    assert sum(result.critical_s.values()) == pytest.approx(result.total_s)
    assert result.critical_path == (0, 1, 2)
    for engine, share in result.utilisation.items():
        assert share == pytest.approx(result.busy_s[engine] / result.total_s)
    text = result.summary()
    assert "latency" in text and "critical path: 3 instructions" in text


def test_a_simulated_tiled_matmul_is_dma_bound_with_the_pe_time_of_its_matmuls(
        trn1: CostConstants) -> None:
    kernel = load_kernel(KERNELS / "matmul_tiled.py")
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((256, 128), dtype=np.float32)
    rhs = rng.standard_normal((256, 1024), dtype=np.float32)
    _, trace = simulate(kernel, lhsT, rhs, limits=load_limits("trn1"), trace=True)
    result = estimate(trace, trn1)
    matmuls = [i for i in trace.instructions if i.name == "nc_matmul"]
    assert len(matmuls) == 4
    # fp32 operands: 4 x 512 cycles each
    assert result.busy_s["PE"] == pytest.approx(4 * 4 * 512 / trn1.pe_hz)
    dma = sum(dma_transfer_s(i, trn1) for i in trace.instructions if i.engine == "SP-DMA")
    assert result.busy_s["DMA"] == pytest.approx(dma)
    assert result.total_s >= dma
    assert result.bound_by() == "DMA"


def test_a_transfer_fills_a_gap_too_short_for_it_and_finishes_later(trn1: CostConstants
                                                                     ) -> None:
    c = dataclasses.replace(trn1, dma_fixed_s=0.0)
    load = _load(1)
    use = inst("tensor_scalar", "DVE", {"data": tile(1, 1024)}, {"dst": tile(3, 1024)},
               op0="add")
    store = inst("dma_copy", "SP-DMA", {"src": tile(3, 1024)},
                 {"dst": hbm(200, 128, 1024, 1024)}, dge_mode="unknown")
    independent = _load(5, src_offset=4096)
    result = estimate(Trace([load, use, store, independent]), c)
    first, compute, stored, late = result.events
    transfer = dma_transfer_s(load, c)
    gap = compute.end - first.end
    assert 0 < gap < transfer
    assert stored.busy_start == pytest.approx(compute.end)
    # the independent load uses the gap, then the time after the store
    assert late.busy_start == pytest.approx(first.end)
    assert late.end == pytest.approx(stored.end + transfer - gap)
    assert late.busy_s == pytest.approx(transfer)
    assert result.busy_s["DMA"] == pytest.approx(3 * transfer)
