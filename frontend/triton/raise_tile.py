"""Raising an `xt.kernel` (from `raise_xt.py`) further: to a `tile.kernel` and the tensor-level
`ax` function it computes, with the verifier's proof that the two agree.

    raised = raise_to_ax(raise_kernel(analysis))      # NotRaised(reason) where it does not
    raised.ax, raised.tile, raised.verdict            # verdict: Proved, always

An affine kernel's blocks are index splits. Each dim of each load and store is one of:

- `B*pid` with `B` lanes, the grid's dim `ceildiv(S, B)`: a dim of size S tiled over programs;
- `pid` with 1 lane, the grid's dim `S`: one index of a dim a program (a row kernel's row);
- `B*it` with `B` lanes in a loop of `ceildiv(S, B)` iterations: a dim walked by the loop;
- `0` with `B` lanes: a dim held whole, which is the user's kernel only where `B >= S` (the
  raise assumes it and says so: `RaisedKernel.assumptions`).

So every block dim has a role and a whole size, and every block op has a whole-tensor op: a
load is its tensor, an `xt.map` the same form over the whole dims, a reduction over a dim held
whole the reduction over that dim, a loop carrying `tl.dot`'s accumulator over the blocks of K
`ax.matmul`. The `tile.kernel` is the `xt.kernel` op for op (`xt.load` -> `tile.load` with
`other` as its pad, `xt.map` -> `ax.generic` on tiles, `xt.dot` -> `ax.matmul` + `ax.add`,
`xt.for` -> `tile.for`), with one change: a dim held whole is cut to its size S (no lane past
it). That is exact where the lanes past S reach nothing the kernel stores: they are masked at
every store, and every reduction over that dim meets them as its identity (a sum 0, a max
-inf); a pad analysis proves it (`_Raise.map_pad`: the value at the lanes past S, from the
loads' `other` through each map's scalar function, proved constant by z3 for every real the
operands that do not span the dim hold and every lane n with S <= n < B; an infinity is
carried where IEEE arithmetic settles it, `_PadTerm`), else the kernel is not raised, with
the reason. The verifier then proves the `tile.kernel` equal to the `ax` function for every
size and every block size the assumptions admit (`prove_equivalent`, the call the tiling
search makes); Refuted or Unknown is `NotRaised` with the verdict's reason. Then the `xt`
kernel itself is put to the verifier against the same `ax` function, its structure in `tile`
and its ops as they are (`embed_xt.py`, `prove_xt`): Proved where it reasons over reals (every
kernel of the Forge problems but those that read -inf), which leaves none of the raise's
steps to trust; Refuted is `NotRaised` (the raise misread the kernel); Unknown is recorded
(`RaisedKernel.xt_verdict`) and the raise's own proof stands.

Loops carry a dot's accumulator, a sum of blocks (`acc += block`, then `tl.sum(acc)`), or a
running max (min) of blocks: `running = tl.maximum(running, x)` from -inf over blocks of a
load padding with -inf past the end, then `tl.max(running)`. No real is -inf, so the tile's
loop starts at its first step (the block at iteration 0, printed before the loop) and each
step takes the block's first lane in place of the lanes past the end (`running_block`): the
user's lanes there hold -inf, which never changes a max over a nonempty row, and the first
lane is an element of the row, which never changes it either; the verifier proves the tile
loop equal to `ax.reduce_max` (`sums._exchanged_blocks`). The running lanes are read only by
the max over them (lane by lane they are not the user's). A map of such a -inf-padded load
(`exp(x - m)` in a later pass) is taken where the pad analysis proves its value past the end
one real (0: IEEE settles `exp(-inf - m)` for every real m), selected in at those lanes
(`past_the_end`), or an infinity again, which a later map may settle. What this slice does
not read is `NotRaised` too, saying what: a store inside a loop, a reduction across programs
or loop blocks, blocks with lanes no tensor dim gives, an infinite pad read otherwise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue

from axon.dialects import xt
from axon.dialects.ax import TensorType
from axon.dialects.form.generic_form import GenericForm, LoopDim
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Const, Index, Read, ScalarExpr, expand, map_reads
from axon.dialects.form.syntax import parse_form
from axon.frontend.triton.embed_xt import NotEmbedded, embed_xt
from axon.tools.embed import parse_mlir
from axon.verifier import ProofBudget, Proved, Refuted, Unknown, Verdict, prove_equivalent
from axon.verifier import terms as T
from axon.verifier.budget import SEARCH_BUDGET, OutOfBudget, spending
from axon.verifier.constant import NOT_PROVED, IntegerFacts, scalar_term

__all__ = ["NotRaised", "RaisedKernel", "prove_raised", "prove_xt", "raise_to_ax",
           "raise_to_tile"]

ONE = IntExpr.const(1)
ZERO = IntExpr.const(0)
#: the memory space of a Triton block (the `tile` level names the GPU's spaces)
SPACE = "registers"
#: each reduction's identity: the value lanes past a dim must hold to leave it unchanged
IDENTITY = {"add": 0.0, "max": -math.inf, "min": math.inf}
AX_REDUCE = {"add": "ax.sum", "max": "ax.reduce_max", "min": "ax.reduce_min"}
#: one map's pad analysis (`_Raise.map_pad`: a few small z3 queries) is one query of the
#: tiling search's budget
PAD_BUDGET = SEARCH_BUDGET


class NotRaised(Exception):
    """The kernel does not raise past `xt`; the message says why."""


@dataclass(frozen=True)
class Role:
    """What a block dim walks: `pid` (a program id's blocks), `loop` (a loop's blocks), `whole`
    (the dim held whole) or `one` (a unit dim); `name` the program id or iv, `block` the lanes,
    `size` the whole dim's size."""

    kind: str
    name: str = ""
    block: IntExpr = ONE
    size: IntExpr = ONE

    @property
    def tile(self) -> IntExpr:
        """The tile's extent in this dim (a dim held whole is cut to its size)."""
        return self.size if self.kind == "whole" else self.block


UNIT = Role("one")


@dataclass
class _Val:
    """A block value: its tile SSA name and shape, each dim's role (None: lanes no tensor dim
    gives, such as an accumulator's start), program dims dropped by a reshape (`implicit`,
    leading in the whole tensor), its `ax` counterpart, the pad at every lane past one of its
    dims held whole (`padded`: it has such a dim; `pad` None: not proved constant, `pad_why`
    says why), and what a dot made it of."""

    tile: str
    shape: tuple[IntExpr, ...]
    roles: tuple[Role, ...] | None
    implicit: tuple[Role, ...] = ()
    ax: str | None = None
    padded: bool = False
    pad: float | None = None
    pad_why: str = ""
    dot: tuple[_Val, _Val, _Val] | None = None
    full: float | None = None
    carried: bool = False
    folds: tuple[_Val, _Val] | None = None
    infinite: float | None = None
    """The infinity the user's lanes past a tiled dim's end hold (a load's `other=-inf`) where
    the tile's load pads 0.0: read only as a running max's (min's) block (`running`)."""
    running: str = ""
    """`max` or `min` where this is a running extremum's step (`folds` its block and start)."""

    @property
    def whole(self) -> tuple[IntExpr, ...]:
        assert self.roles is not None
        return tuple(r.size for r in (*self.implicit, *self.roles))


