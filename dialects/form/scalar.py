"""The scalar language of generic-form bodies.

A body is a tree of `Const`, `Read` (an operand at an index map), `Index` (an integer expression
used as a number, e.g. for iota or a guard), `Reduced` (the reduction result inside a finalizer) and
`Call` of a function from `FUNCTIONS`. Each function is defined here once: its arity, its numpy
meaning, and, for the derived ones (silu, gelu, relu, ...), its expansion into primitives, which is
what the SMT encoder sees.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from axon.dialects.form.dtypes import numpy_dtype
from axon.dialects.form.intexpr import IntExpr


class ScalarExpr:
    """Base class of scalar-language nodes; operators build `Call` nodes.

    The one traversal protocol (`map_index`, `map_reads`, `reads`, `index_exprs` below are
    written once against it): a node names its sub-expressions (`children` / `with_children`)
    and maps its own integer expressions (`map_ints`). Node kinds defined elsewhere (the
    nu-graph's folds and groups) implement the same three methods and get every traversal.
    """

    def children(self) -> tuple[ScalarExpr, ...]:
        """The direct sub-expressions (none for a leaf)."""
        return ()

    def with_children(self, children: tuple[ScalarExpr, ...]) -> ScalarExpr:
        """This node over other sub-expressions (in `children`'s order)."""
        return self

    def map_ints(self, fn: Callable[[IntExpr], IntExpr]) -> ScalarExpr:
        """This node with `fn` applied to its own integer expressions (not its children's)."""
        return self

    def __add__(self, other: ScalarLike) -> Call:
        return call("add", self, other)

    def __radd__(self, other: ScalarLike) -> Call:
        return call("add", other, self)

    def __sub__(self, other: ScalarLike) -> Call:
        return call("sub", self, other)

    def __rsub__(self, other: ScalarLike) -> Call:
        return call("sub", other, self)

    def __mul__(self, other: ScalarLike) -> Call:
        return call("mul", self, other)

    def __rmul__(self, other: ScalarLike) -> Call:
        return call("mul", other, self)

    def __truediv__(self, other: ScalarLike) -> Call:
        return call("div", self, other)

    def __rtruediv__(self, other: ScalarLike) -> Call:
        return call("div", other, self)

    def __neg__(self) -> Call:
        return call("neg", self)


ScalarLike = ScalarExpr | float | int | bool


@dataclass(frozen=True, eq=True)
class Const(ScalarExpr):
    """A literal number or boolean."""

    value: float | int | bool

    def __str__(self) -> str:
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        if isinstance(self.value, float):
            return repr(self.value) if math.isfinite(self.value) else (
                "inf" if self.value > 0 else "-inf" if self.value < 0 else "nan")
        return str(self.value)


@dataclass(frozen=True, eq=True)
class Read(ScalarExpr):
    """Operand `operand` read at `index` (one integer expression per operand dim)."""

    operand: int
    index: tuple[IntExpr, ...]

    def map_ints(self, fn: Callable[[IntExpr], IntExpr]) -> ScalarExpr:
        return Read(self.operand, tuple(fn(i) for i in self.index))

    def __str__(self) -> str:
        return f"in{self.operand}[{', '.join(str(i) for i in self.index)}]"


@dataclass(frozen=True, eq=True)
class Index(ScalarExpr):
    """An integer expression over loop dims and sizes, used as a number."""

    expr: IntExpr

    def map_ints(self, fn: Callable[[IntExpr], IntExpr]) -> ScalarExpr:
        return Index(fn(self.expr))

    def __str__(self) -> str:
        return f"idx({self.expr})"


@dataclass(frozen=True, eq=True)
class Reduced(ScalarExpr):
    """The value of the reduction, referenced by a finalizer (e.g. `mean = acc / K`)."""

    def __str__(self) -> str:
        return "acc"


@dataclass(frozen=True, eq=True)
class Call(ScalarExpr):
    """A function of `FUNCTIONS` applied to arguments; `param` carries pow's exponent or a dtype."""

    fn: str
    args: tuple[ScalarExpr, ...]
    param: float | str | None = None

    def __post_init__(self) -> None:
        spec = FUNCTIONS.get(self.fn)
        if spec is None:
            raise ValueError(f"unknown scalar function '{self.fn}'")
        if len(self.args) != spec.arity:
            raise ValueError(f"scalar function '{self.fn}' takes {spec.arity} arguments, "
                             f"got {len(self.args)}")
        if spec.has_param != (self.param is not None):
            raise ValueError(f"scalar function '{self.fn}' "
                             f"{'needs' if spec.has_param else 'takes no'} parameter")

    def children(self) -> tuple[ScalarExpr, ...]:
        return self.args

    def with_children(self, children: tuple[ScalarExpr, ...]) -> ScalarExpr:
        return Call(self.fn, children, self.param)

    def __str__(self) -> str:
        spec = FUNCTIONS[self.fn]
        if spec.infix is not None:
            a, b = self.args
            return f"({a} {spec.infix} {b})"
        params = [] if self.param is None else [
            repr(self.param) if isinstance(self.param, float) else str(self.param)]
        return f"{self.fn}({', '.join([*(str(a) for a in self.args), *params])})"


def lift(value: ScalarLike) -> ScalarExpr:
    """Python numbers become `Const`."""
    return value if isinstance(value, ScalarExpr) else Const(value)


def call(fn: str, *args: ScalarLike, param: float | str | None = None) -> Call:
    """Build `fn(args...)` with Python numbers lifted to constants."""
    return Call(fn, tuple(lift(a) for a in args), param)


# ---- the function table ---------------------------------------------------------------------
@dataclass(frozen=True)
class ScalarFunction:
    """Everything about one scalar function, stated once: arity, numpy meaning, (for derived ones)
    its primitive expansion, and what a prover may assume of it.

    `facts(v, x)` lists true facts of the real function at one point, v = f(x), as
    (premise, conclusion) pairs (premise None: unconditional), built with Python's operators so
    that any term language with arithmetic and comparisons can instantiate them (the SMT encoder
    passes z3 terms and asserts each as a ground instance). `reciprocal` names the function g
    with f(x) * g(x) = 1 wherever x > 0. A primitive without facts is uninterpreted beyond
    being a function."""

    name: str
    arity: int
    numpy: Callable[..., Any]
    infix: str | None = None
    has_param: bool = False
    float_only: bool = False
    boolean_result: bool = False
    expansion: Callable[..., ScalarExpr] | None = field(default=None, repr=False)
    facts: Callable[[Any, Any], list[tuple[Any, Any]]] | None = field(default=None, repr=False)
    reciprocal: str | None = None


def _sigmoid(x: Any) -> Any:
    return 1.0 / (1.0 + np.exp(-x))


def _erf(x: Any) -> Any:
    # numpy has no erf; math.erf is exact to double precision, vectorized here
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(np.result_type(x, np.float32))


def _cast(x: Any, dtype: str) -> Any:
    return np.asarray(x).astype(numpy_dtype(dtype))


_SQRT1_2 = 1.0 / math.sqrt(2.0)

FUNCTIONS: dict[str, ScalarFunction] = {f.name: f for f in [
    # arithmetic
    ScalarFunction("add", 2, np.add, infix="+"),
    ScalarFunction("sub", 2, np.subtract, infix="-"),
    ScalarFunction("mul", 2, np.multiply, infix="*"),
    ScalarFunction("div", 2, np.divide, infix="/", float_only=True),
    ScalarFunction("max", 2, np.maximum),
    ScalarFunction("min", 2, np.minimum),
    ScalarFunction("neg", 1, np.negative),
    ScalarFunction("abs", 1, np.abs),
    ScalarFunction("pow", 1, lambda x, p: np.power(x, p), has_param=True, float_only=True),
    # transcendental primitives (uninterpreted for the SMT encoder)
    ScalarFunction("exp", 1, np.exp, float_only=True, facts=lambda v, x: [(None, v > 0)]),
    ScalarFunction("log", 1, np.log, float_only=True),
    ScalarFunction("sqrt", 1, np.sqrt, float_only=True, reciprocal="rsqrt",
                   facts=lambda v, x: [(x >= 0, v >= 0), (x >= 0, v * v == x)]),
    ScalarFunction("rsqrt", 1, lambda x: 1.0 / np.sqrt(x), float_only=True, reciprocal="sqrt",
                   facts=lambda v, x: [(x > 0, v > 0), (x > 0, v * v * x == 1)]),
    ScalarFunction("tanh", 1, np.tanh, float_only=True),
    ScalarFunction("sigmoid", 1, _sigmoid, float_only=True,
                   facts=lambda v, x: [(None, v > 0), (None, v < 1)]),
    ScalarFunction("erf", 1, _erf, float_only=True),
    # derived functions: one expansion each
    ScalarFunction("relu", 1, lambda x: np.maximum(x, 0), expansion=lambda x: call("max", x, 0)),
    ScalarFunction("square", 1, lambda x: x * x, expansion=lambda x: call("mul", x, x)),
    ScalarFunction("reciprocal", 1, lambda x: 1.0 / x, float_only=True,
                   expansion=lambda x: call("div", 1.0, x)),
    ScalarFunction("silu", 1, lambda x: x * _sigmoid(x), float_only=True,
                   expansion=lambda x: call("mul", x, call("sigmoid", x))),
    ScalarFunction("gelu", 1, lambda x: 0.5 * x * (1.0 + _erf(x * _SQRT1_2)), float_only=True,
                   expansion=lambda x: call(
                       "mul", call("mul", 0.5, x),
                       call("add", 1.0, call("erf", call("mul", x, _SQRT1_2))))),
    # comparisons and selection
    ScalarFunction("eq", 2, np.equal, infix="==", boolean_result=True),
    ScalarFunction("ne", 2, np.not_equal, infix="!=", boolean_result=True),
    ScalarFunction("lt", 2, np.less, infix="<", boolean_result=True),
    ScalarFunction("le", 2, np.less_equal, infix="<=", boolean_result=True),
    ScalarFunction("gt", 2, np.greater, infix=">", boolean_result=True),
    ScalarFunction("ge", 2, np.greater_equal, infix=">=", boolean_result=True),
    ScalarFunction("and", 2, np.logical_and, boolean_result=True),
    ScalarFunction("or", 2, np.logical_or, boolean_result=True),
    ScalarFunction("not", 1, np.logical_not, boolean_result=True),
    ScalarFunction("select", 3, np.where),
    ScalarFunction("cast", 1, _cast, has_param=True),
]}

def expand(expr: ScalarExpr) -> ScalarExpr:
    """Rewrite derived functions (silu, gelu, relu, ...) into primitives, recursively."""
    if not isinstance(expr, Call):
        return expr
    args = tuple(expand(a) for a in expr.args)
    spec = FUNCTIONS[expr.fn]
    if spec.expansion is not None:
        return expand(spec.expansion(*args))
    return Call(expr.fn, args, expr.param)


# ---- traversals (written once, against ScalarExpr's protocol) -----------------------------------
def map_index(expr: ScalarExpr, fn: Callable[[IntExpr], IntExpr]) -> ScalarExpr:
    """`fn` applied to every integer expression of the tree (read indices, Index nodes, and the
    bounds of other node kinds' loop dims)."""
    node = expr.map_ints(fn)
    kids = node.children()
    return node.with_children(tuple(map_index(k, fn) for k in kids)) if kids else node


def substitute(expr: ScalarExpr, env: Mapping[str, IntExpr]) -> ScalarExpr:
    """Replace symbols (loop dims) by integer expressions everywhere in `expr`."""
    if not env:
        return expr
    return map_index(expr, lambda e: e.substitute(env) if e.symbols() & env.keys() else e)


def map_reads(expr: ScalarExpr, fn: Callable[[Read], ScalarExpr]) -> ScalarExpr:
    """Replace every read by `fn(read)`."""
    if isinstance(expr, Read):
        return fn(expr)
    kids = expr.children()
    return expr.with_children(tuple(map_reads(k, fn) for k in kids)) if kids else expr


def reads(expr: ScalarExpr) -> list[Read]:
    """Every operand read in the expression, in evaluation order."""
    out: list[Read] = []

    def collect(r: Read) -> ScalarExpr:
        out.append(r)
        return r

    map_reads(expr, collect)
    return out


def index_exprs(expr: ScalarExpr) -> list[IntExpr]:
    """Every integer expression in the tree, in traversal order."""
    out: list[IntExpr] = []

    def collect(e: IntExpr) -> IntExpr:
        out.append(e)
        return e

    map_index(expr, collect)
    return out


def evaluate(expr: ScalarExpr, read: Callable[[Read], Any], index: Callable[[IntExpr], Any],
             reduced: Any = None) -> Any:
    """Evaluate with numpy semantics; `select` is lazy when its condition is a Python bool.

    `read` and `index` give the values of `Read` and `Index` nodes; the same function serves the
    scalar loop evaluator and the vectorized one.
    """
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Read):
        return read(expr)
    if isinstance(expr, Index):
        return index(expr.expr)
    if isinstance(expr, Reduced):
        return reduced
    assert isinstance(expr, Call)
    spec = FUNCTIONS[expr.fn]
    if expr.fn == "select":
        cond = evaluate(expr.args[0], read, index, reduced)
        if isinstance(cond, (bool, np.bool_)):
            return evaluate(expr.args[1 if cond else 2], read, index, reduced)
    values = [evaluate(a, read, index, reduced) for a in expr.args]
    if expr.param is not None:
        return spec.numpy(*values, expr.param)
    return spec.numpy(*values)

