"""The lowering from `tile` to `nki`: suite kernels tiled for Trn2 become NKI instructions and
each lowering is proved equal to its tiled kernel; a wrong lowering is refuted and refused,
and what has no lowering is refused with the reason."""

from __future__ import annotations

import pytest
from xdsl.ir import Operation

from axon.dialects import nki
from axon.dialects.ax import MulOp
from axon.dialects.form.interface import has_form
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.targets.nki import lower
from axon.targets.nki.lower import Refused, lower_and_prove, lower_function
from tests.targets.nki.lowering import COVERED, program, trn2_kernel


def instructions(func: object) -> list[str]:
    """The names of the nki instructions of a lowered function, in order."""
    return [op.name for op in func.walk() if isinstance(op, nki.NkiOp)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("name", "kind"), COVERED)
def test_each_covered_kernel_lowers_to_instructions_and_is_proved(name: str, kind: str) -> None:
    lowered = lower_and_prove(trn2_kernel(program(name), kind))
    assert len(lowered.proof_id) == 16
    structure = (KernelOp, ForOp, LoadOp, StoreOp, FullOp, YieldOp)
    for op in lowered.func.walk():
        if has_form(op):  # every computing op is an instruction or a tile-level memory op
            assert isinstance(op, (nki.NkiOp, *structure)), op.name


def test_the_instructions_each_op_family_becomes() -> None:
    mul = instructions(lower_function(trn2_kernel(program("mul"), "rows")))
    assert mul == ["nki.tensor_tensor"]  # written in bf16 by the instruction: no copy
    assert instructions(lower_function(trn2_kernel(program("silu"), "rows"))) == \
        ["nki.activation"]
    softmax = instructions(lower_function(trn2_kernel(program("softmax"), "rows")))
    assert softmax == ["nki.tensor_reduce", "nki.tensor_scalar", "nki.activation",
                       "nki.tensor_reduce", "nki.tensor_scalar"]
    rmsnorm = instructions(lower_function(trn2_kernel(program("rmsnorm"), "rows")))
    assert "nki.nc_matmul" in rmsnorm  # the weight row broadcast over the partitions
    matmul = lower_function(trn2_kernel(program("matmul"), "rows_k"))
    assert instructions(matmul) == ["nki.nc_transpose", "nki.tensor_copy", "nki.nc_matmul",
                                    "nki.tensor_tensor", "nki.tensor_copy"]
    (acc,) = (op for op in matmul.walk() if isinstance(op, FullOp))
    assert acc.space.data == "psum" and acc.attrs()["dtype"] == "f32"


def test_a_wrong_lowering_is_refuted_and_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong: dict[type[Operation], str] = {**lower._ALU, MulOp: "add"}
    monkeypatch.setattr(lower, "_ALU", wrong)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(trn2_kernel(program("mul"), "rows"))


def test_what_has_no_lowering_is_refused_with_the_reason() -> None:
    # softmax's multipass kernel reduces masked blocks through generic forms
    with pytest.raises(Refused, match="'ax.generic' has no NKI lowering yet"):
        lower_function(trn2_kernel(program("softmax"), "rows_multipass"))
    with pytest.raises(Refused, match="not one tile.kernel"):
        lower_function(program("mul"))