@dataclass
class RaisedKernel:
    """A kernel raised to `tile` and `ax`: the three functions, the assumptions the raise makes
    (blocks holding a dim whole cover it), the verifier's verdict (Proved)."""

    name: str
    xt: FuncOp
    tile: FuncOp
    ax: FuncOp
    tile_text: str
    ax_text: str
    assumptions: list[str]
    verdict: Verdict
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    xt_verdict: Verdict | None = None
    """The `xt` kernel itself against the `ax` function (`embed_xt`): Proved where the
    verifier reads it with none of the raise's steps; else why not (an infinity, an op the
    embedding lacks), and the raise's own proof stands."""

    @property
    def xt_proved(self) -> bool:
        return isinstance(self.xt_verdict, Proved)


def _ty(shape: Sequence[IntExpr], dtype: str = "f32") -> str:
    return f"!ax.tensor<[{', '.join(str(d) for d in shape)}], {dtype}>"


def _dims(shape: Sequence[IntExpr]) -> str:
    return "[" + ", ".join(f'"{d}"' for d in shape) + "]"


def _float(value: float) -> str:
    if math.isinf(value):
        return "0xFFF0000000000000" if value < 0 else "0x7FF0000000000000"
    return repr(float(value))


class _Raise:
    def __init__(self, func: FuncOp) -> None:
        kernel = next((op for op in func.body.block.ops if isinstance(op, xt.KernelOp)), None)
        if kernel is None:
            raise NotRaised(f"@{func.sym_name.data} holds no xt.kernel")
        self.func = func
        self.kernel = kernel
        self.name = func.sym_name.data
        self.pids = kernel.program_names()
        self.grid = kernel.grid_exprs()
        self.params = kernel.param_names()
        self.inputs = kernel.input_types()
        self.outputs = kernel.output_types()
        self.values: dict[SSAValue, _Val] = {}
        self.loops: dict[str, IntExpr] = {}  # iv -> extent
        self.parallel: set[str] = set()  # ivs of loops that carry nothing (passes writing)
        self.tile_lines: list[str] = []
        self.ax_lines: list[str] = []
        self.assume: list[str] = []
        self.stored: dict[int, _Val] = {}
        self.counter = 0
        self.depth = 1

    # ---- names and text ---------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit_tile(self, line: str) -> None:
        self.tile_lines.append("  " * self.depth + line)

    def emit_ax(self, line: str) -> None:
        self.ax_lines.append("  " + line)

    # ---- roles --------------------------------------------------------------------------------
    def role(self, offset: IntExpr, lanes: IntExpr, size: IntExpr, where: str) -> Role:
        """The role of one dim of a load or store (module docstring), or NotRaised."""
        for axis, pid in enumerate(self.pids):
            if offset == IntExpr.sym(pid) and lanes == ONE:
                if self.grid[axis] != size:
                    raise NotRaised(f"{where}: program id {pid} indexes a dim of size {size}, "
                                    f"but the grid runs {self.grid[axis]} programs")
                return Role("pid", pid, ONE, size)
            if offset == lanes * IntExpr.sym(pid):
                if self.grid[axis] != size.ceildiv(lanes):
                    raise NotRaised(f"{where}: blocks of {lanes} at {pid} over a dim of size "
                                    f"{size}, but the grid runs {self.grid[axis]} programs")
                return Role("pid", pid, lanes, size)
        for iv, extent in self.loops.items():
            if offset == lanes * IntExpr.sym(iv):
                if extent != size.ceildiv(lanes):
                    raise NotRaised(f"{where}: blocks of {lanes} at {iv} over a dim of size "
                                    f"{size}, but the loop runs {extent} iterations")
                return Role("loop", iv, lanes, size)
        if offset == ZERO and lanes == size:
            return Role("whole", "", lanes, size) if lanes != ONE else UNIT
        if offset == ZERO and lanes.symbols() and lanes.symbols() <= set(self.params):
            fact = f"{lanes} >= {size}"
            if fact not in self.assume:
                self.assume.append(fact)
            return Role("whole", "", lanes, size)
        raise NotRaised(f"{where}: a block of {lanes} at offset {offset} is no split this raise "
                        "reads (B*pid, pid, B*iteration, or 0 with the dim held whole)")

    def dims_of(self, offsets: Sequence[IntExpr], lanes: Sequence[IntExpr],
                sizes: Sequence[IntExpr], where: str) -> tuple[Role, ...]:
        return tuple(self.role(o, b, s, f"{where} dim {d}")
                     for d, (o, b, s) in enumerate(zip(offsets, lanes, sizes, strict=True)))

    # ---- the walk -----------------------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        block = self.kernel.body.block
        ins = [f"%in{k}" for k in range(len(self.inputs))]
        for k, (arg, name, t) in enumerate(zip(block.args, ins, self.inputs, strict=True)):
            self.values[arg] = _Val(f"%g{k}", tuple(t.shape), None, ax=name)
        self.walk(list(block.ops))
        if sorted(self.stored) != list(range(len(self.outputs))):
            raise NotRaised("every result must be stored once, outside any loop")
        sig_in = ", ".join(f"{n}: {_ty(t.shape, t.dtype)}" for n, t in zip(ins, self.inputs,
                                                                           strict=True))
        results = [self.stored[k] for k in range(len(self.outputs))]
        res_types = [_ty(t.shape, t.dtype) for t in self.outputs]
        out_sig = ", ".join(res_types)
        ret = ", ".join(v.ax or "" for v in results)
        ax_text = "\n".join([f"func.func @{self.name}({sig_in}) -> ({out_sig}) {{",
                             *self.ax_lines, f"  func.return {ret} : {out_sig}", "}"])
        params = ", ".join(f'"{p}"' for p in self.params)
        assume = ", ".join(f'"{a}"' for a in self.assume)
        pids = ", ".join(f'"{p}"' for p in self.pids)
        grid = ", ".join(f'"{g}"' for g in self.grid)
        in_types = ", ".join(_ty(t.shape, t.dtype) for t in self.inputs)
        args = ", ".join(f"%g{k}: {_ty(t.shape, t.dtype)}" for k, t in enumerate(self.inputs))
        outs = [f"%r{k}" for k in range(len(self.outputs))]
        head = (f'  {", ".join(outs)} = tile.kernel {", ".join(ins)} {{program_ids = [{pids}], '
                f"grid = [{grid}], params = [{params}]"
                + (f", assume = [{assume}]" if assume else "")
                + f"}} : ({in_types}) -> ({out_sig}) {{")
        tile_text = "\n".join([f"func.func @{self.name}({sig_in}) -> ({out_sig}) {{", head,
                               f"  ^bb0({args}):", *self.tile_lines, "    tile.yield", "  }",
                               f"  func.return {', '.join(outs)} : {out_sig}", "}"])
        return tile_text, ax_text

    def walk(self, ops: Sequence[Operation]) -> None:
        self.depth += 1
        for op in ops:
            if isinstance(op, xt.YieldOp):
                continue
            if isinstance(op, xt.LoadOp):
                self.load(op)
            elif isinstance(op, xt.StoreOp):
                self.store(op)
            elif isinstance(op, xt.MapOp):
                self.map(op)
            elif isinstance(op, xt.ReduceOp):
                self.reduce(op)
            elif isinstance(op, xt.DotOp):
                self.dot(op)
            elif isinstance(op, xt.FullOp):
                self.full(op)
            elif isinstance(op, xt.ReshapeOp):
                self.reshape(op)
            elif isinstance(op, xt.ForOp):
                self.loop(op)
            else:
                raise NotRaised(f"{op.name} is raised by a later slice")
        self.depth -= 1

    def val(self, value: SSAValue, infinite_ok: bool = False, running_ok: bool = False
            ) -> _Val:
        """The block of `value`; an infinite one (a running extremum's start, a load padding
        with an infinity past a tiled dim's end) only where `infinite_ok` (the running max's
        own reads), a running max's (min's) lanes only where `running_ok` (the reduction over
        them: lane by lane they are not the user's, whose lanes past the end stay -inf), else
        NotRaised."""
        v = self.values[value]
        if not running_ok and any(r.kind in ("folded_max", "folded_min")
                                  for r in v.roles or ()):
            raise NotRaised("a running max's (min's) lanes are read other than by the max "
                            "(min) over them")
        if infinite_ok:
            return v
        if v.infinite is not None:
            raise NotRaised(f"a load pads with {v.infinite} past a tiled dim's end and is read "
                            "other than as a running max's (min's) block; the verifier reasons "
                            "over reals")
        if v.full is not None and not math.isfinite(v.full):
            raise NotRaised(f"a block of {v.full} (a running max started at -inf) is read "
                            "other than as a loop's start; the verifier reasons over reals")
        return v

    # ---- ops ----------------------------------------------------------------------------------
    def load(self, op: xt.LoadOp) -> None:
        attrs = op.attrs()
        source = op.operands[0]
        t = source.type
        assert isinstance(t, TensorType)
        offsets = [IntExpr.lift(o) for o in attrs["offsets"]]
        shape = [IntExpr.lift(s) for s in attrs["shape"]]
        extents = [IntExpr.lift(s) for s in attrs["extents"]]
        if extents != shape:
            raise NotRaised("a load masked inside its block is raised by a later slice")
        roles = self.dims_of(offsets, shape, t.shape, "a load")
        other = float(attrs.get("other", 0.0))
        tile_shape = tuple(r.tile for r in roles)
        reaches = any(r.kind in ("pid", "loop") and r.block != ONE for r in roles)
        # an infinite pad is not a real: past a dim held whole it never lands (the dim is cut
        # at its size); past a tiled dim's end the value is marked and read only as a running
        # max's block, whose lanes there are replaced by the block's first (`running`)
        pad = other if math.isfinite(other) else 0.0
        name = self.fresh("t")
        self.emit_tile(f"{name} = tile.load {self.val(source).tile} {{offsets = "
                       f"{_dims(offsets)}, shape = {_dims(tile_shape)}, pad = {_float(pad)} : "
                       f"f64, space = \"{SPACE}\"}} : ({_ty(t.shape, t.dtype)}) -> "
                       f"{_ty(tile_shape)}")
        padded = any(r.kind == "whole" for r in roles)
        self.values[op.results[0]] = _Val(name, tile_shape, roles, ax=self.val(source).ax,
                                          padded=padded, pad=other if padded else None,
                                          infinite=None if math.isfinite(other) or not reaches
                                          else other)

    def store(self, op: xt.StoreOp) -> None:
        if set(self.loops) - self.parallel:
            raise NotRaised("a store inside a loop that carries values is raised by a later "
                            "slice")
        v = self.val(op.value)
        k = op.result.value.data
        t = self.outputs[k]
        offsets = op.offset_exprs()
        extents = op.extent_exprs()
        vt = op.value.type
        assert isinstance(vt, TensorType)
        if list(vt.shape) != extents:
            raise NotRaised("a store masked inside its block is raised by a later slice")
        roles = self.dims_of(offsets, list(vt.shape), t.shape, f"the store of result {k}")
        def walked(rs: Sequence[Role]) -> list[Role]:
            return [r for r in rs if r.kind != "one"]

        if v.roles is None or walked((*v.implicit, *v.roles)) != walked(roles):
            raise NotRaised(f"the stored block's dims walk {v.roles} (+{v.implicit}), the store "
                            f"{roles}")
        if k in self.stored:
            raise NotRaised(f"result {k} is stored more than once")
        if v.ax is None:
            raise NotRaised("the stored value has no tensor-level counterpart")
        whole = tuple(r.size for r in roles)
        if v.whole != whole:  # unit dims only (the walked dims agree)
            ax = self.fresh("a")
            self.emit_ax(f"{ax} = ax.reshape {v.ax} {{shape = {_dims(whole)}}} : "
                         f"({_ty(v.whole)}) -> {_ty(whole)}")
            v = _Val(v.tile, v.shape, roles, ax=ax)
        self.stored[k] = v
        self.emit_tile(f"tile.store {v.tile} {{result = {k}, offsets = {_dims(offsets)}}} : "
                       f"{_ty(v.shape)}")

    def full(self, op: xt.FullOp) -> None:
        attrs = op.attrs()
        value = float(attrs["value"])
        shape = tuple(IntExpr.lift(s) for s in attrs["shape"])
        if not math.isfinite(value):
            # a running max's (min's) start: the loop starts at its first step (`loop`)
            self.values[op.results[0]] = _Val("", shape, None, full=value)
            return
        name = self.fresh("t")
        self.emit_tile(f"{name} = tile.full {{value = {_float(value)} : f64, shape = "
                       f"{_dims(shape)}, dtype = f32, space = \"{SPACE}\"}} : {_ty(shape)}")
        roles: tuple[Role, ...] | None = None
        ax = None
        if all(d == ONE for d in shape):
            roles = tuple(UNIT for _ in shape)
            ax = self.fresh("a")
            self.emit_ax(f"{ax} = ax.constant {{value = {_float(value)} : f64, shape = "
                         f"{_dims(shape)}, dtype = f32}} : {_ty(shape)}")
        self.values[op.results[0]] = _Val(name, shape, roles, ax=ax, full=value)

    def reshape(self, op: xt.ReshapeOp) -> None:
        v = self.val(op.operands[0], infinite_ok=True)
        out = tuple(IntExpr.lift(s) for s in op.attrs()["shape"])
        if v.roles is None:
            raise NotRaised("a reshape of a block whose lanes no tensor dim gives")
        src = [(d, r) for d, r in zip(v.shape, v.roles, strict=True)]
        kept = [(d, r) for d, r in src if not (r.kind in ("pid", "one") and r.tile == ONE)]
        dropped = [r for _, r in src if r.kind == "pid" and r.tile == ONE]
        implicit = list(v.implicit)
        roles: list[Role] = []
        rest = list(kept)
        lead = True
        for d in out:
            if rest and d == rest[0][1].block and (d != ONE or rest[0][1].kind not in ("pid",
                                                                                     "one")):
                roles.append(rest.pop(0)[1])
                lead = False
            elif d == ONE:
                if lead and implicit:
                    roles.append(implicit.pop(0))
                elif lead and dropped and src and src[0][1] == dropped[0]:
                    roles.append(dropped.pop(0))
                else:
                    roles.append(UNIT)
            else:
                raise NotRaised(f"a reshape of {list(v.shape)} to {list(out)} moves data")
        if rest:
            raise NotRaised(f"a reshape of {list(v.shape)} to {list(out)} moves data")
        # program dims dropped here lead the whole tensor (they must have led the block)
        new_implicit = [*implicit, *dropped]
        lead_roles = [r for r in v.roles if r.kind == "pid" and r.tile == ONE]
        if dropped and [r for r in v.roles[:len(lead_roles)]] != lead_roles:
            raise NotRaised("a reshape drops a program's dim that does not lead the block")
        shape = tuple(r.tile for r in roles)
        name = self.fresh("t")
        self.emit_tile(f"{name} = ax.reshape {v.tile} {{shape = {_dims(shape)}}} : "
                       f"({_ty(v.shape)}) -> {_ty(shape)}")
        new = _Val(name, shape, tuple(roles), tuple(new_implicit), padded=v.padded, pad=v.pad,
                   pad_why=v.pad_why, infinite=v.infinite)
        whole_before = v.whole
        whole_after = new.whole
        if v.ax is None:
            raise NotRaised("a reshape of a value with no tensor-level counterpart")
        if whole_before == whole_after:
            new.ax = v.ax
        else:
            new.ax = self.fresh("a")
            self.emit_ax(f"{new.ax} = ax.reshape {v.ax} {{shape = {_dims(whole_after)}}} : "
                         f"({_ty(whole_before)}) -> {_ty(whole_after)}")
        self.values[op.results[0]] = new

    def map(self, op: xt.MapOp) -> None:
        attrs = op.attrs()
        operands = [self.val(o, infinite_ok=True) for o in op.operands]
        form = parse_form(attrs["form"], len(operands))
        names = [d.name for d in form.parallel]
        if any(v.carried for v in operands):
            self.accumulate(op, form, operands)
            return
        infinite = [v.infinite is not None for v in operands]
        operands = [self.val(o, infinite_ok=hit) for o, hit in zip(op.operands, infinite,
                                                                   strict=True)]
        roles: list[Role | None] = [None] * len(names)
        for read in form.reads():
            v = operands[read.operand]
            if v.roles is None:
                raise NotRaised("a map reads a block whose lanes no tensor dim gives (an "
                                "accumulator's start)")
            for j, index in enumerate(read.index):
                name = index.as_symbol
                if name in names:
                    i = names.index(name)
                    if roles[i] is not None and roles[i] != v.roles[j] \
                            and v.roles[j].kind != "one":
                        if roles[i].kind == "one":  # type: ignore[union-attr]
                            roles[i] = v.roles[j]
                            continue
                        raise NotRaised(f"a map combines dims walking {roles[i]} and "
                                        f"{v.roles[j]}")
                    if roles[i] is None or roles[i].kind == "one":  # type: ignore[union-attr]
                        roles[i] = v.roles[j]
                elif not (index == ZERO and v.shape[j] == ONE):
                    raise NotRaised(f"a map reads lane {index} of a block dim of "
                                    f"{v.shape[j]}; expected a dim or a broadcast")
        out_roles = tuple(r if r is not None else UNIT for r in roles)
        for d, r in zip(form.parallel, out_roles, strict=True):
            if r.kind == "one" and d.upper != ONE:
                raise NotRaised("a map's dim is read by no operand's dim")
        implicit: list[Role] = []
        for v in operands:
            for r in v.implicit:
                if r not in implicit:
                    implicit.append(r)
        implicit.sort(key=lambda r: self.pids.index(r.name))
        # the math's integers in whole coordinates: a block dim's lane d at B*x + d is the
        # whole index minus B*x; a program's one index is the whole dim's index
        place: dict[str, IntExpr] = {}
        for n, r in zip(names, out_roles, strict=True):
            if r.kind in ("pid", "loop") and r.block != ONE:
                place[n] = IntExpr.sym(n) - r.block * IntExpr.sym(r.name)
            elif r.kind == "pid":
                place[r.name], place[n] = IntExpr.sym(n), ZERO
            elif r.kind == "one":
                place[n] = ZERO
        for r in implicit:
            place[r.name] = IntExpr.sym(f"p{self.pids.index(r.name)}")
        for e in _index_terms(form.body):
            stray = e.substitute(place).symbols() & (set(self.pids) | set(self.loops))
            if stray:
                raise NotRaised(f"the math reads {', '.join(sorted(stray))} other than as a "
                                "block's place in its dim; raised by a later slice")
        tile_shape = tuple(r.tile for r in out_roles)
        tile_form = GenericForm(tuple(LoopDim(n, ZERO, s) for n, s in zip(names, tile_shape,
                                                                         strict=True)),
                                form.body, len(operands))
        dtype = str(attrs.get("dtype", "f32"))
        name = self.fresh("t")
        ins = ", ".join(v.tile for v in operands)
        types = ", ".join(_ty(v.shape) for v in operands)
        self.emit_tile(f"{name} = ax.generic {ins} {{form = \"{tile_form}\", dtype = {dtype}}}"
                       f" : ({types}) -> {_ty(tile_shape, dtype)}")
        new = _Val(name, tile_shape, out_roles, tuple(implicit))
        if any(infinite):
            new.tile, new.infinite = self.past_the_end(form, operands, out_roles, new)
        new.padded, new.pad, new.pad_why = self.map_pad(form, operands, out_roles)
        # the whole-tensor form: program dims first, then the block's dims at their sizes
        pnames = [f"p{self.pids.index(r.name)}" for r in implicit]

        def widen(read: Read) -> ScalarExpr:
            v = operands[read.operand]
            lead = tuple(IntExpr.sym(pnames[implicit.index(r)]) for r in v.implicit)
            return Read(read.operand, lead + read.index)

        whole_body = _map_index_terms(map_reads(form.body, widen),
                                      lambda e: e.substitute(place))
        whole_form = GenericForm(
            (*(LoopDim(p, ZERO, r.size) for p, r in zip(pnames, implicit, strict=True)),
             *(LoopDim(n, ZERO, r.size) for n, r in zip(names, out_roles, strict=True))),
            whole_body, len(operands))
        if any(v.ax is None for v in operands):
            raise NotRaised("a map reads a value with no tensor-level counterpart")
        new.ax = self.fresh("a")
        self.emit_ax(f"{new.ax} = ax.generic {', '.join(v.ax or '' for v in operands)} "
                     f"{{form = \"{whole_form}\", dtype = {dtype}}} : "
                     f"({', '.join(_ty(v.whole) for v in operands)}) -> "
                     f"{_ty(new.whole, dtype)}")
        self.values[op.results[0]] = new

    def accumulate(self, op: xt.MapOp, form: GenericForm, operands: list[_Val]) -> None:
        """`acc += tl.dot(a, b)`: a map adding a loop's carried value and a fresh dot."""
        dims = tuple(IntExpr.sym(d.name) for d in form.parallel)
        body = form.body
        if len(operands) == 2 and isinstance(body, Call) and body.fn in ("max", "min") \
                and sorted(a.operand for a in body.args if isinstance(a, Read)
                           and a.index == dims) == [0, 1]:
            self.running(op, body.fn, operands)
            return
        if any(v.infinite is not None for v in operands):
            self.val(next(o for o, v in zip(op.operands, operands, strict=True)
                          if v.infinite is not None))  # says why
        if not (len(operands) == 2 and isinstance(body, Call) and body.fn == "add"
                and sorted(a.operand for a in body.args if isinstance(a, Read)
                           and a.index == dims) == [0, 1]):
            raise NotRaised("a loop's carried value is used other than as a tl.dot "
                            "accumulator (a running max or sum of blocks): raised by a later "
                            "slice")
        acc, fresh = operands if operands[0].carried else operands[::-1]
        if fresh.dot is None and fresh.roles is not None and not fresh.carried \
                and any(r.kind == "loop" for r in fresh.roles):
            # `acc += block`: lane by lane, the sum of the loop's blocks
            name = self.fresh("t")
            self.emit_tile(f"{name} = ax.add {operands[0].tile}, {operands[1].tile} : "
                           f"({_ty(operands[0].shape)}, {_ty(operands[1].shape)}) -> "
                           f"{_ty(acc.shape)}")
            self.values[op.results[0]] = _Val(name, acc.shape, None, folds=(fresh, acc))
            return
        if fresh.dot is None or fresh.dot[2].full != 0.0 or fresh.carried:
            raise NotRaised("a loop's carried value is added to something other than a "
                            "tl.dot: raised by a later slice")
        name = self.fresh("t")
        shape = acc.shape
        tile_form = GenericForm(tuple(LoopDim(d.name, ZERO, s)
                                      for d, s in zip(form.parallel, shape, strict=True)), body, 2)
        self.emit_tile(f"{name} = ax.generic {operands[0].tile}, {operands[1].tile} {{form = "
                       f"\"{tile_form}\", "
                       f"dtype = f32}} : ({_ty(operands[0].shape)}, {_ty(operands[1].shape)}) "
                       f"-> {_ty(shape)}")
        a, b, _ = fresh.dot
        self.values[op.results[0]] = _Val(name, shape, fresh.roles, dot=(a, b, acc))

    def running(self, op: xt.MapOp, kind: str, operands: list[_Val]) -> None:
        """`running = tl.maximum(running, block)` in a loop over blocks, `running` started at
        -inf (`tl.minimum` at +inf): lane by lane, the max of the loop's blocks. The block is
        a load padding with -inf past the dim's end (through reshapes), so the user's lanes
        there never change the max; the tile takes the block's first element in their place
        (`running_block`, a real that is an element of the block), and the loop starts at its
        first step (`loop`), which max leaves as it is."""
        acc, fresh = operands if operands[0].carried else operands[::-1]
        if acc is fresh or not acc.carried or fresh.carried:
            raise NotRaised(f"a {kind} of a loop's carried value with itself")
        step = self.running_block(fresh, kind)
        name = self.fresh("t")
        self.emit_tile(f"{name} = ax.generic {acc.tile}, {step.tile} {{form = \"out[d0 < "
                       f"{acc.shape[0]}] = {kind}(in0[d0], in1[d0])\", dtype = f32}} : "
                       f"({_ty(acc.shape)}, {_ty(step.shape)}) -> {_ty(acc.shape)}")
        self.values[op.results[0]] = _Val(name, acc.shape, None, folds=(fresh, acc),
                                          running=kind)

    def running_block(self, block: _Val, kind: str) -> _Val:
        """`block` with its lanes past the dim's end replaced by its first lane: the step of a
        running max (min) of a loop's blocks of one dim, or NotRaised where it is not one."""
        loops = [r for r in block.roles or () if r.kind == "loop"]
        if block.roles is None or len(block.shape) != 1 or len(loops) != 1 \
                or block.infinite != IDENTITY[kind]:
            held = ("a block no tensor dim gives" if block.roles is None else
                    f"lanes past the dim's end holding {block.infinite}"
                    if block.infinite is not None else "lanes past the dim's end padded with "
                    "a real" if loops else "no loop's blocks of one dim")
            raise NotRaised(f"a running {kind} of {held}; expected a load padding with "
                            f"{IDENTITY[kind]} past the end of the one dim a loop walks")
        (role,) = loops
        name = self.fresh("t")
        self.emit_tile(f"{name} = ax.generic {block.tile} {{form = \"out[d0 < {role.block}] = "
                       f"select((idx({role.block}*{role.name} + d0) < idx({role.size})), "
                       f"in0[d0], in0[0])\", dtype = f32}} : ({_ty(block.shape)}) -> "
                       f"{_ty(block.shape)}")
        return _Val(name, block.shape, block.roles, block.implicit, ax=block.ax)

    def running_start(self, op: xt.ForOp, k: int, init: _Val) -> _Val:
        """The start of the running extremum carried in place `k` of loop `op` (its init an
        infinite block): the loop's first step, the block at iteration 0 with its lanes past
        the end replaced (`running_block`), printed before the loop."""
        kind = "max" if init.full == -math.inf else "min"
        body = op.body.block
        end = body.last_op
        assert isinstance(end, xt.YieldOp)
        step = end.values[k].owner
        if not (isinstance(step, xt.MapOp) and body.args[k] in step.operands):
            raise NotRaised(f"a loop carries a block of {init.full} it does not take the "
                            f"running {kind} of")
        chain: list[Operation] = []
        source = next(o for o in step.operands if o is not body.args[k])
        while isinstance(source.owner, (xt.ReshapeOp, xt.LoadOp)) \
                and source.owner.parent_block() is body:
            chain.insert(0, source.owner)
            if isinstance(source.owner, xt.LoadOp):
                break
            source = source.owner.operands[0]
        if not chain or not isinstance(chain[0], xt.LoadOp):
            raise NotRaised(f"a running {kind} of a block that is not loaded in its loop")
        iv, extent = op.iv.data, op.extent_expr()
        tile_mark, ax_mark = len(self.tile_lines), len(self.ax_lines)
        self.loops[iv] = extent
        try:
            self.walk(chain)
            first = self.running_block(self.val(chain[-1].results[0], infinite_ok=True), kind)
        finally:
            del self.loops[iv]
        at_zero = re.compile(rf"(?<![\w%]){re.escape(iv)}(?!\w)")
        lines = [at_zero.sub("0", line) for line in self.tile_lines[tile_mark:]]
        del self.tile_lines[tile_mark:], self.ax_lines[ax_mark:]
        self.tile_lines += lines
        return _Val(first.tile, first.shape, None, full=init.full)

    def pad_frame(self, form: GenericForm) -> tuple[dict[str, IntExpr], list[IntExpr]]:
        """The pad analysis's names and ranges for a map: each lane of `form`, program id and
        loop iteration renamed to one of the verifier's own names (>= 0, so its normalizer
        takes none of them for a size), and the facts (each >= 0) that put it in its range."""
        ranges = {d.name: (d.lower, d.upper) for d in form.parallel}
        ranges.update({p: (ZERO, g) for p, g in zip(self.pids, self.grid, strict=True)})
        ranges.update({iv: (ZERO, extent) for iv, extent in self.loops.items()})
        rename = {n: IntExpr.sym(f"{T.OUTPUT_INDEX}pad_{n}") for n in ranges}
        in_range = [e for n, (lo, hi) in ranges.items()
                    for e in (rename[n] - lo.substitute(rename),
                              hi.substitute(rename) - ONE - rename[n])]
        return rename, in_range

    def past_the_end(self, form: GenericForm, operands: list[_Val], roles: tuple[Role, ...],
                     new: _Val) -> tuple[str, float | None]:
        """A map reading a block whose lanes past its loop dim's end the user's load padded
        with an infinity (`exp(x - m)` of `x = tl.load(..., other=-inf)`): the map's value
        there, proved one constant c by the pad analysis (`_PadTerm`: IEEE settles `x - m =
        -inf` and `exp(-inf) = 0` for every real m) for every lane past the end, every
        iteration and program. A finite c: the tile selects c at those lanes (its load padded
        0.0), so the tile's block is the user's lane for lane, and the select's name is
        returned; an infinite c marks the result as the load was (a later map may settle it).
        NotRaised where c is not proved."""
        loops = [(i, r) for i, r in enumerate(roles) if r.kind == "loop"]
        if len(loops) != 1 or any(r.kind == "whole" for r in roles):
            raise NotRaised("a map reads a block padded with an infinity past the end of "
                            "other than one loop's dim")
        i, role = loops[0]
        past = form.parallel[i].name
        rename, in_range = self.pad_frame(form)
        at = role.block * rename[role.name] + rename[past]
        facts = IntegerFacts([*in_range, at - role.size.substitute(rename)])

        def read(r: Read) -> _Ext:
            v = operands[r.operand]
            if past not in {i.as_symbol for i in r.index}:
                return T.atom(T.Read(f"in{r.operand}", tuple(i.substitute(rename)
                                                             for i in r.index)))
            if v.infinite is None:
                raise _NoPad(f"operand {r.operand} spans the dim with no infinite pad")
            return v.infinite

        why = ""
        try:
            with spending(PAD_BUDGET):
                value = _PadTerm(facts, read, rename).value(expand(form.body))
                found = value if isinstance(value, float) else facts.constant(value)
        except _NoPad as err:
            found, why = None, str(err)
        except OutOfBudget as err:
            found, why = None, f"the proof ran out of its budget: {err}"
        except NOT_PROVED as err:
            found, why = None, f"{type(err).__name__}: {err}"
        if isinstance(found, float) and math.isinf(found):
            return new.tile, found
        if found is None or Fraction(float(found)) != found:
            raise NotRaised(f"a map of a block padded with an infinity past its loop dim's end "
                            f"holds {found if found is not None else 'no proved constant'} "
                            f"there{f' ({why})' if why else ''}")
        dims = ", ".join(f"{d.name} < {s}" for d, s in zip(form.parallel, new.shape,
                                                           strict=True))
        lanes = ", ".join(d.name for d in form.parallel)
        name = self.fresh("t")
        self.emit_tile(f"{name} = ax.generic {new.tile} {{form = \"out[{dims}] = select((idx("
                       f"{role.block}*{role.name} + {past}) < idx({role.size})), in0[{lanes}], "
                       f"{_float(float(found))})\", dtype = f32}} : ({_ty(new.shape)}) -> "
                       f"{_ty(new.shape)}")
        return name, None

    def map_pad(self, form: GenericForm, operands: list[_Val],
                roles: tuple[Role, ...]) -> tuple[bool, float | None, str]:
        """Whether the map's block has a dim held whole, and its value at the lanes past it,
        proved: for each such dim, the body (`_PadTerm`) with each operand spanning it read at
        its pad and every other operand any real is one constant at every point where that
        dim's lane n has S <= n < B, the other lanes, programs and iterations lie in their
        ranges and the sizes are >= 1; else None, with the reason."""
        whole = [i for i, r in enumerate(roles) if r.kind == "whole"]
        if not whole:
            return False, None, ""
        rename, in_range = self.pad_frame(form)
        pads: set[float] = set()
        try:
            with spending(PAD_BUDGET):
                for i in whole:
                    past = form.parallel[i].name
                    facts = IntegerFacts([*in_range, rename[past]
                                          - roles[i].size.substitute(rename)])
                    read = _pad_reads(operands, past, {form.parallel[j].name for j in whole},
                                      rename)
                    value = _PadTerm(facts, read, rename).value(expand(form.body))
                    found = value if isinstance(value, float) else facts.constant(value)
                    if found is None:
                        return True, None, "z3 finds it varying, or gives up"
                    pad = float(found)
                    if not math.isinf(pad) and Fraction(pad) != found:
                        return True, None, f"{found}, not a float"
                    pads.add(pad)
        except _NoPad as err:
            return True, None, str(err)
        except OutOfBudget as err:
            return True, None, f"the proof ran out of its budget: {err}"
        except NOT_PROVED as err:
            return True, None, f"{type(err).__name__}: {err}"
        if len(pads) > 1:
            return True, None, f"{sorted(pads)} past different dims"
        return True, pads.pop(), ""

    def reduce(self, op: xt.ReduceOp) -> None:
        attrs = op.attrs()
        v = self.val(op.operands[0], running_ok=True)
        kind, axis = str(attrs["kind"]), int(attrs["axis"])
        keep = bool(attrs.get("keepdims", True))
        if v.roles is None:
            raise NotRaised("a reduction of an accumulator block (the running max or sum of "
                            "a loop over blocks) is raised by a later slice")
        role = v.roles[axis]
        if IntExpr.lift(attrs["extent"]) != role.block:
            raise NotRaised("a reduction over part of a block is raised by a later slice")
        folds = {"folded": "add", "folded_max": "max", "folded_min": "min"}
        if role.kind in folds and folds[role.kind] != kind:
            raise NotRaised(f"a {kind} of the lanes of a loop's running {folds[role.kind]} of "
                            "blocks")
        if role.kind not in ("whole", *folds):
            raise NotRaised(f"a reduction over a dim walked by {role.kind} {role.name}: "
                            "raised by a later slice")
        if v.padded and v.pad != IDENTITY[kind]:
            held = v.pad if v.pad is not None else f"a value not proved constant ({v.pad_why})"
            raise NotRaised(f"the lanes past the dim's size hold {held} where the {kind} needs "
                            f"{IDENTITY[kind]}")
        roles = list(v.roles)
        if keep:
            roles[axis] = UNIT
        else:
            del roles[axis]
        shape = tuple(r.tile for r in roles)
        red = AX_REDUCE[kind]
        name = self.fresh("t")
        keepdims = "true" if keep else "false"
        self.emit_tile(f"{name} = {red} {v.tile} {{axes = array<i64: {axis}>, keepdims = "
                       f"{keepdims}}} : ({_ty(v.shape)}) -> {_ty(shape)}")
        new = _Val(name, shape, tuple(roles), v.implicit)
        new.padded = any(r.kind == "whole" for r in roles)
        new.pad, new.pad_why = None, "a reduction's result"
        new.ax = self.fresh("a")
        self.emit_ax(f"{new.ax} = {red} {v.ax} {{axes = array<i64: "
                     f"{axis + len(v.implicit)}>, keepdims = {keepdims}}} : "
                     f"({_ty(v.whole)}) -> {_ty(new.whole)}")
        self.values[op.results[0]] = new

    def dot(self, op: xt.DotOp) -> None:
        a, b, acc = (self.val(o) for o in op.operands)
        if a.roles is None or b.roles is None or a.implicit or b.implicit:
            raise NotRaised("a dot of blocks whose dims are not tensor dims")
        if len(a.roles) != 2 or len(b.roles) != 2 or a.roles[1] != b.roles[0]:
            raise NotRaised(f"a dot contracting {a.roles[-1]} with {b.roles[0]}")
        k = a.roles[1]
        if k.kind == "whole" and (a.pad != 0.0 or b.pad != 0.0):
            raise NotRaised("a dot over a dim held whole whose lanes past it are not proved 0 "
                            f"({a.pad_why or a.pad}, {b.pad_why or b.pad})")
        if k.kind not in ("loop", "whole"):
            raise NotRaised(f"a dot contracting a dim walked by {k.kind}")
        shape = (a.shape[0], b.shape[1])
        prod, out = self.fresh("t"), self.fresh("t")
        self.emit_tile(f"{prod} = ax.matmul {a.tile}, {b.tile} : ({_ty(a.shape)}, "
                       f"{_ty(b.shape)}) -> {_ty(shape)}")
        self.emit_tile(f"{out} = ax.add {acc.tile}, {prod} : ({_ty(acc.shape)}, {_ty(shape)}) "
                       f"-> {_ty(shape)}")
        roles = (a.roles[0], b.roles[1])
        new = _Val(out, shape, roles, dot=(a, b, acc))
        if k.kind == "whole":  # no loop: the whole product now
            new.ax = self.matmul(a, b, acc, roles)
        self.values[op.results[0]] = new

    def matmul(self, a: _Val, b: _Val, acc: _Val, roles: tuple[Role, ...]) -> str:
        whole = tuple(r.size for r in roles)
        prod = self.fresh("a")
        self.emit_ax(f"{prod} = ax.matmul {a.ax}, {b.ax} : ({_ty(a.whole)}, {_ty(b.whole)}) -> "
                     f"{_ty(whole)}")
        if acc.full == 0.0:
            return prod
        if acc.ax is None or acc.roles is None:
            raise NotRaised("a dot accumulating into a value with no tensor-level counterpart")
        out = self.fresh("a")
        self.emit_ax(f"{out} = ax.add {acc.ax}, {prod} : ({_ty(acc.whole)}, {_ty(whole)}) -> "
                     f"{_ty(whole)}")
        return out

    def loop(self, op: xt.ForOp) -> None:
        iv, extent = op.iv.data, op.extent_expr()
        inits = [self.val(v, infinite_ok=True) for v in op.inits]
        inits = [self.running_start(op, k, v) if v.full is not None and not math.isfinite(v.full)
                 and not v.tile else self.val(op.inits[k]) for k, v in enumerate(inits)]
        args = [self.fresh("c") for _ in inits]
        outs = [self.fresh("t") for _ in inits]
        types = [_ty(v.shape) for v in inits]
        body = op.body.block
        for arg, name, init in zip(body.args, args, inits, strict=True):
            self.values[arg] = _Val(name, init.shape, None, carried=True)
        lhs = f"{', '.join(outs)} = " if outs else ""
        kind = "" if inits else ', kind = "parallel"'
        if not inits:
            self.parallel.add(iv)
        self.emit_tile(f"{lhs}tile.for {', '.join(v.tile for v in inits)} {{iv = \"{iv}\", "
                       f"extent = \"{extent}\"{kind}}} : ({', '.join(types)}) -> "
                       f"({', '.join(types)}) {{")
        self.emit_tile(f"^bb0({', '.join(f'{a}: {t}' for a, t in zip(args, types, strict=True))}"
                       "):")
        self.loops[iv] = extent
        self.walk(list(body.ops))
        end = body.last_op
        assert isinstance(end, xt.YieldOp)
        yielded = [self.val(v) for v in end.values]
        self.emit_tile(f"  tile.yield {', '.join(v.tile for v in yielded)}"
                       + (f" : {', '.join(types)}" if types else ""))
        self.emit_tile("}")
        del self.loops[iv]
        self.parallel.discard(iv)
        for arg, out, y, init, result in zip(body.args, outs, yielded, inits, op.results,
                                             strict=True):
            if y.folds is not None and y.folds[1] is self.values[arg]:
                block = y.folds[0]
                assert block.roles is not None
                if y.running and init.full != IDENTITY[y.running]:
                    raise NotRaised(f"the loop over {iv} takes a running {y.running} from a "
                                    f"start that is not {IDENTITY[y.running]}")
                if not y.running and init.full != 0.0:
                    raise NotRaised(f"the loop over {iv} sums blocks from a start that is not 0")
                if [r for r in block.roles if r.kind == "loop"] != \
                        [r for r in block.roles if r.name == iv]:
                    raise NotRaised(f"the loop over {iv} sums blocks of another loop")
                folded = f"folded_{y.running}" if y.running else "folded"
                roles = tuple(Role(folded, r.name, r.block, r.size) if r.kind == "loop" else r
                              for r in block.roles)
                self.values[result] = _Val(out, y.shape, roles, block.implicit, ax=block.ax)
                continue
            if y.dot is None or y.dot[2] is not self.values[arg]:
                raise NotRaised(f"the loop over {iv} carries a value that is not a tl.dot "
                                "accumulator (a running max or sum of blocks): raised by a "
                                "later slice")
            a, b, _ = y.dot
            assert a.roles is not None and y.roles is not None
            if a.roles[1].kind != "loop" or a.roles[1].name != iv:
                raise NotRaised(f"the dot in the loop over {iv} does not contract its blocks")
            new = _Val(out, y.shape, y.roles)
            new.ax = self.matmul(a, b, init, y.roles)
            self.values[result] = new


