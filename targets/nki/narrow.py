"""Intermediates kept in the program's own 16-bit dtype: a second choice of storage dtype for a
lowered NKI kernel, priced and checked by the selection like any candidate.

The lowering writes every instruction's result in fp32 (`lower.COMPUTE_DTYPE`): a fused kernel
keeps its intermediates more precise than the program, whose every op rounds to its dtype
(`ax` ops on bf16 tensors give bf16). On NC-v3 that precision costs time: VectorE's perf mode
doubles a `tensor_tensor`'s throughput only when its inputs and dst are all 16-bit
(reference/nki.md 6.2), and a 16-bit tile is half the SBUF. `narrowed(func)` writes, in a copy,
the result of each elementwise instruction (`tensor_tensor`, `tensor_scalar`, `activation`,
`tensor_copy`) in SBUF in the program's dtype where

- every float tensor of the function's signature has that one 16-bit dtype (so every `ax` op
  of the program computes in it, and the interpreter's rounded run rounds each intermediate to
  it: the narrowed kernel rounds where the program does);
- every use is an instruction's data operand (never a `[P, 1]` operand of `tensor_scalar` or
  `activation`, which the ISA takes in fp32), and every such user states its own dst dtype,
  so no other type changes;
- the tile is no loop's carried value, no matmul's accumulator (`emit.written_in_place`), no
  store's, no yield's and no view's (`nki.access`) operand.

Only storage changes: each instruction computes in fp32 and rounds when it writes (the
dialect's rule), so the copy has the generic forms of the function it was made from, op for
op, over the reals the verifier reasons in; the lowering's proof covers it as it covers the
fp32 kernel, and what the rounding does to the values is the selection's check against the
interpreter's rounded and exact runs, as for every candidate. A `tensor_copy` that cast a
narrowed tile to 16 bits (a matmul's operand) then copies a tile into its own dtype: it is
dropped, its readers reading the tile (gqa's probabilities on their way to the transpose).

`narrowed_past_statistics(func)` narrows only the intermediates of that set from which no
statistic is computed: every instruction their values reach, through any number of
instructions, is elementwise (`ELEMENTWISE`, `nki.select`, `nki.exponential`) until a store.
A rounding there reaches the result through elementwise ops only; one before a statistic
(layernorm's centred rows, whose squares are summed) is summed with its neighbours' and
cancels near zero: layernorm's kernel with all three narrowed is off at 4 of 1M elements, with
the two past the variance it is right, and 87.3 -> 74.5 us on trn2 (VectorE's products at
16 bits). It is a way of its own where it narrows fewer than `narrowed`.
"""

from __future__ import annotations

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.targets.nki.emit import sixteen_bit, written_in_place
from axon.verifier import Proved, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET, ProofBudget
from axon.verifier.cache import process_cache

__all__ = ["narrowed", "narrowed_past_statistics", "narrowing_dtype"]

#: instructions whose result may be narrowed: elementwise, one rounding when they write
ELEMENTWISE = (nki.TensorTensorOp, nki.TensorScalarOp, nki.ActivationOp, nki.TensorCopyOp)
#: instructions a value passes through past the statistics: each element of the result is a
#: function of the same element of its operands (and `[P, 1]` columns)
PASSING = (*ELEMENTWISE, nki.SelectOp, nki.ExponentialOp)


def narrowing_dtype(func: FuncOp) -> str | None:
    """The one 16-bit float dtype of every float tensor of `func`'s signature, else None."""
    types = [*func.function_type.inputs.data, *func.function_type.outputs.data]
    dtypes = {str(t.dtype) for t in types if isinstance(t, TensorType)
              and DTYPES[str(t.dtype)].is_float}
    if len(dtypes) != 1:
        return None
    (dtype,) = dtypes
    return dtype if sixteen_bit(dtype) else None


