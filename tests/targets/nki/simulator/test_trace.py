"""The trace: one record per executed instruction, in the documented format."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from axon.targets.nki.simulator import HardwareLimits, load_kernel, simulate
from axon.targets.nki.simulator import api as nki
from axon.targets.nki.simulator import isa as nisa
from axon.targets.nki.simulator import language as nl
from axon.targets.nki.simulator.trace import Access, Instruction, Trace

from .conftest import KERNELS


@nki.jit
def _scaled_matmul(lhsT, rhs):  # type: ignore[no-untyped-def]
    out = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    b = nl.ndarray((128, 96), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=lhsT)
    nisa.dma_copy(dst=b, src=rhs[:, 0:96])
    acc = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a, moving=b)
    res = nl.ndarray((64, 96), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=res, op=nl.exp, data=acc, scale=0.5)
    nisa.dma_copy(dst=out, src=res)
    return out


def test_records_each_instruction_with_engine_operands_options_and_line(
        trn2: HardwareLimits) -> None:
    lhsT = np.ones((128, 64), dtype=nl.bfloat16)
    rhs = np.ones((128, 128), dtype=nl.bfloat16)
    out, trace = simulate(_scaled_matmul, lhsT, rhs, limits=trn2, trace=True)
    assert isinstance(trace, Trace)
    assert [(i.name, i.engine) for i in trace.instructions] == [
        ("dma_copy", "SP-DMA"), ("dma_copy", "SP-DMA"), ("nc_matmul", "PE"),
        ("activation", "ACT"), ("dma_copy", "SP-DMA")]
    np.testing.assert_allclose(out, np.exp(0.5 * 128.0 * np.ones((64, 96))), rtol=1e-6)
    load_rhs = trace.instructions[1]
    src = dict(load_rhs.reads)["src"]
    # rhs[:, 0:96] of a (128, 128) bf16 HBM array: rows of 96 contiguous elements, stride 128
    assert (src.buffer, src.partition_count, src.free_shape, src.partition_stride) == \
        ("hbm", 128, (96,), 128)
    assert src.contiguous_bytes == 96 * 2 and src.bytes == 128 * 96 * 2
    mm = trace.instructions[2]
    assert mm.option("accumulate") is None and mm.option("transpose") is False
    dst = dict(mm.writes)["dst"]
    assert (dst.buffer, dst.partition_start, dst.partition_count, dst.free_shape,
            dst.dtype) == ("psum", 0, 64, (96,), "float32")
    assert dst.elements_per_partition == 96
    stationary = dict(mm.reads)["stationary"]
    assert (stationary.buffer, stationary.partition_count, stationary.dtype) == \
        ("sbuf", 128, "bfloat16")
    act = trace.instructions[3]
    assert act.option("function") == "exp" and act.option("reduce") is False
    # lines point into this file, at the statements that issued the instructions
    assert all(i.file == __file__ for i in trace.instructions)
    lines = [i.line for i in trace.instructions]
    assert lines == sorted(lines) and len(set(lines)) == 5


def test_records_are_frozen(trn2: HardwareLimits) -> None:
    _, trace = simulate(_scaled_matmul, np.ones((128, 64), dtype=nl.bfloat16),
                        np.ones((128, 128), dtype=nl.bfloat16), limits=trn2, trace=True)
    inst = trace.instructions[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        inst.name = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        dict(inst.reads)["src"].bytes = 0  # type: ignore[misc]
    assert dataclasses.is_dataclass(Access) and dataclasses.is_dataclass(Instruction)


def test_live_tiles_get_disjoint_byte_ranges(trn2: HardwareLimits) -> None:
    _, trace = simulate(_scaled_matmul, np.ones((128, 64), dtype=nl.bfloat16),
                        np.ones((128, 128), dtype=nl.bfloat16), limits=trn2, trace=True)
    a = dict(trace.instructions[0].writes)["dst"]
    b = dict(trace.instructions[1].writes)["dst"]
    assert a.allocation_id != b.allocation_id
    a_end = a.byte_offset + a.elements_per_partition * 2
    assert a_end <= b.byte_offset or b.byte_offset + b.elements_per_partition * 2 <= a.byte_offset


def test_a_grid_records_each_program(trn2: HardwareLimits) -> None:
    kernel = load_kernel(KERNELS / "tensor_add.py")
    a = np.ones((256, 64), dtype=np.float32)
    _, trace = simulate(kernel[2], a, a, limits=trn2, trace=True)
    assert {i.program_id for i in trace.instructions} == {(0,), (1,)}
    assert len(trace.by_engine("DVE")) == 2 and len(trace.by_engine("SP-DMA")) == 6


def test_no_trace_unless_asked(trn2: HardwareLimits) -> None:
    out = simulate(_scaled_matmul, np.ones((128, 64), dtype=nl.bfloat16),
                   np.ones((128, 128), dtype=nl.bfloat16), limits=trn2)
    assert isinstance(out, np.ndarray) and out.shape == (64, 96)
