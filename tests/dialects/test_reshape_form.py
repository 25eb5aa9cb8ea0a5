"""`ax.reshape`'s generic form reads each group of dims on its own where the dims pair up (a
dim against a run of the other whose product it is) and reads unit dims at 0, rather than
flattening the whole index; the prover then meets `h floordiv G`, not `(L*D*h + ...) floordiv
(L*D)`. Checked against numpy at concrete sizes (hypothesis) and by proofs that were `unknown`
with the flattened index."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import ReshapeOp, TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.frontend.numpy_subset import parse_source
from axon.interpreter.naive import evaluate_form
from axon.targets.nki.select import first_kernel


def form(src: tuple[str | int, ...], out: list[str | int]) -> str:
    shape = [IntExpr.lift(d) for d in src]
    return str(ReshapeOp.semantics([TensorType(shape, "f32")], {"shape": out}).form)


def test_a_merged_run_of_dims_is_taken_apart_alone() -> None:
    assert form(("B", "HKV", "G", "L", "D"), ["B", "HKV*G", "L", "D"]) == \
        "out[d0 < B, d1 < G*HKV, d2 < L, d3 < D] = in0[d0, d1 floordiv G, d1 mod G, d2, d3]"
    assert form(("B", "H*D"), ["B", "H", "D"]) == \
        "out[d0 < B, d1 < H, d2 < D] = in0[d0, D*d1 + d2]"


def test_unit_dims_put_in_or_taken_out_read_at_zero() -> None:
    assert form(("BM", 1), [1, "BM", 1]) == "out[d0 < 1, d1 < BM, d2 < 1] = in0[d1, 0]"


def test_dims_that_do_not_pair_up_flatten_the_index() -> None:
    # [M*N, K] -> [M, N*K]: no dim is the product of a run of the other's
    assert form(("M*N", "K"), ["M", "N*K"]) == \
        "out[d0 < M, d1 < K*N] = in0[(K*N*d0 + d1) floordiv K, (K*N*d0 + d1) mod K]"


@st.composite
def reshapes(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """A shape and a reshape of it: groups of 1 to 3 dims merged, split or kept, unit dims
    put in or taken out anywhere."""
    src: list[int] = []
    out: list[int] = []
    for _ in range(draw(st.integers(1, 4))):
        run = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
        whole = int(np.prod(run))
        if draw(st.booleans()):
            src.extend(run)
            out.append(whole)
        else:
            src.append(whole)
            out.extend(run)
        if draw(st.booleans()):
            (src if draw(st.booleans()) else out).append(1)
    return src, out


@settings(max_examples=150, deadline=None)
@given(reshapes(), st.integers(0, 2**31 - 1))
def test_the_form_is_numpys_row_major_reshape(case: tuple[list[int], list[int]],
                                              seed: int) -> None:
    src, out = case
    semantics = ReshapeOp.semantics([TensorType([IntExpr.const(d) for d in src], "f32")],
                                    {"shape": out})
    x = np.random.default_rng(seed).standard_normal(src).astype(np.float32)
    got = evaluate_form(semantics.form, [x], {})
    np.testing.assert_array_equal(np.asarray(got).reshape(out), x.reshape(out))


def test_a_batched_row_sum_kept_as_a_column_lowers_to_nki() -> None:
    # its store reshapes the [BM, 1] column to [1, BM, 1]; with the flattened index the
    # lowering's proof was unknown (z3's models did not replay) and nothing lowered
    (func,) = parse_source("def f(q: bf16[B, S, D]):\n"
                           "    return sum(q, axis=-1, keepdims=True)\n").ops
    assert isinstance(func, FuncOp)
    chosen = first_kernel(func, "trn2", {"B": 2, "S": 3, "D": 2}, lambda line: None)
    assert chosen.kind.startswith("batched_rows") and chosen.lowering_proof
