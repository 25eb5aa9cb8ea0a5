"""Synthesized lowerings inside a kernel's lowering (`targets/nki/synthesized.py`): a tile op
lowered by a lowering synthesis admitted (not the lowering's own sequence), the kernel proved
equal to its tiled kernel, a planted wrong filling refuted, and the selection pricing each as a
candidate (a prefix sum of 128-column rows by a triangular matmul on TensorE wins)."""

from __future__ import annotations

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.targets.nki.lower import NotTaken, Refused, lower_and_prove
from axon.targets.nki.select import choose_kernel, synthesized_choices
from axon.targets.nki.sketches import TILE_OPS, sketch, tile_limits
from axon.targets.nki.synthesized import Choice, alternatives
from axon.targets.profiles import load_profile
from axon.tiling.search import tile_program
from axon.tools.embed import parse_source


def program(name: str) -> FuncOp:
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def tiled(name: str, sizes: dict[str, int]) -> FuncOp:
    """The first proved tiling of a suite program that fits trn2."""
    result = tile_program([program(name)], load_profile("trn2"), sizes)
    kernel = next(p.kernel for p in result.proved if p.candidates and p.kernel is not None)
    assert kernel is not None
    return kernel


def ops_of(func: FuncOp) -> list[str]:
    return [op.name for op in func.walk() if isinstance(op, nki.NkiOp)]


def test_the_alternatives_leave_out_the_lowerings_own_sequence() -> None:
    labels = [c.label for c in alternatives("row_sum", "f32", "trn2")]
    assert labels == [
        "row_sum by activation_reduce (act.func=copy, act.scale=1.0)",
        "row_sum by matmul_ones (layout.transpose=tensor, matmul.stationary=data)",
        "row_sum by matmul_ones (layout.transpose=vector, matmul.stationary=data)"]
    # bf16 admits a DMA transpose too, which reads HBM: a kernel's tile is on chip
    assert [c.label for c in alternatives("row_sum", "bf16", "trn2")] == labels
    assert alternatives("row_max", "f32", "trn2") == ()  # no spec: the lowering's own only
    cumsum = [c.label for c in alternatives("cumsum", "f32", "trn2")]
    assert "cumsum by scan (scan.data=data1, scan.ops=add,add)" not in cumsum
    # another instruction first (TensorE's), then the scan's other operand orders
    assert ["triangular_matmul" in label for label in cumsum] == [True, True, False, False]


@pytest.mark.parametrize("index", [0, 1])
def test_a_row_sum_lowered_by_a_synthesized_lowering_is_proved(index: int) -> None:
    """softmax's row sum by the activation's accumulated reduction (ScalarE) or by a matmul
    of the transposed tile against a ones column (TensorE): the whole kernel proved equal to
    its tiled kernel, the instructions the choice names in it."""
    kernel = tiled("softmax", {"M": 256, "N": 128})
    choice = alternatives("row_sum", "f32", "trn2")[index]
    lowered = lower_and_prove(kernel, choices={"row_sum": choice})
    names = ops_of(lowered.func)
    if index == 0:
        assert "nki.activation_reduce" in names
    else:
        assert "nki.nc_matmul" in names and "nki.nc_transpose" in names
    assert "nki.tensor_reduce" in ops_of(lower_and_prove(kernel).func)


def test_a_choice_no_op_takes_is_not_taken() -> None:
    kernel = tiled("softmax", {"M": 256, "N": 128})
    (choice, *_) = alternatives("cumsum", "f32", "trn2")
    with pytest.raises(NotTaken, match="no op of the kernel takes cumsum by triangular"):
        lower_and_prove(kernel, choices={"cumsum": choice})


@pytest.mark.parametrize("filling", [
    {"reduce.op": "add", "reduce.negate": True},  # the negated sum
    {"reduce.op": "maximum", "reduce.negate": False},  # the row max for the row sum
])
def test_a_planted_wrong_filling_is_refuted_in_the_kernel(filling: dict[str, str | bool]) -> None:
    """A filling synthesis refutes, forced into the lowering as if admitted: the kernel's
    proof refuses it, so no kernel is printed with it."""
    spec = TILE_OPS["row_sum"].spec(tile_limits("trn2"))
    candidate = sketch("trn2", "row_sum.tensor_reduce").build(spec, filling)
    planted = Choice("row_sum", "row_sum.tensor_reduce", tuple(sorted(filling.items())),
                     candidate.func, candidate.conditions, "planted")
    kernel = tiled("softmax", {"M": 256, "N": 128})
    with pytest.raises(Refused, match="not proved equal to the tiled kernel"):
        lower_and_prove(kernel, choices={"row_sum": planted})


def test_a_choice_is_offered_only_where_its_conditions_hold() -> None:
    """The ones-column matmul contracts over the row (F <= 128): offered at N = 128, not at
    N = 2048; the VectorE transpose needs 32 x 32 tiles, which BM = 128 rows are not."""
    kernel = tiled("softmax", {"M": 256, "N": 128})
    tile = TensorType(["BM", "N"], "f32")
    matmul = alternatives("row_sum", "f32", "trn2")[1]
    assert matmul.conditions == ("F <= 128",)
    assert matmul.holds([tile], {"BM": 128, "N": 128})
    assert not matmul.holds([tile], {"BM": 128, "N": 2048})
    assert not matmul.holds([TensorType(["BM", "N", "K"], "f32")], {"BM": 1, "N": 1, "K": 1})
    # softmax's row sum is a bf16 tile op the lowering computes in fp32: both dtypes' choices,
    # fp32 first (a dtype no lowered op has is not taken, `NotTaken`)
    offered = synthesized_choices(kernel, {"M": 256, "N": 128, "BM": 128}, "trn2")
    want = [c for d in ("f32", "bf16") for c in alternatives("row_sum", d, "trn2")[:2]]
    assert offered == want
    wide = synthesized_choices(kernel, {"M": 256, "N": 2048, "BM": 128}, "trn2")
    assert wide == [want[0], want[2]]


def test_the_selection_prices_synthesized_lowerings_and_picks_one_that_wins() -> None:
    """cumsum of 128-column rows: the selection prints its best tiling with the synthesized
    lowerings too, each simulated, checked and priced; the triangular matmul on TensorE is
    cheaper than the scan on VectorE under the cost model and is chosen."""
    sizes = {"M": 256, "N": 128}
    prog = PROGRAMS["cumsum"]
    said: list[str] = []
    chosen = choose_kernel(program("cumsum"), "trn2", sizes, said.append,
                           inputs=make_inputs(prog, sizes), tolerance=prog.tolerance_at(sizes))
    synthesized = [c for c in chosen.candidates if "cumsum by " in c.ways]
    assert {c.ways.split(" (")[0] for c in synthesized} == {"cumsum by scan",
                                                             "cumsum by triangular_matmul"}
    assert all(c.latency_s is not None and c.lowering_proof for c in synthesized)
    plain = next(c for c in chosen.candidates if c.label == "rows BM=128")
    assert plain.latency_s is not None
    assert chosen.ways.startswith("cumsum by triangular_matmul (layout.transpose=tensor")
    assert chosen.latency_s < plain.latency_s
    assert "nisa.nc_matmul" in chosen.module_text and "nisa.affine_select" in chosen.module_text
    assert any("cumsum by triangular_matmul" in line for line in said)
