"""The order a lowered NKI kernel's instructions are printed in: each block's ops by their
dependence depth, so an engine's queue does not wait on another engine's result while work of
its own is ready.

NeuronCore engines run their instructions in order (one queue each, reference/nki.md 6.2), and
the emitter prints a block's instructions in the order of the IR. The lowering gives each tile
op its instructions where the op is, so rope's `x_even * c - x_odd * s` puts the difference
right after its two products: where the products run on GpSimd, VectorE's queue then holds the
difference, which waits for them, ahead of the next two products, which wait for nothing.
`scheduled(func)` returns a copy whose every block lists its ops by the length of the longest
chain of instructions that leads to each inside the block (a view, `nki.access`, adds no
instruction), ties in the order they had: a topological order of the same dataflow graph, so
every value is the one it was, computed from the same operands; the copy is proved equal to
the function all the same (`prove_equivalent`, as `hoist.py`'s rewrites are).

What the emitter reads from the order besides the dataflow is kept:

- a tile the emitter writes in place (a loop's carried value started by it, a matmul's
  accumulator: `emit.written_in_place`) is read by its other users before the op that
  overwrites it: that op comes after each of them;
- ops adjacent in the order and of equal depth stay adjacent (a stable order), so an
  `activation` and the `activation_reduce` beside it (printed as one instruction) stay
  together;
- a block's terminator stays last; an op holding a region depends on every value its region
  reads from outside it.
"""

from __future__ import annotations

from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from axon.dialects import nki
from axon.targets.nki.emit import in_place_writers, written_in_place
from axon.verifier import Proved, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET, ProofBudget
from axon.verifier.cache import process_cache

__all__ = ["scheduled"]


def scheduled(func: FuncOp, budget: ProofBudget = DEFAULT_BUDGET) -> tuple[FuncOp, int] | None:
    """A copy of `func` with each block's ops ordered by dependence depth (module docstring)
    and how many blocks changed order, proved equal to `func`; None where every block is in
    that order already or the proof says anything but Proved."""
    copy = func.clone()
    blocks = [block for op in copy.walk() for region in op.regions for block in region.blocks]
    changed = sum(_schedule(block) for block in blocks)
    if not changed:
        return None
    copy.verify()
    if not isinstance(prove_equivalent(func, copy, budget=budget, cache=process_cache()), Proved):
        return None
    return copy, changed


def _outside_reads(op: Operation) -> list[SSAValue]:
    """The values `op` reads: its operands and what its regions read from outside `op`."""
    reads = list(op.operands)
    if op.regions:
        for inner in op.walk():
            if inner is op:
                continue
            for value in inner.operands:
                owner = value.owner
                holder = owner if isinstance(owner, Operation) else owner.parent_op()
                while holder is not None and holder is not op:
                    holder = holder.parent_op()
                if holder is None:
                    reads.append(value)
    return reads


def _in_block(value: SSAValue, block: Block) -> Operation | None:
    """The op of `block` that defines `value` or holds its definition, else None."""
    owner = value.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _schedule(block: Block) -> bool:
    """Order `block`'s ops by depth; whether the order changed."""
    ops = list(block.ops)
    if len(ops) < 3:
        return False
    body, terminator = (ops[:-1], ops[-1]) if ops[-1].has_trait(IsTerminator) else (ops, None)
    position = {op: k for k, op in enumerate(body)}
    depth: dict[Operation, int] = {}
    for op in body:
        level = 0
        for value in _outside_reads(op):
            maker = _in_block(value, block)
            if maker is not None and maker in depth:
                level = max(level, depth[maker])
            if written_in_place(value) and _overwrites(op, value):
                # every other reader of the tile, earlier in the order, goes first
                for use in value.uses:
                    reader = use.operation
                    while reader is not None and reader.parent_block() is not block:
                        reader = reader.parent_op()
                    if reader is not None and reader is not op and reader in depth:
                        level = max(level, depth[reader] + 1 - _step(op))
        depth[op] = level + _step(op)
    order = sorted(body, key=lambda op: (depth[op], position[op]))
    if order == body:
        return False
    for op in body:
        block.detach_op(op)
    for op in order:
        if terminator is not None:
            block.insert_op_before(op, terminator)
        else:
            block.add_op(op)
    return True


def _step(op: Operation) -> int:
    """1 for an op the emitter prints as work (an instruction, a DMA, a loop), 0 for a view."""
    return 0 if isinstance(op, nki.AccessOp) else 1


def _overwrites(op: Operation, value: SSAValue) -> bool:
    """Does `op` (or an op of its region) write the tile of `value` in place?"""
    for writer in in_place_writers(value):
        holder: Operation | None = writer
        while holder is not None and holder is not op:
            holder = holder.parent_op()
        if holder is op:
            return True
    return False
