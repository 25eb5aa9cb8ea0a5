"""Raising an analysed Triton kernel into an `xt.kernel` (first slice: straight-line kernels on
1-D blocks, such as a vector add or a row softmax).

    func = raise_kernel(analyse_kernel(module, "softmax_kernel"), dtypes={"in_ptr": "f32"})

Each pointer parameter becomes a tensor. Its offset splits by the runtime scalars it is scaled
by (its strides: `in_row_stride*pid0 + lane0` is dim 0 indexed by `pid0` at stride
`in_row_stride`, then the unit-stride dim indexed by `lane0`), and each dim's size comes from
the mask bound on its index (`lane0 < n_cols`) or, for a dim indexed by a program id alone,
from the grid (a new size `G<axis>`). Parameters only loaded from are the kernel's inputs,
parameters only stored to its results; the `xt` tensors are row-major, so the raised kernel is
the Triton kernel run on contiguous tensors (the strides become the tensors' own). The grid
covers the dims the program ids index: `ceildiv(n, BLOCK)` for `BLOCK*pid0 + lane0 < n`.
Loads, stores, elementwise math and reductions become `xt.load`, `xt.store`, `xt.map` and
`xt.reduce` (a scalar is a block of one lane); the rest is a SourceError at the construct,
saying what this slice takes. Loops, 2-D blocks and `tl.dot` are the next slice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.intexpr import Atom, IntExpr
from axon.dialects.form.scalar import Const, Read, ScalarExpr, call
from axon.frontend.diagnostics import SourceError, source_error
from axon.frontend.triton.kernel_ir import Access, KernelAnalysis, check_affine, coefficient
from axon.frontend.triton.values import (
    Bound,
    DataValue,
    FloatValue,
    IndexValue,
    Loc,
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


@dataclass
class _Tensor:
    """A pointer parameter as a tensor: each dim's stride symbol (None: the unit stride, last)
    and size."""

    param: str
    strides: list[str | None]
    sizes: list[IntExpr | None]
    loaded: bool = False
    stored: bool = False


def raise_kernel(analysis: KernelAnalysis, dtypes: Mapping[str, str] | None = None) -> FuncOp:
    """A `func.func` holding one `xt.kernel` that computes what the analysed kernel does on
    contiguous tensors (see the module docstring); `dtypes` gives each pointer parameter's
    element type (f32 where not given). SourceError at a construct this slice does not raise."""
    return _Raising(analysis, dict(dtypes or {})).run()


class _Raising:
    def __init__(self, analysis: KernelAnalysis, dtypes: dict[str, str]) -> None:
        self.analysis = analysis
        self.dtypes = dtypes
        kernel = analysis.kernel
        self.runtime = [p.name for p in kernel.params if not p.constexpr]
        self.constexprs = [p.name for p in kernel.params if p.constexpr]
        self.tensors: dict[str, _Tensor] = {}
        self.dims: dict[int, list[IntExpr]] = {}  # access number -> index of each tensor dim

    def error(self, loc: Loc, message: str) -> SourceError:
        line, column = loc
        return source_error(message, self.analysis.module.text, self.analysis.module.filename,
                            line, column)

    # ---- tensors, sizes and the grid ----------------------------------------------------------
    def split(self, access: Access) -> tuple[list[str | None], list[IntExpr]]:
        """The access's offset as dims: each dim's stride symbol and index."""
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
        strides = [s for s in self.runtime if s in groups]
        if None not in groups:
            raise self.error(access.loc, "no dim of unit stride; expected a contiguous last "
                                         "dim")
        keys: list[str | None] = [*strides, None]
        return keys, [groups[k] for k in keys]

    def lane_of(self, loc: Loc, index: IntExpr) -> int | None:
        lanes = self.analysis.lane_axes(index)
        if len(lanes) > 1:
            raise self.error(loc, f"one dim is indexed by the lanes of axes {lanes}; expected "
                                  "one block axis per tensor dim")
        if lanes and coefficient(index, self.analysis.lanes[lanes[0]]) != IntExpr.const(1):
            raise self.error(loc, f"dim index {index} steps its lanes by more than 1")
        return lanes[0] if lanes else None

    def size_from(self, access: Access, index: IntExpr) -> IntExpr | None:
        for b in access.bounds:
            if b.op == "<" and b.lhs == index and not (
                    b.rhs.symbols() & self.varying()):
                return b.rhs
        pids = {v: k for k, v in self.analysis.program_ids.items()}
        name = index.as_symbol
        if name in pids:
            return IntExpr.sym(f"G{pids[name]}")
        return None

    def varying(self) -> set[str]:
        return set(self.analysis.lanes) | set(self.analysis.program_ids.values()) \
            | {loop.iteration for loop in self.analysis.loops}

    def collect(self) -> None:
        for number, access in enumerate(self.analysis.accesses):
            assert access.base is not None
            if len(access.shape) > 1:
                raise self.error(access.loc, "a block of rank 2 or more is raised by the next "
                                             "slice; expected a 1-D block or a scalar")
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
            matched: set[Bound] = set()
            for d, index in enumerate(indices):
                self.lane_of(access.loc, index)
                size = self.size_from(access, index)
                matched |= {b for b in access.bounds if b.lhs == index and b.rhs == size}
                if size is not None:
                    if tensor.sizes[d] is not None and tensor.sizes[d] != size:
                        raise self.error(access.loc, f"dim {d} of {access.base} is bounded by "
                                                     f"{size} here and {tensor.sizes[d]} "
                                                     "before")
                    tensor.sizes[d] = size
            for b in access.bounds:
                if b not in matched:
                    raise self.error(access.loc, f"mask bound {b} bounds no dim's index; "
                                                 "expected `index < size` per dim")
            self.dims[number] = indices
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
                    if index.as_symbol == pid:
                        found = size
                    elif not step.is_const or step.value != 0:
                        found = found or size.ceildiv(step)
            if found is None:
                raise self.error(self.analysis.kernel.loc, f"no access tells how many programs "
                                                           f"tl.program_id({axis}) runs")
            out.append(found)
        return out

    # ---- ops ----------------------------------------------------------------------------------
    def run(self) -> FuncOp:
        check_affine(self.analysis)
        if self.analysis.loops:
            raise self.error(self.analysis.loops[0].loc, "loops are raised by the next slice; "
                                                         "expected a kernel without loops")
        self.collect()
        grid = self.grid()
        inputs = [t for t in self.tensors.values() if t.loaded]
        results = [t for t in self.tensors.values() if t.stored]
        types = {t.param: TensorType(tuple(s for s in t.sizes if s is not None),
                                     self.dtypes.get(t.param, COMPUTE_DTYPE))
                 for t in self.tensors.values()}
        func = FuncOp(self.analysis.kernel.name,
                      FunctionType.from_lists([types[t.param] for t in inputs],
                                              [types[t.param] for t in results]))
        body = Block(arg_types=[types[t.param] for t in inputs])
        args = {t.param: arg for t, arg in zip(inputs, body.args, strict=True)}
        result_number = {t.param: k for k, t in enumerate(results)}
        values: dict[int, SSAValue] = {}
        for value in self.analysis.values:
            values[value.number] = self.lower(value, body, args, values)
        for number, access in enumerate(self.analysis.accesses):
            if access.kind == "store":
                assert access.value is not None and access.base is not None
                stored = self.operand(access.value, body, values)
                shape = self.load_shape(access, number)
                target = TensorType(shape, COMPUTE_DTYPE)
                if stored.type != target:
                    stored = _add(body, xt.ReshapeOp.make([stored], shape=list(shape)))
                body.add_op(xt.StoreOp(stored, result_number[access.base],
                                       self.offsets(number), list(shape)))
        body.add_op(xt.YieldOp())
        kernel = xt.KernelOp(list(func.body.block.args), [types[t.param] for t in results],
                             [self.analysis.program_ids[a] for a in range(len(grid))], grid,
                             self.constexprs, [], Region(body))
        func.body.block.add_op(kernel)
        func.body.block.add_op(ReturnOp(*kernel.results))
        return func

    def offsets(self, number: int) -> list[IntExpr]:
        lanes = {lane: 0 for lane in self.analysis.lanes}
        return [index.substitute(lanes) for index in self.dims[number]]

    def load_shape(self, access: Access, number: int) -> Shape:
        shape: list[IntExpr] = []
        for index in self.dims[number]:
            axis = self.lane_of(access.loc, index)
            shape.append(access.shape[axis] if axis is not None else IntExpr.const(1))
        return tuple(shape)

    def operand(self, value: Value, body: Block, values: Mapping[int, SSAValue]) -> SSAValue:
        if isinstance(value, DataValue):
            return values[value.number]
        raise self.error(value.loc, "expected a block of data here")

    def lower(self, value: DataValue, body: Block, args: Mapping[str, SSAValue],
              values: Mapping[int, SSAValue]) -> SSAValue:
        block = _block_shape(value.shape)
        if value.op == "load":
            number = int(value.attrs["access"])
            access = self.analysis.accesses[number]
            assert access.base is not None
            other = access.other
            fill = other.value if isinstance(other, FloatValue) else \
                float(other.expr.value) if isinstance(other, IndexValue) and other.expr.is_const \
                else 0.0
            if other is not None and not isinstance(other, (FloatValue, IndexValue)):
                raise self.error(other.loc, "expected a constant `other`")
            shape = self.load_shape(access, number)
            loaded = _add(body, xt.LoadOp.make([args[access.base]], offsets=self.offsets(number),
                                               shape=list(shape), extents=list(shape),
                                               other=fill))
            if shape != block:
                loaded = _add(body, xt.ReshapeOp.make([loaded], shape=list(block)))
            return loaded
        if value.op == "reduce":
            (source,) = value.operands
            if value.attrs["axis"] not in ("0", "None") or len(source.shape) > 1:
                raise self.error(value.loc, "expected a reduction of a 1-D block")
            src = self.operand(source, body, values)
            extent = _block_shape(source.shape)[0]
            return _add(body, xt.ReduceOp.make([src], kind=value.attrs["kind"], axis=0,
                                               extent=str(extent), keepdims=True))
        if value.op == "to":
            return self.operand(value.operands[0], body, values)
        if value.op not in _SCALAR:
            raise self.error(value.loc, f"{value.op} is raised by a later slice; expected "
                                        "elementwise math, tl.load or a reduction")
        return self.map(value, block, body, values)

    def map(self, value: DataValue, block: Shape, body: Block,
            values: Mapping[int, SSAValue]) -> SSAValue:
        d0 = "d0"
        operands: list[SSAValue] = []
        scalars: list[ScalarExpr] = []
        for o in value.operands:
            if isinstance(o, FloatValue):
                scalars.append(Const(o.value))
            elif isinstance(o, IndexValue) and o.expr.is_const and not o.shape:
                scalars.append(Const(float(o.expr.value)))
            elif isinstance(o, DataValue):
                ssa = values[o.number]
                t = ssa.type
                assert isinstance(t, TensorType)
                index = IntExpr.const(0) if t.shape[0] == IntExpr.const(1) \
                    and block[0] != IntExpr.const(1) else IntExpr.sym(d0)
                scalars.append(Read(len(operands), (index,)))
                operands.append(ssa)
            else:
                raise self.error(o.loc, "expected a block of data or a constant operand")
        form = GenericForm((LoopDim(d0, IntExpr.const(0), block[0]),),
                           call(_SCALAR[value.op], *scalars), len(operands))
        return _add(body, xt.MapOp.make(operands, form=str(form), dtype=COMPUTE_DTYPE))


def _block_shape(shape: Shape) -> Shape:
    """A value's block in `xt`: a scalar is a block of one lane."""
    return shape if shape else (IntExpr.const(1),)


def _add(body: Block, op: Operation) -> SSAValue:
    body.add_op(op)
    return op.results[0]