def _index_terms(expr: ScalarExpr) -> list[IntExpr]:
    """The integers the math uses as numbers (`idx(...)`), not the reads' indices."""
    out: list[IntExpr] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Index):
            out.append(e.expr)
        elif isinstance(e, Call):
            stack.extend(e.args)
    return out


def _map_index_terms(expr: ScalarExpr, fn: Callable[[IntExpr], IntExpr]) -> ScalarExpr:
    """`expr` with `fn` applied to the integers the math uses as numbers (not to reads); an
    explicit post-order stack, no recursion on the expression's size."""
    done: dict[int, ScalarExpr] = {}
    stack: list[tuple[ScalarExpr, bool]] = [(expr, False)]
    while stack:
        e, expanded = stack.pop()
        if isinstance(e, Call) and not expanded:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args)
        elif isinstance(e, Call):
            done[id(e)] = Call(e.fn, tuple(done[id(a)] for a in e.args), e.param)
        else:
            done[id(e)] = Index(fn(e.expr)) if isinstance(e, Index) else e
    return done[id(expr)]


#: a pad's term: a real (the verifier's terms) or an infinity (a float)
_Ext = T.Poly | T.Bool | float
#: each function's value at -inf and +inf, where the limit is the IEEE value
_AT_INFINITY: dict[str, tuple[float | None, float | None]] = {
    "exp": (0.0, math.inf), "log": (None, math.inf), "sqrt": (None, math.inf),
    "rsqrt": (None, 0.0), "tanh": (-1.0, 1.0), "sigmoid": (0.0, 1.0), "erf": (-1.0, 1.0),
    "abs": (math.inf, math.inf), "neg": (math.inf, -math.inf)}
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def _pad_reads(operands: list[_Val], past: str, whole: set[str],
               rename: dict[str, IntExpr]) -> Callable[[Read], _Ext]:
    """A map's reads at the lanes past its dim `past` (`_Raise.map_pad`): an operand spanning
    it is its pad there; one that does not is any real (a tensor of the verifier's terms), which
    covers its values at lanes past another dim held whole only where its pad is a real."""

    def read(r: Read) -> _Ext:
        v = operands[r.operand]
        dims = {i.as_symbol for i in r.index}
        if past not in dims and (not dims & whole or v.pad is not None
                                 and math.isfinite(v.pad)):
            return T.atom(T.Read(f"in{r.operand}", tuple(i.substitute(rename)
                                                         for i in r.index)))
        if v.pad is None:
            raise _NoPad(f"operand {r.operand} holds a value not proved constant there"
                         + (f" ({v.pad_why})" if v.pad_why else ""))
        if past not in dims:
            raise _NoPad(f"operand {r.operand} holds {v.pad} past another dim held whole")
        if math.isnan(v.pad):
            raise _NoPad(f"operand {r.operand} holds NaN there")
        return v.pad if math.isinf(v.pad) else T.const(Fraction(v.pad))

    return read


