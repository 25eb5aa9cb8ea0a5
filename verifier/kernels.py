"""Reading a tiled kernel's result as a function of its index: the grid as an index split.

A kernel whose store of result r writes, in each dim d, the tile of program `p` at offset
`p*B` with a tile extent of `B` over a grid extent of `ceildiv(D, B)` (or the whole dim at
offset 0: a tile extent of `D`, or of `B` where the kernel assumes `B >= D`, its lanes past
the result not written) writes every element `o < D` exactly once: by the program
`o floordiv B`, from its tile's place `o mod B`. That pattern is checked here, structurally,
for every dim; a program id that no dim splits must have a grid extent of 1 (else every
program would write the same elements). The element of the result at `o` is then the stored
tile's element at `o mod B` with each program id replaced by `o floordiv B` (`StoreRead`); the
inliner reads on from there, and a load at `p*B + t` reads the global tensor at `o` again
(`indices.recombine`).

A parallel loop over sub-tiles is one more split of the same kind: a store inside
`tile.for {iv = "s", extent = "ceildiv(B, S)", kind = "parallel"}` at `p*B + s*S` with a tile
extent of `S` writes element `o` from program `o floordiv B`, iteration `(o mod B) floordiv S`,
at `(o mod B) mod S`, provided the kernel assumes `B mod S == 0` (else the last sub-tile of a
block would reach into the next block, written by another program too).

A sequential loop is read when each value it carries accumulates: the body yields
`acc (+) T(k)` with (+) an `ax.add`, `ax.max` or `ax.min` (or an instruction whose form is
one of them, `accumulation_kind`) of the carried value and a tile `T`
of its own type that depends on no carried value (only on the iteration `k` and on values from
outside the loop). By induction on the iterations the result is then `init (+) T(0) (+) ...
(+) T(E - 1)`: a sum (or max, min) over a bound variable standing for `k` (`accumulations`); a
loop over K in steps of BK summing masked tiles then meets the untiled reduction through the
normal forms' blocked-partition rule (`sums._blocked_partition`).

A sequential loop that states an invariant is read through it instead, once its induction
obligations are proved (`induction.py`): its result is the invariant after all its iterations.

A sequential loop of accumulations nested in another (the mlp's K loop inside its F loop) is
read the same way inside the outer loop's step: the step is a term of the outer iteration, so
the inner loop's result is its own fold at that iteration, its start (a `tile.full` in the
outer body) taken afresh in each. Nothing more is needed for the induction: an accumulation's
fold is its definition, at every outer iteration alike.

Read so far: kernels whose body is straight-line (loads, form ops on tiles, one store per
result), with top-level parallel loops over sub-tiles, sequential loops of accumulations or
with a proved invariant, and sequential loops of accumulations nested in sequential loops of
accumulations. Other loops (a loop nested in a parallel loop or in a loop with an invariant,
one with an invariant nested in another, or one carrying anything else) are Unsupported: never
misread (the prover still replays such a kernel to refute it, `prove._not_read`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Block, Operation, SSAValue

from axon.dialects.ax import AddOp, MaxOp, MinOp
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.interface import form_op, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Read
from axon.dialects.tile import ForOp, KernelOp, StoreOp, YieldOp, parse_assumption
from axon.verifier.budget import Unsupported


@dataclass(frozen=True)
class StoreRead:
    """Where result `o` of a kernel comes from: the stored tile `value` at `tile_index`, with
    the program ids replaced as `env` says."""

    value: SSAValue
    tile_index: tuple[IntExpr, ...]
    env: tuple[tuple[str, IntExpr], ...]


def assumptions(kernel: KernelOp) -> list[str]:
    """What a kernel's proof may assume: its own assumptions, and that each tile parameter is a
    positive integer (as every size is)."""
    return [*kernel.assumptions(), *(f"{p} >= 1" for p in kernel.param_names())]


def check_readable(kernel: KernelOp) -> None:
    """Unsupported unless the kernel's body is straight-line with one store per result."""
    stored: set[int] = set()
    for op, loop in _body_ops(kernel):
        if isinstance(op, ForOp) and loop is not None and not (
                op.loop_kind == "sequential" and loop.loop_kind == "sequential"
                and op.invariant is None and loop.invariant is None):
            raise Unsupported("a tile.for nested in a tile.for is read only when both are "
                              "sequential accumulations stating no invariant")
        if isinstance(op, ForOp) and op.loop_kind == "sequential":
            if op.invariant is None:
                accumulations(op)  # Unsupported unless each carried value accumulates
            if any(isinstance(inner, StoreOp) for inner in op.body.block.ops):
                raise Unsupported("a store inside a sequential loop is not read by the "
                                  "verifier yet")
        if isinstance(op, StoreOp):
            k = op.result.value.data
            if k in stored:
                raise Unsupported(f"tile.kernel stores result #{k} more than once")
            stored.add(k)
    missing = sorted(set(range(len(kernel.outputs))) - stored)
    if missing:
        raise Unsupported(f"tile.kernel never stores result(s) {missing}")


