"""`specialized`: a proved tiled kernel with its remainder masks dropped where the concrete
sizes are multiples of the blocks, the facts added to its assumptions, proved again; a drop
the facts do not justify is never admitted."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import GenericOp
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.syntax import parse_form
from axon.dialects.tile import KernelOp
from axon.targets.nki.select import tiled_programs
from axon.targets.profiles import load_profile
from axon.tiling.search import tile_program
from axon.tiling.specialize import _dropped, specialized
from axon.tools.embed import parse_source
from axon.verifier import Proved, prove_equivalent

SOFTMAX_SIZES = {"M": 1024, "N": 1024}
SOFTMAX_PARAMS = {"BM": 128, "BK": 128}
GQA_SIZES = {"B": 1, "HKV": 2, "G": 4, "S": 512, "L": 512, "D": 128}
GQA_PARAMS = {"BM": 128, "BK": 128}


def proved_kernel(name: str, kind: str, sizes: Mapping[str, int]) -> tuple[FuncOp, FuncOp]:
    """(the tiled kernel of `kind` the tiling search proves for program `name`, its program)."""
    (func,) = (op for op in parse_source(PROGRAMS[name].source, "x.py").ops
               if isinstance(op, FuncOp))
    funcs = tiled_programs(func, "trn2", dict(sizes), 2)
    result = tile_program(funcs, load_profile("trn2"), dict(sizes))
    found = next(p for p in result.proved if p.tiling.kind == kind and p.kernel is not None)
    assert found.kernel is not None
    return found.kernel, next(f for f in funcs if f.sym_name.data == found.variant)


@pytest.fixture(scope="module")
def softmax() -> tuple[FuncOp, FuncOp]:
    return proved_kernel("softmax", "rows_multipass", SOFTMAX_SIZES)


@pytest.fixture(scope="module")
def gqa() -> tuple[FuncOp, FuncOp]:
    return proved_kernel("gqa", "batched_rows_k", GQA_SIZES)


def kernel_op(func: FuncOp) -> KernelOp:
    return next(op for op in func.walk() if isinstance(op, KernelOp))


def selects(func: FuncOp) -> int:
    return sum(str(parse_form(op.form.data, len(op.operands)).body).count("select(")
               for op in func.walk() if isinstance(op, GenericOp))


def test_softmax_drops_its_masks_and_assumes_the_facts(softmax: tuple[FuncOp, FuncOp]) -> None:
    kernel, program = softmax
    found = specialized(kernel, program, SOFTMAX_SIZES, SOFTMAX_PARAMS)
    assert found is not None
    assert found.dropped == 3 and found.proof_id
    assert set(found.facts) == {"M mod BM == 0", "BM <= M", "N mod BK == 0", "BK <= N"}
    assert set(found.facts) <= set(kernel_op(found.func).assumptions())
    assert selects(found.func) == selects(kernel) - found.dropped
    assert not set(found.facts) & set(kernel_op(kernel).assumptions())  # the original is kept


def test_gqa_drops_its_masks(gqa: tuple[FuncOp, FuncOp]) -> None:
    kernel, program = gqa
    found = specialized(kernel, program, GQA_SIZES, GQA_PARAMS)
    assert found is not None
    assert found.dropped == 4 and found.proof_id
    assert set(found.facts) == {"S mod BM == 0", "BM <= S", "L mod BK == 0", "BK <= L"}
    assert set(found.facts) <= set(kernel_op(found.func).assumptions())


@pytest.mark.parametrize("sizes", [{**GQA_SIZES, "S": 500, "L": 500},
                                   {**GQA_SIZES, "S": 96, "L": 96}],
                         ids=["blocks do not divide", "blocks past the sizes"])
def test_sizes_the_blocks_do_not_fit_leave_the_kernel(gqa: tuple[FuncOp, FuncOp],
                                                      sizes: dict[str, int]) -> None:
    kernel, program = gqa
    assert specialized(kernel, program, sizes, GQA_PARAMS) is None


def without_n_masks(kernel: FuncOp, facts: list[str]) -> FuncOp:
    """A copy of softmax's kernel with the masks on N dropped (the first block's
    `idx(r0) < idx(N)` among them) and `facts` assumed."""
    copy = kernel.clone()
    dropped = 0
    for op in copy.walk():
        if isinstance(op, GenericOp):
            form = parse_form(op.form.data, len(op.operands))
            body, count = _dropped(form.body, {"N"})
            dropped += count
            op.properties["form"] = StringAttr(str(GenericForm(
                form.parallel, body, form.num_operands, form.reduction, form.reduced,
                form.finalize)))
    assert dropped == 3
    kernel_op(copy).assume_also(facts)
    return copy


@pytest.mark.parametrize("facts", [[], ["BK <= N"], ["M mod BM == 0", "BM <= M"]],
                         ids=["none", "order only", "another dim's"])
def test_a_drop_the_facts_do_not_justify_is_not_proved(softmax: tuple[FuncOp, FuncOp],
                                                        facts: list[str]) -> None:
    """Without `N mod BK == 0` a cut last block (or, without `BK <= N` either, the first
    block) reads lanes past N: the pad, not the row."""
    kernel, program = softmax
    assert not isinstance(prove_equivalent(without_n_masks(kernel, facts), program), Proved)


def test_divisibility_alone_justifies_the_drop(softmax: tuple[FuncOp, FuncOp]) -> None:
    """`N mod BK == 0` with N >= 1 implies BK <= N: the first block is whole too."""
    kernel, program = softmax
    verdict = prove_equivalent(without_n_masks(kernel, ["N mod BK == 0"]), program)
    assert isinstance(verdict, Proved), verdict