class _NoPad(Exception):
    """The value at the lanes past a dim is not proved constant; the message says why."""


class _PadTerm:
    """A map's scalar function at the lanes past one of its dims held whole (`_pad_reads`), as
    the verifier's term (`verifier.constant.scalar_term`; `IntegerFacts` proves it constant and
    decides selects on the indices). An infinity
    (a load's `other=-inf`) is carried as a float only where IEEE arithmetic settles the
    result for every real the other operands hold (`-inf - x`, `exp(-inf)`, `max(-inf, x)`, a
    comparison) or a select the facts decide drops it; anything else with an infinity is
    `_NoPad`, as is a read of an operand whose pad is not proved (unless a decided select
    drops it)."""

    def __init__(self, facts: IntegerFacts, read: Callable[[Read], _Ext],
                 rename: dict[str, IntExpr]) -> None:
        self.facts = facts
        self.read = read
        self.rename = rename

    def value(self, e: ScalarExpr) -> _Ext:
        """The term of `e` (after `expand`), an infinity, or `_NoPad`."""
        if isinstance(e, Const):
            if isinstance(e.value, bool):
                return T.bconst(e.value)
            if math.isnan(e.value):
                raise _NoPad("the math holds a NaN")
            return float(e.value) if math.isinf(e.value) else T.const(Fraction(e.value))
        if isinstance(e, Read):
            return self.read(e)
        if isinstance(e, Index):
            return T.idx(e.expr.substitute(self.rename))
        if not isinstance(e, Call):
            raise _NoPad(f"{e} in a map")
        if e.fn == "select":
            cond = self.value(e.args[0])
            decided = self.decide(cond)
            if decided is not None:
                return self.value(e.args[1 if decided else 2])
            a, b = self.value(e.args[1]), self.value(e.args[2])
            if isinstance(a, float) or isinstance(b, float):
                if a == b:
                    return a
                raise _NoPad("a select the facts do not decide chooses an infinity")
            assert not isinstance(cond, float)  # an infinity decides (`decide`)
            return scalar_term("select", [cond, a, b], None)
        args = [self.value(a) for a in e.args]
        if any(isinstance(a, float) for a in args):
            return _infinite(e.fn, args, e.param)
        _real_at_constants(e.fn, args, e.param)
        return scalar_term(e.fn, args, e.param)  # type: ignore[arg-type]

    def decide(self, cond: _Ext) -> bool | None:
        """The select's condition where the facts prove it true or false, else None."""
        if isinstance(cond, float):
            return True  # an infinity is nonzero
        b = cond if isinstance(cond, T.Bool) else T.compare("ne", cond, T.ZERO)
        if b.op == "const":
            return bool(b.args[0])
        if self.facts.holds(b):
            return True
        if self.facts.holds(T.bnot(b)):
            return False
        return None


