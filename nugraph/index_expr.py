"""Composed index expressions: what a consumer computes once a producer is substituted into it.

An e-node's generic form, with its operands being e-classes, is an expression in index notation:

    matmul(t, w)[v0, v1]  =  Fold(add, v2 in [0, K), t[v0, v2] * w[v2, v1])

Substituting a producer's form for the consumer's reads of the producer's class composes the two
(`compose`). The result may nest folds (a matmul of a matmul), which no single generic form can
express; candidate generation (`candidates.py`) reshapes such expressions and materializes them
back into ops. Reads name e-classes: `Read(operand=<class id>, index)`. Loop variables are fresh
names from a `NameSupply`, so they never clash with size symbols.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from axon.dialects.form.generic_form import GenericForm, Instance, LoopDim, instantiate
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import (
    Call,
    Const,
    Index,
    Read,
    Reduced,
    ScalarExpr,
    map_reads,
)
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.ops import node_semantics


@dataclass(frozen=True, eq=True)
class Fold(ScalarExpr):
    """`kind` over `dims` of `body`, then `finalize` (which may mention `acc`)."""

    kind: str
    dims: tuple[LoopDim, ...]
    body: ScalarExpr
    finalize: ScalarExpr | None = None

    def children(self) -> tuple[ScalarExpr, ...]:
        return (self.body,) if self.finalize is None else (self.body, self.finalize)

    def with_children(self, children: tuple[ScalarExpr, ...]) -> ScalarExpr:
        return Fold(self.kind, self.dims, children[0], children[1] if len(children) > 1 else None)

    def map_ints(self, fn: Callable[[IntExpr], IntExpr]) -> ScalarExpr:
        return Fold(self.kind, _map_dims(self.dims, fn), self.body, self.finalize)

    def __str__(self) -> str:
        text = f"{self.kind}[{', '.join(str(d) for d in self.dims)}]({self.body})"
        return text if self.finalize is None else f"{text} then {self.finalize}"


@dataclass(frozen=True, eq=True)
class Group(ScalarExpr):
    """A sub-expression to become its own op, with output dims `dims` in this order."""

    dims: tuple[LoopDim, ...]
    body: ScalarExpr

    def children(self) -> tuple[ScalarExpr, ...]:
        return (self.body,)

    def with_children(self, children: tuple[ScalarExpr, ...]) -> ScalarExpr:
        return Group(self.dims, children[0])

    def map_ints(self, fn: Callable[[IntExpr], IntExpr]) -> ScalarExpr:
        return Group(_map_dims(self.dims, fn), self.body)

    def __str__(self) -> str:
        return f"op[{', '.join(d.name for d in self.dims)}]({self.body})"


@dataclass
class NameSupply:
    """Fresh loop-variable names (`v0`, `v1`, ...) that avoid every size symbol."""

    avoid: frozenset[str]
    issued: set[str] = field(default_factory=set)
    _next: int = 0

    def fresh(self) -> str:
        while True:
            name = f"v{self._next}"
            self._next += 1
            if name not in self.avoid:
                self.issued.add(name)
                return name

    def is_var(self, name: str) -> bool:
        return name in self.issued

    @property
    def position(self) -> int:
        """How far the supply has counted (with `avoid`, what the next names will be)."""
        return self._next

    def take(self, names: Iterable[str], position: int) -> None:
        """Issue `names` and move on to `position`: what the calls to `fresh` that issued them
        from the current position did."""
        self.issued.update(names)
        self._next = position


def _map_dims(dims: tuple[LoopDim, ...], fn: Callable[[IntExpr], IntExpr]
              ) -> tuple[LoopDim, ...]:
    return tuple(LoopDim(d.name, fn(d.lower), fn(d.upper)) for d in dims)


# ---- traversal (the scalar language's, dialects/form/scalar.py) --------------------------------
def free_vars(expr: ScalarExpr, supply: NameSupply) -> set[str]:
    """Loop variables the expression depends on (bound fold/group dims excluded)."""
    if isinstance(expr, Read):
        return {s for i in expr.index for s in i.symbols() if supply.is_var(s)}
    if isinstance(expr, Index):
        return {s for s in expr.expr.symbols() if supply.is_var(s)}
    if isinstance(expr, Call):
        out: set[str] = set()
        for a in expr.args:
            out |= free_vars(a, supply)
        return out
    if isinstance(expr, Group):
        # a group is read where it stands, at its own dims: they are free, not bound
        return free_vars(expr.body, supply) | {d.name for d in expr.dims}
    if isinstance(expr, Fold):
        inner = free_vars(expr.body, supply)
        for d in expr.dims:
            inner |= {s for s in (d.lower.symbols() | d.upper.symbols()) if supply.is_var(s)}
        if expr.finalize is not None:
            inner |= free_vars(expr.finalize, supply)
        return inner - {d.name for d in expr.dims}
    return set()


def read_classes(expr: ScalarExpr) -> list[int]:
    """Classes read, in first-appearance order."""
    seen: list[int] = []

    def visit(r: Read) -> ScalarExpr:
        if r.operand not in seen:
            seen.append(r.operand)
        return r

    map_reads(expr, visit)
    return seen


def contains(expr: ScalarExpr, kinds: tuple[type, ...]) -> bool:
    if isinstance(expr, kinds):
        return True
    if isinstance(expr, Call):
        return any(contains(a, kinds) for a in expr.args)
    if isinstance(expr, (Fold, Group)):
        return contains(expr.body, kinds) or (
            isinstance(expr, Fold) and expr.finalize is not None
            and contains(expr.finalize, kinds))
    return False


# ---- from e-nodes ------------------------------------------------------------------------------
def node_expr(g: EGraph, node: ENode, index: tuple[IntExpr, ...], supply: NameSupply
              ) -> ScalarExpr:
    """The value of `node` at output `index`, reads naming the node's child classes."""
    form = node_semantics(node, [g.type_of(c) for c in node.children]).form
    inst = _instantiate(form, index, supply)
    body = map_reads(inst.body, lambda r: Read(g.find(node.children[r.operand]), r.index))
    if form.reduction is None:
        return body
    return Fold(form.reduction, inst.reduced, body, inst.finalize)


