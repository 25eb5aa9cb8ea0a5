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
from axon.dialects.ax.structural import ConcatOp, ReshapeOp
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm, LoopDim, fresh_names
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
    map_reads,
    reads,
    substitute,
)
from axon.dialects.form.syntax import parse_form
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.dialects.tile.kernel import sole_kernel
from axon.targets.xe_triton.exp2 import rescale_to_exp2
from axon.targets.xe_triton.lane_cut import cut_picked_lanes

#: the dtype blocks are computed in (loads and stores keep the tensors' own)
COMPUTE_DTYPE = "f32"


class NotSupported(ValueError):
    """A kernel the lowering or the emitter does not handle yet: "not supported: <what>"."""

    def __init__(self, what: str) -> None:
        super().__init__(f"not supported: {what}")


def kernel_of(func: FuncOp) -> KernelOp:
    """The one `tile.kernel` of a tiled function; NotSupported otherwise."""
    found = sole_kernel(func)
    if isinstance(found, str):
        raise NotSupported(found)
    return found


def lower_function(func: FuncOp) -> FuncOp:
    """`func` (a tiled function: one `tile.kernel` and its return) with its kernel lowered to
    `xt`: a new function of the same name and signature."""
    kernel = kernel_of(func)
    out = FuncOp(func.sym_name.data, func.function_type)
    block = out.body.block
    args: dict[SSAValue, SSAValue] = dict(zip(func.body.block.args, block.args, strict=True))
    call_kernel = _Lowering(kernel).run([args[v] for v in kernel.inputs])
    cut_picked_lanes(call_kernel)
    rescale_to_exp2(call_kernel)
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
    #: (block, shape, the block of ops it is made in) -> its reshape there
    reshapes: dict[tuple[SSAValue, tuple[IntExpr, ...], Block], SSAValue] = field(
        default_factory=dict)
    #: (a block held as pairs, which half, the block of ops it is made in) -> its split there
    splits: dict[tuple[SSAValue, int, Block], SSAValue] = field(default_factory=dict)

    # ---- blocks ---------------------------------------------------------------------------------
    def block(self, dim: IntExpr) -> IntExpr:
        """The power-of-two block that holds a tile dim."""
        if dim.is_const:
            return IntExpr.const(_power_of_two_above(dim.value))
        if dim.as_symbol in self.kernel.param_names():
            return dim
        if len(dim.terms) == 1 and dim.terms[0][0]:
            # 2*D2 is held as twice D2's block: a row of pairs reshapes to [.., B_D2, 2]
            mono, coeff = dim.terms[0]
            if coeff > 1 and coeff & (coeff - 1) == 0:
                return IntExpr.const(coeff) * self.block(IntExpr(((mono, 1),)))
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
            folded = self.accumulated(user) if isinstance(user, AddOp) else None
            if folded is None or folded[0] is not op:  # else the add lowers it, as `tl.dot`'s acc
                self.lower_matmul(op, None, target)
        elif isinstance(op, AddOp) and self.accumulated(op) is not None:
            matmul, acc = self.accumulated(op)  # type: ignore[misc]
            self.lower_matmul(matmul, acc, target, op)
        elif isinstance(op, AddOp) and self.folded_dot(op, target):
            pass
        elif isinstance(op, ConcatOp):
            self.lower_concat(op, target)
        elif isinstance(op, ReshapeOp):
            self.lower_reshape(op, target)
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
            if (isinstance(owner, MatmulOp) and product.has_one_use() and _is_2d(owner)
                    and acc.type == add.results[0].type == product.type):
                return owner, acc
        return None

    def folded_dot(self, add: AddOp, target: Block) -> bool:
        """`x + a @ b` where `a @ b` was lowered to a dot from zeros (a batched contraction:
        attention's `acc * alpha + p @ v`) used only here: the dot is made again, here, with
        `x` as its accumulator (`tl.dot(p, v, x)`, the dot form's `select(k == 0, acc, 0)`
        term), and the first one is dropped; False when `add` is no such sum."""
        for product, other in (add.operands[::-1], add.operands):
            lowered = self.values.get(product)
            if (lowered is None or not product.has_one_use() or lowered.uses
                    or product.type != add.results[0].type or other.type != product.type):
                continue
            reshape = lowered.owner
            dot = reshape.source.owner if isinstance(reshape, xt.ReshapeOp) else reshape
            if (not isinstance(dot, xt.DotOp) or not isinstance(reshape, Operation)
                    or dot.parent_block() is not target):
                continue
            start = dot.acc.owner
            if (dot is not reshape and not dot.results[0].has_one_use()) or not (
                    isinstance(start, xt.FullOp) and start.value.value.data == 0.0
                    and dot.acc.has_one_use()):
                continue
            acc_type = dot.acc.type
            assert isinstance(acc_type, TensorType)
            acc = self.reshaped(self.values[other], list(acc_type.shape), target)
            folded = xt.DotOp.make([dot.lhs, dot.rhs, acc])
            target.add_op(folded)
            result = add.results[0].type
            assert isinstance(result, TensorType)
            self.values[add.results[0]] = self.reshaped(
                folded.results[0], [self.block(d) for d in result.shape], target)
            for dead in ((reshape, dot, start) if dot is not reshape else (dot, start)):
                dead.detach()
                dead.erase()
            return True
        return False

    def lower_matmul(self, op: MatmulOp, acc: SSAValue | None, target: Block,
                     result_of: Operation | None = None) -> None:
        a, b = op.operands
        ta, tb, tr = a.type, b.type, op.results[0].type
        assert isinstance(ta, TensorType) and isinstance(tb, TensorType)
        assert isinstance(tr, TensorType)
        if ta.rank != 2 or tb.rank != 2:  # a batched dot: through its form
            self.lower_form(op, target)
            return
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

    # ---- layout: reshapes, interleaved lanes ----------------------------------------------------
    def reshaped(self, value: SSAValue, shape: list[IntExpr], target: Block) -> SSAValue:
        """`value` as a block of `shape` (`tl.reshape`), or itself when it has that shape; a
        reshape of a reshape reshapes the first one's source, and one already made is reused
        (rope splits one pair block twice). A reshape of a value made outside `target` (a loop
        body) is made beside that value, once, not in every iteration (attention's q tile)."""
        owner = value.owner
        if isinstance(owner, xt.ReshapeOp):
            value = owner.source
            owner = value.owner
        t = value.type
        assert isinstance(t, TensorType)
        if list(t.shape) == shape:
            return value
        home = owner.parent_block() if isinstance(owner, Operation) else value.owner
        assert isinstance(home, Block)
        key = (value, tuple(shape), home)
        if key not in self.reshapes:
            op = xt.ReshapeOp.make([value], shape=shape)
            if home is target:
                target.add_op(op)
            elif isinstance(owner, Operation):
                home.insert_op_after(op, owner)
            elif home.first_op is not None:
                home.insert_op_before(op, home.first_op)
            else:
                home.add_op(op)
            self.reshapes[key] = op.results[0]
        return self.reshapes[key]

    def lower_reshape(self, op: ReshapeOp, target: Block) -> None:
        """A reshape: `tl.reshape` of the block, where the block's lanes land where the data's
        elements do (its form, an index linearized and split again, is no read a map prints).
        Its dims fall in groups of equal element counts; within a group every dim but the
        outermost must be held with no padding (its block is its extent), and the blocks must
        multiply alike."""
        src, out = op.input.type, op.result.type
        assert isinstance(src, TensorType) and isinstance(out, TensorType)
        groups = _groups(src.shape, out.shape)
        blocks = [self.block(d) for d in out.shape]
        padded = groups is None or any(
            self.block(dims[k]) != dims[k] for group in groups
            for dims, members in ((src.shape, group[0]), (out.shape, group[1]))
            for k in members[1:])
        if groups is not None and not padded:
            for ga, gb in groups:
                count_a, count_b = IntExpr.const(1), IntExpr.const(1)
                for k in ga:
                    count_a = count_a * self.block(src.shape[k])
                for k in gb:
                    count_b = count_b * self.block(out.shape[k])
                padded |= count_a != count_b
        if padded:
            raise NotSupported(f"'ax.reshape' of {src} to {out}: a padded block's lanes would "
                               "move to other elements (dims merged or split past a padded one)")
        self.values[op.result] = self.reshaped(self.values[op.input], blocks, target)

    def lower_concat(self, op: ConcatOp, target: Block) -> None:
        """Two blocks of one lane each along the last dim, side by side: `tl.join` of the
        two with that dim dropped (reshaped, an interleaved row: rope's output pairs)."""
        out = op.result.type
        assert isinstance(out, TensorType)
        axis = op.axis.value.data
        inputs = [self.values[v] for v in op.operands]
        types = [v.type for v in inputs]
        if (len(inputs) != 2 or axis != out.rank - 1 or types[0] != types[1]
                or any(not isinstance(t, TensorType) or t.shape[-1] != IntExpr.const(1)
                       for t in types)):
            raise NotSupported("'ax.concat' other than of two blocks of one lane each along "
                               "the last dim (tl.join)")
        t = types[0]
        assert isinstance(t, TensorType)
        halves = [self.reshaped(v, list(t.shape[:-1]), target) for v in inputs]
        self.emit(target, op, xt.JoinOp.make(halves))

    def deinterleaved(self, body: ScalarExpr, parallel: tuple[LoopDim, ...],
                      operands: list[SSAValue], target: Block
                      ) -> tuple[ScalarExpr, list[SSAValue]]:
        """`body` with each read of every other element of an operand's last dim
        (`in0[.., 2*d + s]`, s 0 or 1, `d` a dim of the domain whose block is half the
        operand's last) read instead from `tl.split` of that operand reshaped to `[.., B, 2]`
        (a new operand, at `[.., d]`): rope's pairs, alone or inside a product. Each half of
        a block is split once in `target` (rope's four products read two halves); `body` and
        `operands` unchanged where no read is such."""
        blocks = {d.name: d.upper for d in parallel}
        extra: list[SSAValue] = []
        split: dict[tuple[int, int], int] = {}

        def lane(r: Read) -> ScalarExpr:
            t = operands[r.operand].type
            assert isinstance(t, TensorType)
            if not r.index:
                return r
            at = r.index[-1]
            name = next(iter(at.symbols()), None) if len(at.symbols()) == 1 else None
            if name is None or name not in blocks:
                return r
            half = next((s for s in (0, 1) if at == IntExpr.sym(name) * 2 + s), None)
            block = blocks[name]
            assert isinstance(block, IntExpr)
            if half is None or t.shape[-1] != block * 2:
                return r
            key = (r.operand, half)
            if key not in split:
                pairs = self.reshaped(operands[r.operand],
                                      [*t.shape[:-1], block, IntExpr.const(2)], target)
                made = (pairs, half, target)
                if made not in self.splits:
                    op = xt.SplitOp.make([pairs], half=half)
                    target.add_op(op)
                    self.splits[made] = op.results[0]
                split[key] = len(operands) + len(extra)
                extra.append(self.splits[made])
            return Read(split[key], (*r.index[:-1], IntExpr.sym(name)))

        rewritten = map_reads(body, lane)
        if not extra:
            return body, operands
        return rewritten, [*operands, *extra]

    # ---- prefix sums and batched dots -----------------------------------------------------------
    def prefix_sum(self, op: Operation, form: GenericForm, parallel: tuple[LoopDim, ...],
                   operands: list[SSAValue], target: Block) -> bool:
        """A sum over `[0, d + 1)` of a dim `d` of the result (a cumsum): `tl.cumsum` along
        that dim of the body read at `d`; False for any other form."""
        if form.reduction != "add" or len(form.reduced) != 1 or form.finalize is not None:
            return False
        (red,) = form.reduced
        axis = next((k for k, d in enumerate(form.parallel)
                     if red.upper == IntExpr.sym(d.name) + 1), None)
        if axis is None or red.lower != IntExpr.const(0):
            return False
        name = form.parallel[axis].name
        probe = IntExpr.sym(f"{name}_probe")
        if substitute(form.body, {name: probe}) != form.body:
            return False  # the body reads d itself, not only through the running index
        body = substitute(form.body, {red.name: IntExpr.sym(name)})
        domain = tuple(LoopDim(d.name, d.lower, p.upper)
                       for d, p in zip(form.parallel, parallel, strict=True))
        t = op.results[0].type
        assert isinstance(t, TensorType)
        dtype = _compute(t.dtype)
        source = operands[0] if body == Read(0, tuple(IntExpr.sym(d.name) for d in domain)) \
            else None
        if source is None or source.type != TensorType(tuple(d.upper for d in domain), dtype):
            values = xt.MapOp.make(operands, form=str(GenericForm(domain, body, len(operands))),
                                   dtype=dtype)
            target.add_op(values)
            source = values.results[0]
        self.emit(target, op, xt.CumsumOp.make([source], axis=axis))
        return True

    def contraction(self, op: Operation, form: GenericForm, parallel: tuple[LoopDim, ...],
                    operands: list[SSAValue], target: Block) -> bool:
        """A sum over one dim `r` of `a[.., i, .., r] * b[.., r, .., j]` (maybe under
        `select(cond(r), .., 0.0)`) into a result whose other dims are 1 (attention's
        `q @ k.T` and `p @ v` per batch and head): `tl.dot` of the two operands reshaped to
        2-D (transposed where `r` comes first in `a` or last in `b`), their lanes outside
        `cond` and past `r`'s extent zeroed, the product reshaped back; False for any other
        form."""
        if form.reduction != "add" or len(form.reduced) != 1 or form.finalize is not None:
            return False
        (red,) = form.reduced
        unit = {d.name: IntExpr.const(0) for d in form.parallel if d.upper == IntExpr.const(1)}
        body, cond = substitute(form.body, unit), None
        if (isinstance(body, Call) and body.fn == "select" and body.args[2] == Const(0.0)):
            cond, body = body.args[0], body.args[1]
        big = [k for k, d in enumerate(form.parallel) if d.name not in unit]
        if (red.lower != IntExpr.const(0) or len(big) != 2 or not isinstance(body, Call)
                or body.fn != "mul" or not all(isinstance(a, Read) for a in body.args)):
            return False
        i, j = (form.parallel[k].name for k in big)
        if cond is not None and substitute(cond, {i: IntExpr.sym(f"{i}_probe"),
                                                  j: IntExpr.sym(f"{j}_probe")}) != cond:
            return False  # a mask over the result's rows or columns: not one on the operands
        reads_ = [a for a in body.args if isinstance(a, Read)]
        names = {d.name for d in form.parallel} | {red.name}
        for a, b in (reads_, reads_[::-1]):
            if (_dot_axes(a, (i, red.name), names) is None
                    or _dot_axes(b, (red.name, j), names) is None):
                continue
            lhs = self.dot_operand(op, operands, a, (i, red.name), red, cond, names, target)
            rhs = self.dot_operand(op, operands, b, (red.name, j), red, cond, names, target)
            assert lhs is not None and rhs is not None
            ta, tb = lhs.type, rhs.type
            assert isinstance(ta, TensorType) and isinstance(tb, TensorType)
            if ta.shape[1] != tb.shape[0]:
                raise NotSupported(f"'{op.name}': a dot of [{', '.join(map(str, ta.shape))}] "
                                   f"and [{', '.join(map(str, tb.shape))}] blocks")
            start = xt.FullOp.make([], value=0.0, shape=[ta.shape[0], tb.shape[1]],
                                   dtype=COMPUTE_DTYPE)
            target.add_op(start)
            dot = xt.DotOp.make([lhs, rhs, start.results[0]])
            target.add_op(dot)
            product = self.reshaped(dot.results[0], [d.upper for d in parallel  # type: ignore
                                                     ], target)
            self.values[op.results[0]] = product
            return True
        return False

    def dot_operand(self, op: Operation, operands: list[SSAValue], read: Read,
                    dims: tuple[str, str], red: LoopDim, cond: ScalarExpr | None,
                    dims_of_form: set[str], target: Block) -> SSAValue | None:
        """The 2-D `[dims[0], dims[1]]` block a contraction reads (see `contraction`), or None
        when `read` reads another dim of the form (`_dot_axes`)."""
        value = operands[read.operand]
        t = value.type
        assert isinstance(t, TensorType)
        value, read = self.picked(value, read, dims_of_form, target)
        t = value.type
        assert isinstance(t, TensorType)
        axes = _dot_axes(read, dims, dims_of_form)
        if axes is None:
            return None
        order = sorted(axes, key=lambda n: axes[n])
        flat = self.reshaped(value, [t.shape[axes[n]] for n in order], target)
        shape = [t.shape[axes[n]] for n in dims]
        names = fresh_names("d", 2, {s for e in (*shape, red.upper) for s in e.symbols()}
                            | {red.name, *dims})
        index = tuple(IntExpr.sym(names[dims.index(n)]) for n in order)
        lane = IntExpr.sym(names[dims.index(red.name)])
        keep: list[ScalarExpr] = []
        if t.shape[axes[red.name]] != red.upper and not _zero_padded(value, axes[red.name],
                                                                     red.upper):
            keep.append(call("lt", Index(lane), Index(red.upper)))
        if cond is not None and not _load_zeroes_outside(value, axes[red.name], cond, red.name):
            keep.append(substitute(cond, {red.name: lane}))
        read_flat: ScalarExpr = Read(0, index)
        if keep or order != list(dims):
            inside = keep[0] if keep else None
            for more in keep[1:]:
                inside = call("and", inside, more)  # type: ignore[arg-type]
            domain = tuple(LoopDim(n, IntExpr.const(0), d)
                           for n, d in zip(names, shape, strict=True))
            body = read_flat if inside is None else call("select", inside, read_flat,
                                                         Const(0.0))
            dtype = t.dtype if inside is None else _compute(t.dtype)
            arranged = xt.MapOp.make([flat], form=str(GenericForm(domain, body, 1)),
                                     dtype=dtype)
            target.add_op(arranged)
            flat = arranged.results[0]
        source = op.operands[read.operand].type
        assert isinstance(source, TensorType)
        return self.rounded(flat, source.dtype, target)

    def picked(self, value: SSAValue, read: Read, dims: set[str], target: Block
               ) -> tuple[SSAValue, Read]:
        """`value` with each dim a read indexes by an expression of the kernel's names alone
        (a program id: the kv head `b1 floordiv G` of a block holding every head) cut to that
        one lane, and the read at 0 there; both unchanged when there is none."""
        t = value.type
        assert isinstance(t, TensorType)
        one = IntExpr.const(1)
        cut = [k for k, at in enumerate(read.index)
               if not (at.symbols() & dims) and not (at.is_const and at.value == 0
                                                      and t.shape[k] == one)]
        if not cut:
            return value, read
        names = fresh_names("e", t.rank, dims | {s for at in read.index for s in at.symbols()})
        domain = tuple(LoopDim(n, IntExpr.const(0), one if k in cut else d)
                       for k, (n, d) in enumerate(zip(names, t.shape, strict=True)))
        index = tuple(read.index[k] if k in cut else IntExpr.sym(n)
                      for k, n in enumerate(names))
        op = xt.MapOp.make([value], form=str(GenericForm(domain, Read(0, index), 1)),
                           dtype=t.dtype)
        target.add_op(op)
        return op.results[0], Read(read.operand, tuple(
            IntExpr.const(0) if k in cut else at for k, at in enumerate(read.index)))

    # ---- ops through their forms ----------------------------------------------------------------
    def lower_form(self, op: Operation, target: Block) -> None:
        form = form_op(op).meaning().form
        t = op.results[0].type
        assert isinstance(t, TensorType)
        operands = [self.values[v] for v in op.operands]
        dtype = _compute(t.dtype)
        parallel = tuple(LoopDim(d.name, d.lower, self.block(d.upper)) for d in form.parallel)
        if form.reduction is None:
            body, operands = self.deinterleaved(form.body, parallel, operands, target)
            if len(operands) == len(op.operands) + 1:
                identity = Read(len(operands) - 1, tuple(IntExpr.sym(d.name) for d in parallel))
                pairs = operands[-1].type
                if (body == identity and isinstance(pairs, TensorType)
                        and list(pairs.shape) == [d.upper for d in parallel]):
                    # a read of the pairs alone: the split is the value, no map copies it
                    self.values[op.results[0]] = operands[-1]
                    return
            self.emit(target, op, xt.MapOp.make(
                operands, form=str(GenericForm(parallel, body, len(operands))), dtype=dtype))
            return
        if self.prefix_sum(op, form, parallel, operands, target):
            return
        if self.contraction(op, form, parallel, operands, target):
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
        # the reduced dim takes a unit dim's place where every read keeps its dims in order
        # there (a map reads a block permuted or broadcast, not both), else goes last
        ordered = [k for k in reversed(unit) if _in_order(body, form.parallel, k, red.name)]
        axis, keep = (ordered[0], True) if ordered else (len(parallel), False)
        if keep:
            body = substitute(body, {form.parallel[axis].name: IntExpr.const(0)})
            domain[axis] = LoopDim(red.name, red.lower, self.block(red.upper))
        else:
            domain.append(LoopDim(red.name, red.lower, self.block(red.upper)))
        extent = red.upper
        if form.reduction in ("max", "min"):
            inside = self.first_lane_inside(op, body, red)
            if inside is not None:
                body, extent = inside[0], inside[1].min(red.upper)
        identity = Read(0, tuple(IntExpr.sym(d.name) for d in domain))
        source = operands[0] if body == identity else None
        if source is None or source.type != TensorType(tuple(d.upper for d in domain), dtype):
            elementwise = xt.MapOp.make(operands, form=str(GenericForm(tuple(domain), body,
                                                                       len(operands))),
                                        dtype=dtype if _is_float(t.dtype) else t.dtype)
            target.add_op(elementwise)
            source = elementwise.results[0]
        reduced: Operation = xt.ReduceOp.make([source], kind=form.reduction,
                                              axis=axis, extent=str(extent), keepdims=keep)
        if form.finalize is not None:
            target.add_op(reduced)
            dims = tuple(IntExpr.sym(d.name) for d in parallel)
            then = _with_reduced(form.finalize, Read(0, dims))
            reduced = xt.MapOp.make([reduced.results[0]],
                                    form=str(GenericForm(parallel, then, 1)), dtype=dtype)
        self.emit(target, op, reduced)

    def first_lane_inside(self, op: Operation, body: ScalarExpr, red: LoopDim
                          ) -> tuple[ScalarExpr, IntExpr] | None:
        """A masked max or min's body `select(idx(X + r) < idx(E), f(r), f(0))` (the tiling's:
        lanes past the end see the first lane again, "no infinities") as `f(r)` and the
        extent `E - X` of its lanes inside, where lane 0 is provably inside: `X` is 0 (`E`, a
        product of sizes, is at least 1) or `BLOCK*k` in a loop over `k` of `ceil(E / BLOCK)`
        iterations (`BLOCK*k < E`). A reduction over those lanes alone, the rest masked with
        the identity (`tl.where(.., -inf)`), is then the same value, and needs no reduction
        that extracts the first lane; None for any other body."""
        if not (isinstance(body, Call) and body.fn == "select"):
            return None
        cond, then, other = body.args
        if (other != substitute(then, {red.name: IntExpr.const(0)})
                or not (isinstance(cond, Call) and cond.fn == "lt")):
            return None
        bounds = [a.expr for a in cond.args if isinstance(a, Index)]
        if len(bounds) != 2:
            return None
        position, end = bounds
        start = position - IntExpr.sym(red.name)
        if (red.name in start.symbols() or red.name in end.symbols()
                or not end.symbols() <= self.kernel.sizes()
                or len(end.terms) != 1 or end.terms[0][1] < 1):
            return None
        if start != IntExpr.const(0) and not _ends_inside(op, start, end):
            return None
        return then, end - start


