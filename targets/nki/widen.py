"""An unfused chain with its intermediates in fp32, proved equal to the program; the proof
that any chain's parts, composed, equal its program (`chain_proof`).

The unfused chain (`select.chain_module`) writes each op's result to HBM in the program's
dtype, as the reference interpreter rounds it. A nu-graph variant's chain rounds *its own*
intermediates, which the program does not have: gemm_sum_scale's variant `x @ sum(w, axis=1)`
rounds the row sums of w to bf16, and where x's products with them cancel the result is off
(18 of 1024 elements on standard normal inputs). Widened, each kernel of the chain reads its
16-bit inputs widened to fp32 (`astype(x, f32)`: exact, and no instruction on NKI), computes
its op in fp32, and writes fp32 where another kernel reads the result; the last casts back to
the program's dtype. Intermediates are then as exact as a fused kernel's, at twice the bytes
in HBM (the variant's are vectors: nothing to speak of).

Each widened function is the one-op function with casts around it, so the chain composed of
them is a program of the same signature as the original: `widened_chain` builds it and proves
it equal to the program (over the reals a float cast is the identity); a chain that is not
proved is not offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import TensorType
from axon.dialects.ax.creation import ConstantOp
from axon.dialects.ax.elementwise import CastOp
from axon.dialects.ax.generic import GenericOp
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.dtypes import DTYPES
from axon.verifier import Proved, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET, ProofBudget
from axon.verifier.cache import process_cache

if TYPE_CHECKING:
    from axon.targets.nki.select import OpKernel

#: the dtype the widened chain's intermediates and computations are in
WIDE = "f32"


def _narrow(t: object) -> bool:
    """A float tensor type narrower than fp32 (bf16, f16)."""
    return isinstance(t, TensorType) and DTYPES[t.dtype].is_float and t.dtype != WIDE


def _wide(t: TensorType) -> TensorType:
    return TensorType(t.shape, WIDE) if _narrow(t) else t


def _widened_value(block: Block, value: SSAValue) -> SSAValue:
    """`value` as fp32: a cast appended to `block` where it is bf16 or f16."""
    if not _narrow(value.type):
        return value
    cast = CastOp.make([value], dtype=WIDE)
    block.add_op(cast)
    return cast.results[0]


def widened_function(one: FuncOp, wide_params: Sequence[bool], last: bool) -> FuncOp:
    """A one-op function (`op_functions`) computed in fp32: each parameter marked in
    `wide_params` taken in fp32 (another kernel's widened result), the others widened by a
    cast, constants remade in fp32, every op rebuilt on its widened operands; the result
    returned in fp32 unless `last`, where it is cast back to the function's result dtype."""
    params = [_wide(a.type) if wide and isinstance(a.type, TensorType) else a.type
              for a, wide in zip(one.body.block.args, wide_params, strict=True)]
    (out_type,) = one.function_type.outputs.data
    assert isinstance(out_type, TensorType)
    result_type = out_type if last else _wide(out_type)
    new = FuncOp(one.sym_name.data, (params, [result_type]))
    block = new.body.block
    values: dict[SSAValue, SSAValue] = {
        a: _widened_value(block, b)
        for a, b in zip(one.body.block.args, block.args, strict=True)}
    for op in one.body.block.ops:
        if isinstance(op, ReturnOp):
            (value,) = (values[v] for v in op.arguments)
            if isinstance(value.type, TensorType) and value.type.dtype != result_type.dtype:
                cast = CastOp.make([value], dtype=result_type.dtype)
                block.add_op(cast)
                value = cast.results[0]
            block.add_op(ReturnOp(value))
            continue
        assert isinstance(op, TensorOp), op.name
        attrs = op.attrs()
        if (isinstance(op, ConstantOp) or (isinstance(op, GenericOp) and op.operands)) \
                and _narrow(op.results[0].type):
            # a constant, or a form propagation made (its dtype the program's): in fp32
            operands = [_widened_value(block, values[v]) for v in op.operands]
            rebuilt = type(op).make(operands, **{**attrs, "dtype": WIDE})
            block.add_op(rebuilt)
        elif "dtype" in attrs or not op.operands:
            # an op that sets its own dtype (a user's cast, an iota, a form of sizes): as
            # written, its result widened after it
            rebuilt = op.clone(value_mapper=values)
            block.add_op(rebuilt)
        else:
            operands = [_widened_value(block, values[v]) for v in op.operands]
            rebuilt = type(op).make(operands, **attrs)
            block.add_op(rebuilt)
        (result,) = rebuilt.results
        values[op.results[0]] = _widened_value(block, result)
    new.verify()
    return new


def widened_parts(func: FuncOp, kernels: Sequence[OpKernel]) -> list[OpKernel] | None:
    """`kernels` (`func`'s one-op functions, in order) with every 16-bit float value one
    kernel passes another in fp32 (`widened_function`); None where none is 16-bit, or where a
    kernel takes a parameter that is neither an input of `func` nor another kernel's result
    (a value of sizes the host computes)."""
    from axon.targets.nki.select import OpKernel

    made = {k.op.results[0] for k in kernels if len(k.op.results) == 1}
    inputs = set(func.body.block.args)
    if any(v not in made and v not in inputs for k in kernels for v in k.operands):
        return None
    if not any(_narrow(r.type) for r in made if r is not kernels[-1].op.results[0]):
        return None
    try:
        return [OpKernel(k.op, widened_function(k.func, [v in made for v in k.operands],
                                                last=k is kernels[-1]), k.operands)
                for k in kernels]
    except (ShapeError, VerifyException):  # an op whose operands' dtype its form fixes
        return None


def composed(func: FuncOp, parts: Sequence[OpKernel]) -> FuncOp:
    """The chain of `parts` as one function of `func`'s signature: each part's body inlined
    on the values the earlier ones made."""
    whole = FuncOp(func.sym_name.data, (list(func.function_type.inputs.data),
                                        list(func.function_type.outputs.data)))
    values: dict[SSAValue, SSAValue] = dict(zip(func.body.block.args, whole.body.block.args,
                                                strict=True))
    for part in parts:
        mapping: dict[SSAValue, SSAValue] = {
            p: values[v] for p, v in zip(part.func.body.block.args, part.operands, strict=True)}
        for op in part.func.body.block.ops:
            if isinstance(op, ReturnOp):
                (values[part.op.results[0]],) = (mapping[v] for v in op.arguments)
                continue
            copy = op.clone(value_mapper=mapping)
            whole.body.block.add_op(copy)
            mapping.update(zip(op.results, copy.results, strict=True))
    (ret,) = (op for op in func.body.block.ops if isinstance(op, ReturnOp))
    whole.body.block.add_op(ReturnOp(*(values[v] for v in ret.arguments)))
    whole.verify()
    return whole


def chain_proof(func: FuncOp, parts: Sequence[OpKernel],
                budget: ProofBudget = DEFAULT_BUDGET) -> str | None:
    """The id of the proof that the chain of `parts`, composed, equals `func`; None where the
    verifier says anything but Proved."""
    verdict = prove_equivalent(func, composed(func, parts), budget=budget,
                               cache=process_cache())
    return verdict.proof_id if isinstance(verdict, Proved) else None


def widened_chain(func: FuncOp, kernels: Sequence[OpKernel],
                  budget: ProofBudget = DEFAULT_BUDGET) -> tuple[list[OpKernel], str] | None:
    """`widened_parts` of `func` and the id of the proof that their chain, composed, equals
    `func`; None where nothing widens or the proof says anything but Proved."""
    parts = widened_parts(func, kernels)
    if parts is None:
        return None
    proof = chain_proof(func, parts, budget)
    return None if proof is None else (parts, proof)
