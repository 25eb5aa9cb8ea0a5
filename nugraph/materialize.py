"""Materialize an index expression back into ops: each nested fold or group becomes its own op,
the rest the body of one generic form, and every form that a named op states identically gets that
op's name (`recognize`).

    sum[v2](x[v0, v2] * op[v2, v1](w[v2, v1] * g[v2]))
      ==>  ax.matmul(x, ax.generic{form = "out[d0 < K, d1 < N] = in0[d0, d1] * in1[d0]"}(w, g))

Recognition compares generic forms, the one definition of every op, so naming a form never changes
what it means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from axon.dialects.ax import ALL_OPS, REDUCE_OPS, GenericOp, TransposeOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.generic_form import FormError, GenericForm, LoopDim, fresh_names
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.ranges import simplify_form
from axon.dialects.form.scalar import FUNCTIONS, Call, Read, ScalarExpr, index_exprs, substitute
from axon.nugraph.egraph import EGraph
from axon.nugraph.index_expr import (
    Fold,
    Group,
    NameSupply,
    free_vars,
    read_classes,
)
from axon.nugraph.ops import semantics_of
from axon.nugraph.term import Child, Term

_PLAIN_OPS = tuple(cls for cls in ALL_OPS if not cls.ATTRS)


def materialize(g: EGraph, expr: ScalarExpr, dims: Sequence[LoopDim], dtype: str,
                supply: NameSupply, max_rank: int) -> Term | None:
    """Ops computing `expr` over `dims`; None when a part cannot be an op (a dim whose extent
    depends on a loop variable, an intermediate of rank above `max_rank`, ...)."""
    if isinstance(expr, Group):
        return materialize(g, expr.body, expr.dims, dtype, supply, max_rank)
    if isinstance(expr, Read) and _is_identity(expr, dims):
        return None  # the value is a class itself: nothing to build
    children: list[Child] = []
    child_types: list[TensorType] = []

    def operand(child: Child, type_: TensorType) -> int:
        if child not in children:
            children.append(child)
            child_types.append(type_)
        return children.index(child)

    def lower(e: ScalarExpr) -> ScalarExpr | None:
        if isinstance(e, Read):
            return Read(operand(g.find(e.operand), g.type_of(e.operand)), e.index)
        if isinstance(e, (Fold, Group)):
            sub_dims = e.dims if isinstance(e, Group) else _dims_of(e, scope, supply)
            if sub_dims is None or len(sub_dims) > max_rank:
                return None
            sub = materialize(g, e, sub_dims, _dtype(g, e, dtype), supply, max_rank)
            if sub is None:
                return None
            return Read(operand(sub, sub.result_type(g)),
                        tuple(IntExpr.sym(d.name) for d in sub_dims))
        if isinstance(e, Call):
            args = [lower(a) for a in e.args]
            if any(a is None for a in args):
                return None
            return Call(e.fn, tuple(a for a in args if a is not None), e.param)
        return e

    scope = {d.name: d for d in dims}
    if isinstance(expr, Fold) and not isinstance(expr, Group):
        scope.update({d.name: d for d in expr.dims})
        body = lower(expr.body)
        kind, reduced, finalize = expr.kind, expr.dims, expr.finalize
    else:
        body = lower(expr)
        kind, reduced, finalize = None, (), None
    if body is None or any(not (d.lower.is_const and d.lower.value == 0)
                           or (d.upper.symbols() & supply.issued) for d in dims):
        return None
    if _unbound_vars(body, reduced, finalize, dims, supply):
        return None  # a loop variable that is no dim of this op would read as a free size
    form = _named_form(dims, reduced, kind, body, finalize, len(children), child_types)
    if form is None:
        return None
    return recognize(form, child_types, dtype, tuple(children))


def _unbound_vars(body: ScalarExpr, reduced: Sequence[LoopDim], finalize: ScalarExpr | None,
                  dims: Sequence[LoopDim], supply: NameSupply) -> set[str]:
    """Loop variables the op's body, reduction bounds or finalizer mention that are neither its
    output dims nor its reduced dims (nested folds and groups are reads by then)."""
    exprs = index_exprs(body) + [e for d in reduced for e in (d.lower, d.upper)]
    if finalize is not None:
        exprs += index_exprs(finalize)
    used = {s for e in exprs for s in e.symbols() if supply.is_var(s)}
    return used - {d.name for d in (*dims, *reduced)}


def _is_identity(r: Read, dims: Sequence[LoopDim]) -> bool:
    return len(r.index) == len(dims) and all(
        i == IntExpr.sym(d.name) for i, d in zip(r.index, dims, strict=True))


def _dims_of(e: Fold, scope: dict[str, LoopDim], supply: NameSupply
             ) -> tuple[LoopDim, ...] | None:
    """The output dims of a nested fold: its free variables in order of first appearance."""
    free = free_vars(e, supply)
    order: list[str] = []
    for i in index_exprs(e.body):
        for s in sorted(i.symbols()):
            if s in free and s not in order:
                order.append(s)
    for s in sorted(free):
        if s not in order:
            order.append(s)
    out = []
    for name in order:
        d = scope.get(name)
        if d is None:
            return None
        out.append(d)
    return tuple(out)


def _dtype(g: EGraph, e: ScalarExpr, default: str) -> str:
    body = e.body if isinstance(e, (Fold, Group)) else e
    if isinstance(body, Call):
        spec = FUNCTIONS[body.fn]
        if spec.boolean_result:
            return "i1"
        if body.fn == "cast" and isinstance(body.param, str):
            return body.param
    classes = read_classes(body)
    return g.type_of(classes[0]).dtype if classes else default


def _named_form(dims: Sequence[LoopDim], reduced: Sequence[LoopDim], kind: str | None,
                body: ScalarExpr, finalize: ScalarExpr | None, num_operands: int,
                child_types: Sequence[TensorType]) -> GenericForm | None:
    """The form with loop variables renamed d0.., r0.. (avoiding the operands' size symbols),
    its indices simplified by the loops' ranges (composed reshapes read plain indices)."""
    avoid = {s for t in child_types for d in t.shape for s in d.symbols()}
    avoid |= {s for d in dims for s in d.upper.symbols()}
    pnames = fresh_names("d", len(dims), avoid)
    rnames = fresh_names("r", len(reduced), avoid)
    env = {d.name: IntExpr.sym(n) for d, n in zip(dims, pnames, strict=True)}
    env |= {d.name: IntExpr.sym(n) for d, n in zip(reduced, rnames, strict=True)}
    par = tuple(LoopDim(n, IntExpr.const(0), d.upper) for d, n in zip(dims, pnames, strict=True))
    red = tuple(LoopDim(n, d.lower.substitute(env), d.upper.substitute(env))
                for d, n in zip(reduced, rnames, strict=True))
    try:
        return simplify_form(GenericForm(par, substitute(body, env), num_operands, kind, red,
                                         finalize))
    except FormError:
        return None


def form_key(form: GenericForm) -> str:
    """Text of the form with dims renamed by position: equal keys mean equal forms."""
    env = {d.name: IntExpr.sym(f"$p{i}") for i, d in enumerate(form.parallel)}
    env |= {d.name: IntExpr.sym(f"$q{i}") for i, d in enumerate(form.reduced)}
    par = ", ".join(str(d.upper) for d in form.parallel)
    red = ", ".join(f"[{d.lower.substitute(env)}, {d.upper.substitute(env)})"
                    for d in form.reduced)
    fin = "" if form.finalize is None else str(substitute(form.finalize, env))
    return f"[{par}] {form.reduction} [{red}] {substitute(form.body, env)} {fin}"


def recognize(form: GenericForm, child_types: Sequence[TensorType], dtype: str,
              children: tuple[Child, ...]) -> Term | None:
    """A named op with exactly this form when one exists, else `ax.generic`; None if invalid."""
    key = form_key(form)
    for cls, attrs in _named_tries(form, len(child_types)):
        try:
            sem = cls.semantics(list(child_types), attrs)
        except (ShapeError, ValueError, TypeError, IndexError):
            continue
        if sem.result_type.dtype == dtype and form_key(sem.form) == key:
            return Term(cls.name, tuple(sorted(attrs.items())), children)
    attrs = {"dtype": dtype, "form": str(form)}
    try:
        semantics_of(GenericOp.name, tuple(sorted(attrs.items())), tuple(child_types))
    except (ShapeError, ValueError):
        return None
    return Term(GenericOp.name, tuple(sorted(attrs.items())), children)


def _named_tries(form: GenericForm, arity: int) -> list[tuple[Any, dict[str, Any]]]:
    tries: list[tuple[Any, dict[str, Any]]] = []
    for cls in _PLAIN_OPS:
        if cls is not GenericOp and _arity(cls) == arity:
            tries.append((cls, {}))
    body = form.body
    if arity == 1 and isinstance(body, Read):
        reduced = {d.name for d in form.reduced}
        if form.reduction is not None:
            axes = tuple(k for k, i in enumerate(body.index)
                         if i.as_symbol is not None and i.as_symbol in reduced)
            for cls in REDUCE_OPS:
                if cls.REDUCTION == form.reduction:
                    tries += [(cls, {"axes": axes, "keepdims": keep}) for keep in (False, True)]
        else:
            names = [d.name for d in form.parallel]
            syms = [i.as_symbol for i in body.index]
            if sorted(s for s in syms if s is not None) == sorted(names) and None not in syms:
                perm = tuple(syms.index(n) for n in names)
                tries.append((TransposeOp, {"perm": perm}))
    return tries


def _arity(cls: Any) -> int:
    from xdsl.irdl import VarOperandDef

    defs = cls.get_irdl_definition().operands
    if any(isinstance(d, VarOperandDef) for _, d in defs):
        return -1
    return len(defs)