def _ends_inside(op: Operation, start: IntExpr, end: IntExpr) -> bool:
    """`start` is `BLOCK*k` for the variable `k` of a loop around `op` that runs
    `ceil(end / BLOCK)` iterations, so `start < end` in every one."""
    if len(start.terms) != 1 or start.terms[0][1] != 1:
        return False
    names = [atom.name for atom in start.terms[0][0] if atom.kind == "sym"]
    if len(names) != 2 or len(start.terms[0][0]) != 2:
        return False
    loop = op.parent_op()
    while loop is not None:
        if isinstance(loop, ForOp) and loop.iv.data in names:
            block = IntExpr.sym(next(n for n in names if n != loop.iv.data))
            return loop.extent_expr() == (block + end - 1).floordiv(block)
        loop = loop.parent_op()
    return False


def _load_zeroes_outside(value: SSAValue, axis: int, cond: ScalarExpr, red: str) -> bool:
    """`cond` is `idx(o + red) < idx(n)` where `value` is a load padding with 0 at offset `o`
    of a tensor dim of size `n` along `axis`: the load already reads 0 where `cond` fails, so
    `select(cond, value, 0.0)` is `value` (attention's v tile past the keys' end)."""
    owner = value.owner
    if not (isinstance(owner, xt.LoadOp) and owner.other.value.data == 0.0):
        return False
    source = owner.source.type
    assert isinstance(source, TensorType)
    offset = IntExpr.lift(owner.offsets.data[axis].data)
    return cond == call("lt", Index(offset + IntExpr.sym(red)), Index(source.shape[axis]))


