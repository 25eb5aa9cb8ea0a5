"""The `nki` op verifier: limits come from the NKI profiles; buffers, engines, shapes and dtypes
that break an instruction's rules are refused with the op, the operand and what was expected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.ir import Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.nki import (
    ALL_OPS,
    ENGINES,
    MemsetOp,
    NcMatmulOp,
    TensorCopyOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
    TensorTensorScanOp,
)
from axon.dialects.nki.limits import generic_limits, nki_profiles
from tests.dialects.nki.helpers import function, to_sbuf


def test_the_limits_are_the_smallest_over_the_nki_profiles() -> None:
    profiles = nki_profiles()
    assert {p.name for p in profiles} >= {"trn1", "trn2"}
    limits = generic_limits()
    for key, value in [("memory.partitions", limits.partitions),
                       ("memory.psum_bank_bytes", limits.psum_bank_bytes),
                       ("limits.matmul_stationary_free_max", limits.matmul_stationary_free_max),
                       ("limits.matmul_moving_free_max", limits.matmul_moving_free_max),
                       ("limits.vector_transpose_max", limits.vector_transpose_max),
                       ("limits.free_dims_max", limits.free_dims_max)]:
        assert value == min(p.quantities()[key].value for p in profiles)
    assert (limits.partitions, limits.psum_bank_bytes) == (128, 2048)


def verify(params: list[TensorType], build: object) -> None:
    function("k", params, build).verify()  # type: ignore[arg-type]


def test_matmul_limits_and_buffers() -> None:
    with pytest.raises(ShapeError, match="moving free size N is 513; at most 512"):
        NcMatmulOp.make([_value([128, 128]), _value([128, 513])], buffer="psum")
    with pytest.raises(ShapeError, match="stationary free size M is 129; at most 128"):
        NcMatmulOp.make([_value([128, 129]), _value([128, 8])], buffer="psum")
    with pytest.raises(ShapeError, match=r"contraction \(partition\) dims differ: 64 and 32"):
        NcMatmulOp.make([_value([64, 8]), _value([32, 8])], buffer="psum")
    with pytest.raises(ShapeError, match="dst buffer 'sbuf' is not one of psum"):
        NcMatmulOp.make([_value([64, 8]), _value([64, 8])], buffer="sbuf")
    ok = TensorType([64, 8], "bf16")
    with pytest.raises(VerifyException, match=r"operand #1 \(moving\) is in hbm; expected sbuf"):
        verify([ok, ok], lambda a, add: add(NcMatmulOp.make([to_sbuf(add, a[0]), a[1]],
                                                            buffer="psum")))


def test_accumulating_onto_psum_a_memset_wrote_is_refused() -> None:
    ok = TensorType([64, 8], "bf16")

    def build(a, add):  # type: ignore[no-untyped-def]
        zeros = add(MemsetOp.make([], value=0.0, shape=[8, 8], dtype="f32", buffer="psum"))
        return add(NcMatmulOp.make([to_sbuf(add, a[0]), to_sbuf(add, a[1]), zeros],
                                   buffer="psum"))

    with pytest.raises(VerifyException, match="acc.*written by 'nki.memset'.*undefined"):
        verify([ok, ok], build)


def test_buffer_and_engine_rules() -> None:
    x = TensorType([128, 512], "f32")

    def two_psum(a, add):  # type: ignore[no-untyped-def]
        p = add(TensorCopyOp.make([to_sbuf(add, a[0])], buffer="psum"))
        return add(TensorTensorOp.make([p, p], op="add", buffer="sbuf"))

    with pytest.raises(VerifyException, match="both inputs are in PSUM"):
        verify([x], two_psum)

    def gpsimd_psum(a, add):  # type: ignore[no-untyped-def]
        p = add(TensorCopyOp.make([to_sbuf(add, a[0])], buffer="psum"))
        return add(TensorCopyOp.make([p], buffer="sbuf", engine="gpsimd"))

    with pytest.raises(VerifyException, match="GpSimd engine cannot read PSUM"):
        verify([x], gpsimd_psum)
    with pytest.raises(ShapeError, match="4096 bytes per partition; one PSUM bank holds 2048"):
        TensorCopyOp.make([_value([128, 1024], "f32")], buffer="psum")
    with pytest.raises(ShapeError, match="has 129 partitions; at most 128"):
        TensorCopyOp.make([_value([129, 8])], buffer="sbuf")


def test_instruction_rules() -> None:
    with pytest.raises(ShapeError, match="reduces trailing free dims"):
        TensorReduceOp.make([_value([8, 4, 4])], op="add", axes=(1,), buffer="sbuf")
    with pytest.raises(ShapeError, match=r"\('multiply', 'add'\) has no generic form"):
        TensorTensorScanOp.make([_value([8, 4]), _value([8, 4])], op0="multiply", op1="add",
                                buffer="sbuf")


def _value(shape: list[int], dtype: str = "bf16") -> SSAValue:
    """A value of type `dtype[shape]` (a block argument: in HBM)."""
    return Block(arg_types=[TensorType(shape, dtype)]).args[0]


def test_every_instruction_names_its_engines_and_is_documented() -> None:
    docs = (Path(__file__).resolve().parents[3] / "docs" / "nki.md").read_text()
    for op in ALL_OPS:
        assert op.ENGINE_CHOICES and set(op.ENGINE_CHOICES) <= set(ENGINES), op.name
        assert ("engine" in op.ATTRS) == (len(op.ENGINE_CHOICES) > 1), op.name
        assert f"`{op.name} " in docs or f"`{op.name}`" in docs, f"docs/nki.md lacks {op.name}"


def test_immediates_are_fp32() -> None:
    op = TensorScalarOp.make([_value([8, 4], "f32")], op0="multiply", scalar0=0.1,
                             buffer="sbuf")
    assert str(op.generic_form()) == \
        f"out[d0 < 8, d1 < 4] = in0[d0, d1] * {float(np.float32(0.1))!r}"
    assert float(np.float32(0.1)) != 0.1
