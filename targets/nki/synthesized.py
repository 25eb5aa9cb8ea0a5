"""Synthesized lowerings inside a kernel's lowering: the tile ops `lower.py` may take from
`synth` (docs/synth.md) instead of its own instruction sequence, and how one is printed there.

`lower.py` lowers a row sum by `tensor_reduce` (VectorE), a prefix sum by
`tensor_tensor_scan` and a transpose by `nc_transpose` on TensorE. Synthesis admits other
lowerings of the same tile ops, each proved equal to the op for every tile the profile admits
under the conditions its instructions need: a row sum by an activation's accumulated reduction
(ScalarE) or by a matmul against a ones column (TensorE), a prefix sum by a triangular matmul,
a transpose on VectorE. `alternatives(kind, dtype, profile)` lists them (the lowering's own
sequence left out, and those that read a parameter in HBM, by a DMA transpose: in a kernel the
tile is already on chip); `Choice.inline` prints one at a kernel's tiles: the candidate's loads
of its parameters are the kernel's tiles, every other instruction is rebuilt over the mapped
operands with its dims renamed from the spec's (`P`, `F`) to the tile's.

A kernel lowered with a choice (`lower_function(..., choices=...)`) is proved equal to its
tiled kernel like every lowering (`lower_and_prove`); `select._twins` prints the selection's
best candidate so, one choice at a time, and prices it like any candidate. Which lowering is
fastest depends on what else the kernel keeps each engine busy with, which is why they are
candidates rather than a rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from axon.dialects import nki
from axon.dialects.ax import TensorType
from axon.dialects.form.intexpr import IntExpr, parse_int_expr
from axon.synth import synthesize
from axon.targets.nki.sketches import TILE_OPS, sketches, tile_limits

__all__ = ["KINDS", "Choice", "alternatives"]

#: the spec (a `TILE_OPS` name) of each kind the lowering takes a choice for, by the tile's dtype
SPECS: dict[tuple[str, str], str] = {("row_sum", "f32"): "row_sum",
                                     ("row_sum", "bf16"): "row_sum_bf16",
                                     ("cumsum", "f32"): "cumsum",
                                     ("cumsum", "bf16"): "cumsum_bf16",
                                     ("transpose", "bf16"): "transpose"}
KINDS = tuple(dict.fromkeys(kind for kind, _ in SPECS))
#: the lowering's own sequence of each kind, as the sketch and filling synthesis admits for it
OWN: dict[str, tuple[str, dict[str, object]]] = {
    "row_sum": ("row_sum.tensor_reduce", {"reduce.op": "add", "reduce.negate": False}),
    "cumsum": ("cumsum.scan", {"scan.ops": "add,add", "scan.data": "data1"}),
    "transpose": ("transpose.move", {"move.instruction": "tensor"}),
}


@dataclass(frozen=True, eq=False)
class Choice:
    """One admitted lowering of a tile op: its sketch and filling, the candidate function of
    instructions over the spec's parameters, the size conditions it was proved under, and its
    proof."""

    kind: str
    sketch: str
    filling: tuple[tuple[str, object], ...]
    func: FuncOp
    conditions: tuple[str, ...]
    proof_id: str

    @property
    def label(self) -> str:
        """`row_sum by activation_reduce (act.func=copy, act.scale=1.0)`."""
        holes = ", ".join(f"{k}={v}" for k, v in self.filling)
        return f"{self.kind} by {self.sketch.split('.', 1)[1]} ({holes})"

    def holds(self, tiles: Sequence[TensorType], params: Mapping[str, int]) -> bool:
        """Whether the conditions hold for `tiles` (the kernel's operand tiles of the op) at
        the tile sizes `params` (a condition on a dim the tiles do not bind: not known)."""
        rename = self.binding(tiles)
        if rename is None:
            return False
        for condition in self.conditions:
            lhs, _, bound = condition.partition("<=")
            size = parse_int_expr(lhs.strip()).substitute(rename)
            if not size.symbols() <= set(params) or size.evaluate(dict(params)) > int(bound):
                return False
        return True

    def binding(self, tiles: Sequence[TensorType]) -> dict[str, IntExpr] | None:
        """The spec's dims (`P`, `F`) as the dims of the kernel's `tiles`; None where the
        tiles are not of the spec's ranks, or give one dim two sizes."""
        rename: dict[str, IntExpr] = {}
        params = self.func.function_type.inputs.data
        if len(params) != len(tiles):
            return None
        for param, tile in zip(params, tiles, strict=True):
            assert isinstance(param, TensorType)
            if param.rank != tile.rank:
                return None
            for dim, actual in zip(param.shape, tile.shape, strict=True):
                if dim.is_const:
                    if dim != actual:
                        return None
                    continue
                (name,) = dim.symbols()
                if dim != IntExpr.sym(name) or rename.setdefault(name, actual) != actual:
                    return None  # a spec dim is one symbol (`P`, `F`), bound once
        return rename

    def inline(self, operands: Sequence[SSAValue],
               add: Callable[[Operation], SSAValue]) -> SSAValue:
        """The candidate's instructions over the kernel's on-chip `operands` (each op given to
        `add`, which places it and gives its result); its result."""
        rename = self.binding([_type(v) for v in operands])
        if rename is None:
            raise ValueError(f"{self.label}: the tiles are not of the spec's shapes")
        body = self.func.body.block
        env: dict[SSAValue, SSAValue] = dict(zip(body.args, operands, strict=True))
        for op in body.ops:
            if isinstance(op, ReturnOp):
                return env[op.operands[0]]
            if isinstance(op, nki.DmaCopyOp) and op.operands[0] in body.args:
                env[op.results[0]] = env[op.operands[0]]  # the tile is on chip already
                continue
            assert isinstance(op, nki.NkiOp)
            attrs = op.attrs()
            for name, kind in type(op).ATTRS.items():
                if kind == "dims" and name in attrs:
                    attrs[name] = [str(IntExpr.lift(d).substitute(rename)) for d in attrs[name]]
            new = type(op).make([env[v] for v in op.operands], **attrs)
            env[op.results[0]] = add(new)
        raise ValueError(f"{self.label}: the candidate returns nothing")


def _type(value: SSAValue) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return t


def _own(kind: str, sketch: str, filling: Mapping[str, object]) -> bool:
    own_sketch, own_filling = OWN[kind]
    return sketch == own_sketch and all(filling.get(k) == v for k, v in own_filling.items())


@functools.cache
def _admitted(spec_name: str, profile: str) -> tuple[Choice, ...]:
    spec = TILE_OPS[spec_name].spec(tile_limits(profile))
    report = synthesize(spec, sketches(profile), profile)
    return tuple(Choice(spec.kind, a.sketch, tuple(sorted(a.filling.items())), a.func,
                        a.candidate.conditions, a.proof_id) for a in report.lowerings)


def alternatives(kind: str, dtype: str, profile: str) -> tuple[Choice, ...]:
    """The admitted lowerings of `kind` on `dtype` tiles under `profile` other than the
    lowering's own: those of another sketch first (another instruction, often another
    engine), then the own sketch's other fillings (an operand order), each in synthesis
    order; none where no spec states the kind in that dtype. Those that load a parameter by
    DMA transpose (from HBM) are left out."""
    spec = SPECS.get((kind, dtype))
    if spec is None:
        return ()
    found = [c for c in _admitted(spec, profile)
             if not _own(kind, c.sketch, dict(c.filling))
             and not any(isinstance(op, nki.DmaTransposeOp) for op in c.func.body.block.ops)]
    return tuple(sorted(found, key=lambda c: c.sketch == OWN[kind][0]))