def _dot_axes(read: Read, dims: tuple[str, str], names: set[str]) -> dict[str, int] | None:
    """Where a contraction's operand read holds each of `dims` (its other indices are lanes:
    constants or the kernel's names, `names` being the form's dims); None when it reads
    another dim of the form, or one twice."""
    axes: dict[str, int] = {}
    for k, at in enumerate(read.index):
        if not at.symbols() & names:
            continue
        name = at.as_symbol
        if name not in dims or name in axes:
            return None
        axes[name] = k
    return axes if len(axes) == 2 else None


def _in_order(body: ScalarExpr, parallel: tuple[LoopDim, ...], axis: int, red: str) -> bool:
    """Every read of `body` indexes the domain's dims in increasing order once the reduced dim
    `red` takes the place of dim #`axis`."""
    names = [red if k == axis else d.name for k, d in enumerate(parallel)]
    for r in reads(body):
        at = [names.index(i.as_symbol) for i in r.index if i.as_symbol in names]
        if at != sorted(at):
            return False
    return True


def _zero_padded(value: SSAValue, axis: int, extent: IntExpr) -> bool:
    """`value` is a load padding with 0 whose lanes of dim `axis` hold data up to `extent`."""
    owner = value.owner
    return (isinstance(owner, xt.LoadOp) and owner.other.value.data == 0.0
            and IntExpr.lift(owner.extents.data[axis].data) == extent)


