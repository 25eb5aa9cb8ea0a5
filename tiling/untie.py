"""A size symbol that plays two parts in one program, split into one symbol a part.

The tiler names what it tiles by size symbols (`Tiling("seq_len", None, "seq_len_k")`: the rows
and the loop). A program whose rows and reduced dim are one symbol cannot be tiled that way: a
causal softmax over square scores `[B, H, S, S]` reduces over the S it splits across programs.
torch.export gives such programs (18_causal_masked_softmax: the mask is `triu(ones(L, L))` with
`L = scores.shape[-1]`, so the graph itself needs the scores square).

`untie(func)` finds which dims of the program's values must be equal (the same loop variable
indexes them, in each op's generic form) and gives each class of dims its own symbol where one
symbol held several classes: `[B, H, S, S]` becomes `[B, H, S, S_2]`, the mask `[S, S_2]`. The
untied program is the program wherever the split symbols are equal (each op is rebuilt on the
new types by its own `make`, the same form over other names), so a kernel proved equal to the
untied program is equal to the program at every size the program has; the cascade checks the
kernels against the program itself. A dim read through an index expression (a reshape's
`floordiv`), a size the form uses as a number (`idx(S)`), or a dim that is a product or a
constant keeps its symbol: every dim of that symbol stays one class.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.ax import GenericOp, TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.interface import form_op, generic_form, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, index_exprs, map_reads

#: a dim of a value (`(value, axis)`) or a reduced loop of an op (`(op, name)`)
Slot = tuple[object, object]


class _Classes:
    """Union-find over slots, each with the expression it had in the program, and the symbols
    that keep every dim of theirs in one class."""

    def __init__(self) -> None:
        self.parent: dict[Slot, Slot] = {}
        self.expr: dict[Slot, IntExpr] = {}
        self.kept: set[str] = set()

    def add(self, slot: Slot, expr: IntExpr) -> Slot:
        if slot not in self.parent:
            self.parent[slot] = slot
            self.expr[slot] = expr
        return slot

    def find(self, slot: Slot) -> Slot:
        root = slot
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[slot] != root:
            self.parent[slot], slot = root, self.parent[slot]
        return root

    def union(self, a: Slot, b: Slot) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra

    def keep(self, expr: IntExpr) -> None:
        """Every symbol of `expr` stays one class."""
        self.kept |= expr.symbols()

    def settle(self) -> None:
        """The kept symbols' dims joined, each symbol's into one class."""
        first: dict[str, Slot] = {}
        for slot, expr in list(self.expr.items()):
            s = expr.as_symbol
            if s in self.kept:
                self.union(first.setdefault(s, slot), slot)


def untie(func: FuncOp) -> tuple[FuncOp, dict[str, str]]:
    """`func` with each symbol that holds several classes of dims split (see the module
    docstring), and each new symbol's original; `func` itself and `{}` when none is."""
    classes = _Classes()
    block = func.body.block
    values: list[SSAValue] = list(block.args)
    ops = [op for op in block.ops if not isinstance(op, ReturnOp)]
    if not all(has_form(op) and len(op.results) == 1 for op in ops):
        return func, {}
    for op in ops:
        values.append(op.results[0])
    for v in values:
        t = v.type
        if not isinstance(t, TensorType):
            return func, {}
        for k, extent in enumerate(t.shape):
            classes.add((v, k), extent)
            if extent.as_symbol is None:
                classes.keep(extent)
    reduced: dict[Operation, dict[str, Slot]] = {}
    for op in ops:
        form = generic_form(op)
        loops: dict[str, Slot] = {}
        for k, d in enumerate(form.parallel):
            loops[d.name] = (op.results[0], k)
        reduced[op] = {}
        for d in form.reduced:
            slot = classes.add((op, d.name), d.upper)
            reduced[op][d.name] = loops[d.name] = slot
            if d.upper.as_symbol is None or d.lower != IntExpr.const(0):
                classes.keep(d.upper)
                classes.keep(d.lower)
        # sizes the form uses as numbers, outside the reads' indices (`idx(K)`, a mean's K)
        used = index_exprs(map_reads(form.body, lambda r: Const(0.0)))
        if form.finalize is not None:
            used += index_exprs(form.finalize)
        for e in used:
            classes.kept |= e.symbols() - set(loops)
        for r in form.reads():
            operand = op.operands[r.operand]
            for k, at in enumerate(r.index):
                name = at.as_symbol
                if name in loops:
                    classes.union((operand, k), loops[name])
                elif not at.is_const:  # read through an index expression
                    classes.keep(classes.expr[(operand, k)])
                    for s in at.symbols() & set(loops):
                        classes.keep(classes.expr[loops[s]])
    classes.settle()
    names = _names(classes, values, reduced)
    if names is None or not any(new != old for new, old in names.values() if new):
        return func, {}
    renamed = {new: old for new, old in names.values() if new != old}
    rebuilt = _rebuilt(func, ops, classes, names, reduced)
    return (rebuilt, renamed) if rebuilt is not None else (func, {})