def _narrowable(op: Operation) -> bool:
    """May `op`'s result be written in 16 bits (module docstring)?"""
    if not isinstance(op, ELEMENTWISE) or op.buffer_name() != "sbuf":
        return False
    (result,) = op.results
    assert isinstance(result.type, TensorType)
    if str(result.type.dtype) != "f32" or written_in_place(result) or not result.uses:
        return False
    for use in result.uses:
        user = use.operation
        if not isinstance(user, nki.NkiOp) or isinstance(user, nki.AccessOp):
            return False
        if use.index >= len(user.ROLES) or user.ROLES[use.index].startswith("["):
            return False  # a [P, 1] operand, which the ISA takes in fp32
        if "dtype" not in user.properties:
            return False  # its dst would follow the operand's dtype
    return True


def _idle_copy(op: Operation) -> bool:
    """A `tensor_copy` of an SBUF tile into SBUF in the dtype it has already (the lowering's
    cast of a matmul's operand to 16 bits, once that operand is narrowed): it reads what it
    writes, so its readers read its operand; neither tile is written in place."""
    if not isinstance(op, nki.TensorCopyOp) or op.buffer_name() != "sbuf":
        return False
    (source,), (result,) = op.operands, op.results
    maker = source.owner
    return isinstance(maker, ELEMENTWISE) and maker.buffer_name() == "sbuf" \
        and source.type == result.type and not written_in_place(source) \
        and not written_in_place(result)


def _retyped(op: Operation, dtype: str) -> Operation:
    assert isinstance(op, nki.NkiOp)
    return type(op).make(list(op.operands), **{**op.attrs(), "dtype": dtype})


def _past_statistics(op: Operation) -> bool:
    """Does every instruction `op`'s value reaches pass it on elementwise (`PASSING`) until a
    store? Any other user (a reduction, a matmul, a scan, a loop's yield) is a statistic or may
    lead to one. A walk over the uses with a worklist: no recursion on the kernel's length."""
    seen: set[int] = set()
    work = [op]
    while work:
        current = work.pop()
        for result in current.results:
            for use in result.uses:
                user = use.operation
                if id(user) in seen:
                    continue
                seen.add(id(user))
                if isinstance(user, PASSING):
                    work.append(user)
                elif not user.name.endswith(".store"):
                    return False
    return True


def narrowed(func: FuncOp, budget: ProofBudget = DEFAULT_BUDGET,
             past_statistics: bool = False) -> tuple[FuncOp, int] | None:
    """A copy of the lowered `func` with its narrowable intermediates in the program's 16-bit
    dtype (module docstring; `past_statistics`: only those from which no statistic is
    computed) and how many it narrowed, proved equal to `func`; None where nothing narrows or
    the proof says anything but Proved."""
    dtype = narrowing_dtype(func)
    if dtype is None:
        return None
    copy = func.clone()
    targets = [op for op in copy.walk() if _narrowable(op)]
    if past_statistics:
        targets = [op for op in targets if _past_statistics(op)]
    if not targets:
        return None
    for op in targets:
        new = _retyped(op, dtype)
        (old_result,) = op.results
        (new_result,) = new.results
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(new, op)
        old_result.replace_all_uses_with(new_result)
        block.erase_op(op)
    for op in [op for op in copy.walk() if _idle_copy(op)]:
        op.results[0].replace_all_uses_with(op.operands[0])
        block = op.parent_block()
        assert block is not None
        block.erase_op(op)
    copy.verify()
    if not isinstance(prove_equivalent(func, copy, budget=budget, cache=process_cache()), Proved):
        return None
    return copy, len(targets)



def narrowed_past_statistics(func: FuncOp, budget: ProofBudget = DEFAULT_BUDGET
                             ) -> tuple[FuncOp, int] | None:
    """`narrowed(func, past_statistics=True)` where it narrows fewer intermediates than
    `narrowed(func)` would (module docstring), else None: the same kernel is not a way of its
    own."""
    dtype = narrowing_dtype(func)
    if dtype is None:
        return None
    narrowable = [op for op in func.walk() if _narrowable(op)]
    past = [op for op in narrowable if _past_statistics(op)]
    if not past or len(past) == len(narrowable):
        return None
    return narrowed(func, budget, past_statistics=True)