def store_read(kernel: KernelOp, result: int, index: Sequence[IntExpr]) -> StoreRead:
    """Result #`result` of `kernel` at `index` (see the module docstring)."""
    store, loop = _store_of(kernel, result)
    out = kernel.output_types()[result]
    tile = store.value.type
    assert isinstance(tile, TensorType)
    # what each name the store's offsets may split by ranges over
    extents = dict(zip(kernel.program_names(), kernel.grid_exprs(), strict=True))
    if loop is not None:
        extents[loop.iv.data] = loop.extent_expr()
    divides = _divisibility(kernel)
    covers = _coverings(kernel)
    env: dict[str, IntExpr] = {}
    tile_index: list[IntExpr] = []
    for d, (off, extent, dim, o) in enumerate(zip(store.offset_exprs(), tile.shape, out.shape,
                                                  index, strict=True)):
        where = f"tile.store of result #{result}, dim {d}"
        if off == IntExpr.const(0) and (extent == dim or (extent, dim) in covers):
            tile_index.append(o)  # lane o; the lanes past the result are not written
            continue
        split = _split_of(off, extent, extents)
        if split is None or any(name in env for name, _ in split):
            raise Unsupported(f"{where}: written at {off} with a tile extent of {extent}; the "
                              "verifier reads p*B (+ s*S for a parallel loop's iv s) with the "
                              "tile extent the last factor, each name in one dim")
        place = o
        for k, (name, factor) in enumerate(split):
            whole = dim if k == 0 else split[k - 1][1]
            if extents[name] != whole.ceildiv(factor):
                raise Unsupported(f"{where}: {name} ranges over {extents[name]}, not "
                                  f"ceildiv({whole}, {factor}) tiles")
            if k > 0 and (whole, factor) not in divides:
                raise Unsupported(f"{where}: sub-tiles of {factor} inside tiles of {whole} "
                                  f"need the assumption '{whole} mod {factor} == 0'")
            env[name] = place.floordiv(factor)
            place = place.mod(factor)
        tile_index.append(place)
    for name, ext in extents.items():
        if name not in env and ext != IntExpr.const(1):
            raise Unsupported(f"tile.store of result #{result}: {name} ranges over {ext} but "
                              "splits no dim (its programs or iterations would write the same "
                              "elements)")
    return StoreRead(store.value, tuple(tile_index), tuple(sorted(env.items())))


@dataclass(frozen=True)
class Accumulation:
    """A carried value of a sequential loop: `init (+) step(0) (+) ... (+) step(E - 1)`."""

    kind: str  # "add", "max" or "min"
    init: SSAValue
    step: SSAValue


_ACCUMULATE: dict[type[Operation], str] = {AddOp: "add", MaxOp: "max", MinOp: "min"}
#: the scalar functions of an elementwise form that accumulate, and their kind
_ACCUMULATE_FN: dict[str, str] = {"add": "add", "max": "max", "min": "min"}


def accumulation_kind(op: Operation) -> str | None:
    """How `op` joins its two operands when it is an accumulation step: "add", "max" or
    "min" for `ax.add`, `ax.max`, `ax.min`, and for any other form op whose generic form is
    that function of its two operands read elementwise at the result's index, with neither
    reduction nor finalizer (an ISA instruction such as `nki.tensor_tensor` add); else None."""
    kind = next((k for cls, k in _ACCUMULATE.items() if type(op) is cls), None)
    if kind is not None or not has_form(op) or len(op.operands) != 2:
        return kind
    form = form_op(op).meaning().form
    body = form.body
    if (form.reduction is not None or form.finalize is not None
            or not isinstance(body, Call) or body.fn not in _ACCUMULATE_FN):
        return None
    index = tuple(IntExpr.sym(d.name) for d in form.parallel)
    if any(d.lower != IntExpr.const(0) for d in form.parallel):
        return None
    if len(body.args) != 2 or set(body.args) != {Read(0, index), Read(1, index)}:
        return None
    return _ACCUMULATE_FN[body.fn]


