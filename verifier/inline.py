"""Symbolic inlining: a `func.func` of `ax` ops becomes one term per output element.

Each op's meaning is read from `op.generic_form()` only: parallel dims are bound to the index at
which the consumer reads, reads of operands recurse into their producers, reductions become
canonical sums (`sums.py`) or reduction atoms, derived scalar functions are `expand()`ed into
primitives. Function parameters become tensor atoms named by position (`a0`, `a1`, ...), so two
functions with the same signature are compared on the same inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.generic_form import GenericForm, Instance, LoopDim, instantiate
from axon.dialects.form.interface import generic_form, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import (
    Call,
    Const,
    Index,
    Read,
    Reduced,
    ScalarExpr,
    expand,
    map_index,
    substitute,
)
from axon.dialects.form.scalar import reads as form_reads
from axon.dialects.tile import ForOp, KernelOp
from axon.verifier import kernels
from axon.verifier import terms as T
from axon.verifier.budget import Unsupported
from axon.verifier.indices import Ranges, decide, simplify
from axon.verifier.sums import fresh, make_reduce, make_sum

Value = T.Poly | T.Bool


@dataclass(frozen=True)
class Output:
    """One result of a function: its shape, dtype and its element at symbolic `index`."""

    shape: tuple[IntExpr, ...]
    dtype: str
    index: tuple[str, ...]
    value: Value


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_size_names(func: FuncOp, form: Callable[[Operation], GenericForm]) -> None:
    """Every size symbol of `func` (its types and its ops' forms) is an identifier.

    The verifier's own variables start with `$` (`terms.INTERNAL`), which no identifier has, so
    this check is what keeps the two namespaces apart: a program can never name a size after a
    loop variable of the encoding (which would capture it and make range constraints vacuous).
    """
    names: set[str] = set()
    for t in [*func.function_type.inputs.data, *func.function_type.outputs.data]:
        if isinstance(t, TensorType):
            names |= {s for d in t.shape for s in d.symbols()}
    for op in func.walk():
        if has_form(op):
            names |= form(op).size_symbols()
            names |= {s for r in op.results if isinstance(r.type, TensorType)
                      for d in r.type.shape for s in d.symbols()}
    bad = sorted(n for n in names if not _IDENTIFIER.fullmatch(n))
    if bad:
        raise Unsupported(f"@{func.sym_name.data}: size symbol(s) {', '.join(bad)} are not "
                          "identifiers")


def signature(func: FuncOp) -> list[TensorType]:
    types = list(func.function_type.inputs.data)
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise Unsupported(f"@{func.sym_name.data}: parameter #{i} has type {t}, not !ax.tensor")
    return types  # type: ignore[return-value]


def inline_function(func: FuncOp) -> list[Output]:
    """The element of every result at index `$o<k>_<i>`, as a term.

    Precondition, checked: `func` is straight-line, one block of form ops and tiled kernels
    (`kernels.py` says which it reads) ending in `func.return`. Loops (`scf.for`, loops inside
    kernels) are not read yet; a function with them is Unsupported, never misread."""
    if len(func.body.blocks) != 1 or any(op.regions and not isinstance(op, KernelOp)
                                         for op in func.body.block.ops):
        raise Unsupported(f"@{func.sym_name.data}: the verifier reads straight-line functions "
                          "(one block, no ops with regions but tiled kernels)")
    for op in func.body.block.ops:
        if isinstance(op, KernelOp):
            kernels.check_readable(op)
    inliner = _Inliner()
    check_size_names(func, inliner.form)
    ret = func.body.block.last_op
    if not isinstance(ret, ReturnOp):
        raise Unsupported(f"@{func.sym_name.data} does not end in func.return")
    outputs = []
    for k, value in enumerate(ret.arguments):
        t = value.type
        if not isinstance(t, TensorType):
            raise Unsupported(f"@{func.sym_name.data}: result #{k} is not an !ax.tensor")
        names = tuple(f"{T.OUTPUT_INDEX}{k}_{i}" for i in range(t.rank))
        ranges = {n: (IntExpr.const(0), d) for n, d in zip(names, t.shape, strict=True)}
        idx = tuple(IntExpr.sym(n) for n in names)
        outputs.append(Output(t.shape, t.dtype, names, inliner.value(value, idx, ranges)))
    return outputs


#: program ids of the kernel a value is read in, replaced by what they are at the element read
ProgramEnv = tuple[tuple[str, IntExpr], ...]
Demand = tuple[SSAValue, tuple[IntExpr, ...], Ranges, ProgramEnv]


@dataclass
class _Plan:
    """One op's element at one index, before its operands' terms are known: the op's form bound
    at the index (`instantiate`: reduced dims under fresh binders), the ranges of every loop
    variable in scope, and the operand reads the body makes."""

    op: Operation
    instance: Instance
    ranges: Ranges
    reads: dict[Read, Demand]


class _Inliner:
    """Terms of values at symbolic indices, memoized by (value, index).

    The program is walked with an explicit stack of demands, never by recursion, so a chain of
    thousands of ops inlines without touching Python's recursion limit. A loop variable has one
    range wherever it occurs (output indices and fresh binders are unique), so the memo may ignore
    the ranges a demand comes with.
    """

    def __init__(self) -> None:
        self.memo: dict[tuple[int, str], Value] = {}
        self.forms: dict[Operation, GenericForm] = {}

    def form(self, op: Operation) -> GenericForm:
        """The op's generic form, derived once per query (deriving it re-runs shape inference)."""
        if op not in self.forms:
            self.forms[op] = generic_form(op)
        return self.forms[op]

    def value(self, v: SSAValue, index: tuple[IntExpr, ...], ranges: Ranges) -> Value:
        root = self._key(v, index, ranges, ())
        plans: dict[tuple[int, str], _Plan | _LoopPlan] = {}
        stack: list[Demand] = [(v, index, ranges, ())]
        while stack:
            value, idx, rng, env = stack[-1]
            key = self._key(value, idx, rng, env)
            if key in self.memo:
                stack.pop()
                continue
            same = _same_element(value, idx, rng, env)
            if same is not None:  # a kernel's input or result: another value's element
                if self._key(*same) in self.memo:
                    self.memo[key] = self.memo[self._key(*same)]
                    stack.pop()
                else:
                    stack.append(same)
                continue
            if isinstance(value, BlockArgument):
                self.memo[key] = _parameter(value, _simplified(idx, rng))
                stack.pop()
                continue
            plan = plans.get(key)
            if plan is None:
                plan = plans[key] = (
                    _loop_plan(value, _simplified(idx, rng), rng, env)
                    if isinstance(value, OpResult) and isinstance(value.owner, ForOp)
                    else self._plan(value, _simplified(idx, rng), rng, env))
            missing = [d for d in plan.reads.values() if self._key(*d) not in self.memo]
            if missing:
                stack.extend(missing)
                continue
            self.memo[key] = self._build(plan)
            del plans[key]
            stack.pop()
        return self.memo[root]

    def _plan(self, v: SSAValue, index: tuple[IntExpr, ...], ranges: Ranges,
              env: ProgramEnv) -> _Plan:
        """Bind the producer's form at `index` (inside a kernel: its program ids replaced as
        `env` says, indices simplified) and list the operand reads its body makes."""
        assert isinstance(v, OpResult)
        op = v.owner
        if not has_form(op):
            raise Unsupported(f"op '{op.name}' has no generic form")
        inst = instantiate(self.form(op), index, fresh)
        local = dict(ranges)
        if env:
            inst = _in_program(inst, dict(env))
        local.update((d.name, (d.lower, d.upper)) for d in inst.reduced)
        if env:
            inst = Instance(inst.reduced, map_index(inst.body, lambda e: simplify(e, local)),
                            inst.finalize)
        reads: dict[Read, Demand] = {r: (op.operands[r.operand], r.index, local, env)
                                     for r in form_reads(inst.body)}
        return _Plan(op, inst, local, reads)

    @staticmethod
    def _key(v: SSAValue, index: tuple[IntExpr, ...], ranges: Ranges,
             env: ProgramEnv) -> tuple[int, str]:
        where = "; ".join(f"{p} = {e}" for p, e in env)
        return id(v), ", ".join(str(i) for i in _simplified(index, ranges)) + f" | {where}"

    def _build(self, plan: _Plan | _LoopPlan) -> Value:
        if isinstance(plan, _LoopPlan):
            return plan.build({k: self.memo[self._key(*d)] for k, d in plan.reads.items()})
        form, inst = self.form(plan.op), plan.instance

        def read(r: Read) -> Value:
            return self.memo[self._key(*plan.reads[r])]

        # the instance has every dim substituted already: no further environment
        acc = _scalar(expand(inst.body), read, {}, None, plan.ranges)
        if form.reduction is None:
            return acc
        # the innermost sum is built first
        for d in reversed(inst.reduced):
            if isinstance(acc, T.Bool):
                raise Unsupported("reduction of a boolean body")
            acc = (make_sum(d.name, d.lower, d.upper, acc) if form.reduction == "add"
                   else make_reduce(form.reduction, d.name, d.lower, d.upper, acc))
        if inst.finalize is None:
            return acc
        return _scalar(expand(inst.finalize), _no_read, {}, acc, plan.ranges)


def _simplified(index: tuple[IntExpr, ...], ranges: Ranges) -> tuple[IntExpr, ...]:
    return tuple(simplify(i, ranges) for i in index)


def _same_element(value: SSAValue, index: tuple[IntExpr, ...], ranges: Ranges,
                  env: ProgramEnv) -> Demand | None:
    """The demand whose element this one is, for a value that only passes elements on: an
    input of a kernel, read inside it, is the kernel's operand outside it; a kernel's result is
    a stored tile's element in one program (`kernels.store_read`)."""
    if isinstance(value, BlockArgument):
        kernel = kernels.kernel_of_argument(value.owner.parent_op())
        if kernel is None:
            return None
        return kernel.operands[value.index], index, ranges, ()
    if isinstance(value, OpResult) and isinstance(value.owner, KernelOp):
        found = kernels.store_read(value.owner, value.index, _simplified(index, ranges))
        return found.value, found.tile_index, ranges, found.env
    return None


@dataclass
class _LoopPlan:
    """A sequential loop's carried value at one index: its start and its step at a bound
    variable standing for the iteration (`kernels.accumulations`), folded by its kind."""

    accumulation: kernels.Accumulation
    binder: str
    extent: IntExpr
    reads: dict[str, Demand]

    def build(self, terms: dict[str, Value]) -> Value:
        start, step = terms["init"], terms["step"]
        if isinstance(start, T.Bool) or isinstance(step, T.Bool):
            raise Unsupported("a loop accumulating booleans")
        kind = self.accumulation.kind
        if kind == "add":
            return start + make_sum(self.binder, IntExpr.const(0), self.extent, step)
        folded = make_reduce(kind, self.binder, IntExpr.const(0), self.extent, step)
        return T.apply(kind, start, folded)


def _loop_plan(value: OpResult, index: tuple[IntExpr, ...], ranges: Ranges,
               env: ProgramEnv) -> _LoopPlan:
    loop = value.owner
    assert isinstance(loop, ForOp)
    acc = kernels.accumulations(loop)[value.index]
    binder = fresh()
    extent = loop.extent_expr().substitute(dict(env))
    inside = dict(ranges)
    inside[binder] = (IntExpr.const(0), extent)
    step_env = tuple(sorted((*env, (loop.iv.data, IntExpr.sym(binder)))))
    return _LoopPlan(acc, binder, extent, {"init": (acc.init, index, ranges, env),
                                            "step": (acc.step, index, inside, step_env)})


def _in_program(inst: Instance, env: dict[str, IntExpr]) -> Instance:
    """An instance inside a kernel with its program ids replaced (they are free in the forms of
    the kernel's ops, as sizes are; after `instantiate` no name of the form's own is left)."""
    reduced = tuple(LoopDim(d.name, d.lower.substitute(env), d.upper.substitute(env))
                    for d in inst.reduced)
    finalize = None if inst.finalize is None else substitute(inst.finalize, env)
    return Instance(reduced, substitute(inst.body, env), finalize)


def _parameter(v: BlockArgument, index: tuple[IntExpr, ...]) -> Value:
    """Parameters are tensor atoms named by position, so both sides read the same inputs."""
    t = v.type
    assert isinstance(t, TensorType)
    name = f"a{v.index}"
    return T.bread(name, index) if t.dtype == "i1" else T.atom(T.Read(name, index))


def _no_read(r: Read) -> Value:
    raise Unsupported(f"finalizer reads {r}")


def _scalar(e: ScalarExpr, read: Callable[[Read], Value], env: dict[str, IntExpr],
            reduced: Value | None, ranges: Ranges) -> Value:
    """The term of a scalar-language expression (after expand()); integer comparisons that the
    loop `ranges` settle become constants (a concat's branch condition under a slice)."""
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return T.bconst(e.value)
        return T.const(Fraction(e.value))
    if isinstance(e, Read):
        return read(e)
    if isinstance(e, Index):
        return T.idx(e.expr.substitute(env))
    if isinstance(e, Reduced):
        assert reduced is not None
        return reduced
    assert isinstance(e, Call)
    args = [_scalar(a, read, env, reduced, ranges) for a in e.args]
    out = _call(e.fn, args, e.param)
    return decide(out, ranges) if isinstance(out, T.Bool) else out


def _num(v: Value) -> T.Poly:
    """A boolean used as a number is 1 or 0."""
    return T.select(v, T.ONE, T.ZERO) if isinstance(v, T.Bool) else v


def _bool(v: Value) -> T.Bool:
    return v if isinstance(v, T.Bool) else T.compare("ne", v, T.ZERO)


def _call(fn: str, args: list[Value], param: float | str | None) -> Value:
    if fn in ("and", "or", "not"):
        bs = [_bool(a) for a in args]
        return T.band(*bs) if fn == "and" else T.bor(*bs) if fn == "or" else T.bnot(bs[0])
    if fn in ("eq", "ne", "lt", "le", "gt", "ge"):
        a, b = args
        if isinstance(a, T.Bool) or isinstance(b, T.Bool):
            if fn not in ("eq", "ne"):
                a, b = _num(a), _num(b)
            else:
                ba, bb = _bool(a), _bool(b)
                same = T.bor(T.band(ba, bb), T.band(T.bnot(ba), T.bnot(bb)))
                return same if fn == "eq" else T.bnot(same)
        return T.compare(fn, _num(a), _num(b))
    if fn == "select":
        c, a, b = args
        if isinstance(a, T.Bool) and isinstance(b, T.Bool):
            cb = _bool(c)
            return T.bor(T.band(cb, a), T.band(T.bnot(cb), b))
        return T.select(_bool(c), _num(a), _num(b))
    if fn == "cast":
        (x,) = args
        if param == "i1":
            return _bool(x)
        if param == "i32":
            return T.apply("trunc", _num(x)) if not isinstance(x, T.Bool) else _num(x)
        return _num(x)  # float casts: the identity on reals (rounding is checked numerically)
    nums = [_num(a) for a in args]
    if fn == "add":
        return nums[0] + nums[1]
    if fn == "sub":
        return nums[0] - nums[1]
    if fn == "mul":
        return nums[0] * nums[1]
    if fn == "div":
        return nums[0] * T.inv(nums[1])
    if fn == "neg":
        return -nums[0]
    if fn == "exp":
        return T.exp(nums[0])
    if fn == "log":
        return T.log(nums[0])
    if fn == "pow":
        assert isinstance(param, float)
        return T.power(nums[0], param)
    if fn in ("max", "min", "abs", "sqrt", "rsqrt", "tanh", "sigmoid", "erf"):
        return T.apply(fn, *nums)
    raise Unsupported(f"scalar function '{fn}'")