def _names(classes: _Classes, values: list[SSAValue],
           reduced: Mapping[Operation, Mapping[str, Slot]]
           ) -> dict[Slot, tuple[str, str]] | None:
    """Each class root's (new symbol, original symbol) for the classes of bare symbols, in the
    program's order (the first class of a symbol keeps it); None when a class holds two
    different expressions."""
    order: list[Slot] = [(v, k) for v in values
                         for k in range(len(v.type.shape))]  # type: ignore[attr-defined]
    order += [slot for by_name in reduced.values() for slot in by_name.values()]
    exprs: dict[Slot, IntExpr] = {}
    for slot, expr in classes.expr.items():
        root = classes.find(slot)
        if root in exprs and exprs[root] != expr:
            return None
        exprs[root] = expr
    taken = {s for e in exprs.values() for s in e.symbols()}
    by_symbol: dict[str, list[Slot]] = {}
    for slot in order:
        root = classes.find(slot)
        found = exprs.get(root)
        if found is None or found.as_symbol is None:
            continue
        roots = by_symbol.setdefault(found.as_symbol, [])
        if root not in roots:
            roots.append(root)
    names: dict[Slot, tuple[str, str]] = {}
    for symbol, roots in by_symbol.items():
        names[roots[0]] = (symbol, symbol)
        count = 1
        for root in roots[1:]:
            count += 1
            new = f"{symbol}_{count}"
            while new in taken:
                new += "_"
            taken.add(new)
            names[root] = (new, symbol)
    return names


def _rebuilt(func: FuncOp, ops: list[Operation], classes: _Classes,
             names: Mapping[Slot, tuple[str, str]],
             reduced: Mapping[Operation, Mapping[str, Slot]]) -> FuncOp | None:
    """`func` on the new symbols, each op made again by its class's `make`; None where an op
    does not rebuild to the types the classes give (the program is left as it is)."""

    def dim(slot: Slot, old: IntExpr) -> IntExpr:
        root = classes.find(slot)
        return IntExpr.sym(names[root][0]) if root in names else old

    def retyped(v: SSAValue) -> TensorType:
        t = v.type
        assert isinstance(t, TensorType)
        return TensorType([dim((v, k), d) for k, d in enumerate(t.shape)], t.dtype)

    block = func.body.block
    types = [retyped(a) for a in block.args]
    new_block = Block(arg_types=types)
    for old_arg, new_arg in zip(block.args, new_block.args, strict=True):
        new_arg.name_hint = old_arg.name_hint
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, new_block.args, strict=True))
    for op in ops:
        want = retyped(op.results[0])
        operands = [mapping[v] for v in op.operands]
        old = op.results[0].type
        assert isinstance(old, TensorType)
        made: Operation
        try:
            if isinstance(op, GenericOp):
                form = generic_form(op)
                parallel = tuple(replace(d, upper=want.shape[k])
                                 for k, d in enumerate(form.parallel))
                red = tuple(replace(d, upper=dim(reduced[op][d.name], d.upper))
                            for d in form.reduced)
                text = str(GenericForm(parallel, form.body, form.num_operands, form.reduction,
                                       red, form.finalize))
                made = GenericOp.make(operands, form=text, dtype=old.dtype)
            else:
                attrs = dict(form_op(op).attrs())
                for key, value in attrs.items():
                    if (isinstance(value, tuple) and value
                            and all(isinstance(e, IntExpr) for e in value)
                            and tuple(value) == tuple(old.shape)):
                        attrs[key] = tuple(want.shape)
                made = form_op(op).make(operands, **attrs)
        except (ShapeError, ValueError):
            return None
        if made.results[0].type != want:
            return None
        new_block.add_op(made)
        mapping[op.results[0]] = made.results[0]
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    new_block.add_op(ReturnOp(*(mapping[v] for v in ret.operands)))
    made_func = FuncOp(func.sym_name.data, (types, [mapping[v].type for v in ret.operands]),
                       Region(new_block))
    for key, attr in func.attributes.items():
        if key not in made_func.attributes:
            made_func.attributes[key] = attr
    return made_func
