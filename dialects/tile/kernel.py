"""Kernels and loops over tiles.

    %c = tile.kernel %a, %b {program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"],
                             params = ["BM", "BN", "BK"], assume = ["BM >= 1", ...]}
        : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>) -> !ax.tensor<[M, N], f32> {
    ^bb0(%a_: !ax.tensor<[M, K], f32>, %b_: !ax.tensor<[K, N], f32>):
      %acc = tile.for %zero {iv = "k", extent = "ceildiv(K, BK)"} ... { ... tile.yield %next }
      tile.store %acc {result = 0, offsets = ["i*BM", "j*BN"]} : !ax.tensor<[BM, BN], f32>
      tile.yield
    }

A kernel runs its body once per program: one per point of its launch grid, whose extents are
integer expressions of sizes and tile parameters, with the program's coordinates bound to the
names in `program_ids`. `params` are the tile parameters (symbols the kernel's caller chooses,
constrained by `assume`, e.g. `BM >= 1` or `BM <= 128`). The body reads the kernel's inputs
through its block arguments and writes its results with `tile.store`; every element of every
result is written by exactly one program (the interpreter checks it).

`tile.for` runs its body `extent` times, sequentially with the iteration bound to `iv` and the
carried values passed on (an accumulator), or as `parallel` iterations that carry nothing.
A sequential loop may state what its carried values are after `iv` iterations (`invariant`,
one form text per carried value, "" for none), reading the kernel's inputs, auxiliary tensors
of them (`defs`) and the carried values themselves:

    %m, %l = tile.for %m0, %l0 {iv = "k", extent = "ceildiv(N, BN)",
        invariant = ["", "out[t0 < BM, t1 < 1] = add over r in [0, min(k*BN, N)) of
                          exp(select(idx(i*BM + t0) < idx(M), in0[i*BM + t0, r], 0.0)
                              - in1[t0, 0])"]}

In a form of `invariant`, `in0` ... are the kernel's inputs, then the tensors `defs` define,
then the carried values (after `iv` iterations); a form of `defs` reads the inputs and the defs
before it. The verifier proves the loop by induction on it (`verifier/induction.py`); the
interpreter ignores it.

Names are scoped: an offset may use the sizes of the kernel's inputs, its tile parameters, its
program ids and the ivs of the loops around it; the kernel's verifier checks every op it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator
from xdsl.utils.exceptions import VerifyException

from axon.dialects.ax import TensorType
from axon.dialects.form.generic_form import FormError, GenericForm
from axon.dialects.form.interface import generic_form, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.syntax import parse_form
from axon.dialects.loops import check_carried, check_iteration

#: the comparisons an assumption may use, longest first (so `<=` is not read as `<`)
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")
LOOP_KINDS = ("sequential", "parallel")


class ScopeError(VerifyException):
    """A kernel's check of an op it holds failed: the error names that op (`op`), so a located
    diagnostic points at it rather than at the kernel."""

    def __init__(self, message: str, op: Operation) -> None:
        super().__init__(message)
        self.op = op


def _strings(values: Iterable[Any]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(str(v)) for v in values])


def parse_assumption(text: str) -> tuple[IntExpr, str, IntExpr]:
    """`lhs op rhs` of an assumption such as `BM >= 1`; ValueError when it is not one."""
    for op in COMPARISONS:
        if op in text:
            lhs, rhs = text.split(op, 1)
            return IntExpr.lift(lhs.strip()), op, IntExpr.lift(rhs.strip())
    raise ValueError(f"assumption '{text}' has no comparison ({' '.join(COMPARISONS)})")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The end of a kernel's body (no values) or of a loop's body (the carried values)."""

    name = "tile.yield"
    values = var_operand_def(TensorType)
    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = traits_def(IsTerminator())

    def __init__(self, *values: SSAValue) -> None:
        super().__init__(operands=[values])