def _real_at_constants(fn: str, args: list[_Ext], param: float | str | None) -> None:
    """`_NoPad` where a constant argument (a pad) gives `fn` no real IEEE value (1 / 0, log 0):
    the verifier's reals would read it as some real, and `0 * (1 / 0)` as 0."""
    at = [x.const_value if isinstance(x, T.Poly) and x.is_const else None for x in args]
    c = at[0]
    if fn == "div" and at[1] == 0 or c is not None and (
            fn in ("log", "rsqrt") and c <= 0 or fn == "sqrt" and c < 0
            or fn == "pow" and (c == 0 and float(param or 0) < 0
                                or c < 0 and not float(param or 0).is_integer())):
        raise _NoPad(f"{fn} of {', '.join(map(str, args))} has no real value")


def _infinite(fn: str, args: list[_Ext], param: float | str | None) -> _Ext:
    """`fn` of `args`, some of them infinities: the IEEE value where every real the others hold
    gives the same one (no NaN), else `_NoPad`."""
    if fn in _COMPARE:  # an infinity against any real compares as against 0
        a, b = (x if isinstance(x, float) else 0.0 for x in args)
        return T.bconst(_COMPARE[fn](a, b))
    if fn in ("and", "or", "not"):
        return scalar_term(fn, [T.TRUE if isinstance(x, float) else x for x in args], param)
    if fn == "cast" and param == "i1":
        return T.TRUE
    if fn == "cast" and not str(param).startswith(("i", "u")):
        return args[0]  # a float cast keeps an infinity
    if fn in ("add", "sub"):  # the real term is finite: the infinities decide
        infinities = {-x if k == 1 and fn == "sub" else x
                      for k, x in enumerate(args) if isinstance(x, float)}
        if len(infinities) == 1:
            return infinities.pop()
        raise _NoPad("inf - inf in the math")
    if fn in ("max", "min"):
        if all(isinstance(x, float) for x in args):
            return max(args) if fn == "max" else min(args)  # type: ignore[type-var]
        inf, other = args if isinstance(args[0], float) else args[::-1]
        assert isinstance(inf, float)
        return other if (inf < 0) == (fn == "max") else inf
    if fn == "div" and not isinstance(args[0], float):
        return T.ZERO  # a real over an infinity
    if fn in ("mul", "div"):
        sign = 1.0
        for k, x in enumerate(args):
            if isinstance(x, float):
                if fn == "div" and k == 1:
                    raise _NoPad("an infinity over an infinity in the math")
                sign *= x
            elif isinstance(x, T.Poly) and x.is_const and x.const_value != 0:
                sign *= float(x.const_value)
            else:
                raise _NoPad(f"an infinity times a value not proved a nonzero constant ({x})")
        return math.copysign(math.inf, sign)
    if fn in _AT_INFINITY:
        (x,) = args
        assert isinstance(x, float)
        out = _AT_INFINITY[fn][x > 0]
        if out is None:
            raise _NoPad(f"{fn}({x}) in the math")
        return out if math.isinf(out) else T.const(Fraction(out))
    raise _NoPad(f"{fn} of an infinity in the math")


