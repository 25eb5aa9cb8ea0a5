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

Names are scoped: an offset may use the sizes of the kernel's inputs, its tile parameters, its
program ids and the ivs of the loops around it; the kernel's verifier checks every op it holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, StringAttr
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
from axon.dialects.form.interface import generic_form, has_form
from axon.dialects.form.intexpr import IntExpr

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
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inits attr-dict `:` functional-type($inits, $outputs) $body"

    def __init__(self, inits: Sequence[SSAValue], iv: str, extent: Any, body: Region,
                 kind: str = "sequential") -> None:
        props: dict[str, Attribute] = {"iv": StringAttr(iv),
                                       "extent": StringAttr(str(IntExpr.lift(extent)))}
        if kind != "sequential":
            props["kind"] = StringAttr(kind)
        super().__init__(operands=[inits], result_types=[[v.type for v in inits]],
                         regions=[body], properties=props)

    @property
    def loop_kind(self) -> str:
        return "sequential" if self.kind is None else self.kind.data

    def extent_expr(self) -> IntExpr:
        return IntExpr.lift(self.extent.data)

    def verify_(self) -> None:
        if self.loop_kind not in LOOP_KINDS:
            raise VerifyException(f"'tile.for': kind '{self.loop_kind}' is not one of "
                                  f"{', '.join(LOOP_KINDS)}")
        if not self.iv.data.isidentifier():
            raise VerifyException(f"'tile.for': iv '{self.iv.data}' is not a name")
        try:
            self.extent_expr()
        except ValueError as err:
            raise VerifyException(f"'tile.for': extent: {err}") from None
        if self.loop_kind == "parallel" and self.inits:
            raise VerifyException("'tile.for': a parallel loop carries no values")
        init_types = [v.type for v in self.inits]
        if [r.type for r in self.outputs] != init_types:
            raise VerifyException("'tile.for': results must have the types of the carried "
                                  "values")
        block = self.body.block
        if [a.type for a in block.args] != init_types:
            raise VerifyException(f"'tile.for': the body takes {len(block.args)} argument(s); "
                                  f"it needs one per carried value, of its type")
        end = block.last_op
        if not isinstance(end, YieldOp) or [v.type for v in end.values] != init_types:
            raise VerifyException("'tile.for': the body must end in tile.yield of the carried "
                                  "values' types")


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
        outer = sizes | set(params)
        try:
            grid = self.grid_exprs()
            for text in self.assumptions():
                lhs, _, rhs = parse_assumption(text)
                _within(lhs.symbols() | rhs.symbols(), outer, f"'tile.kernel': assumption '{text}'")
        except ValueError as err:
            raise VerifyException(f"'tile.kernel': {err}") from None
        for g in grid:
            _within(g.symbols(), outer, f"'tile.kernel': grid extent {g}")
        for t in self.output_types():
            for d in t.shape:
                _within(d.symbols(), sizes, f"'tile.kernel': result dim {d}")
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
        return
    if has_form(op):
        _within(generic_form(op).size_symbols(), bound, where)
    for r in op.results:
        if isinstance(r.type, TensorType):
            for d in r.type.shape:
                _within(d.symbols(), bound, f"{where} result dim {d}")