@irdl_op_definition
class ForOp(IRDLOperation):
    """`extent` iterations of its body with the iteration bound to `iv`; a sequential loop
    carries its values from one iteration to the next (results: the last ones)."""

    name = "tile.for"
    inits = var_operand_def(TensorType)
    iv = prop_def(StringAttr)
    extent = prop_def(StringAttr)
    kind = opt_prop_def(StringAttr)
    invariant = opt_prop_def(ArrayAttr[StringAttr])
    defs = opt_prop_def(ArrayAttr[StringAttr])
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inits attr-dict `:` functional-type($inits, $outputs) $body"

    def __init__(self, inits: Sequence[SSAValue], iv: str, extent: Any, body: Region,
                 kind: str = "sequential", invariant: Sequence[str] | None = None,
                 defs: Sequence[str] = ()) -> None:
        props: dict[str, Attribute] = {"iv": StringAttr(iv),
                                       "extent": StringAttr(str(IntExpr.lift(extent)))}
        if kind != "sequential":
            props["kind"] = StringAttr(kind)
        if invariant is not None:
            props["invariant"] = _strings(invariant)
        if defs:
            props["defs"] = _strings(defs)
        super().__init__(operands=[inits], result_types=[[v.type for v in inits]],
                         regions=[body], properties=props)

    @property
    def loop_kind(self) -> str:
        return "sequential" if self.kind is None else self.kind.data

    def extent_expr(self) -> IntExpr:
        return IntExpr.lift(self.extent.data)

    def invariant_texts(self) -> list[str] | None:
        """The stated invariant, one form text per carried value ("" where none), or None."""
        return None if self.invariant is None else [s.data for s in self.invariant.data]

    def def_texts(self) -> list[str]:
        """The forms of the auxiliary tensors the invariant reads."""
        return [] if self.defs is None else [s.data for s in self.defs.data]

    def verify_(self) -> None:
        if self.loop_kind not in LOOP_KINDS:
            raise VerifyException(f"'tile.for': kind '{self.loop_kind}' is not one of "
                                  f"{', '.join(LOOP_KINDS)}")
        check_iteration(self, self.iv.data, self.extent.data)
        if self.loop_kind == "parallel" and self.inits:
            raise VerifyException("'tile.for': a parallel loop carries no values")
        stated = self.invariant_texts()
        if stated is not None and len(stated) != len(self.inits):
            raise VerifyException(f"'tile.for': {len(stated)} invariant form(s) for "
                                  f"{len(self.inits)} carried value(s) (one each, \"\" for none)")
        if self.defs is not None and stated is None:
            raise VerifyException("'tile.for': defs without an invariant to read them")
        check_carried(self, self.inits, YieldOp.name)


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A kernel over a launch grid of programs (see the module docstring)."""

    name = "tile.kernel"
    inputs = var_operand_def(TensorType)
    program_ids = prop_def(ArrayAttr[StringAttr])
    grid = prop_def(ArrayAttr[StringAttr])
    params = prop_def(ArrayAttr[StringAttr])
    assume = opt_prop_def(ArrayAttr[StringAttr])
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type($inputs, $outputs) $body"
    traits = traits_def(IsolatedFromAbove())

    def __init__(self, inputs: Sequence[SSAValue], output_types: Sequence[TensorType],
                 program_ids: Sequence[str], grid: Sequence[Any], params: Sequence[str],
                 body: Region, assume: Sequence[str] = ()) -> None:
        props: dict[str, Attribute] = {
            "program_ids": _strings(program_ids),
            "grid": _strings(str(IntExpr.lift(g)) for g in grid),
            "params": _strings(params)}
        if assume:
            props["assume"] = _strings(assume)
        super().__init__(operands=[inputs], result_types=[output_types], regions=[body],
                         properties=props)

    # ---- reading ------------------------------------------------------------------------------
    def program_names(self) -> list[str]:
        return [s.data for s in self.program_ids.data]

    def grid_exprs(self) -> list[IntExpr]:
        return [IntExpr.lift(s.data) for s in self.grid.data]

    def param_names(self) -> list[str]:
        return [s.data for s in self.params.data]

    def assumptions(self) -> list[str]:
        return [] if self.assume is None else [s.data for s in self.assume.data]

    def assume_also(self, more: Sequence[str]) -> None:
        """Add `more` to the kernel's assumptions (a profile's limits on its tiles, known only
        once the tiles are built)."""
        if more:
            self.properties["assume"] = _strings([*self.assumptions(), *more])

    def input_types(self) -> list[TensorType]:
        return [v.type for v in self.inputs]  # type: ignore[misc]

    def output_types(self) -> list[TensorType]:
        return [r.type for r in self.outputs]  # type: ignore[misc]

    def sizes(self) -> frozenset[str]:
        """The size symbols of the inputs (what the caller's program binds)."""
        return frozenset(s for t in self.input_types() for d in t.shape for s in d.symbols())

    # ---- verifying ----------------------------------------------------------------------------
    def verify_(self) -> None:
        sizes = self.sizes()
        pids, params = self.program_names(), self.param_names()
        names = [*pids, *params]
        for n in names:
            if not n.isidentifier():
                raise VerifyException(f"'tile.kernel': '{n}' is not a name")
        if len(set(names)) != len(names):
            raise VerifyException(f"'tile.kernel': program ids and params repeat a name: "
                                  f"{', '.join(names)}")
        clash = sorted(set(names) & sizes)
        if clash:
            raise VerifyException(f"'tile.kernel': {', '.join(clash)} already name(s) a size "
                                  "of the inputs")
        if len(self.grid.data) != len(pids):
            raise VerifyException(f"'tile.kernel': {len(pids)} program ids for a grid of "
                                  f"{len(self.grid.data)} dims")
        # a size only the results name (a broadcast's `G`) is the caller's too: it knows the
        # shapes of what it asks for (the emitter prints it as a value or refuses the kernel)
        outer = sizes | set(params) | ({s for t in self.output_types() for d in t.shape
                                        for s in d.symbols()} - set(pids))
        try:
            grid = self.grid_exprs()
            for text in self.assumptions():
                lhs, _, rhs = parse_assumption(text)
                _within(lhs.symbols() | rhs.symbols(), outer, f"'tile.kernel': assumption '{text}'")
        except ValueError as err:
            raise VerifyException(f"'tile.kernel': {err}") from None
        for g in grid:
            _within(g.symbols(), outer, f"'tile.kernel': grid extent {g}")
        for t in self.output_types():  # a split loop's partials have a dim per split: params
            for d in t.shape:
                _within(d.symbols(), outer, f"'tile.kernel': result dim {d}")
        block = self.body.block
        if [a.type for a in block.args] != [v.type for v in self.inputs]:
            raise VerifyException("'tile.kernel': the body takes one argument per input, of "
                                  "its type")
        end = block.last_op
        if not isinstance(end, YieldOp) or end.values:
            raise VerifyException("'tile.kernel': the body must end in tile.yield with no "
                                  "values")
        for op, bound in _scoped_ops(block, outer | set(pids)):
            try:
                _check_scoped(self, op, bound)
            except VerifyException as err:
                raise ScopeError(str(err), op) from None


def _within(used: frozenset[str] | set[str], bound: frozenset[str] | set[str],
            what: str) -> None:
    stray = sorted(set(used) - set(bound))
    if stray:
        raise VerifyException(f"{what} uses {', '.join(stray)}, which nothing binds here "
                              "(sizes of the kernel's inputs, its params, program ids and the "
                              "ivs of enclosing loops)")


def _scoped_ops(block: Block, bound: frozenset[str] | set[str]
                ) -> Iterator[tuple[Operation, frozenset[str]]]:
    """Each op of a kernel's body (nested loops included, no recursion) with the names in
    scope at it."""
    work: list[tuple[Block, frozenset[str]]] = [(block, frozenset(bound))]
    while work:
        current, names = work.pop()
        for op in current.ops:
            yield op, names
            if isinstance(op, ForOp):
                iv = op.iv.data
                if iv in names:
                    raise ScopeError(f"'tile.for': iv '{iv}' shadows a name already bound here",
                                     op)
                work.append((op.body.block, names | {iv}))
            elif op.regions:
                raise ScopeError(f"'{op.name}': a kernel holds tile ops, loops and form ops, "
                                 "and this op has regions", op)


def invariant_forms(kernel: KernelOp, loop: ForOp) -> tuple[list[GenericForm],
                                                             list[GenericForm | None]]:
    """The forms of a loop's `defs` and `invariant` (None where a carried value has none),
    parsed with their operands numbered as the dialect says: the kernel's inputs, the defs (those
    before a def, all of them in an invariant), then the carried values. FormError when one does
    not parse or reads an operand with the wrong rank."""
    ranks = [t.rank for t in kernel.input_types()]
    defs: list[GenericForm] = []
    for k, text in enumerate(loop.def_texts()):
        form = _parse_checked(text, ranks, f"def #{k}")
        defs.append(form)
        ranks.append(len(form.parallel))
    ranks.extend(v.type.rank for v in loop.inits)  # type: ignore[attr-defined]
    stated: list[GenericForm | None] = []
    for k, text in enumerate(loop.invariant_texts() or []):
        stated.append(_parse_checked(text, ranks, f"invariant #{k}") if text else None)
    return defs, stated


def _parse_checked(text: str, ranks: list[int], what: str) -> GenericForm:
    try:
        form = parse_form(text, len(ranks))
    except FormError as err:
        raise FormError(f"{what}: {err}") from None
    for r in form.reads():
        if len(r.index) != ranks[r.operand]:
            raise FormError(f"{what} reads in{r.operand} with {len(r.index)} indices, but it "
                            f"has rank {ranks[r.operand]}")
    return form


def _check_invariant(kernel: KernelOp, loop: ForOp, bound: frozenset[str]) -> None:
    """A loop's invariant and defs parse, read what exists at the right ranks, use only names in
    scope (the loop's iv among them: the number of iterations done), each invariant form has the
    shape of its carried value and reads only the carried values stated before it or stated
    nowhere."""
    where = "'tile.for'"
    if loop.invariant is None:
        return  # (defs without an invariant are the op's own error)
    if loop.loop_kind != "sequential":
        raise VerifyException(f"{where}: only a sequential loop states an invariant")
    try:
        defs, stated = invariant_forms(kernel, loop)
    except FormError as err:
        raise VerifyException(f"{where}: {err}") from None
    inside = bound | {loop.iv.data}
    first_carried = len(kernel.inputs) + len(defs)
    for k, form in enumerate(stated):
        # acyclic, so each invariant is a term: a carried value before it, or one without one
        for r in [] if form is None else form.reads():
            j = r.operand - first_carried
            if j >= k and stated[j] is not None:
                raise VerifyException(f"{where}: invariant #{k} reads carried value #{j}, "
                                      "whose invariant is not before it")
    for k, form in enumerate(defs):
        _within(form.size_symbols(), inside, f"{where} def #{k}")
    for k, (form, value) in enumerate(zip(stated, loop.inits, strict=True)):
        if form is None:
            continue
        _within(form.size_symbols(), inside, f"{where} invariant #{k}")
        t = value.type
        assert isinstance(t, TensorType)
        if form.output_shape != t.shape:
            raise VerifyException(f"{where}: invariant #{k} has shape "
                                  f"[{', '.join(map(str, form.output_shape))}], the carried "
                                  f"value {t}")


def _check_scoped(kernel: KernelOp, op: Operation, bound: frozenset[str]) -> None:
    """An op inside `kernel` uses only names in scope; a store writes one of its results."""
    from axon.dialects.tile.memory import StoreOp

    where = f"'{op.name}'"
    if isinstance(op, StoreOp):
        k = op.result.value.data
        outputs = kernel.output_types()
        if not 0 <= k < len(outputs):
            raise VerifyException(f"{where}: result {k} is not a result of the kernel (it has "
                                  f"{len(outputs)})")
        value = op.value.type
        assert isinstance(value, TensorType)
        if value.rank != outputs[k].rank or value.dtype != outputs[k].dtype:
            raise VerifyException(f"{where}: a tile {value} into result {k} of type "
                                  f"{outputs[k]}")
        for o in op.offset_exprs():
            _within(o.symbols(), bound, f"{where} offset {o}")
        for d in value.shape:
            _within(d.symbols(), bound, f"{where} tile dim {d}")
        return
    if isinstance(op, ForOp):
        _within(op.extent_expr().symbols(), bound, f"{where} extent {op.extent_expr()}")
        _check_invariant(kernel, op, bound)
        return
    if has_form(op):
        _within(generic_form(op).size_symbols(), bound, where)
    for r in op.results:
        if isinstance(r.type, TensorType):
            for d in r.type.shape:
                _within(d.symbols(), bound, f"{where} result dim {d}")


def sole_kernel(func: FuncOp) -> KernelOp | str:
    """The one `tile.kernel` of a tiled function (a kernel and its return, as the targets'
    lowerings take), or why `func` is not that."""
    kernels = [op for op in func.body.block.ops if isinstance(op, KernelOp)]
    others = [op.name for op in func.body.block.ops
              if not isinstance(op, (KernelOp, ReturnOp))]
    if len(kernels) != 1 or others:
        return (f"@{func.sym_name.data} is not one tile.kernel and its return (it holds "
                f"{len(kernels)} kernel(s) and {', '.join(others) or 'no'} other ops)")
    return kernels[0]
