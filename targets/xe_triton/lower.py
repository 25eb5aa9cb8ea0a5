"""Lowering a `tile` kernel to the `xt` dialect (Axon's Triton level).

    tile.load %x {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.0}   (a row, N whole)
 -> xt.load %x {offsets = ["BM*i", "0"], shape = ["BM", "B_N"], extents = ["BM", "N"], other = 0.0}

Every tile dim becomes a `tl.constexpr` power of two: a tile parameter stays itself (the launch
gives powers of two), a constant becomes the power of two covering it, and any other dim (a
size a program holds whole) becomes a block `B_<size>` the kernel binds to
`triton.next_power_of_2(size)`; the lanes past the dim's extent are masked where it matters
(loads read the pad, stores skip them, reductions and the contracted dim of a dot leave them
out). Compute is in fp32 for every float type: `tile.full` of an accumulator, each elementwise
op and each reduction give fp32 blocks, and `ax.matmul` becomes `tl.dot` with an fp32
accumulator (the loop's `acc + a @ b` folds into `tl.dot(a, b, acc)`); loads keep the tensor's
dtype and stores convert to the result's.

A tensor-level op lowers through its generic form: a form with no reduction is one `xt.map`; a
form with one reduced dim is an `xt.map` over the domain with the reduced dim in place of a
unit dim of the result (or after the last), then an `xt.reduce`, then an `xt.map` for a
finalizer (a mean's division). What does not lower raises `NotSupported`, "not supported:
<what>", naming the op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.dialects.ax.contraction import MatmulOp
from axon.dialects.ax.elementwise import AddOp
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.interface import form_op, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import (
    Call,
    Const,
    Index,
    Read,
    Reduced,
    ScalarExpr,
    call,
    substitute,
)
from axon.dialects.form.syntax import parse_form
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp

#: the dtype blocks are computed in (loads and stores keep the tensors' own)
COMPUTE_DTYPE = "f32"


class NotSupported(ValueError):
    """A kernel the lowering or the emitter does not handle yet: "not supported: <what>"."""

    def __init__(self, what: str) -> None:
        super().__init__(f"not supported: {what}")


def kernel_of(func: FuncOp) -> KernelOp:
    """The one `tile.kernel` of a tiled function; NotSupported otherwise."""
    kernels = [op for op in func.body.block.ops if isinstance(op, KernelOp)]
    others = [op.name for op in func.body.block.ops
              if not isinstance(op, (KernelOp, ReturnOp))]
    if len(kernels) != 1 or others:
        raise NotSupported(f"@{func.sym_name.data} is not one tile.kernel and its return "
                           f"(it holds {len(kernels)} kernel(s) and {', '.join(others) or 'no'} "
                           "other ops)")
    return kernels[0]


def lower_function(func: FuncOp) -> FuncOp:
    """`func` (a tiled function: one `tile.kernel` and its return) with its kernel lowered to
    `xt`: a new function of the same name and signature."""
    kernel = kernel_of(func)
    out = FuncOp(func.sym_name.data, func.function_type)
    block = out.body.block
    args: dict[SSAValue, SSAValue] = dict(zip(func.body.block.args, block.args, strict=True))
    call_kernel = _Lowering(kernel).run([args[v] for v in kernel.inputs])
    block.add_op(call_kernel)
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    values: dict[SSAValue, SSAValue] = {**args, **dict(zip(kernel.results, call_kernel.results,
                                                           strict=True))}
    block.add_op(ReturnOp(*[values[v] for v in ret.arguments]))
    for name, attr in func.attributes.items():
        if name.startswith("axon."):
            out.attributes[name] = attr
    return out


def _dtype_of(value: SSAValue) -> str:
    t = value.type
    assert isinstance(t, TensorType)
    return t.dtype


def _is_float(dtype: str) -> bool:
    return DTYPES[dtype].is_float


def _compute(dtype: str) -> str:
    return COMPUTE_DTYPE if _is_float(dtype) else dtype


def _power_of_two_above(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


@dataclass
class _Lowering:
    kernel: KernelOp
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    #: a covered dim's text -> the name of its block
    blocks: dict[str, str] = field(default_factory=dict)

    # ---- blocks ---------------------------------------------------------------------------------
    def block(self, dim: IntExpr) -> IntExpr:
        """The power-of-two block that holds a tile dim."""
        if dim.is_const:
            return IntExpr.const(_power_of_two_above(dim.value))
        if dim.as_symbol in self.kernel.param_names():
            return dim
        stray = sorted(dim.symbols() - self.kernel.sizes())
        if stray:
            raise NotSupported(f"a tile dim {dim} over {', '.join(stray)} (a block covers "
                               "sizes only)")
        key = str(dim)
        if key not in self.blocks:
            base = dim.as_symbol or str(len(self.blocks))
            self.blocks[key] = f"B_{base}"
        return IntExpr.sym(self.blocks[key])

    def block_type(self, t: TensorType, dtype: str | None = None) -> TensorType:
        return TensorType(tuple(self.block(d) for d in t.shape), dtype or t.dtype)

    # ---- the kernel -----------------------------------------------------------------------------
    def run(self, inputs: list[SSAValue]) -> xt.KernelOp:
        src = self.kernel.body.block
        body = Block(arg_types=[a.type for a in src.args])
        self.values.update(zip(src.args, body.args, strict=True))
        work = [(src, body)]
        while work:  # loops nest: each body is lowered once its loop op exists
            source, target = work.pop()
            for op in source.ops:
                work.extend(self.lower_op(op, target))
        return xt.KernelOp(inputs, self.kernel.output_types(),
                           self.kernel.program_names(), self.kernel.grid_exprs(),
                           self.kernel.param_names(),
                           [f"{name} = {dim}" for dim, name in self.blocks.items()],
                           Region(body))

    def lower_op(self, op: Operation, target: Block) -> list[tuple[Block, Block]]:
        if isinstance(op, ForOp):
            inits = [self.values[v] for v in op.inits]
            body = Block(arg_types=[v.type for v in inits])
            self.values.update(zip(op.body.block.args, body.args, strict=True))
            loop = xt.ForOp(inits, op.iv.data, op.extent_expr(), Region(body))
            target.add_op(loop)
            self.values.update(zip(op.results, loop.results, strict=True))
            return [(op.body.block, body)]
        if isinstance(op, YieldOp):
            target.add_op(xt.YieldOp(*[self.values[v] for v in op.values]))
        elif isinstance(op, LoadOp):
            t = op.result.type
            assert isinstance(t, TensorType)
            attrs = op.attrs()
            self.emit(target, op, xt.LoadOp.make(
                [self.values[op.source]], offsets=attrs["offsets"],
                shape=[self.block(d) for d in t.shape], extents=list(t.shape),
                other=attrs.get("pad", 0.0)))
        elif isinstance(op, FullOp):
            t = op.result.type
            assert isinstance(t, TensorType)
            self.emit(target, op, xt.FullOp.make(
                [], value=op.value.value.data, shape=[self.block(d) for d in t.shape],
                dtype=_compute(t.dtype)))
        elif isinstance(op, StoreOp):
            stored = op.value.type
            assert isinstance(stored, TensorType)
            target.add_op(xt.StoreOp(self.values[op.value], op.result.value.data,
                                     op.offset_exprs(), list(stored.shape)))
        elif isinstance(op, MatmulOp):
            user = next(iter(op.results[0].uses)).operation if op.results[0].uses else None
            if not (isinstance(user, AddOp) and self.accumulated(user) is not None):
                self.lower_matmul(op, None, target)
        elif isinstance(op, AddOp) and self.accumulated(op) is not None:
            matmul, acc = self.accumulated(op)  # type: ignore[misc]
            self.lower_matmul(matmul, acc, target, op)
        elif has_form(op):
            self.lower_form(op, target)
        else:
            raise NotSupported(f"'{op.name}' in a kernel")
        return []

    def emit(self, target: Block, src: Operation, new: Operation) -> None:
        target.add_op(new)
        self.values[src.results[0]] = new.results[0]

    # ---- matmul -------------------------------------------------------------------------------
    def accumulated(self, add: AddOp) -> tuple[MatmulOp, SSAValue] | None:
        """`acc + a @ b` whose matmul is used only here and comes first: the dot's accumulator
        and its matmul (the matmul is then not lowered by itself)."""
        a, b = add.operands
        for product, acc in ((b, a), (a, b)):
            owner = product.owner
            if (isinstance(owner, MatmulOp) and product.has_one_use()
                    and acc.type == add.results[0].type == product.type):
                return owner, acc
        return None

    def lower_matmul(self, op: MatmulOp, acc: SSAValue | None, target: Block,
                     result_of: Operation | None = None) -> None:
        a, b = op.operands
        ta, tb, tr = a.type, b.type, op.results[0].type
        assert isinstance(ta, TensorType) and isinstance(tb, TensorType)
        assert isinstance(tr, TensorType)
        if ta.rank != 2 or tb.rank != 2:
            raise NotSupported(f"'ax.matmul' of blocks of rank {ta.rank} and {tb.rank} (a "
                               "batched dot)")
        k = ta.shape[1]
        lhs = self.rounded(self.masked(a, 1, k, target), ta.dtype, target)
        rhs = self.rounded(self.masked(b, 0, k, target), tb.dtype, target)
        if acc is None:
            start = xt.FullOp.make([], value=0.0, shape=[self.block(d) for d in tr.shape],
                                   dtype=COMPUTE_DTYPE)
            target.add_op(start)
            acc_value: SSAValue = start.results[0]
        else:
            acc_value = self.values[acc]
        dot = xt.DotOp.make([lhs, rhs, acc_value])
        self.emit(target, result_of or op, dot)

    def rounded(self, lowered: SSAValue, dtype: str, target: Block) -> SSAValue:
        """A dot operand in its source dtype: a bf16 or f16 block computed in fp32 (a silu, a
        scale) is rounded back, as the program rounds it, so the dot runs on the matrix unit
        in that dtype (an fp32 `tl.dot` is not one) with the fp32 accumulator."""
        t = lowered.type
        assert isinstance(t, TensorType)
        if t.dtype == dtype or dtype not in ("bf16", "f16"):
            return lowered
        owner = lowered.owner
        if (isinstance(owner, xt.MapOp) and len(owner.inputs) == 1
                and isinstance(parse_form(owner.form.data, 1).body, Read)
                and _dtype_of(owner.inputs[0]) == dtype):
            # a transpose or broadcast of a block in the dot's dtype: moved in that dtype, so
            # the dot reads it where it lies (a transposed shared-memory tile, no round trip
            # through fp32 registers)
            layout = xt.MapOp.make([owner.inputs[0]], form=owner.form.data, dtype=dtype)
            target.add_op(layout)
            return layout.results[0]
        dims = [f"d{n}" for n in range(t.rank)]
        form = (f"out[{', '.join(f'{d} < {e}' for d, e in zip(dims, t.shape, strict=True))}] = "
                f"cast(in0[{', '.join(dims)}], {dtype})")
        op = xt.MapOp.make([lowered], form=form, dtype=dtype)
        target.add_op(op)
        return op.results[0]

    def masked(self, value: SSAValue, axis: int, extent: IntExpr, target: Block) -> SSAValue:
        """A dot operand with the lanes past the contracted dim's extent zeroed, where its block
        has such lanes and they may hold something else (a load pads them with its `other`)."""
        lowered = self.values[value]
        t = lowered.type
        assert isinstance(t, TensorType)
        if t.shape[axis] == extent:
            return lowered
        owner = lowered.owner
        if isinstance(owner, xt.LoadOp) and owner.other.value.data == 0.0:
            return lowered
        dims = [f"d{n}" for n in range(t.rank)]
        read = f"in0[{', '.join(dims)}]"
        form = (f"out[{', '.join(f'{d} < {s}' for d, s in zip(dims, t.shape, strict=True))}] = "
                f"select(idx({dims[axis]}) < idx({extent}), {read}, 0.0)")
        op = xt.MapOp.make([lowered], form=form, dtype=_compute(t.dtype))
        target.add_op(op)
        return op.results[0]

    # ---- ops through their forms ----------------------------------------------------------------
    def lower_form(self, op: Operation, target: Block) -> None:
        form = form_op(op).meaning().form
        t = op.results[0].type
        assert isinstance(t, TensorType)
        operands = [self.values[v] for v in op.operands]
        dtype = _compute(t.dtype)
        parallel = tuple(LoopDim(d.name, d.lower, self.block(d.upper)) for d in form.parallel)
        if form.reduction is None:
            self.emit(target, op, xt.MapOp.make(
                operands, form=str(GenericForm(parallel, form.body, len(operands))),
                dtype=dtype))
            return
        if form.reduction not in xt.REDUCE_KINDS or len(form.reduced) != 1:
            raise NotSupported(f"'{op.name}': a {form.reduction} reduction over "
                               f"{len(form.reduced)} dim(s) (one add, max or min)")
        (red,) = form.reduced
        inner = red.upper.symbols() & {d.name for d in form.parallel}
        if red.lower != IntExpr.const(0) or inner:
            raise NotSupported(f"'{op.name}': a reduction over {red} (one over [0, extent))")
        body, domain = form.body, list(parallel)
        unit = [k for k, d in enumerate(form.parallel)
                if d.upper == IntExpr.const(1)]
        axis, keep = (unit[-1], True) if unit else (len(parallel), False)
        if keep:
            body = substitute(body, {form.parallel[axis].name: IntExpr.const(0)})
            domain[axis] = LoopDim(red.name, red.lower, self.block(red.upper))
        else:
            domain.append(LoopDim(red.name, red.lower, self.block(red.upper)))
        identity = Read(0, tuple(IntExpr.sym(d.name) for d in domain))
        source = operands[0] if body == identity else None
        if source is None or source.type != TensorType(tuple(d.upper for d in domain), dtype):
            elementwise = xt.MapOp.make(operands, form=str(GenericForm(tuple(domain), body,
                                                                       len(operands))),
                                        dtype=dtype if _is_float(t.dtype) else t.dtype)
            target.add_op(elementwise)
            source = elementwise.results[0]
        reduced: Operation = xt.ReduceOp.make([source], kind=form.reduction,
                                              axis=axis, extent=str(red.upper), keepdims=keep)
        if form.finalize is not None:
            target.add_op(reduced)
            dims = tuple(IntExpr.sym(d.name) for d in parallel)
            then = _with_reduced(form.finalize, Read(0, dims))
            reduced = xt.MapOp.make([reduced.results[0]],
                                    form=str(GenericForm(parallel, then, 1)), dtype=dtype)
        self.emit(target, op, reduced)


def _with_reduced(expr: ScalarExpr, value: ScalarExpr) -> ScalarExpr:
    """A finalizer with its reduced value (`acc`) replaced by `value`."""
    if isinstance(expr, Reduced):
        return value
    if isinstance(expr, Call):
        return call(expr.fn, *(_with_reduced(a, value) for a in expr.args), param=expr.param)
    assert isinstance(expr, (Const, Read, Index))
    return expr