def raise_to_tile(func: FuncOp) -> tuple[str, str, list[str]]:
    """The `tile` kernel's text, the `ax` function's text and the raise's assumptions for the
    `xt` function `func` (from `raise_kernel`); NotRaised with the reason."""
    raising = _Raise(func)
    tile_text, ax_text = raising.run()
    return tile_text, ax_text, raising.assume


def raise_to_ax(func: FuncOp, budget: ProofBudget | None = None) -> RaisedKernel:
    """`func`'s `xt` kernel raised to `tile` and `ax` and proved equal (module docstring);
    NotRaised with the reason (the raise's or the verdict's)."""
    tile_text, ax_text, assume = raise_to_tile(func)
    return prove_raised(func, tile_text, ax_text, assume, budget)


def prove_raised(func: FuncOp, tile_text: str, ax_text: str, assumptions: list[str],
                 budget: ProofBudget | None = None) -> RaisedKernel:
    """The raised texts parsed and the `tile` kernel proved equal to the `ax` function by the
    verifier (the tiling search's call and budget); NotRaised unless Proved."""
    tile = _parse(tile_text, "tile")
    ax = _parse(ax_text, "ax")
    verdict = prove_equivalent(tile, ax, budget=budget or SEARCH_BUDGET)
    if not isinstance(verdict, Proved):
        raise NotRaised(f"the verifier did not prove the tile kernel equal to the ax function: "
                        f"{type(verdict).__name__}: {verdict}")
    direct = prove_xt(func, ax, assumptions, budget)
    return RaisedKernel(func.sym_name.data, func, tile, ax, tile_text, ax_text,
                        list(assumptions), verdict, verdict.seconds + direct.seconds,
                        xt_verdict=direct)


def prove_xt(func: FuncOp, ax: FuncOp, assumptions: Sequence[str],
             budget: ProofBudget | None = None) -> Verdict:
    """The `xt` kernel of `func` itself proved equal to `ax` (`embed_xt`: its structure in
    `tile`, its ops as they are), or Unknown with why not. Refuted is NotRaised: the `tile`
    kernel the raise built was proved equal to `ax`, so the raise misread the kernel."""
    try:
        embedded = embed_xt(func, assumptions)
    except NotEmbedded as err:
        return Unknown(f"not embedded: {err}", 0.0)
    verdict = prove_equivalent(embedded, ax, budget=budget or SEARCH_BUDGET)
    if isinstance(verdict, Refuted):
        raise NotRaised(f"the xt kernel itself is refuted against the ax function its tile "
                        f"kernel was proved equal to (a bug in the raise): "
                        f"{verdict.counterexample}")
    return verdict


def _parse(text: str, what: str) -> FuncOp:
    try:
        module = parse_mlir(text, f"<raised {what}>")
    except Exception as err:  # noqa: BLE001 (a gap of the raise, reported as not raised)
        raise NotRaised(f"the raised {what} function does not parse or verify: {err}") from None
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func
