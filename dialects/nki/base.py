"""What every `nki` instruction shares: buffers, engines, ALU ops, tile limits, the op base class.

A value of the `nki` level is an `!ax.tensor` held in one buffer: `hbm` (a kernel's inputs and
outputs), `sbuf` or `psum` (on-chip, partition dim first). An instruction writes its result
(the new API's `dst`) into the buffer its `buffer` property names; a value no `nki` op made (a
function's argument) is in HBM. The op verifier checks the result's buffer when it derives the
instruction's meaning, and the operands' buffers from the ops that made them (a value whose
buffer the IR does not say, such as a loop's carried value, is not checked).

An on-chip tile has rank >= 2: dim 0 is the partition dim (at most `partitions`), the others
are free dims, row-major within a partition; its free bytes fit one PSUM bank (psum) or one
SBUF partition (sbuf). Limits come from the NKI profiles (`limits.py`); a symbolic dim is not
checked against them (the kernel's assumptions bound it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import TensorType
from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import LoopDim, fresh_names
from axon.dialects.form.interface import Semantics
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, ScalarExpr, call
from axon.dialects.nki.limits import generic_limits

BUFFERS = ("hbm", "sbuf", "psum")
ON_CHIP = ("sbuf", "psum")

#: the engines of a NeuronCore, by the name an op's `engine` property takes
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")

#: the ALU ops of `tensor_tensor` / `tensor_scalar` (nki.language names), as scalar-language
#: bodies; comparisons give 1.0 or 0.0 (reference/nki.md 3.6). Bitvec and logical ops have no
#: generic form here: the scalar language has no integer bit operations.
ALU_OPS: dict[str, Callable[[ScalarExpr, ScalarExpr], ScalarExpr]] = {
    "add": lambda a, b: call("add", a, b),
    "subtract": lambda a, b: call("sub", a, b),
    "multiply": lambda a, b: call("mul", a, b),
    "divide": lambda a, b: call("div", a, b),
    "maximum": lambda a, b: call("max", a, b),
    "minimum": lambda a, b: call("min", a, b),
    "abs_max": lambda a, b: call("max", call("abs", a), call("abs", b)),
    "abs_min": lambda a, b: call("min", call("abs", a), call("abs", b)),
    "equal": lambda a, b: _flag(call("eq", a, b)),
    "not_equal": lambda a, b: _flag(call("ne", a, b)),
    "greater": lambda a, b: _flag(call("gt", a, b)),
    "greater_equal": lambda a, b: _flag(call("ge", a, b)),
    "less": lambda a, b: _flag(call("lt", a, b)),
    "less_equal": lambda a, b: _flag(call("le", a, b)),
}


def _flag(condition: ScalarExpr) -> ScalarExpr:
    return call("select", condition, Const(1.0), Const(0.0))


def alu(op: Any, what: str) -> Callable[[ScalarExpr, ScalarExpr], ScalarExpr]:
    """The body builder of ALU op `op`; ShapeError naming `what` for an unknown one."""
    if op not in ALU_OPS:
        raise ShapeError(f"{what} '{op}' is not an ALU op with a generic form; expected one of "
                         f"{', '.join(ALU_OPS)}")
    return ALU_OPS[op]


def as_fp32(value: ScalarExpr, dtype: str) -> ScalarExpr:
    """An operand's element as the engines compute with it: an integer or boolean element is
    converted to fp32 first (reference/nki.md 3.4: arithmetic in fp32)."""
    return value if DTYPES[dtype].is_float else call("cast", value, param="f32")


def fp32_const(value: Any, what: str = "an immediate") -> Const:
    """An instruction's immediate (a scalar operand, a scale, an initial or fill value) as the
    form reads it. The engines hold an immediate in fp32, so the IR holds only fp32 values:
    one fp32 does not hold exactly is a ShapeError naming `what`, never rounded here. Whoever
    makes an instruction chooses its fp32 immediates (the lowering from `tile`, where `ax`
    constants are exact reals, splits a sum by a constant into exact fp32 pieces); the form
    then states the immediate the hardware uses, with no rounding of its own (docs/nki.md)."""
    number = float(value)
    if not np.isnan(number):
        with np.errstate(over="ignore"):
            held = float(np.float32(number))
        if held != number:
            raise ShapeError(f"{what} {value!r} is not an fp32 value (an engine holds its "
                             f"immediates in fp32; the nearest is {held!r})")
    return Const(number)


def buffer_of(value: SSAValue) -> str | None:
    """The buffer holding `value`: the one its `nki` op wrote; HBM for an argument of a
    function (a kernel's input); None where the IR does not say (a loop's carried value, a
    value of another dialect), which the buffer rules then leave unchecked."""
    owner = value.owner
    if isinstance(owner, NkiOp):
        return owner.buffer_name()
    if isinstance(value, BlockArgument) and isinstance(owner.parent_op(), FuncOp):
        return "hbm"
    return None


def dst_dtype(attrs: Mapping[str, Any], default: str) -> str:
    """The dst dtype: the `dtype` property, else `default` (usually the input's)."""
    return str(attrs.get("dtype") or default)


def dims_of(t: TensorType, prefix: str = "d") -> tuple[LoopDim, ...]:
    """One parallel dim per dim of `t`, named apart from `t`'s size symbols."""
    names = fresh_names(prefix, t.rank, {s for d in t.shape for s in d.symbols()})
    return tuple(LoopDim(n, IntExpr.const(0), e) for n, e in zip(names, t.shape, strict=True))


def syms(dims: Sequence[LoopDim]) -> tuple[IntExpr, ...]:
    """The loop dims as index expressions (an element's index in a form)."""
    return tuple(IntExpr.sym(d.name) for d in dims)


def check_tile(what: str, t: TensorType, buffer: str) -> None:
    """An on-chip tile has a partition dim within the limit and free bytes that fit its buffer;
    ShapeError naming `what` otherwise."""
    if buffer not in ON_CHIP:
        return
    limits = generic_limits()
    if t.rank < 2:
        raise ShapeError(f"{what} is a {buffer} tile of rank {t.rank}; an on-chip tile has a "
                         "partition dim and at least one free dim")
    if t.rank - 1 > limits.free_dims_max:
        raise ShapeError(f"{what} has {t.rank - 1} free dims; an engine's access pattern has "
                         f"at most {limits.free_dims_max}")
    partition = t.shape[0]
    if partition.is_const and partition.value > limits.partitions:
        raise ShapeError(f"{what} has {partition.value} partitions; at most "
                         f"{limits.partitions}")
    free = t.shape[1:]
    if all(d.is_const for d in free):
        size = math.prod(d.value for d in free) * DTYPES[t.dtype].storage.itemsize
        room = limits.psum_bank_bytes if buffer == "psum" else limits.sbuf_partition_bytes
        if size > room:
            place = "one PSUM bank" if buffer == "psum" else "one SBUF partition"
            raise ShapeError(f"{what} holds {size} bytes per partition; {place} holds {room}")


def at_most(what: str, dim: IntExpr, limit: int) -> None:
    """A constant `dim` is at most `limit`; ShapeError naming `what` otherwise."""
    if dim.is_const and dim.value > limit:
        raise ShapeError(f"{what} is {dim.value}; at most {limit}")


def same_shape(what: str, a: TensorType, b: TensorType) -> None:
    """`a` and `b` have one shape; ShapeError starting with `what` otherwise."""
    if a.shape != b.shape:
        raise ShapeError(f"{what}: [{', '.join(map(str, a.shape))}] and "
                         f"[{', '.join(map(str, b.shape))}] differ")


def is_vector(t: TensorType, data: TensorType) -> bool:
    """Is `t` a `[P, 1]` vector over `data`'s partitions (broadcast along its free dims)?"""
    return t.rank == 2 and t.shape == (data.shape[0], IntExpr.const(1))


class NkiOp(TensorOp):
    """One `nki.isa` instruction: a form op whose result is its `dst`, in buffer `buffer`.

    Subclasses set `ROLES` (operand names, for diagnostics), `DST_BUFFERS` (where the result
    may live), `ENGINE_CHOICES` (the engines it may run on, the default first; an op with more
    than one has an `engine` property) and `OPERAND_BUFFERS` (role -> buffers it may be read
    from), implement `instruction(operand_types, attrs)` (its generic form and result type)
    and may add `check_operands` for rules that look at more than one operand.
    """

    ROLES: ClassVar[tuple[str, ...]] = ()
    DST_BUFFERS: ClassVar[tuple[str, ...]] = ON_CHIP
    ENGINE_CHOICES: ClassVar[tuple[str, ...]] = ()
    OPERAND_BUFFERS: ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def instruction(cls, operand_types: Sequence[TensorType],
                    attrs: Mapping[str, Any]) -> Semantics:
        """The instruction's generic form and result type (shape and dtype rules checked)."""
        raise NotImplementedError

    @classmethod
    def semantics(cls, operand_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> Semantics:
        buffer = attrs.get("buffer")
        if buffer not in cls.DST_BUFFERS:
            raise ShapeError(f"dst buffer '{buffer}' is not one of {', '.join(cls.DST_BUFFERS)}")
        engine = cls.engine_of(attrs, operand_types)
        if engine == "gpsimd" and buffer == "psum":
            raise ShapeError("the GpSimd engine cannot access PSUM (dst)")
        if cls.ROLES and not cls.takes(len(operand_types)):
            raise ShapeError(f"takes operands ({', '.join(cls.ROLES)}), got "
                             f"{len(operand_types)}")
        meaning = cls.instruction(operand_types, attrs)
        assert isinstance(meaning.result_type, TensorType)
        check_tile("dst", meaning.result_type, buffer)
        return meaning

    @classmethod
    def takes(cls, count: int) -> bool:
        """Does the op take `count` operands? (Trailing roles in brackets are optional.)"""
        required = sum(1 for r in cls.ROLES if not r.startswith("["))
        return required <= count <= len(cls.ROLES)

    @classmethod
    def engine_of(cls, attrs: Mapping[str, Any],
                  operand_types: Sequence[TensorType] = ()) -> str:
        """The engine that runs the instruction: its `engine` property, else its default."""
        engine = attrs.get("engine") or cls.default_engine(operand_types, attrs)
        if engine not in cls.ENGINE_CHOICES:
            raise ShapeError(f"engine '{engine}' cannot run {cls.name}; expected one of "
                             f"{', '.join(cls.ENGINE_CHOICES)}")
        return str(engine)

    @classmethod
    def default_engine(cls, operand_types: Sequence[TensorType],
                       attrs: Mapping[str, Any]) -> str:
        """The engine the instruction runs on when its `engine` property is absent."""
        return cls.ENGINE_CHOICES[0]

    def buffer_name(self) -> str:
        """The buffer this instruction writes its result to."""
        return str(self.attrs().get("buffer"))

    def engine_name(self) -> str:
        """The engine that runs this instruction."""
        return type(self).engine_of(self.attrs(), self.tensor_types())

    def role(self, index: int) -> str:
        """Operand #`index` as diagnostics name it: `operand #1 (moving)`."""
        name = self.ROLES[index].strip("[]") if index < len(self.ROLES) else "?"
        return f"operand #{index} ({name})"

    def check_operands(self, buffers: Sequence[str | None]) -> None:
        """Rules over several operands' buffers (None: not known; VerifyException); none by
        default."""

    def verify_(self) -> None:
        """The instruction's meaning (result type, shape and dtype rules), then its operands'
        buffers and tiles."""
        super().verify_()
        buffers = [buffer_of(v) for v in self.operands]
        engine = self.engine_name()
        for index, (value, buffer) in enumerate(zip(self.operands, buffers, strict=True)):
            if buffer is None:
                continue
            role = self.ROLES[index].strip("[]")
            allowed = self.OPERAND_BUFFERS.get(role, ON_CHIP)
            if buffer not in allowed:
                raise VerifyException(f"'{self.name}': {self.role(index)} is in {buffer}; "
                                      f"expected {' or '.join(allowed)}")
            if engine == "gpsimd" and buffer == "psum":
                raise VerifyException(f"'{self.name}': the GpSimd engine cannot read PSUM "
                                      f"({self.role(index)})")
            assert isinstance(value.type, TensorType)
            try:
                check_tile(self.role(index), value.type, buffer)
            except ShapeError as err:
                raise VerifyException(f"'{self.name}': {err}") from None
        self.check_operands(buffers)