#: instances by (form, index, the supply's state): a program of a few kinds of op composes the
#: same forms at the same indices at site after site, and binding a form is the dear part
_INSTANCES: dict[tuple[int, tuple[IntExpr, ...], int, frozenset[str]],
                 tuple[GenericForm, Instance, tuple[str, ...], int]] = {}
_MAX_INSTANCES = 4096


def _instantiate(form: GenericForm, index: tuple[IntExpr, ...], supply: NameSupply) -> Instance:
    """`instantiate(form, index, supply.fresh)`, remembered: on a repeat, the names the first
    call took are taken from `supply` again, as that call would have."""
    key = (id(form), index, supply.position, supply.avoid)
    hit = _INSTANCES.get(key)
    if hit is not None and hit[0] is form:
        _, inst, names, position = hit
        supply.take(names, position)
        return inst
    before = set(supply.issued)
    inst = instantiate(form, index, supply.fresh)
    if len(_INSTANCES) >= _MAX_INSTANCES:
        _INSTANCES.clear()
    _INSTANCES[key] = (form, inst, tuple(sorted(supply.issued - before)), supply.position)
    return inst


def output_dims(g: EGraph, cls: int, supply: NameSupply) -> tuple[LoopDim, ...]:
    """Fresh loop dims spanning the shape of class `cls`."""
    return tuple(LoopDim(supply.fresh(), IntExpr.const(0), e) for e in g.type_of(cls).shape)


def compose(g: EGraph, consumer: ENode, producers: Mapping[int, ENode], out: tuple[LoopDim, ...],
            supply: NameSupply) -> ScalarExpr:
    """The consumer at `out`, with each read of a class in `producers` replaced by that
    producer's expression at the read's index."""
    top = node_expr(g, consumer, tuple(IntExpr.sym(d.name) for d in out), supply)

    def expand(r: Read) -> ScalarExpr:
        p = producers.get(r.operand)
        return r if p is None else node_expr(g, p, r.index, supply)

    return map_reads(top, expand)


# ---- products ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Factor:
    """One factor of a product: `expr` to the power +1 or -1."""

    expr: ScalarExpr
    power: int


def factors(expr: ScalarExpr) -> list[Factor]:
    """Flatten a tree of `mul`, `div` and `neg` into factors (neg becomes a factor -1)."""
    if isinstance(expr, Call) and expr.fn == "mul":
        return factors(expr.args[0]) + factors(expr.args[1])
    if isinstance(expr, Call) and expr.fn == "div":
        return factors(expr.args[0]) + [Factor(f.expr, -f.power) for f in factors(expr.args[1])]
    if isinstance(expr, Call) and expr.fn == "neg":
        return [Factor(Const(-1.0), 1), *factors(expr.args[0])]
    return [Factor(expr, 1)]


def product(fs: Iterable[Factor]) -> ScalarExpr:
    """Rebuild `num / den` from factors, keeping their order."""
    fs = list(fs)
    num = [f.expr for f in fs if f.power > 0]
    den = [f.expr for f in fs if f.power < 0]
    top: ScalarExpr = num[0] if num else Const(1.0)
    for e in num[1:]:
        top = Call("mul", (top, e))
    if not den:
        return top
    bottom = den[0]
    for e in den[1:]:
        bottom = Call("mul", (bottom, e))
    return Call("div", (top, bottom))


def split_finalize(fold: Fold) -> tuple[Fold, list[Factor]] | None:
    """`fold then acc * X / Y` as the plain fold and the factors X, 1/Y; None if not that shape."""
    if fold.finalize is None:
        return fold, []
    fs = factors(fold.finalize)
    accs = [f for f in fs if isinstance(f.expr, Reduced)]
    if len(accs) != 1 or accs[0].power != 1:
        return None
    rest = [f for f in fs if not isinstance(f.expr, Reduced)]
    if any(contains(f.expr, (Reduced,)) for f in rest):
        return None
    return Fold(fold.kind, fold.dims, fold.body, None), rest


def flatten_sums(expr: ScalarExpr, supply: NameSupply) -> ScalarExpr:
    """Merge nested add-folds: sum_D1 (a * sum_D2 b) = sum_{D1, D2} (a * b), bottom up.

    Only where the inner fold multiplies the outer body (a factor of power +1) and has no
    finalizer other than a scaling, which moves outside.
    """
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(flatten_sums(a, supply) for a in expr.args), expr.param)
    if isinstance(expr, Group):
        return Group(expr.dims, flatten_sums(expr.body, supply))
    if not isinstance(expr, Fold):
        return expr
    body = flatten_sums(expr.body, supply)
    if expr.kind != "add":
        return Fold(expr.kind, expr.dims, body, expr.finalize)
    dims = list(expr.dims)
    out: list[Factor] = []
    for f in factors(body):
        inner = f.expr
        if f.power == 1 and isinstance(inner, Fold) and inner.kind == "add":
            split = split_finalize(inner)
            if split is not None:
                plain, scale = split
                dims.extend(plain.dims)
                out.extend(factors(plain.body))
                out.extend(scale)
                continue
        out.append(f)
    return Fold("add", tuple(dims), product(out), expr.finalize)

