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
from xdsl.ir import BlockArgument, OpResult, SSAValue

from axon.dialects.ax.op_base import TensorOp
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Const, Index, Read, Reduced, ScalarExpr, expand
from axon.verifier import terms as T
from axon.verifier.indices import Ranges, decide, simplify
from axon.verifier.sums import fresh, make_reduce, make_sum

Value = T.Poly | T.Bool


class Unsupported(ValueError):
    """The function uses something the verifier cannot encode (the verdict becomes Unknown)."""


@dataclass(frozen=True)
class Output:
    """One result of a function: its shape, dtype and its element at symbolic `index`."""

    shape: tuple[IntExpr, ...]
    dtype: str
    index: tuple[str, ...]
    value: Value


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_size_names(func: FuncOp) -> None:
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
        if isinstance(op, TensorOp):
            names |= op.generic_form().size_symbols()
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
    """The element of every result at index `$o<k>_<i>`, as a term."""
    check_size_names(func)
    ret = func.body.block.last_op
    if not isinstance(ret, ReturnOp):
        raise Unsupported(f"@{func.sym_name.data} does not end in func.return")
    inliner = _Inliner()
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


class _Inliner:
    def __init__(self) -> None:
        self.memo: dict[tuple[int, str], Value] = {}

    def value(self, v: SSAValue, index: tuple[IntExpr, ...], ranges: Ranges) -> Value:
        index = tuple(simplify(i, ranges) for i in index)
        key = (id(v), ", ".join(str(i) for i in index))
        if key not in self.memo:
            self.memo[key] = self._value(v, index, ranges)
        return self.memo[key]

    def _value(self, v: SSAValue, index: tuple[IntExpr, ...], ranges: Ranges) -> Value:
        if isinstance(v, BlockArgument):
            t = v.type
            assert isinstance(t, TensorType)
            name = f"a{v.index}"
            return T.bread(name, index) if t.dtype == "i1" else T.atom(T.Read(name, index))
        assert isinstance(v, OpResult)
        op = v.owner
        if not isinstance(op, TensorOp):
            raise Unsupported(f"op '{op.name}' is not an ax op")
        form = op.generic_form()
        env = {d.name: i for d, i in zip(form.parallel, index, strict=True)}
        local = dict(ranges)

        def operand_read(r: Read, scope: dict[str, IntExpr], rng: Ranges) -> Value:
            idx = tuple(e.substitute(scope) for e in r.index)
            return self.value(op.operands[r.operand], idx, rng)

        if form.reduction is None:
            return _scalar(expand(form.body), lambda r: operand_read(r, env, local), env, None,
                           local)
        # reduced dims get fresh names; the innermost sum is built first
        scope = dict(env)
        binders = []
        for d in form.reduced:
            name = fresh()
            lo, hi = d.lower.substitute(scope), d.upper.substitute(scope)
            scope[d.name] = IntExpr.sym(name)
            local[name] = (lo, hi)
            binders.append((name, lo, hi))
        body = _scalar(expand(form.body), lambda r: operand_read(r, scope, local), scope, None,
                       local)
        acc: Value = body
        for name, lo, hi in reversed(binders):
            if isinstance(acc, T.Bool):
                raise Unsupported("reduction of a boolean body")
            acc = (make_sum(name, lo, hi, acc) if form.reduction == "add"
                   else make_reduce(form.reduction, name, lo, hi, acc))
        if form.finalize is None:
            return acc
        return _scalar(expand(form.finalize), lambda r: _no_read(r), env, acc, local)


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