def _is_2d(op: MatmulOp) -> bool:
    return all(isinstance(v.type, TensorType) and v.type.rank == 2 for v in op.operands)


def _weight(count: IntExpr) -> int:
    """How many factors an element count has (its symbols, and its coefficient's bits): the
    group with fewer takes the next dim."""
    return sum(len(mono) + abs(coeff).bit_length() for mono, coeff in count.terms)


def _groups(src: tuple[IntExpr, ...], out: tuple[IntExpr, ...]
            ) -> list[tuple[list[int], list[int]]] | None:
    """The dims of a reshape's source and result (unit dims left out) in groups of equal
    element counts, outer to inner; None when the products never line up."""
    one = IntExpr.const(1)
    a = [k for k, d in enumerate(src) if d != one]
    b = [k for k, d in enumerate(out) if d != one]
    groups: list[tuple[list[int], list[int]]] = []
    while a or b:
        if not (a and b):
            return None
        ga, gb = [a.pop(0)], [b.pop(0)]
        count_a, count_b = src[ga[0]], out[gb[0]]
        while count_a != count_b:
            if a and (_weight(count_a) <= _weight(count_b) or not b):
                ga.append(a.pop(0))
                count_a = count_a * src[ga[-1]]
            elif b:
                gb.append(b.pop(0))
                count_b = count_b * out[gb[-1]]
            else:
                return None
        groups.append((ga, gb))
    return groups


def _with_reduced(expr: ScalarExpr, value: ScalarExpr) -> ScalarExpr:
    """A finalizer with its reduced value (`acc`) replaced by `value`."""
    if isinstance(expr, Reduced):
        return value
    if isinstance(expr, Call):
        return call(expr.fn, *(_with_reduced(a, value) for a in expr.args), param=expr.param)
    assert isinstance(expr, (Const, Read, Index))
    return expr