def accumulations(loop: ForOp) -> list[Accumulation]:
    """How each value a sequential loop carries accumulates; Unsupported when one does not."""
    if loop.invariant is not None:
        raise Unsupported("tile.for states an invariant: it is read through it, not as an "
                          "accumulation")
    block = loop.body.block
    carried = set(block.args)
    depends: set[SSAValue] = set(block.args)  # values that read a carried value
    for op in block.ops:
        if any(v in depends for v in op.operands):
            depends.update(op.results)
    end = block.last_op
    assert isinstance(end, YieldOp)
    found = []
    for k, (arg, init, value) in enumerate(zip(block.args, loop.inits, end.values,
                                               strict=True)):
        owner = value.owner
        kind = accumulation_kind(owner) if isinstance(owner, Operation) else None
        operands = list(owner.operands) if isinstance(owner, Operation) else []
        steps = [v for v in operands if v is not arg]
        if (kind is None or len(operands) != 2 or len(steps) != 1
                or steps[0].type != arg.type or steps[0] in depends or steps[0] in carried):
            raise Unsupported(f"tile.for carries value #{k} as something other than an "
                              "accumulation (acc + T, max(acc, T) or min(acc, T) with T of "
                              "acc's type and free of carried values), and states no invariant")
        found.append(Accumulation(kind, init, steps[0]))
    return found


def kernel_of_argument(owner: Operation | None) -> KernelOp | None:
    """The kernel whose body's block argument this is (its inputs), if any."""
    return owner if isinstance(owner, KernelOp) else None


def _body_ops(kernel: KernelOp) -> list[tuple[Operation, ForOp | None]]:
    """The ops of a kernel's body and of its loops' bodies, each with the loop it is in."""
    found: list[tuple[Operation, ForOp | None]] = []
    work: list[tuple[Block, ForOp | None]] = [(kernel.body.block, None)]
    while work:
        block, loop = work.pop()
        for op in block.ops:
            found.append((op, loop))
            if isinstance(op, ForOp):
                work.append((op.body.block, op))
    return found


def _store_of(kernel: KernelOp, result: int) -> tuple[StoreOp, ForOp | None]:
    for op, loop in _body_ops(kernel):
        if isinstance(op, StoreOp) and op.result.value.data == result:
            return op, loop
    raise Unsupported(f"tile.kernel never stores result #{result}")


def _split_of(offset: IntExpr, extent: IntExpr, extents: dict[str, IntExpr]
              ) -> list[tuple[str, IntExpr]] | None:
    """`[(p, B)]` when `offset` is `p*B` and B is `extent`; `[(p, B), (s, S)]` when it is
    `p*B + s*S` and S is `extent` (outer split first); else None."""
    for outer in extents:
        for factor in (extent, *_factors(offset, outer)):
            rest = offset - IntExpr.sym(outer) * factor
            if rest == IntExpr.const(0) and factor == extent:
                return [(outer, factor)]
            for inner in extents:
                if inner != outer and rest == IntExpr.sym(inner) * extent:
                    return [(outer, factor), (inner, extent)]
    return None


def _factors(offset: IntExpr, name: str) -> list[IntExpr]:
    """The coefficients of `name` in `offset` (a term `name * X` gives X)."""
    found = []
    for mono, coeff in offset.terms:
        atoms = list(mono)
        if any(a.kind == "sym" and a.name == name for a in atoms):
            atoms.remove(next(a for a in atoms if a.kind == "sym" and a.name == name))
            found.append(IntExpr(((tuple(atoms), coeff),)))
    return found


def _coverings(kernel: KernelOp) -> set[tuple[IntExpr, IntExpr]]:
    """The pairs (B, D) the kernel assumes `B >= D` of: a tile of B lanes at offset 0 holds a
    dim of D whole (a Triton block of `next_power_of_2(D)` lanes)."""
    pairs = set()
    for text in kernel.assumptions():
        lhs, op, rhs = parse_assumption(text)
        if op == ">=":
            pairs.add((lhs, rhs))
        elif op == "<=":
            pairs.add((rhs, lhs))
    return pairs


def _divisibility(kernel: KernelOp) -> set[tuple[IntExpr, IntExpr]]:
    """The pairs (B, S) the kernel assumes `B mod S == 0` of."""
    pairs = set()
    for text in kernel.assumptions():
        lhs, op, rhs = parse_assumption(text)
        if op != "==" or rhs != IntExpr.const(0) or len(lhs.terms) != 1:
            continue
        (mono, coeff), = lhs.terms
        if coeff == 1 and len(mono) == 1 and mono[0].kind == "mod":
            whole, part = mono[0].args
            pairs.add((whole, part))
    return pairs
