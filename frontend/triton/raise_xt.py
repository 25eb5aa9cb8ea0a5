"""Raising an analysed Triton kernel into an `xt.kernel` (first slices: the vector add, the
row softmax, the tiled matmul with its K loop).

    func = raise_kernel(analyse_kernel(module, "softmax_kernel"), dtypes={"in_ptr": "f32"})

Each pointer parameter becomes a tensor. Its offset splits by the runtime scalars scaling it
(its strides: `in_row_stride*pid0 + lane0` is a dim indexed by `pid0` at stride
`in_row_stride` and a dim of unit stride indexed by `lane0`); the dims are ordered by the
block axis whose lanes index them (a dim no lane indexes first, in parameter order) with the
unit-stride dim last, and each dim's size comes from a mask bound on its index
(`BLOCK_K*k + lane1 < K` in any spelling: `lane1 < K - BLOCK_K*k`) or, for a dim indexed by a
program id alone, from the grid (a new size `G<axis>`). Parameters only loaded from are the
kernel's inputs, parameters only stored to its results; `xt` tensors are row-major, so the
raised kernel is the Triton kernel run on contiguous tensors (its stride parameters become the
tensors' own strides). The grid covers the dims the program ids index (`ceildiv(n, BLOCK)` for
`BLOCK*pid0 + lane0 < n`). A loop becomes `xt.for` over its iterations carrying its data
values; loads, stores, `tl.dot`, reductions, `tl.zeros` / `tl.full` and elementwise math
become `xt.load`, `xt.store`, `xt.dot`, `xt.reduce`, `xt.full` and `xt.map` (a scalar is a
block of one lane; blocks are computed in f32). Anything else is a SourceError at the
construct saying what this slice takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.intexpr import Atom, IntExpr
from axon.dialects.form.scalar import Const, Index, Read, ScalarExpr, call
from axon.frontend.diagnostics import SourceError, source_error
from axon.frontend.triton.analysis import (
    Access,
    KernelAnalysis,
    Loop,
    check_affine,
    coefficient,
)
from axon.frontend.triton.values import (
    DataValue,
    FloatValue,
    IndexValue,
    Loc,
    MaskValue,
    Shape,
    Value,
)

__all__ = ["raise_kernel"]

#: the scalar function of each elementwise construct of the value graph
_SCALAR = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "neg": "neg",
           "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "sigmoid": "sigmoid",
           "abs": "abs", "erf": "erf", "maximum": "max", "minimum": "min", "where": "select",
           "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
#: the dtype blocks are computed in
COMPUTE_DTYPE = "f32"
ONE = IntExpr.const(1)


@dataclass
class _Tensor:
    """A pointer parameter as a tensor: each dim's stride symbol (None: the unit stride) and
    size, and whether the kernel loads or stores it."""

    param: str
    strides: list[str | None]
    sizes: list[IntExpr | None]
    loaded: bool = False
    stored: bool = False


@dataclass
class _OpenLoop:
    """An `xt.for` being filled: its loop, body and op."""

    loop: Loop
    body: Block
    op: xt.ForOp


def raise_kernel(analysis: KernelAnalysis, dtypes: Mapping[str, str] | None = None) -> FuncOp:
    """A `func.func` holding one `xt.kernel` that computes what the analysed kernel does on
    contiguous tensors (see the module docstring); `dtypes` gives each pointer parameter's
    element type (f32 where not given). SourceError at a construct this slice does not raise."""
    try:
        func = _Raising(analysis, dict(dtypes or {})).run()
        func.verify()
    except (ShapeError, VerifyException) as err:  # a gap of the raise, named at the kernel
        raise analysis.module.error_at(analysis.kernel.loc, f"the raised kernel does not "
                                                            f"verify: {err}") from None
    return func


class _Raising:
    def __init__(self, analysis: KernelAnalysis, dtypes: dict[str, str]) -> None:
        self.analysis = analysis
        self.dtypes = dtypes
        kernel = analysis.kernel
        self.runtime = [p.name for p in kernel.params if not p.constexpr]
        self.constexprs = [p.name for p in kernel.params if p.constexpr]
        self.tensors: dict[str, _Tensor] = {}
        self.dims: dict[int, list[IntExpr]] = {}  # access number -> index of each tensor dim
        self.values: dict[int, SSAValue] = {}
        self.varying = set(analysis.lanes) | set(analysis.program_ids.values()) \
            | {loop.iteration for loop in analysis.loops}

    def error(self, loc: Loc, message: str) -> SourceError:
        line, column = loc
        return source_error(message, self.analysis.module.text, self.analysis.module.filename,
                            line, column)

    # ---- tensors, sizes and the grid ----------------------------------------------------------
    def split(self, access: Access) -> tuple[list[str | None], list[IntExpr]]:
        """The access's offset as dims: each dim's stride symbol and index, in layout order."""
        assert access.offset is not None
        groups: dict[str | None, IntExpr] = {}
        for mono, coeff in access.offset.terms:
            scaled = [a.name for a in mono if a.kind == "sym" and a.name in self.runtime]
            if len(scaled) > 1:
                raise self.error(access.loc, f"the offset scales {' and '.join(scaled)} "
                                             "together; expected one stride per dim")
            key = scaled[0] if scaled else None
            rest = list(mono)
            if key is not None:
                rest.remove(Atom("sym", key))
            term = IntExpr(((tuple(rest), coeff),)) if rest else IntExpr.const(coeff)
            groups[key] = groups.get(key, IntExpr.const(0)) + term

        def order(key: str | None) -> tuple[int, int, int]:
            axes = self.analysis.lane_axes(groups[key])
            place = self.runtime.index(key) if key is not None else len(self.runtime)
            return (key is None, axes[0] if axes else -1, place)

        keys = sorted(groups, key=order)
        return keys, [groups[k] for k in keys]

    def lane_of(self, loc: Loc, index: IntExpr) -> int | None:
        lanes = self.analysis.lane_axes(index)
        if len(lanes) > 1:
            raise self.error(loc, f"one dim is indexed by the lanes of axes {lanes}; expected "
                                  "one block axis per tensor dim")
        if lanes and coefficient(index, self.analysis.lanes[lanes[0]]) != ONE:
            raise self.error(loc, f"dim index {index} steps its lanes by more than 1")
        return lanes[0] if lanes else None

    def size_from(self, access: Access, index: IntExpr) -> tuple[IntExpr | None, set[int]]:
        """The size a mask bound gives the dim `index` indexes (and which bounds say it), or
        the grid's size for a dim a program id alone indexes."""
        for k, b in enumerate(access.bounds):
            size = index - (b.lhs - b.rhs)
            if b.op == "<" and self.analysis.lane_axes(b.lhs - b.rhs) \
                    and not size.symbols() & self.varying:
                return size, {k}
        pids = {v: k for k, v in self.analysis.program_ids.items()}
        name = index.as_symbol
        if name in pids:
            return IntExpr.sym(self.grid_size(pids[name])), set()
        return None, set()

    def grid_size(self, axis: int) -> str:
        """The size `G<axis>` (a name no parameter or symbol of the kernel has): how many
        programs run along `axis`."""
        taken = {p.name for p in self.analysis.kernel.params} | self.varying
        name = f"G{axis}"
        while name in taken:
            name += "_"
        return name

    def collect(self) -> None:
        for number, access in enumerate(self.analysis.accesses):
            assert access.base is not None
            strides, indices = self.split(access)
            tensor = self.tensors.setdefault(
                access.base, _Tensor(access.base, strides, [None] * len(strides)))
            if tensor.strides != strides:
                raise self.error(access.loc, f"{access.base} is indexed with strides "
                                             f"{strides} here and {tensor.strides} before")
            if access.kind == "load":
                tensor.loaded = True
            else:
                tensor.stored = True
            said: set[int] = set()
            for d, index in enumerate(indices):
                self.lane_of(access.loc, index)
                size, which = self.size_from(access, index)
                said |= which
                if size is not None:
                    if tensor.sizes[d] is not None and tensor.sizes[d] != size:
                        raise self.error(access.loc, f"dim {d} of {access.base} is bounded by "
                                                     f"{size} here and {tensor.sizes[d]} "
                                                     "before")
                    tensor.sizes[d] = size
            for k, b in enumerate(access.bounds):
                if k not in said:
                    raise self.error(access.loc, f"mask bound {b} bounds no dim's index; "
                                                 "expected `index < size` per dim")
            self.dims[number] = indices
            self.block_axes(access, number)
        for tensor in self.tensors.values():
            if tensor.loaded and tensor.stored:
                raise self.error(self.analysis.kernel.loc, f"{tensor.param} is both loaded "
                                                           "and stored; expected inputs and "
                                                           "results apart")
            for d, size in enumerate(tensor.sizes):
                if size is None:
                    raise self.error(self.analysis.kernel.loc,
                                     f"the size of dim {d} of {tensor.param} is unknown; "
                                     "expected a mask `index < size` on it")

    def grid(self) -> list[IntExpr]:
        out: list[IntExpr] = []
        for axis, pid in sorted(self.analysis.program_ids.items()):
            if axis != len(out):
                raise self.error(self.analysis.kernel.loc, f"tl.program_id({len(out)}) is "
                                                           "unused; expected axes from 0")
            found: IntExpr | None = None
            for number, access in enumerate(self.analysis.accesses):
                tensor = self.tensors[access.base or ""]
                for index, size in zip(self.dims[number], tensor.sizes, strict=True):
                    assert size is not None
                    step = coefficient(index, pid)
                    if found is None and index.as_symbol == pid:
                        found = size
                    elif found is None and not (step.is_const and step.value == 0):
                        found = size.ceildiv(step)
            if found is None:
                raise self.error(self.analysis.kernel.loc, f"no access tells how many programs "
                                                           f"tl.program_id({axis}) runs")
            out.append(found)
        return out

    def block_axes(self, access: Access, number: int) -> Shape:
        """The access's block laid out along the tensor's dims (1 where no lane walks a dim);
        the user's axes must walk the dims in order."""
        shape: list[IntExpr] = []
        axes: list[int] = []
        for index in self.dims[number]:
            axis = self.lane_of(access.loc, index)
            shape.append(access.shape[axis] if axis is not None else ONE)
            if axis is not None:
                axes.append(axis)
        if axes != sorted(axes):
            raise self.error(access.loc, "the block's axes walk the tensor's dims out of order "
                                         "(a transposed access); expected them in order")
        return tuple(shape)

    def offsets(self, number: int) -> list[IntExpr]:
        lanes = {lane: 0 for lane in self.analysis.lanes}
        return [index.substitute(lanes) for index in self.dims[number]]

    # ---- ops ----------------------------------------------------------------------------------
    def run(self) -> FuncOp:
        check_affine(self.analysis)
        self.collect()
        grid = self.grid()
        inputs = [t for t in self.tensors.values() if t.loaded]
        results = [t for t in self.tensors.values() if t.stored]
        types = {t.param: TensorType(tuple(s for s in t.sizes if s is not None),
                                     self.dtypes.get(t.param, COMPUTE_DTYPE))
                 for t in self.tensors.values()}
        self.scalars = self.scalar_params()
        for name in self.scalars:  # a float parameter: a tensor of one element, after the rest
            types[name] = TensorType((ONE,), COMPUTE_DTYPE)
        in_names = [t.param for t in inputs] + self.scalars
        func = FuncOp(self.analysis.kernel.name,
                      FunctionType.from_lists([types[n] for n in in_names],
                                              [types[t.param] for t in results]))
        body = Block(arg_types=[types[n] for n in in_names])
        self.args = dict(zip(in_names, body.args, strict=True))
        self.result_number = {t.param: k for k, t in enumerate(results)}
        self.open: list[_OpenLoop] = []
        self.kernel_body = body
        stores = [(a.position, n) for n, a in enumerate(self.analysis.accesses)
                  if a.kind == "store"]
        for value in self.analysis.values:
            while stores and stores[0][0] <= value.number:
                self.store(stores.pop(0)[1])
            if value.op == "carried":
                continue  # a loop's block argument, made when the loop opens
            self.enter(value.loops, value.loc)
            if value.op != "loop_out":  # a loop's result, bound when the loop closes
                self.values[value.number] = self.lower(value)
        for _, number in stores:
            self.store(number)
        self.enter((), self.analysis.kernel.loc)
        body.add_op(xt.YieldOp())
        kernel = xt.KernelOp(list(func.body.block.args), [types[t.param] for t in results],
                             [self.analysis.program_ids[a] for a in range(len(grid))], grid,
                             self.constexprs, [], Region(body))
        func.body.block.add_op(kernel)
        func.body.block.add_op(ReturnOp(*kernel.results))
        return func

    @property
    def block(self) -> Block:
        return self.open[-1].body if self.open else self.kernel_body

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def enter(self, loops: tuple[int, ...], loc: Loc) -> None:
        """Close the open loops `loops` does not hold, then open those it adds."""
        while self.open and (len(self.open) > len(loops)
                             or self.open[-1].loop.number != loops[len(self.open) - 1]):
            self.close()
        for number in loops[len(self.open):]:
            loop = self.analysis.loops[number]
            data = [c for c in loop.carried if c.kind == "data"]
            inits = [self.operand(c.init) for c in data]
            body = Block(arg_types=[v.type for v in inits])
            op = xt.ForOp(inits, loop.iteration, loop.trip, Region(body))
            self.block.add_op(op)
            for c, arg in zip(data, body.args, strict=True):
                assert isinstance(c.entry, DataValue)
                self.values[c.entry.number] = arg
            self.open.append(_OpenLoop(loop, body, op))

    def close(self) -> None:
        done = self.open.pop()
        data = [c for c in done.loop.carried if c.kind == "data"]
        nexts: list[SSAValue] = []
        for c, arg in zip(data, done.body.args, strict=True):
            assert c.next is not None
            following = self.operand(c.next)
            if following.type != arg.type:
                raise self.error(done.loop.loc, f"'{c.name}' changes its block type in the "
                                                "loop; expected it to keep it")
            nexts.append(following)
        done.body.add_op(xt.YieldOp(*nexts))
        for c, result in zip(data, done.op.results, strict=True):
            for node in self.analysis.values:
                if node.op == "loop_out" and node.attrs.get("name") == c.name \
                        and node.attrs.get("loop") == str(done.loop.number):
                    self.values[node.number] = result

    def store(self, number: int) -> None:
        access = self.analysis.accesses[number]
        assert access.value is not None and access.base is not None
        self.enter(access.loops, access.loc)
        stored = self.operand(access.value)
        shape = self.block_axes(access, number)
        stored = self.shaped(stored, shape)
        self.block.add_op(xt.StoreOp(stored, self.result_number[access.base],
                                     self.offsets(number), list(shape)))

    def shaped(self, value: SSAValue, shape: Shape) -> SSAValue:
        t = value.type
        assert isinstance(t, TensorType)
        if t.shape == shape:
            return value
        if [d for d in t.shape if d != ONE] != [d for d in shape if d != ONE]:
            raise self.error(self.analysis.kernel.loc, f"a block of {list(t.shape)} goes where "
                                                       f"{list(shape)} is expected")
        return self.add(xt.ReshapeOp.make([value], shape=list(shape)))

    def operand(self, value: Value) -> SSAValue:
        if isinstance(value, DataValue) and value.number in self.values:
            return self.values[value.number]
        if isinstance(value, FloatValue):
            return self.add(xt.FullOp.make([], value=value.value, shape=["1"],
                                           dtype=COMPUTE_DTYPE))
        raise self.error(value.loc, "expected a block of data here")

    def lower(self, value: DataValue) -> SSAValue:
        block = value.shape if value.shape else (ONE,)
        if value.op == "load":
            number = int(value.attrs["access"])
            access = self.analysis.accesses[number]
            assert access.base is not None
            other = access.other
            if other is not None and not isinstance(other, (FloatValue, IndexValue)):
                raise self.error(other.loc, "expected a constant `other`")
            fill = other.value if isinstance(other, FloatValue) else \
                float(other.expr.value) if isinstance(other, IndexValue) and other.expr.is_const \
                else 0.0
            shape = self.block_axes(access, number)
            loaded = self.add(xt.LoadOp.make([self.args[access.base]],
                                             offsets=self.offsets(number), shape=list(shape),
                                             extents=list(shape), other=fill))
            return self.shaped(loaded, block)
        if value.op == "full":
            return self.add(xt.FullOp.make([], value=float(value.attrs["value"]),
                                           shape=list(block), dtype=COMPUTE_DTYPE))
        if value.op == "reduce":
            (source,) = value.operands
            src = self.operand(source)
            axis = 0 if value.attrs["axis"] == "None" else int(value.attrs["axis"])
            if value.attrs["axis"] == "None" and len(source.shape) > 1:
                raise self.error(value.loc, "expected a reduction along one axis")
            src_block = source.shape if source.shape else (ONE,)
            reduced = self.add(xt.ReduceOp.make([src], kind=value.attrs["kind"], axis=axis,
                                                extent=str(src_block[axis]),
                                                keepdims=len(value.shape) != len(source.shape) - 1
                                                or not value.shape))
            return self.shaped(reduced, block)
        if value.op == "dot":
            a, b, *acc = (self.operand(o) for o in value.operands)
            if not acc:
                acc = [self.add(xt.FullOp.make([], value=0.0, shape=list(block),
                                               dtype=COMPUTE_DTYPE))]
            return self.add(xt.DotOp.make([a, b, acc[0]]))
        if value.op in ("to", "expand_dims", "broadcast_to"):
            (source,) = value.operands
            if value.op == "broadcast_to":
                return self.map(value, block, "identity")
            return self.shaped(self.operand(source), block)
        if value.op not in _SCALAR:
            raise self.error(value.loc, f"{value.op} is raised by a later slice; expected "
                                        "elementwise math, tl.load, tl.dot or a reduction")
        return self.map(value, block, _SCALAR[value.op])

    def scalar_params(self) -> list[str]:
        """Runtime parameters the math reads as numbers and nothing else does (no pointer,
        stride, size, mask or loop bound: `scale`, `eps`), in parameter order: each becomes an
        input tensor of one float32 element."""
        used: set[str] = set()
        for t in self.tensors.values():
            used |= {s for s in t.strides if s is not None}
            used |= {n for d in t.sizes if d is not None for n in d.symbols()}
        for access in self.analysis.accesses:
            for b in access.bounds:
                used |= (b.lhs - b.rhs).symbols()
            if access.offset is not None:
                used |= access.offset.symbols()
        for loop in self.analysis.loops:
            used |= loop.trip.symbols()
        read: set[str] = set()
        for value in self.analysis.values:
            for o in value.operands:
                if isinstance(o, IndexValue) and not o.shape and o.expr.as_symbol is not None:
                    read.add(o.expr.as_symbol)
        return [p for p in self.runtime if p in read and p not in used
                and p not in self.tensors]

    def scalar(self, name: str) -> SSAValue:
        """A float parameter as a block of one lane (its input tensor's one element)."""
        return self.add(xt.LoadOp.make([self.args[name]], offsets=["0"], shape=["1"],
                                       extents=["1"], other=0.0))

    def index_in_map(self, expr: IntExpr, rank: int, names: list[str], loc: Loc) -> IntExpr:
        """An integer of a block of `rank` dims as an index of a map over `names`: lane k read
        as the dim it broadcasts to; it may read sizes, constexprs and program ids only."""
        shift = len(names) - rank
        expr = self.analysis.resolve(expr)
        lanes = {lane: IntExpr.sym(names[k + shift])
                 for k, lane in enumerate(self.analysis.lanes[:rank])}
        sizes = {n for t in self.tensors.values() for d in t.sizes if d is not None
                 for n in d.symbols()}
        allowed = set(lanes) | sizes | set(self.constexprs) \
            | set(self.analysis.program_ids.values()) \
            | {loop.iteration for loop in self.analysis.loops}
        stray = sorted(expr.symbols() - allowed)
        if stray:
            raise self.error(loc, f"an integer in the math reads {', '.join(stray)}; expected "
                                  "lanes, program ids, loop iterations, sizes and constexprs "
                                  "only")
        return expr.substitute(lanes)

    def condition(self, mask: MaskValue, names: list[str], loc: Loc) -> ScalarExpr:
        """A mask as the scalar condition of a map over `names` (the conjunction of its
        bounds)."""
        out: ScalarExpr | None = None
        for b in mask.bounds:
            lhs, rhs = (self.index_in_map(e, len(mask.shape), names, loc) for e in (b.lhs, b.rhs))
            term = call(_SCALAR[b.op], Index(lhs), Index(rhs))
            out = term if out is None else call("and", out, term)
        return out if out is not None else Const(True)

    def map(self, value: DataValue, block: Shape, function: str) -> SSAValue:
        names = [f"d{k}" for k in range(len(block))]
        operands: list[SSAValue] = []
        scalars: list[ScalarExpr] = []
        for o in value.operands:
            if isinstance(o, FloatValue):
                scalars.append(Const(o.value))
            elif isinstance(o, IndexValue) and o.expr.is_const and not o.shape:
                scalars.append(Const(float(o.expr.value)))
            elif isinstance(o, MaskValue):
                scalars.append(self.condition(o, names, value.loc))
            elif isinstance(o, IndexValue) and not o.shape \
                    and o.expr.as_symbol in self.scalars:
                scalars.append(Read(len(operands), (IntExpr.const(0),)))
                operands.append(self.scalar(o.expr.as_symbol or ""))
            elif isinstance(o, IndexValue):
                scalars.append(Index(self.index_in_map(o.expr, len(o.shape), names,
                                                       value.loc)))
            elif isinstance(o, DataValue):
                ssa = self.operand(o)
                t = ssa.type
                assert isinstance(t, TensorType)
                shift = len(block) - t.rank
                index = tuple(IntExpr.const(0) if d == ONE and block[k + shift] != ONE
                              else IntExpr.sym(names[k + shift]) for k, d in enumerate(t.shape))
                scalars.append(Read(len(operands), index))
                operands.append(ssa)
            else:
                raise self.error(value.loc, "expected blocks of data, integers or constants "
                                            "as operands")
        body = scalars[0] if function == "identity" else call(function, *scalars)
        form = GenericForm(tuple(LoopDim(n, IntExpr.const(0), d) for n, d in zip(names, block,
                                                                                  strict=True)),
                           body, len(operands))
        dtype = "i1" if function in ("lt", "le", "gt", "ge", "eq", "ne") else COMPUTE_DTYPE
        return self.add(xt.MapOp.make(operands, form=str(form), dtype=dtype))
